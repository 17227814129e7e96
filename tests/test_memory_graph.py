"""InMemoryStore as a graph store: reads match the reference, writes keep the graph's contract.

* ``graph_nodes`` and ``neighbours`` equal `toolish_rag.graph.reference` on random graphs (random
  corpora, relations between every kind of node and missing ones, wrong kinds, two tenants), with
  and without a filter, with the filter's mask cached by a search or not;
* a document takes its relations and ledger keys along when it is replaced or deleted; relations
  of the same batch are written after the removal;
* relations and marks survive a reload with their types; a store saved before the graph loads empty;
* a write of relations or marks alone embeds nothing, rebuilds no BM25 index and keeps the vectors;
* a reader running beside a writer sees one version of the graph, never a mix.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from pydantic_ai.embeddings import EmbeddingResult, EmbeddingSettings
from pydantic_ai.embeddings.result import EmbedInputType

from toolish_rag import DocumentBuilder, Entity, SearchRequest
from toolish_rag.content import Chunk, Document, NodeKind, Relation
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.filters import Eq, Filter, HasAnyLabel, Not
from toolish_rag.graph.model import GraphNode, NeighbourRequest, Neighbours, NodeRequest
from toolish_rag.graph.reference import reference_neighbours, reference_nodes
from toolish_rag.protocols import GraphSearch, GraphStore, StoreFeatures
from toolish_rag.stores import InMemoryStore
from toolish_rag.stores.memory import _snapshot

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TENANTS = ['a', 'b']
TYPES = ['MENTIONS', 'PART_OF', 'LINKS_TO']
FILTERS: list[Filter | None] = [
    None,
    Eq(key='tenant', value='a'),
    Not(filter=Eq(key='tenant', value='a')),
    HasAnyLabel(labels=frozenset({'L1'})),
]


class CountingHashing(HashingEmbeddingModel):
    """The real hashing embedder, counting the texts it is asked to embed."""

    def __init__(self) -> None:
        super().__init__(16)
        self.embedded = 0

    async def embed(
        self, inputs: str | Sequence[str], *, input_type: EmbedInputType, settings: EmbeddingSettings | None = None
    ) -> EmbeddingResult:
        result = await super().embed(inputs, input_type=input_type, settings=settings)
        self.embedded += len(result.inputs)
        return result


def _document(d: int, tenants: Sequence[str | None], *, label: str = 'L1', version: int = 0) -> Document:
    b = DocumentBuilder(f'file:///doc{d}.md', f'Doc {d}', labels=[label] if label else [])
    sections: list[str | None] = [None, b.section('Top')]
    sections.append(b.section('Inner', parent=sections[1]))
    for i, tenant in enumerate(tenants):
        b.add_chunk(sections[i % 3], f'chunk {i} of doc {d} version {version}', metadata={'tenant': tenant})
    return b.build()


def _all_records(store: InMemoryStore) -> list[Chunk | Entity]:
    return list(store._snapshot.records)  # the records the store holds, for the oracle


# -- reads equal the reference ---------------------------------------------------------------------


@st.composite
def graphs(draw: st.DrawFn) -> tuple[list[Document], list[Entity], list[Relation]]:
    docs = [
        _document(
            d,
            draw(st.lists(st.sampled_from([*TENANTS, None]), min_size=1, max_size=5)),
            label=draw(st.sampled_from(['L1', 'L2', ''])),
        )
        for d in range(draw(st.integers(1, 3)))
    ]
    entities = [
        Entity(id=f'e{i}', name=f'Entity {i}', metadata={'tenant': draw(st.sampled_from(TENANTS))})
        for i in range(draw(st.integers(0, 3)))
    ]
    if draw(st.booleans()):  # an entity named like a document: one id, two kinds of node
        entities.append(Entity(id=docs[0].id, name='Twin', metadata={'tenant': draw(st.sampled_from(TENANTS))}))
    nodes: list[tuple[str, NodeKind]] = [(c.id, 'chunk') for d in docs for c in d.chunks]
    nodes += [(s.id, 'section') for d in docs for s in d.sections]
    nodes += [(d.id, 'document') for d in docs]
    nodes += [(e.id, 'entity') for e in entities]
    nodes += [('missing', 'entity'), (docs[0].chunks[0].id, 'entity')]  # absent, and a wrong kind
    endpoints = st.sampled_from(nodes)
    relations = []
    for _ in range(draw(st.integers(0, 25))):
        (source, source_kind), (target, target_kind) = draw(endpoints), draw(endpoints)
        relations.append(
            Relation(
                source=source,
                source_kind=source_kind,
                target=target,
                target_kind=target_kind,
                type=draw(st.sampled_from(TYPES)),
                metadata={'tenant': draw(st.sampled_from(TENANTS))},
                labels=frozenset({'L1'}) if draw(st.booleans()) else frozenset(),
                provenance=draw(st.sampled_from([None, 'p1', 'p2'])),
            )
        )
    return docs, entities, relations


@SETTINGS
@given(graph=graphs(), data=st.data())
def test_graph_reads_equal_the_reference(
    graph: tuple[list[Document], list[Entity], list[Relation]], data: st.DataObject
) -> None:
    docs, entities, relations = graph
    ids = [*(c.id for d in docs for c in d.chunks), *(s.id for d in docs for s in d.sections)]
    ids += [*(d.id for d in docs), *(e.id for e in entities), 'missing']

    async def run() -> None:
        store = InMemoryStore(HashingEmbeddingModel(16))
        await store.upsert([*docs, *entities, *relations])
        records = _all_records(store)
        stored = await store.list_relations()
        for _ in range(4):
            f = data.draw(st.sampled_from(FILTERS))
            if f is not None and data.draw(st.booleans()):  # a search builds (and caches) the filter's mask
                await store.vector_search(SearchRequest(query='chunk', top_k=1, filter=f))
            wanted = tuple(data.draw(st.lists(st.sampled_from(ids), min_size=1, max_size=6)))
            nodes = await store.graph_nodes(NodeRequest(wanted, f))
            assert sorted(nodes, key=lambda n: n.id) == reference_nodes(records, NodeRequest(wanted, f))
            request = NeighbourRequest(
                wanted,
                direction=data.draw(st.sampled_from(['out', 'in', 'both'])),
                edge_types=data.draw(st.none() | st.frozensets(st.sampled_from(TYPES), min_size=1)),
                filter=f,
                limit=data.draw(st.integers(1, 8)),
            )
            assert await store.neighbours(request) == reference_neighbours(records, stored, request)

    asyncio.run(run())


async def test_scope_hides_foreign_nodes_and_their_edges_from_counts() -> None:
    """Hand-built: tenant b's chunk, its edges and the section holding only b's chunks are invisible to a."""
    doc = _document(0, ['a', 'b', 'b'])  # chunk 0 -> no section, 1 -> Top, 2 -> Top > Inner
    hub = Entity(id='hub', name='Hub', metadata={'tenant': 'a'})
    a_chunk, b_chunk, inner = doc.chunks[0], doc.chunks[1], doc.chunks[2].section_id
    mine = {'tenant': 'a'}  # the edges are a's: only their endpoints can hide them
    assert inner is not None
    edges = [
        Relation(source=c.id, source_kind='chunk', target='hub', target_kind='entity', type='MENTIONS', metadata=mine)
        for c in doc.chunks
    ] + [
        Relation(source='hub', source_kind='entity', target='hub', target_kind='entity', type='SAME_AS', metadata=mine)
    ]
    store = InMemoryStore(HashingEmbeddingModel(16))
    await store.upsert([doc, hub, *edges])
    a = Eq(key='tenant', value='a')

    nodes = await store.graph_nodes(NodeRequest((a_chunk.id, b_chunk.id, inner, doc.id, 'hub', 'nowhere'), a))
    assert {n.id for n in nodes} == {a_chunk.id, doc.id, 'hub'}
    assert next(n for n in nodes if n.id == doc.id) == GraphNode.of_document(a_chunk)

    found = await store.neighbours(NeighbourRequest(('hub',), direction='in', filter=a, limit=2))
    assert found.edges == tuple(sorted([edges[0], edges[3]], key=lambda e: e.id))
    assert found.nodes == (GraphNode.of_chunk(a_chunk),)  # the self-loop adds no node
    assert not found.truncated  # two in-scope edges fit in two: the foreign ones are not counted

    everyone = await store.neighbours(NeighbourRequest(('hub',), direction='in', limit=2))
    assert everyone.truncated and len(everyone.edges) == 2


# -- writes --------------------------------------------------------------------------------------


def _rel(source: str, target: str, *, doc: str | None = None, origin: str = '', **metadata: Any) -> Relation:
    return Relation(
        source=source,
        source_kind='entity',
        target=target,
        target_kind='entity',
        type='LINKS_TO',
        document_id=doc,
        origin=origin,
        metadata=metadata,
    )


async def test_a_document_takes_its_relations_and_ledger_keys_along() -> None:
    d0, d1 = _document(0, ['a']), _document(1, ['a'])
    own0, own1, free = _rel('x', 'y', doc=d0.id, origin='exact'), _rel('y', 'z', doc=d1.id), _rel('z', 'x')
    store = InMemoryStore(HashingEmbeddingModel(16))
    assert isinstance(store, GraphSearch) and isinstance(store, GraphStore) and StoreFeatures.of(store).graph
    await store.upsert([d0, d1, own0, own1, free])
    await store.set_graph_marks('exact', {d0.id: 'f0', d1.id: 'f1', 'names': 'n'})
    await store.set_graph_marks('extract', {d0.id: 'g0'})

    rebuilt = _rel('x', 'q', doc=d0.id, origin='exact')
    await store.upsert([_document(0, ['a'], version=1), rebuilt])  # the batch's relation survives the removal
    assert {r.id for r in await store.list_relations()} == {rebuilt.id, own1.id, free.id}
    assert await store.graph_marks('exact') == {d1.id: 'f1', 'names': 'n'}
    assert await store.graph_marks('extract') == {}

    assert await store.delete_documents([d1.id]) == 1
    assert {r.id for r in await store.list_relations()} == {rebuilt.id, free.id}
    assert await store.graph_marks('exact') == {'names': 'n'}

    await store.upsert([Entity(id='x', name='X', metadata={})])  # entities own no relations and no ledger keys
    assert {r.id for r in await store.list_relations()} == {rebuilt.id, free.id}


async def test_listing_deleting_relations_and_the_ledger() -> None:
    d0 = _document(0, ['a'])
    rels = [
        _rel('a', 'b', doc=d0.id, origin='exact'),
        _rel('a', 'c', doc=d0.id, origin='vector'),
        _rel('b', 'c', origin='exact'),
        _rel('c', 'a'),
    ]
    store = InMemoryStore(HashingEmbeddingModel(16))
    await store.upsert([d0, *rels, Entity(id='b', name='B', metadata={}), Entity(id='a', name='A', metadata={})])

    listed = await store.list_relations()
    assert [r.id for r in listed] == sorted(r.id for r in rels)
    assert {r.id for r in await store.list_relations(document_ids=[d0.id])} == {rels[0].id, rels[1].id}
    assert {r.id for r in await store.list_relations(origin='exact')} == {rels[0].id, rels[2].id}
    assert [r.id for r in await store.list_relations(document_ids=[d0.id], origin='vector')] == [rels[1].id]
    assert await store.list_relations(document_ids=[]) == []
    assert [e.id for e in await store.list_entities()] == ['a', 'b']

    changed = rels[3].model_copy(update={'weight': 0.5})
    await store.upsert([changed])  # same id: replaced
    assert next(r for r in await store.list_relations() if r.id == changed.id).weight == 0.5
    assert await store.delete_relations([rels[0].id, rels[0].id, 'unknown']) == 1
    assert len(await store.list_relations()) == 3

    await store.set_graph_marks('exact', {'k1': 'v1', 'k2': 'v2'})
    marks = await store.graph_marks('exact')
    marks['k3'] = 'mutated copy'
    await store.set_graph_marks('exact', {'k1': None, 'absent': None})
    assert await store.graph_marks('exact') == {'k2': 'v2'}
    assert await store.graph_marks('nobody') == {}
    with pytest.raises(TypeError):
        await store.set_graph_marks('exact', {'k': 3})  # type: ignore[dict-item]


async def test_relation_and_mark_writes_embed_nothing_and_keep_the_indexes(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[int] = []
    real_build = _snapshot.build_bm25

    def counted(texts: list[str], analyzer: Any, *documents: Any) -> Any:
        built.append(len(texts))
        return real_build(texts, analyzer, *documents)

    monkeypatch.setattr(_snapshot, 'build_bm25', counted)
    embedder = CountingHashing()
    store = InMemoryStore(embedder)
    docs = [_document(d, ['a', 'b']) for d in range(3)]
    await store.upsert(docs)
    await store.text_search(SearchRequest(query='chunk', top_k=3))
    embedded, rows = embedder.embedded, store._snapshot.rows
    assert built == [6] and embedded == 6

    await store.upsert([_rel('x', 'y', doc=docs[0].id), _rel('y', 'z')])
    await store.set_graph_marks('exact', {docs[0].id: 'f'})
    await store.delete_relations([_rel('y', 'z').id])
    hits = await store.text_search(SearchRequest(query='chunk', top_k=3))

    assert len(hits) == 3 and len(await store.list_relations()) == 1
    assert embedder.embedded == embedded and built == [6]  # no text embedded, no BM25 index built again
    assert store._snapshot.rows is rows  # the vector matrix is shared, not copied


async def test_a_reader_beside_a_writer_sees_one_version_of_the_graph(tmp_path: Path) -> None:
    """Each write replaces five relations at once (a document's, or the same ids with new metadata)."""
    doc = _document(0, ['a'])
    store = InMemoryStore(HashingEmbeddingModel(16), path=tmp_path)  # saving runs in a thread: writes interleave

    def batch(version: int, *, owned: bool) -> list[Relation]:
        return [
            _rel('hub', f'n{i}', doc=doc.id if owned else None, origin='o' if owned else 'free', version=version)
            for i in range(5)
        ]

    nodes = [Entity(id=name, name=name, metadata={}) for name in ['hub', 'n0', 'n1', 'n2', 'n3', 'n4']]
    await store.upsert([doc, *nodes, *batch(0, owned=True), *batch(0, owned=False)])
    done = asyncio.Event()

    async def write() -> None:
        for version in range(1, 30):
            if version % 2:
                await store.upsert([_document(0, ['a'], version=version), *batch(version, owned=True)])
            else:
                await store.upsert(batch(version, owned=False))
        done.set()

    async def read() -> int:
        reads = 0
        while not done.is_set():
            seen: Neighbours = await store.neighbours(NeighbourRequest(('hub',), direction='out'))
            by_origin: dict[str, set[Any]] = {}
            for edge in seen.edges:
                by_origin.setdefault(edge.origin, set()).add(edge.metadata['version'])
            assert len(seen.edges) == 10 and all(len(v) == 1 for v in by_origin.values()), by_origin
            reads += 1
        return reads

    _, reads = await asyncio.gather(write(), read())
    assert reads > 1


# -- persistence -----------------------------------------------------------------------------------


async def test_relations_and_marks_survive_a_reload_with_their_types(tmp_path: Path) -> None:
    doc = _document(0, ['a', 'b'])
    typed = Relation(
        source=doc.chunks[0].id,
        source_kind='chunk',
        target=doc.id,
        target_kind='document',
        type='PART_OF',
        weight=0.25,
        metadata={'count': 3, 'share': 1.0, 'flag': True, 'tags': [1, 'x', 2.5], 'tenant': 'a'},
        labels=frozenset({'L2', 'L1'}),
        provenance=doc.chunks[0].id,
        document_id=doc.id,
        origin='structure',
    )
    store = InMemoryStore(HashingEmbeddingModel(16), path=tmp_path)
    await store.upsert([doc, typed, _rel('x', 'y')])
    await store.set_graph_marks('structure', {doc.id: 'fp', 'global': 'g'})

    def segments() -> list[tuple[str, int]]:
        names = json.loads((tmp_path / (tmp_path / 'CURRENT').read_text() / 'manifest.json').read_text())['segments']
        return [(name, os.stat(tmp_path / 'segments' / name / 'records.jsonl').st_ino) for name in names]

    before = segments()
    await store.set_graph_marks('exact', {'k': 'v'})  # a graph-only version names the same record segments
    assert segments() == before

    reopened = InMemoryStore(HashingEmbeddingModel(16), path=tmp_path)
    back = {r.id: r for r in await reopened.list_relations()}
    assert back == {r.id: r for r in await store.list_relations()}
    assert {k: type(v) for k, v in back[typed.id].metadata.items()} == {k: type(v) for k, v in typed.metadata.items()}
    assert [type(v) for v in back[typed.id].metadata['tags']] == [int, str, float]  # type: ignore[union-attr]
    assert await reopened.graph_marks('structure') == {doc.id: 'fp', 'global': 'g'}
    assert await reopened.graph_marks('exact') == {'k': 'v'}
    request = NeighbourRequest((doc.id,), direction='in', filter=Eq(key='tenant', value='a'))
    assert (await reopened.neighbours(request)).edges == (typed,)
    assert len(await reopened.get_records([c.id for c in doc.chunks])) == 2


async def test_a_store_saved_before_the_graph_loads_without_relations(tmp_path: Path) -> None:
    doc = _document(0, ['a'])
    store = InMemoryStore(HashingEmbeddingModel(16), path=tmp_path)
    await store.upsert([doc, _rel('x', 'y', doc=doc.id)])
    await store.set_graph_marks('exact', {doc.id: 'fp'})
    version = tmp_path / (tmp_path / 'CURRENT').read_text()
    (version / 'relations.jsonl').unlink()  # what an older toolish-rag wrote: no graph files, no count
    (version / 'marks.json').unlink()
    manifest = json.loads((version / 'manifest.json').read_text())
    del manifest['relations']
    (version / 'manifest.json').write_text(json.dumps(manifest))

    old = InMemoryStore(HashingEmbeddingModel(16), path=tmp_path)
    assert await old.list_relations() == [] and await old.graph_marks('exact') == {}
    assert [d.id for d in await old.list_documents()] == [doc.id]
    await old.upsert([_rel('x', 'z')])  # and takes relations from then on
    assert len(await InMemoryStore(HashingEmbeddingModel(16), path=tmp_path).list_relations()) == 1
