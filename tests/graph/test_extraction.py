"""Model extraction on a real `InMemoryStore` with a scripted pydantic-ai `FunctionModel`.

The model's answers are keyed by a word of each chunk's text, so every test states what the
"model" says about which passage and counts how often it was asked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolish_rag import DocumentBuilder, Entity, EntityFilter, Filter, PropertyFilter as F, ToolishRag, matches
from toolish_rag.content import Document
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.graph.model import NodeRequest
from toolish_rag.graph.walk import WalkRequest, walk
from toolish_rag.graph_builders import build_graph
from toolish_rag.graph_builders.base import CACHE_KEY_PREFIX
from toolish_rag.graph_builders.extract import (
    DEFAULT_MERGE_ACROSS,
    EXTRACTED_ENTITY_PREFIX,
    ExtractionBuilder,
    extracted_entity_id,
    normalise_name,
)
from toolish_rag.ingest._parse import parse_path
from toolish_rag.stores import InMemoryStore

pytestmark = pytest.mark.asyncio

Answer = Mapping[str, Any]


@dataclass
class Script:
    """A scripted extraction model: the answer for the first key found in the passage, and a call log."""

    answers: Mapping[str, Answer | Callable[[], Answer]]
    prompts: list[str] = field(default_factory=list)

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = next(
            str(p.content)
            for m in messages
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, UserPromptPart)
        )
        self.prompts.append(prompt)
        for key, answer in self.answers.items():
            if key in prompt:
                args = answer() if callable(answer) else answer
                return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, dict(args))])
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {'entities': [], 'relations': []})])

    @property
    def model(self) -> FunctionModel:
        return FunctionModel(self.respond, model_name='scripted')


def _store() -> InMemoryStore:
    return InMemoryStore(HashingEmbeddingModel(64))


def _doc(doc_id: str, *texts: str, title: str | None = None, **metadata: str) -> Document:
    """A document whose chunks are ``<doc_id>-0``, ``<doc_id>-1``..."""
    builder = DocumentBuilder(f'file:///docs/{doc_id}.md', title or doc_id.title(), id=doc_id, metadata=metadata)
    for text in texts:
        builder.add_chunk(None, text)
    return builder.build()


def _entity(name: str, type: str = '', aliases: tuple[str, ...] = (), description: str = '') -> dict[str, Any]:
    return {'name': name, 'type': type, 'aliases': list(aliases), 'description': description}


def _rel(source: str, target: str, type: str) -> dict[str, str]:
    return {'source': source, 'target': target, 'type': type}


ACME = {
    'Alice': {
        'entities': [_entity('Acme Corp', 'Organisation', ('Acme',), 'A maker of anvils.'), _entity('Alice', 'person')],
        'relations': [_rel('Alice', 'Acme', 'works for')],
    },
    'Bob': {
        'entities': [_entity('ACME  corp', 'company', ('ACME',)), _entity('Bob', 'Person')],
        'relations': [_rel('Bob', 'ACME corp', 'works for'), _rel('Bob', 'Carol', 'reports to')],
    },
}


async def _triples(store: InMemoryStore) -> set[tuple[str, str, str]]:
    names = {e.id: e.name for e in await store.list_entities()}
    return {
        (names.get(r.source, r.source), r.type, names.get(r.target, r.target))
        for r in await store.list_relations(origin='extract')
    }


async def test_entities_merge_across_documents_by_normalised_name() -> None:
    script = Script(ACME)
    store = _store()
    await store.upsert([_doc('one', 'Alice builds anvils.'), _doc('two', 'Bob sells them.')])
    report = (await build_graph(store, ExtractionBuilder(script.model)))[0]
    assert (report.model_calls, report.documents_built, report.failures) == (2, 2, ())
    entities = {e.id: e for e in await store.list_entities()}
    acme = entities[extracted_entity_id('acme corp')]
    assert acme.name == 'Acme Corp'  # the first spelling seen names it
    assert set(acme.aliases) == {'Acme', 'ACME', 'ACME corp'}  # every other spelling, whitespace collapsed
    assert acme.labels == {'organisation', 'company'}
    assert acme.description == 'A maker of anvils.'
    assert sorted(e.name for e in entities.values()) == ['Acme Corp', 'Alice', 'Bob', 'Carol']
    one, two = 'one-0', 'two-0'
    assert await _triples(store) == {
        ('Alice', 'WORKS_FOR', 'Acme Corp'),  # 'Acme' is an alias the chunk gave: the same node
        ('Bob', 'WORKS_FOR', 'Acme Corp'),  # both documents meet at one node
        ('Bob', 'REPORTS_TO', 'Carol'),  # a relation naming an entity the list left out creates it
        (one, 'MENTIONS', 'Acme Corp'),
        (one, 'MENTIONS', 'Alice'),
        (two, 'MENTIONS', 'Acme Corp'),
        (two, 'MENTIONS', 'Bob'),
        (two, 'MENTIONS', 'Carol'),
    }
    for r in await store.list_relations(origin='extract'):
        assert r.document_id == r.provenance.partition('-')[0]  # type: ignore[union-attr]


async def test_tenants_naming_the_same_organisation_get_two_nodes() -> None:
    script = Script(ACME)
    store = _store()
    await store.upsert([_doc('one', 'Alice builds anvils.', tenant='a'), _doc('two', 'Bob sells them.', tenant='b')])
    (await build_graph(store, ExtractionBuilder(script.model)))[
        0
    ]  # no key to name: any metadata but merge_across separates
    acmes = [e for e in await store.list_entities() if normalise_name(e.name) == 'acme corp']
    assert sorted(e.metadata['tenant'] for e in acmes) == ['a', 'b']  # type: ignore[type-var]
    assert acmes[0].id != acmes[1].id
    assert acmes[0].id == extracted_entity_id('Acme Corp', acmes[0].metadata)
    by_id = {e.id: e for e in await store.list_entities()}
    for r in await store.list_relations(origin='extract'):
        assert by_id[r.target].metadata == r.metadata  # an edge never crosses tenants
        if r.source in by_id:
            assert by_id[r.source].metadata == r.metadata


async def test_the_model_is_never_asked_twice_about_unchanged_text() -> None:
    script = Script(ACME)
    store = _store()
    # the model reads a chunk's indexed text (title included): the same title and text is one question
    documents = [
        _doc('one', 'Alice builds anvils.'),
        _doc('two', 'Bob sells them.', 'Alice builds anvils.', title='One'),
    ]
    await store.upsert(documents)
    first = (await build_graph(store, ExtractionBuilder(script.model)))[0]
    assert first.model_calls == len(script.prompts) == 2  # the repeated text is asked about once
    before = sorted(r.model_dump_json() for r in await store.list_relations(origin='extract'))

    again = (await build_graph(store, ExtractionBuilder(script.model)))[0]
    assert (again.model_calls, again.writes, again.documents_built) == (0, 0, 0)

    await store.upsert([documents[1]])  # re-ingested unchanged: its relations and mark are gone
    assert not [r for r in await store.list_relations(origin='extract') if r.document_id == 'two']
    rebuilt = (await build_graph(store, ExtractionBuilder(script.model)))[0]
    assert (rebuilt.model_calls, rebuilt.documents_built, rebuilt.entities_written) == (0, 1, 0)
    assert len(script.prompts) == 2  # the scripted model really was not called
    assert sorted(r.model_dump_json() for r in await store.list_relations(origin='extract')) == before

    changed = ExtractionBuilder(script.model, instructions='Another prompt.')
    assert (await changed.build(store)).model_calls == 2  # other instructions are another question


async def test_a_failing_chunk_is_reported_cached_never_and_retried_alone() -> None:
    fail = {'now': True}

    def flaky() -> Answer:
        if fail['now']:
            raise RuntimeError('the model is down')
        return {'entities': [_entity('Dave', 'person')], 'relations': []}

    script = Script({**ACME, 'Dave': flaky, 'Eve': {'entities': 'not a list'}})
    store = _store()
    await store.upsert(
        [_doc('one', 'Alice builds anvils.', 'Dave tests them.', 'Eve too.'), _doc('two', 'Bob sells them.')]
    )
    report = (await build_graph(store, ExtractionBuilder(script.model)))[0]
    assert len(report.failures) == 2
    assert any('one: chunk one-1: ' in f and 'the model is down' in f for f in report.failures)
    assert any('one: chunk one-2: ' in f for f in report.failures)  # malformed twice (the retry included)
    ledger = await store.graph_marks('extract')
    assert sum(k.startswith(CACHE_KEY_PREFIX) for k in ledger) == 2  # Alice's and Bob's answers only
    names = {e.name for e in await store.list_entities()}
    assert {'Alice', 'Acme Corp', 'Bob'} <= names and 'Dave' not in names  # the other chunks went on

    fail['now'] = False
    calls = len(script.prompts)
    retried = (await build_graph(store, ExtractionBuilder(script.model)))[0]
    asked = script.prompts[calls:]
    assert any('Dave' in p for p in asked) and not any('Alice' in p or 'Bob' in p for p in asked)
    assert len(retried.failures) == 1 and 'Dave' in {e.name for e in await store.list_entities()}

    calls = len(script.prompts)
    third = (await build_graph(store, ExtractionBuilder(script.model)))[0]
    assert [p for p in script.prompts[calls:] if 'Dave' in p] == []  # Dave's answer is cached now
    assert third.relations_written == 0 and len(third.failures) == 1  # only Eve's malformed chunk, again


async def test_relation_types_are_normalised_and_unusable_ones_skipped() -> None:
    script = Script(
        {
            'Frank': {
                'entities': [_entity('Frank'), _entity('Globex'), _entity('Zurich')],
                'relations': [
                    _rel('Frank', 'Globex', 'is CEO of'),
                    _rel('Globex', 'Zurich', 'headquartered-in'),
                    _rel('Frank', 'Zurich', '->'),  # no letter: cannot be a type
                    _rel('Frank', 'Frank', 'knows'),  # a self-relation says nothing
                    _rel(' ', 'Frank', 'knows'),  # no name
                ],
            }
        }
    )
    store = _store()
    await store.upsert([_doc('one', 'Frank runs Globex from Zurich.')])
    report = (await build_graph(store, ExtractionBuilder(script.model)))[0]
    assert report.failures == ()
    typed = {t for t in await _triples(store) if t[1] != 'MENTIONS'}
    assert typed == {('Frank', 'IS_CEO_OF', 'Globex'), ('Globex', 'HEADQUARTERED_IN', 'Zurich')}


async def test_stored_aliases_are_kept_and_orphans_removed() -> None:
    script = Script(ACME)
    store = _store()
    acme_id = extracted_entity_id('Acme Corp')
    await store.upsert(
        [
            Entity(id=acme_id, name='Acme Corp', aliases=('Acme Corporation',), labels=frozenset({'org'})),
            _doc('one', 'Alice builds anvils.'),
            _doc('two', 'Bob sells them.'),
        ]
    )
    (await build_graph(store, ExtractionBuilder(script.model)))[0]
    acme = next(e for e in await store.list_entities() if e.id == acme_id)
    assert set(acme.aliases) == {'Acme Corporation', 'Acme', 'ACME', 'ACME corp'}  # union with the stored ones
    assert {'org', 'organisation', 'company'} == acme.labels

    await store.delete_documents(['two'])
    report = (await build_graph(store, ExtractionBuilder(script.model)))[0]
    assert report.model_calls == 0
    names = {e.name for e in await store.list_entities() if e.id.startswith(EXTRACTED_ENTITY_PREFIX)}
    assert names == {'Acme Corp', 'Alice'}  # Bob and Carol were only in the deleted document
    ledger = await store.graph_marks('extract')
    assert sum(k.startswith(CACHE_KEY_PREFIX) for k in ledger) == 1  # Bob's answer is no longer kept


async def test_a_model_that_cannot_be_resolved_fails_every_asked_chunk() -> None:
    store = _store()
    await store.upsert([_doc('one', 'Alice builds anvils.')])
    report = (await build_graph(store, ExtractionBuilder('no-such-provider:model')))[0]
    assert report.documents_built == 1 and report.relations_written == 0
    assert len(report.failures) == 1 and 'no-such-provider:model' in report.failures[0]


async def test_names_normalise_by_compatibility_case_and_whitespace() -> None:
    assert normalise_name('  \uff21\uff23\uff2d\uff25\u00a0 Corp\n') == normalise_name('acme corp') == 'acme corp'
    assert normalise_name('Straße') == normalise_name('STRASSE')
    assert extracted_entity_id('Acme Corp') == extracted_entity_id(' ACME  corp ')
    assert extracted_entity_id('Acme', {'tenant': 'a'}) != extracted_entity_id('Acme', {'tenant': 'b'})
    # merge_across keys (default: the per-file ones) do not count; absent and None are the same
    assert extracted_entity_id('Acme', {'tenant': 'a', 'path': 'x.md'}) == extracted_entity_id(
        'Acme', {'tenant': 'a', 'path': 'y.md', 'uri': 'file:///y.md', 'x': None}
    )
    assert extracted_entity_id('Acme', {'path': 'x.md'}, merge_across=()) != extracted_entity_id(
        'Acme', {'path': 'y.md'}, merge_across=()
    )
    assert extracted_entity_id('Acme', labels=frozenset({'Secret'})) != extracted_entity_id('Acme')


# -- scope: derived records fail closed ------------------------------------------------------

FALCON = {
    'Falcon': {
        'entities': [
            _entity('Acme', 'organisation', description='Acme will secretly buy Globex in Q3 (Project Falcon).'),
            _entity('Globex'),
        ],
        'relations': [_rel('Acme', 'Globex', 'acquires')],
    },
    'widgets': {'entities': [_entity('Acme', 'organisation', description='Acme sells widgets.')], 'relations': []},
}
SECRET_WORDS = ('Globex', 'secretly', 'Falcon', 'ACQUIRES')
"""What only the secret document says: none of it may show where that document is out of scope."""


async def _seen(store: InMemoryStore, scope: Filter) -> str:
    """Everything a reader scoped by ``scope`` can see of the graph and its entities, as one text.

    Every node id resolved, a walk from every chunk and entity, and the two tools an agent has.
    """
    ids = tuple(
        sorted({e.id for e in await store.list_entities()} | {f'{d.id}-0' for d in await store.list_documents()})
    )
    nodes = await store.graph_nodes(NodeRequest(ids, scope))
    walked = await walk(store, WalkRequest(seeds=ids, hops=2, max_nodes=200, filter=scope))
    rag = ToolishRag(store, name='kb').with_metadata_filter(scope)
    context = (await rag.run_tool('graph_context', {'ids': list(ids), 'hops': 2})).return_value
    hits = (await rag.run_tool('hybrid_search', {'query': 'Acme Globex Falcon widgets'})).return_value
    hits = str(hits).replace('Acme Globex Falcon widgets', '<query>')  # the answer names the query it ran
    return '\n'.join(
        [
            *(f'{n.title} {n.text}' for n in nodes),
            *(f'{w.node.title} {w.node.text}' for w in walked.nodes),
            *(f'{e.type} {e.provenance}' for e in walked.edges),
            str(context),
            str(hits),
        ]
    )


async def test_nothing_read_from_an_excluded_document_shows_under_a_negative_predicate() -> None:
    """A secret board minute next to a public newsletter, in one tenant: nothing read from the minute shows.

    Under ``tenant == 'a' and classification != 'secret'`` nothing the model read from the minute
    may show: not its entities, their descriptions, nor the ACQUIRES edge. Derived records that
    carried only a tenant key matched ``!= 'secret'`` by lacking the key.
    """
    store = _store()
    await store.upsert(
        [
            _doc('a-board', 'Project Falcon: Acme will buy Globex in Q3.', tenant='a', classification='secret'),
            _doc('b-news', 'Acme sells widgets to everyone.', tenant='a', classification='public'),
        ]
    )
    report = (await build_graph(store, ExtractionBuilder(Script(FALCON).model)))[0]
    assert (report.model_calls, report.failures) == (2, ())

    tenant_only = await _seen(store, F.eq('tenant', 'a'))
    assert all(word in tenant_only for word in SECRET_WORDS)  # the secret is there to leak
    public = await _seen(store, F.eq('tenant', 'a') & F.ne('classification', 'secret'))
    assert 'Acme sells widgets.' in public  # the public document's entity is still seen
    assert [word for word in SECRET_WORDS if word in public] == []

    acmes = [e for e in await store.list_entities() if e.name == 'Acme']
    assert sorted(str(e.metadata['classification']) for e in acmes) == ['public', 'secret']  # never merged
    chunks = {f'{d}-0': c for d, c in (('a-board', 'secret'), ('b-news', 'public'))}
    for r in await store.list_relations(origin='extract'):
        assert r.metadata['classification'] == chunks[r.provenance]  # type: ignore[index]


async def test_a_label_scope_hides_entities_of_excluded_documents_too() -> None:
    store = _store()
    board = DocumentBuilder('file:///a/board.md', 'Board', id='a-board', metadata={'tenant': 'a'}, labels={'Secret'})
    board.add_chunk(None, 'Project Falcon: Acme will buy Globex in Q3.')
    await store.upsert([board.build(), _doc('b-news', 'Acme sells widgets to everyone.', tenant='a')])
    (await build_graph(store, ExtractionBuilder(Script(FALCON).model)))[0]
    tenant_only = await _seen(store, F.eq('tenant', 'a'))
    assert all(word in tenant_only for word in SECRET_WORDS)
    public = await _seen(store, F.eq('tenant', 'a') & ~EntityFilter.has_any_label('Secret'))
    assert 'Acme sells widgets.' in public and [w for w in SECRET_WORDS if w in public] == []


def _ingested(root: Path, name: str, text: str, **metadata: str) -> Document:
    """``text`` as a file under ``root``, read by ingestion's own `parse_path` (its per-file keys included)."""
    path = root / name
    path.write_text(text, encoding='utf-8')
    return parse_path(path, metadata=dict(metadata))


async def test_files_differing_only_in_per_file_keys_merge_and_list_every_path(tmp_path: Path) -> None:
    one = _ingested(tmp_path, 'one.md', 'Alice builds anvils.\n', tenant='a')
    two = _ingested(tmp_path, 'two.md', 'Bob sells them.\n', tenant='a')
    assert set(one.chunks[0].metadata) - {'tenant'} <= set(DEFAULT_MERGE_ACROSS)  # ingestion adds nothing else
    store = _store()
    await store.upsert([one, two])
    builder = ExtractionBuilder(Script(ACME).model)
    await build_graph(store, builder)
    acme = next(e for e in await store.list_entities() if normalise_name(e.name) == 'acme corp')
    assert acme.metadata['tenant'] == 'a'
    assert acme.metadata['path'] == ['one.md', 'two.md']  # one node, both sources listed
    assert acme.metadata['uri'] == sorted([one.uri, two.uri])
    assert acme.metadata['source_format'] == ['markdown']

    # A negative predicate on a merged key hides the entity as soon as one source is excluded.
    assert not matches(F.ne('path', 'two.md'), acme) and not matches(F.nin('path', ['two.md', 'x.md']), acme)
    assert not matches(~F.eq('path', 'one.md'), acme) and matches(F.ne('path', 'three.md'), acme)
    assert acme.name not in await _seen(store, F.ne('path', 'two.md'))
    assert acme.name in await _seen(store, F.ne('path', 'three.md'))

    again = await builder.build(store)
    assert (again.writes, again.model_calls) == (0, 0)  # idempotent
    await store.upsert([one])  # re-ingested unchanged: rebuilt from the cache, the entity as it was
    rebuilt = await builder.build(store)
    assert (rebuilt.documents_built, rebuilt.entities_written, rebuilt.model_calls) == (1, 0, 0)

    # A third file mentioning it later: merged with the stored entity, the lists unioned.
    await store.upsert([_ingested(tmp_path, 'three.md', 'Alice again.\n', tenant='a')])
    await builder.build(store)
    acme = next(e for e in await store.list_entities() if normalise_name(e.name) == 'acme corp')
    assert acme.metadata['path'] == ['one.md', 'three.md', 'two.md']
    assert (await builder.build(store)).writes == 0


async def test_files_of_other_metadata_or_merge_across_nothing_stay_apart(tmp_path: Path) -> None:
    store = _store()
    await store.upsert(
        [
            _ingested(tmp_path, 'one.md', 'Alice builds anvils.\n', tenant='a', team='x'),
            _ingested(tmp_path, 'two.md', 'Bob sells them.\n', tenant='a', team='y'),
        ]
    )
    (await build_graph(store, ExtractionBuilder(Script(ACME).model)))[0]
    acmes = [e for e in await store.list_entities() if normalise_name(e.name) == 'acme corp']
    assert sorted(str(e.metadata['team']) for e in acmes) == ['x', 'y']  # any other key keeps them apart
    assert sorted(str(e.metadata['path']) for e in acmes) == ["['one.md']", "['two.md']"]

    store = _store()
    await store.upsert([_ingested(tmp_path, 'one.md', 'Alice.\n'), _ingested(tmp_path, 'two.md', 'Bob.\n')])
    (await build_graph(store, ExtractionBuilder(Script(ACME).model, merge_across=())))[0]
    acmes = [e for e in await store.list_entities() if normalise_name(e.name) == 'acme corp']
    assert sorted(str(e.metadata['path']) for e in acmes) == ['one.md', 'two.md']  # one node per file
