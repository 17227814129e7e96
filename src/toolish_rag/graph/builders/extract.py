"""Entities and typed relations a model reads from each chunk, merged by name, never asked twice.

`ExtractionBuilder` runs a pydantic-ai agent with a structured output (`Extraction`: entities with
a type, aliases and a description; relations between them by name, with a free-text type) over
every chunk of a document that changed, and writes:

* an entity per distinct **normalised name** (NFKC, case-folded, whitespace collapsed) **within one
  scope group** (identical scope metadata): two documents naming "Acme" meet at one node, two
  tenants naming "Acme" get two. Merging keeps the stored entity's name and description and takes
  the union of aliases (other spellings of the name included) and type labels;
* ``MENTIONS`` chunk -> entity, and the typed relations entity -> entity (``'works for'`` ->
  ``WORKS_FOR`` by `relation_type_for`; a type it cannot make is skipped), each with the chunk as
  provenance and its document as owner.

**The model is never asked twice about the same text.** Each answer is cached in the builder's
ledger under a `cache_key` of (model, prompt version, instructions, the text sent), a key that is
not bound to any document: re-ingesting an unchanged document removes its relations and its mark,
and the rebuild reads every answer from the cache (``model_calls == 0``). A chunk whose call fails
(an exception, a timeout, an answer that does not fit the schema after the agent's retry) is named
in ``BuildReport.failures`` and caches nothing; the other chunks are built and cached, and the
document is retried on the next run (asking only about the failed chunks). Calls run concurrently,
at most ``concurrency`` at a time. After a run without failures that changed something, cache
entries of texts no longer stored and extracted entities no relation mentions any more are removed.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel, Field, ValidationError
from pydantic_ai import Agent
from pydantic_ai.models import Model, infer_model
from pydantic_ai.usage import RunUsage

from ...content import Chunk, Entity, Metadata, NodeKind, Relation, relation_type_for
from .base import (
    CACHE_KEY_PREFIX,
    BuildReport,
    DocumentGraph,
    DocumentInput,
    GraphBuildStore,
    build_documents,
    cache_key,
    chunks_digest,
    fingerprint,
    iter_documents,
    scope_group,
    scope_of,
)

__all__ = [
    'EXTRACTED_ENTITY_PREFIX',
    'EXTRACTION_INSTRUCTIONS',
    'EXTRACTION_PROMPT_VERSION',
    'ExtractedEntity',
    'ExtractedRelation',
    'Extraction',
    'ExtractionBuilder',
    'extracted_entity_id',
    'normalise_name',
]

EXTRACTION_PROMPT_VERSION = 1
"""Bumped whenever the instructions or the output schema change meaning: part of every cache key and mark."""

EXTRACTED_ENTITY_PREFIX = 'ex:'
"""Every entity extraction creates has an id starting with this (how it recognises its own stale ones)."""

EXTRACTION_INSTRUCTIONS = (
    'Extract the named entities of the passage and the relations the passage states between them. '
    'Entities are specific, named things: people, organisations, places, products, projects, events, '
    'documents, laws, technical components. For each give its name as the passage writes it (its most '
    'complete form), a one- or two-word type (person, organisation, place, product...), the other names '
    'the passage uses for it (aliases: abbreviations, short forms), and one sentence saying what the '
    'passage tells about it. Relations connect two of those entities by name, with a short verb phrase '
    'as type ("works for", "located in", "part of"). Extract only what the passage states; return empty '
    'lists when it names nothing.'
)

_MAX_DESCRIPTION = 500


class ExtractedEntity(BaseModel):
    """One named entity of a passage, as the model reports it."""

    name: str = Field(description='the name as written in the passage, in its most complete form')
    type: str = Field(default='', description='a one- or two-word type: person, organisation, place, product...')
    aliases: list[str] = Field(default_factory=list, description='other names the passage uses for it')
    description: str = Field(default='', description='one sentence: what the passage says about it')


class ExtractedRelation(BaseModel):
    """A relation the passage states between two extracted entities, by their names."""

    source: str = Field(description='the name of the entity the relation starts from')
    target: str = Field(description='the name of the entity it points to')
    type: str = Field(description='a short verb phrase: "works for", "located in", "part of"')


class Extraction(BaseModel):
    """The structured answer for one passage (also what the cache holds, as JSON)."""

    entities: list[ExtractedEntity] = Field(default_factory=list)
    relations: list[ExtractedRelation] = Field(default_factory=list)


def normalise_name(name: str) -> str:
    """The merge key of a name: NFKC, case-folded, whitespace collapsed (``'  ACME\\u00a0Corp'`` -> ``'acme corp'``)."""
    return ' '.join(unicodedata.normalize('NFKC', name).casefold().split())


def extracted_entity_id(name: str, scope: Metadata | None = None, scope_keys: Sequence[str] = ()) -> str:
    """The id of the entity ``name`` stands for in a scope: ``ex:<slug>:<digest of scope and normalised name>``."""
    key = normalise_name(name)
    group = scope_group(scope or {}, scope_keys)
    digest = hashlib.sha256(f'{group}\x1f{key}'.encode('utf-8', 'surrogatepass')).hexdigest()[:16]
    slug = re.sub(r'[^0-9a-z]+', '-', key).strip('-')[:40]
    return f'{EXTRACTED_ENTITY_PREFIX}{slug}:{digest}' if slug else f'{EXTRACTED_ENTITY_PREFIX}{digest}'


def model_identity(model: Model | str) -> str:
    """What names a model in cache keys: ``'provider:name'`` as given, or a model object's system and name."""
    return model if isinstance(model, str) else f'{model.system}:{model.model_name}'


# -- the builder -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ExtractionBuilder:
    """Entities and relations a model extracts from each chunk (see the module).

    ``model`` is a pydantic-ai model or model name; it is resolved only when some chunk needs
    asking, so a run answered wholly from the cache needs no provider or key. ``max_chars`` caps
    the text sent per chunk; ``timeout`` (seconds) bounds one chunk's call.
    """

    model: Model | str
    scope_keys: tuple[str, ...] = ()
    max_chars: int = 6000
    concurrency: int = 4
    timeout: float = 120.0
    instructions: str = EXTRACTION_INSTRUCTIONS
    name: str = 'extract'

    def __post_init__(self) -> None:
        if self.max_chars < 1 or self.concurrency < 1:
            raise ValueError('max_chars and concurrency must be at least 1')

    @property
    def _config(self) -> tuple[Any, ...]:
        return (self.name, EXTRACTION_PROMPT_VERSION, model_identity(self.model), self.instructions, self.max_chars)

    def prompt(self, chunk: Chunk) -> str:
        """What the model reads for ``chunk``: its indexed text (title, section path, text), capped."""
        return chunk.text[: self.max_chars]

    def cache_key(self, chunk: Chunk) -> str:
        """The ledger key of the answer for ``chunk``'s text (not bound to any document)."""
        return cache_key(*self._config, self.prompt(chunk))

    def mark(self, document: DocumentInput) -> str:
        return fingerprint(*self._config, list(self.scope_keys), chunks_digest(document.chunks))

    async def build(self, store: GraphBuildStore) -> BuildReport:
        """Ask about the chunks of changed documents (cache first), merge entities, write the difference."""
        documents = [document async for document in iter_documents(store)]
        ledger = await store.graph_marks(self.name)
        todo = [d for d in documents if ledger.get(d.id) != self.mark(d)]
        keys = {c.id: self.cache_key(c) for d in todo for c in d.chunks}
        answers, failures, calls = await self._answers(store, [c for d in todo for c in d.chunks], keys, ledger)
        known = {e.id: e for e in await store.list_entities()}
        merge = _Merge(known, self.scope_keys)
        pending: dict[str, tuple[str, list[Relation]]] = {}
        chunk_failures: list[str] = []
        for document in todo:
            by_chunk = {c.id: answers[keys[c.id]] for c in document.chunks if keys[c.id] in answers}
            failed = [c.id for c in document.chunks if keys[c.id] in failures]
            chunk_failures.extend(f'{document.id}: chunk {c}: {failures[keys[c]]}' for c in failed)
            # A document with a failed chunk gets a mark its real one never equals: rebuilt next run.
            mark = fingerprint('incomplete', self.mark(document), failed) if failed else self.mark(document)
            pending[document.id] = (mark, merge.relations(document, by_chunk, self.name))
        # Graphs carry each entity as merged over ALL documents of the run: written once, in its final form.
        graphs = {doc_id: (mark, merge.graph(relations)) for doc_id, (mark, relations) in pending.items()}

        async def graph_of(document: DocumentInput) -> DocumentGraph:
            return graphs[document.id][1]

        def mark_of(document: DocumentInput) -> str:
            return graphs[document.id][0] if document.id in graphs else self.mark(document)

        report = await build_documents(store, self.name, documents, mark_of, graph_of, known_entities=known)
        live = set(keys.values()) | {self.cache_key(c) for d in documents if d.id not in graphs for c in d.chunks}
        stale = {k: None for k in ledger if k.startswith(CACHE_KEY_PREFIX) and k not in live}
        if stale:  # answers about texts no longer stored (a deleted or edited document)
            await store.set_graph_marks(self.name, stale)
        if todo or stale:
            await self._delete_orphans(store)
        return replace(report, model_calls=calls, failures=report.failures + tuple(chunk_failures))

    async def _answers(
        self, store: GraphBuildStore, chunks: Sequence[Chunk], keys: Mapping[str, str], ledger: Mapping[str, str]
    ) -> tuple[dict[str, Extraction], dict[str, str], int]:
        """Every chunk's answer by cache key (cached, else asked), the failures by key, and the calls made."""
        answers: dict[str, Extraction] = {}
        asked: dict[str, Chunk] = {}
        for chunk in chunks:
            key = keys[chunk.id]
            if key in answers or key in asked:
                continue
            cached = _parse(ledger.get(key))
            if cached is not None:
                answers[key] = cached
            else:
                asked[key] = chunk
        if not asked:
            return answers, {}, 0
        usage = RunUsage()
        outcomes = await self._ask(asked, usage)
        fresh = {key: outcome for key, outcome in outcomes.items() if isinstance(outcome, Extraction)}
        if fresh:  # cached before anything else is written: a crash later costs no second call
            await store.set_graph_marks(self.name, {key: answer.model_dump_json() for key, answer in fresh.items()})
        answers.update(fresh)
        failures = {key: outcome for key, outcome in outcomes.items() if isinstance(outcome, str)}
        return answers, failures, max(usage.requests, len(asked))

    async def _ask(self, chunks: Mapping[str, Chunk], usage: RunUsage) -> dict[str, Extraction | str]:
        """One agent run per chunk, ``concurrency`` at a time: the answer, or why there is none."""
        try:
            model = infer_model(self.model)
        except Exception as e:  # an unknown provider, a missing package or key: every chunk fails alike
            reason = f'cannot use model {model_identity(self.model)!r}: {type(e).__name__}: {e}'
            return dict.fromkeys(chunks, reason)
        agent: Agent[None, Extraction] = Agent(
            model, output_type=Extraction, instructions=self.instructions, retries={'output': 1, 'tools': 0}
        )
        gate = asyncio.Semaphore(self.concurrency)

        async def one(chunk: Chunk) -> Extraction | str:
            async with gate:
                try:
                    result = await asyncio.wait_for(agent.run(self.prompt(chunk), usage=usage), self.timeout)
                except Exception as e:  # one chunk's failure is reported; the others go on
                    return f'{type(e).__name__}: {e}'.strip()
                return result.output

        results = await asyncio.gather(*(one(chunk) for chunk in chunks.values()))
        return dict(zip(chunks, results, strict=True))

    async def _delete_orphans(self, store: GraphBuildStore) -> None:
        """Delete extracted entities no relation of this builder touches any more (their documents are gone)."""
        relations = await store.list_relations(origin=self.name)
        used = {r.source for r in relations} | {r.target for r in relations}
        orphans = sorted(
            e.id for e in await store.list_entities() if e.id.startswith(EXTRACTED_ENTITY_PREFIX) and e.id not in used
        )
        if orphans:
            await store.delete_entities(orphans)


def _parse(cached: str | None) -> Extraction | None:
    if cached is None:
        return None
    try:
        return Extraction.model_validate_json(cached)
    except ValidationError:  # a cache written by another version: ask again
        return None


# -- merging ---------------------------------------------------------------------------------


@dataclass(slots=True)
class _Merge:
    """Entities merged across every document of a run, starting from the stored ones (``known``)."""

    known: Mapping[str, Entity]
    scope_keys: Sequence[str]
    merged: dict[str, Entity] = field(default_factory=dict)

    def entity(self, found: ExtractedEntity, scope: Metadata) -> str | None:
        """Merge ``found`` into the entity of its normalised name in ``scope``; its id (``None``: no name)."""
        name = ' '.join(found.name.split())
        if not normalise_name(name):
            return None
        entity_id = extracted_entity_id(name, scope, self.scope_keys)
        current = self.merged.get(entity_id) or self.known.get(entity_id)
        spellings = {' '.join(a.split()) for a in found.aliases} | {name}
        label = ' '.join(found.type.split()).casefold()
        if current is None:
            current = Entity(id=entity_id, name=name, metadata=scope)
        aliases = tuple(sorted({*current.aliases, *spellings} - {current.name, ''}))
        self.merged[entity_id] = current.model_copy(
            update={
                'aliases': aliases,
                'description': current.description or ' '.join(found.description.split())[:_MAX_DESCRIPTION],
                'labels': current.labels | ({label} if label else set()),
            }
        )
        return entity_id

    def relations(self, document: DocumentInput, answers: Mapping[str, Extraction], origin: str) -> list[Relation]:
        """MENTIONS and typed relations of ``document``'s answered chunks (``answers`` by chunk id), merging entities."""
        relations: dict[str, Relation] = {}
        for chunk in document.chunks:
            answer = answers.get(chunk.id)
            if answer is not None:
                relations.update((r.id, r) for r in self._chunk_relations(chunk, answer, origin))
        return sorted(relations.values(), key=lambda r: r.id)

    def graph(self, relations: Sequence[Relation]) -> DocumentGraph:
        """``relations`` with the merged entities they touch."""
        touched = {i for r in relations for i in (r.source, r.target) if i in self.merged}
        return DocumentGraph(tuple(relations), tuple(self.merged[i] for i in sorted(touched)))

    def _chunk_relations(self, chunk: Chunk, answer: Extraction, origin: str) -> list[Relation]:
        scope = scope_of(chunk.metadata, self.scope_keys)
        by_name: dict[str, str] = {}
        for found in answer.entities:
            entity_id = self.entity(found, scope)
            if entity_id is not None:
                for spelling in (found.name, *found.aliases):
                    by_name.setdefault(normalise_name(spelling), entity_id)

        def endpoint(name: str) -> str | None:
            key = normalise_name(name)
            if key and key not in by_name:  # a relation naming an entity the list left out: it exists too
                entity_id = self.entity(ExtractedEntity(name=name), scope)
                if entity_id is not None:
                    by_name[key] = entity_id
            return by_name.get(key)

        def relation(source: str, source_kind: NodeKind, target: str, type: str) -> Relation:
            return Relation(
                source=source,
                source_kind=source_kind,
                target=target,
                target_kind='entity',
                type=type,
                metadata=scope,
                provenance=chunk.id,
                document_id=chunk.document_id,
                origin=origin,
            )

        out: list[Relation] = []
        for said in answer.relations:
            try:
                type = relation_type_for(said.type)
            except ValueError:
                continue  # nothing usable as a type ('', '->'): skipped
            source, target = endpoint(said.source), endpoint(said.target)
            if source is not None and target is not None and source != target:
                out.append(relation(source, 'entity', target, type))
        out.extend(relation(chunk.id, 'chunk', entity_id, 'MENTIONS') for entity_id in sorted(set(by_name.values())))
        return out
