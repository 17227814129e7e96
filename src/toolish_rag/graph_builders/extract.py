"""Entities and typed relations a model reads from each chunk, merged by name, never asked twice.

See docs/graph.md (How the builders work).
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

from ..content import Chunk, Entity, Metadata, MetadataValue, NodeKind, Relation, Scalar, relation_type_for
from .base import (
    CACHE_KEY_PREFIX,
    DERIVED_SCOPE_VERSION,
    BuildReport,
    DocumentGraph,
    DocumentInput,
    GraphBuildStore,
    build_documents,
    cache_key,
    chunks_digest,
    derived_relation,
    fingerprint,
    iter_documents,
    model_identity,
)

__all__ = [
    'DEFAULT_MERGE_ACROSS',
    'EXTRACTED_ENTITY_PREFIX',
    'EXTRACTION_INSTRUCTIONS',
    'EXTRACTION_PROMPT_VERSION',
    'ExtractedEntity',
    'ExtractedRelation',
    'Extraction',
    'ExtractionBuilder',
    'extracted_entity_id',
    'merge_identity',
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

DEFAULT_MERGE_ACROSS: tuple[str, ...] = (
    'path',
    'uri',
    'file_name',
    'source_format',
    'page_count',
    'slide_count',
    'sheet_count',
)
"""The per-file keys ingestion records, which entities merge across: ``path`` and ``uri``
(`toolish_rag.ingest._parse.SOURCE_KEYS`), ``file_name`` and ``source_format`` (`parse_file`), and
the counts the PDF and Office readers add. They describe the file, not who may read it; keys a
file's own metadata brings (front matter, ``author``) may be access labels and are not merged across."""

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


def merge_identity(metadata: Metadata, merge_across: Sequence[str] = DEFAULT_MERGE_ACROSS) -> Metadata:
    """What two mentions must share to merge: ``metadata`` without the ``merge_across`` keys (and absent values)."""
    return {k: v for k, v in sorted(metadata.items()) if k not in merge_across and v is not None and v != []}


def extracted_entity_id(
    name: str,
    metadata: Metadata | None = None,
    merge_across: Sequence[str] = DEFAULT_MERGE_ACROSS,
    labels: frozenset[str] = frozenset(),
) -> str:
    """The id of the entity ``name`` stands for among sources of ``metadata`` and ``labels``.

    ``ex:<slug>:<digest>``, the digest of the normalised name and the source identity
    (`merge_identity` and the labels): equal exactly for mentions that merge.
    """
    key = normalise_name(name)
    identity = merge_identity(metadata or {}, merge_across)
    group = fingerprint(identity, sorted(labels))
    digest = hashlib.sha256(f'{group}\x1f{key}'.encode('utf-8', 'surrogatepass')).hexdigest()[:16]
    slug = re.sub(r'[^0-9a-z]+', '-', key).strip('-')[:40]
    return f'{EXTRACTED_ENTITY_PREFIX}{slug}:{digest}' if slug else f'{EXTRACTED_ENTITY_PREFIX}{digest}'


def _elements(value: MetadataValue) -> list[Scalar]:
    if value is None:
        return []
    return [v for v in value if v is not None] if isinstance(value, list) else [value]


def _spread(values: Sequence[MetadataValue]) -> list[Scalar]:
    """The distinct scalars of ``values`` (lists flattened), sorted: bools, then numbers, then strings.

    Distinct by kind too (``True``, ``1`` and ``'1'`` are three values to a filter, one to a set).
    """
    distinct = {(_rank(e), e) for value in values for e in _elements(value)}
    return [e for _, e in sorted(distinct)]


def _rank(value: Scalar) -> int:
    return 0 if isinstance(value, bool) else 1 if isinstance(value, (int, float)) else 2


# -- the builder -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ExtractionBuilder:
    """Entities and relations a model extracts from each chunk (see docs/graph.md).

    ``model`` is a pydantic-ai model or model name; it is resolved only when some chunk needs
    asking, so a run answered wholly from the cache needs no provider or key. ``merge_across``
    names the metadata keys whose values may differ between mentions that merge (each becomes a
    list on the entity); every other key, and the labels, must be equal. ``max_chars`` caps the
    text sent per chunk; ``timeout`` (seconds) bounds one chunk's call.
    """

    model: Model | str
    merge_across: tuple[str, ...] = DEFAULT_MERGE_ACROSS
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
        return fingerprint(
            *self._config, DERIVED_SCOPE_VERSION, list(self.merge_across), chunks_digest(document.chunks)
        )

    async def build(self, store: GraphBuildStore) -> BuildReport:
        """Ask about the chunks of changed documents (cache first), merge entities, write the difference."""
        documents = [document async for document in iter_documents(store)]
        ledger = await store.graph_marks(self.name)
        marks = {d.id: self.mark(d) for d in documents}
        todo = [d for d in documents if ledger.get(d.id) != marks[d.id]]
        keys = {c.id: self.cache_key(c) for d in todo for c in d.chunks}
        answers, failures, calls = await self._answers(store, [c for d in todo for c in d.chunks], keys, ledger)
        known = {e.id: e for e in await store.list_entities()}
        merge = _Merge(known, self.merge_across)
        pending: dict[str, tuple[str, list[Relation]]] = {}
        chunk_failures: list[str] = []
        for document in todo:
            by_chunk = {c.id: answers[keys[c.id]] for c in document.chunks if keys[c.id] in answers}
            failed = [c.id for c in document.chunks if keys[c.id] in failures]
            chunk_failures.extend(f'{document.id}: chunk {c}: {failures[keys[c]]}' for c in failed)
            # A document with a failed chunk gets a mark its real one never equals: rebuilt next run.
            mark = fingerprint('incomplete', marks[document.id], failed) if failed else marks[document.id]
            pending[document.id] = (mark, merge.relations(document, by_chunk, self.name))
        # Graphs carry each entity as merged over ALL documents of the run: written once, in its final form.
        graphs = {doc_id: (mark, merge.graph(relations)) for doc_id, (mark, relations) in pending.items()}

        async def graph_of(document: DocumentInput) -> DocumentGraph:
            return graphs[document.id][1]

        def mark_of(document: DocumentInput) -> str:
            return graphs[document.id][0] if document.id in graphs else marks[document.id]

        report = await build_documents(
            store, self.name, documents, mark_of, graph_of, known_entities=known, marks=ledger
        )
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
    merge_across: Sequence[str]
    merged: dict[str, Entity] = field(default_factory=dict)

    def entity(self, found: ExtractedEntity, source: Chunk) -> str | None:
        """Merge ``found``, read from ``source``, into the entity of its name and source identity; its id.

        ``None`` when the name is empty. The entity keeps (or gets) the identity's metadata and
        labels, and each ``merge_across`` key lists the values of every source merged so far.
        """
        name = ' '.join(found.name.split())
        if not normalise_name(name):
            return None
        entity_id = extracted_entity_id(name, source.metadata, self.merge_across, source.labels)
        current = self.merged.get(entity_id) or self.known.get(entity_id)
        if current is None:
            current = Entity(id=entity_id, name=name, metadata={})
        spellings = {' '.join(a.split()) for a in found.aliases} | {name}
        label = ' '.join(found.type.split()).casefold()
        spread = {key: _spread([current.metadata.get(key), source.metadata.get(key)]) for key in self.merge_across}
        self.merged[entity_id] = current.model_copy(
            update={
                'aliases': tuple(sorted({*current.aliases, *spellings} - {current.name, ''})),
                'description': current.description or ' '.join(found.description.split())[:_MAX_DESCRIPTION],
                # A stored entity's own keys stay (a hand-made one may be stricter): never fewer keys.
                'metadata': {
                    **current.metadata,
                    **merge_identity(source.metadata, self.merge_across),
                    **{key: values for key, values in spread.items() if values},
                },
                'labels': current.labels | source.labels | ({label} if label else set()),
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
        by_name: dict[str, str] = {}
        for found in answer.entities:
            entity_id = self.entity(found, chunk)
            if entity_id is not None:
                for spelling in (found.name, *found.aliases):
                    by_name.setdefault(normalise_name(spelling), entity_id)

        def endpoint(name: str) -> str | None:
            key = normalise_name(name)
            if key and key not in by_name:  # a relation naming an entity the list left out: it exists too
                entity_id = self.entity(ExtractedEntity(name=name), chunk)
                if entity_id is not None:
                    by_name[key] = entity_id
            return by_name.get(key)

        def relation(source: str, source_kind: NodeKind, target: str, type: str) -> Relation:
            return derived_relation(chunk, origin, source, source_kind, target, 'entity', type)

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
