"""LanceDBStore as a graph store: equal to the reference on random graphs, and its tables kept in step.

The conformance kit (`toolish_rag.testing.graph_contract`) checks one hand-built corpus; these
tests add what is particular to LanceDB: random graphs under pushed-down and Python-evaluated
filters, hops that read several pages of relations, the order of the commits around a
document's replacement (a crash at each of them), a reopen, and a directory written before the
graph tables existed.
"""

from __future__ import annotations

import asyncio
import itertools
import pathlib
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import lancedb
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from toolish_rag.builder import DocumentBuilder
from toolish_rag.content import Chunk, Document, Entity, NodeKind, Relation
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.errors import UnsupportedValueError
from toolish_rag.filters import EntityFilter, Filter, PropertyFilter as F, and_, not_, or_
from toolish_rag.graph import Direction, NeighbourRequest, Neighbours, NodeRequest
from toolish_rag.graph.reference import reference_neighbours, reference_nodes
from toolish_rag_lancedb import LanceDBStore
from toolish_rag_lancedb._graph import PAGE_MIN
from toolish_rag_lancedb._writes import CommitStep

TENANTS = ('acme', 'globex')
TYPES = ('MENTIONS', 'PART_OF', 'LINKS_TO')
DIRECTIONS: tuple[Direction, ...] = ('out', 'in', 'both')
UNTRANSLATABLE = F.eq('code', 'no\x00literal')
"""No SQL literal carries a NUL: a filter holding this value is decided in Python."""

FILTERS: tuple[Filter | None, ...] = (
    None,
    F.eq('tenant', 'acme'),
    and_(F.eq('tenant', 'acme'), F.gte('year', 2021)),
    or_(EntityFilter.has_any_label('red'), F.eq('tenant', 'globex')),
    and_(F.eq('tenant', 'acme'), not_(UNTRANSLATABLE)),  # pushed down in part, decided in Python
    or_(F.eq('tenant', 'globex'), UNTRANSLATABLE),  # nothing to push down
)


def _store(path: pathlib.Path) -> LanceDBStore:
    return LanceDBStore(path, embedder=HashingEmbeddingModel(32))


@pytest.fixture
def runner() -> Iterator[asyncio.Runner]:
    with asyncio.Runner() as r:
        yield r


# -- random graphs ---------------------------------------------------------------------------------


@st.composite
def _documents(draw: st.DrawFn) -> list[Document]:
    docs = []
    for d in range(draw(st.integers(1, 3))):
        tenant = draw(st.sampled_from(TENANTS))
        labels = draw(st.sets(st.sampled_from(['red', 'blue']), max_size=1))
        b = DocumentBuilder(f'file:///d{d}.md', f'Doc {d}', metadata={'tenant': tenant}, labels=labels)
        sections: list[str | None] = [None]
        for s in range(draw(st.integers(0, 2))):
            sections.append(b.section(f'S{s}', draw(st.sampled_from(sections))))
        for c in range(draw(st.integers(1, 4))):
            metadata = {'tenant': draw(st.sampled_from(TENANTS)), 'year': draw(st.sampled_from([2020, 2022]))}
            b.add_chunk(draw(st.sampled_from(sections)), f'text {d} {c}', metadata=metadata)
        docs.append(b.build())
    return docs


def _nodes(docs: Sequence[Document], entities: Sequence[Entity]) -> list[tuple[str, NodeKind]]:
    """Every node of the records, plus ids of no node and ids under a wrong kind."""
    nodes: list[tuple[str, NodeKind]] = [(e.id, 'entity') for e in entities]
    for doc in docs:
        nodes.append((doc.id, 'document'))
        nodes += [(s.id, 'section') for s in doc.sections]
        nodes += [(c.id, 'chunk') for c in doc.chunks]
    return [*nodes, ('ghost', 'chunk'), ('ghost', 'entity'), (docs[0].id, 'chunk'), (docs[0].chunks[0].id, 'entity')]


@st.composite
def _graphs(draw: st.DrawFn) -> tuple[list[Document], list[Entity], list[Relation]]:
    docs = draw(_documents())
    entities = [
        Entity(
            id=f'e{i}',
            name=f'Entity {i}',
            metadata={'tenant': draw(st.sampled_from(TENANTS))},
            labels=draw(st.sets(st.sampled_from(['red', 'blue']), max_size=1)),
        )
        for i in range(draw(st.integers(0, 3)))
    ]
    nodes = _nodes(docs, entities)
    relations = []
    for _ in range(draw(st.integers(4, 20))):
        (source, source_kind), (target, target_kind) = draw(st.sampled_from(nodes)), draw(st.sampled_from(nodes))
        metadata: dict[str, Any] = draw(st.sampled_from([{}, {'tenant': 'acme'}, {'tenant': 'globex', 'year': 2022}]))
        relations.append(
            Relation(
                source=source,
                source_kind=source_kind,
                target=target,
                target_kind=target_kind,
                type=draw(st.sampled_from(TYPES)),
                metadata=metadata,
                labels=draw(st.sets(st.sampled_from(['red']), max_size=1)),
                document_id=draw(st.sampled_from([None, *(d.id for d in docs)])),
                origin=draw(st.sampled_from(['', 'x'])),
            )
        )
    return docs, entities, relations


_REQUEST = st.tuples(
    st.sampled_from(FILTERS),
    st.sampled_from(DIRECTIONS),
    st.one_of(st.none(), st.sets(st.sampled_from([*TYPES, 'NO\x00TYPE']), max_size=2).map(frozenset)),
    st.sampled_from((1, 2, 4)),
)


def _records(docs: Sequence[Document], entities: Sequence[Entity]) -> list[Chunk | Entity]:
    return [*(c for d in docs for c in d.chunks), *entities]


def test_random_graphs_answer_like_the_reference(tmp_path: pathlib.Path, runner: asyncio.Runner) -> None:
    """Nodes and hops equal the reference on random graphs, under every filter in `FILTERS`.

    Ids of every kind, missing ones, ones under a wrong kind and one no SQL literal carries;
    relations between any of them (self-loops, duplicates, foreign endpoints, metadata of either
    tenant or none). Few graphs (each is a store to write), several requests on each.
    """
    seen: Counter[str] = Counter()
    stores = itertools.count()

    @settings(max_examples=10, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    @given(graph=_graphs(), data=st.data())
    def one(graph: tuple[list[Document], list[Entity], list[Relation]], data: st.DataObject) -> None:
        docs, entities, relations = graph
        store = _store(tmp_path / f'kb{next(stores)}')
        runner.run(store.upsert([*docs, *entities, *relations]))
        records = _records(docs, entities)
        ids = [node_id for node_id, _ in _nodes(docs, entities)] + ['no\x00literal']
        ends = [node_id for r in relations for node_id in (r.source, r.target)] or ids  # (ids with edges, often)
        for _ in range(8):
            f, direction, edge_types, limit = data.draw(_REQUEST)
            asked = tuple(data.draw(st.lists(st.sampled_from(ids) | st.sampled_from(ends), min_size=1, max_size=4)))
            nodes = NodeRequest(asked, f)
            want_nodes = reference_nodes(records, nodes)
            assert runner.run(store.graph_nodes(nodes)) == want_nodes, nodes
            hop = NeighbourRequest(asked, direction, edge_types, f, limit)
            want = reference_neighbours(records, relations, hop)
            assert runner.run(store.neighbours(hop)) == want, hop
            seen['nodes'] += bool(want_nodes)
            seen['edges'] += bool(want.edges)
            seen['truncated'] += want.truncated
            seen['python'] += bool(want.edges) and f is not None and not store.supports_filter(f)
        whole = NeighbourRequest(tuple(ends), 'both', None, None, 2)  # a hop over every edge, cut
        want = reference_neighbours(records, relations, whole)
        assert runner.run(store.neighbours(whole)) == want, whole
        seen['truncated'] += want.truncated

    one()
    # Not vacuous: the requests found nodes and edges, cut hops, and decided filters in Python.
    assert seen['nodes'] >= 20 and seen['edges'] >= 10 and seen['truncated'] >= 5 and seen['python'] >= 1, seen


# -- fixed graphs ----------------------------------------------------------------------------------


def _document(name: str, tenants: Sequence[str], *, fingerprint: str = 'v1') -> Document:
    b = DocumentBuilder(f'file:///{name}.md', name.title(), metadata={'tenant': 'acme'}, fingerprint=fingerprint)
    section = b.section('Body')
    for i, tenant in enumerate(tenants):
        b.add_chunk(section, f'{name} {fingerprint} part {i}', metadata={'tenant': tenant})
    return b.build()


def _mention(chunk: Chunk, entity: str, *, origin: str = 'exact', **extra: Any) -> Relation:
    return Relation(
        source=chunk.id,
        source_kind='chunk',
        target=entity,
        target_kind='entity',
        type='MENTIONS',
        provenance=chunk.id,
        document_id=chunk.document_id,
        origin=origin,
        **extra,
    )


async def test_a_hop_reads_pages_until_limit_plus_one_edges_qualify(tmp_path: pathlib.Path) -> None:
    """The first ~2.5 pages of a hub's edges lead out of scope; the in-scope ones come after, ids not ASCII."""
    store = _store(tmp_path / 'kb')
    acme = [Entity(id=f'a{i}', name=f'A{i}', metadata={'tenant': 'acme'}) for i in range(4)]
    hub = Entity(id='hub', name='Hub', metadata={'tenant': 'acme'})
    foreign = Entity(id='foreign', name='Foreign', metadata={'tenant': 'globex'})

    def edge(relation_id: str, target: str) -> Relation:
        return Relation(
            id=relation_id,
            source='hub',
            source_kind='entity',
            target=target,
            target_kind='entity',
            type='LINKS_TO',
            metadata={'tenant': 'acme'},  # every relation is in scope: its far endpoint decides
        )

    relations = [edge(f'r{i:04d}', 'foreign') for i in range(PAGE_MIN * 5 // 2)]
    relations += [edge(f'r{suffix}', a.id) for suffix, a in zip(['z', 'é', '\U0001d538', 'ÿ'], acme, strict=True)]
    await store.upsert([hub, foreign, *acme, *relations])
    records = [hub, foreign, *acme]
    scope = F.eq('tenant', 'acme')
    for limit in (1, 3, 4, 5):
        request = NeighbourRequest(('hub',), 'out', None, scope, limit)
        got = await store.neighbours(request)
        assert got == reference_neighbours(records, relations, request)
        assert got.truncated == (limit < 4) and len(got.edges) == min(limit, 4)
    unscoped = await store.neighbours(NeighbourRequest(('hub',), 'out', None, None, 3))
    assert [e.id for e in unscoped.edges] == ['r0000', 'r0001', 'r0002'] and unscoped.truncated


async def test_an_untranslatable_filter_is_decided_in_python(tmp_path: pathlib.Path) -> None:
    store = _store(tmp_path / 'kb')
    doc = _document('guide', ['acme', 'globex', 'acme'])
    entity = Entity(id='acme-co', name='Acme', metadata={'tenant': 'acme'})
    relations = [_mention(c, entity.id, metadata={'tenant': c.metadata['tenant']}) for c in doc.chunks]
    await store.upsert([doc, entity, *relations])
    scope = and_(F.eq('tenant', 'acme'), not_(UNTRANSLATABLE))
    assert not store.supports_filter(scope)
    request = NeighbourRequest((entity.id,), 'in', frozenset({'MENTIONS'}), scope, 10)
    got = await store.neighbours(request)
    assert got == reference_neighbours([*doc.chunks, entity], relations, request)
    assert {n.id for n in got.nodes} == {doc.chunks[0].id, doc.chunks[2].id}  # not vacuous: one was dropped
    nodes = NodeRequest((doc.id, doc.sections[0].id, doc.chunks[1].id), scope)
    assert [n.id for n in await store.graph_nodes(nodes)] == [doc.id, doc.sections[0].id]


async def test_replacing_or_deleting_a_document_replaces_its_graph(tmp_path: pathlib.Path) -> None:
    store = _store(tmp_path / 'kb')
    doc, other = _document('guide', ['acme', 'acme']), _document('other', ['acme'])
    entity = Entity(id='acme-co', name='Acme', metadata={'tenant': 'acme'})
    standalone = Relation(
        source=other.id, source_kind='document', target=entity.id, target_kind='entity', type='LINKS_TO'
    )
    owned = [_mention(c, entity.id) for c in doc.chunks]
    kept = _mention(other.chunks[0], entity.id)
    await store.upsert([doc, other, entity, standalone, kept, *owned])
    await store.set_graph_marks('exact', {doc.id: 'fp1', other.id: 'fp2', 'names': 'dict'})
    await store.set_graph_marks('vector', {doc.id: 'fp3'})

    new = _document('guide', ['acme'], fingerprint='v2')
    rebuilt = _mention(new.chunks[0], entity.id, origin='structure')
    await store.upsert([rebuilt, new])  # a relation of the batch is written after the document's are removed
    assert await store.list_relations(document_ids=[doc.id]) == [rebuilt]
    assert await store.list_relations() == sorted([rebuilt, kept, standalone], key=lambda r: r.id)
    assert await store.list_relations(origin='exact') == [kept]
    assert await store.graph_marks('exact') == {other.id: 'fp2', 'names': 'dict'}
    assert await store.graph_marks('vector') == {}

    await store.delete_documents([new.id])
    assert await store.list_relations() == sorted([kept, standalone], key=lambda r: r.id)
    hop = await store.neighbours(NeighbourRequest((entity.id,), 'in'))
    assert [e.id for e in hop.edges] == sorted([kept.id, standalone.id])
    assert await store.delete_relations([kept.id, 'missing', kept.id]) == 1
    assert await store.list_relations() == [standalone]
    await store.set_graph_marks('exact', {'names': None, other.id: 'fp4'})
    assert await store.graph_marks('exact') == {other.id: 'fp4'}


class CrashingStore(LanceDBStore):
    """Dies just before one commit of an upsert, as a kill there would leave the tables."""

    crash: CommitStep | None = None

    async def before_commit(self, step: CommitStep) -> None:
        if step == self.crash:
            raise KeyboardInterrupt(f'killed before the {step} commit')


@pytest.mark.parametrize('crash', ['unlink-graph', 'records', 'final-documents', 'relations'])
async def test_a_crash_never_shows_a_replaced_documents_old_relations(
    tmp_path: pathlib.Path, crash: CommitStep
) -> None:
    path = tmp_path / 'kb'
    old, entity = _document('guide', ['acme', 'acme']), Entity(id='acme-co', name='Acme')
    await _store(path).upsert([old, entity, *(_mention(c, entity.id) for c in old.chunks)])
    await _store(path).set_graph_marks('exact', {old.id: 'old'})
    new = _document('guide', ['acme', 'acme', 'acme'], fingerprint='v2')
    new_relations = [_mention(c, entity.id, origin='v2') for c in new.chunks]
    crashing = CrashingStore(path, embedder=HashingEmbeddingModel(32))
    crashing.crash = crash
    with pytest.raises(KeyboardInterrupt):
        await crashing.upsert([new, *new_relations])

    reader = _store(path)
    stored = await reader.get_document(old.id)
    assert stored is not None
    relations = await reader.list_relations()
    if crash == 'unlink-graph':  # nothing happened yet
        assert stored.fingerprint == 'v1' and {r.origin for r in relations} == {'exact'}
        assert await reader.graph_marks('exact') == {old.id: 'old'}
    else:  # the old relations and marks went first, whichever version of the chunks stands
        assert relations == [] and await reader.graph_marks('exact') == {}
        assert stored.fingerprint == ('v1' if crash == 'records' else 'v2')
    await _store(path).upsert([new, *new_relations])  # re-running the write completes it
    assert await _store(path).list_relations() == sorted(new_relations, key=lambda r: r.id)


async def test_a_reopened_store_holds_the_same_graph(tmp_path: pathlib.Path) -> None:
    path = tmp_path / 'kb'
    doc = _document('guide', ['acme', 'globex'])
    entity = Entity(id='acme-co', name='Acme', metadata={'tenant': 'acme'}, labels={'org'})
    relations = [_mention(c, entity.id, weight=0.5, metadata={'tenant': 'acme', 'tags': ['a', 1]}) for c in doc.chunks]
    first = _store(path)
    await first.upsert([doc, entity, *relations])
    await first.set_graph_marks('exact', {doc.id: 'fp', 'k': 'v'})
    request = NeighbourRequest((entity.id,), 'both', None, F.eq('tenant', 'acme'), 10)
    before = await first.neighbours(request)
    await first.aclose()
    reopened = _store(path)
    assert await reopened.list_relations() == sorted(relations, key=lambda r: r.id)
    assert await reopened.graph_marks('exact') == {doc.id: 'fp', 'k': 'v'}
    assert await reopened.list_entities() == [entity]
    assert (
        await reopened.neighbours(request) == before == reference_neighbours([*doc.chunks, entity], relations, request)
    )
    assert len(before.edges) == 1


async def test_a_store_written_before_the_graph_tables_opens_and_grows_them(tmp_path: pathlib.Path) -> None:
    path = tmp_path / 'kb'
    doc = _document('guide', ['acme'])
    await _store(path).upsert([doc])
    assert set((await (await lancedb.connect_async(path)).list_tables()).tables) == {'records', 'documents'}
    old = _store(path)
    assert await old.neighbours(NeighbourRequest((doc.id, doc.chunks[0].id))) == Neighbours(edges=(), nodes=())
    assert [n.kind for n in await old.graph_nodes(NodeRequest((doc.id,)))] == ['document']
    assert await old.list_relations() == [] and await old.graph_marks('exact') == {}
    assert await old.delete_relations(['r']) == 0
    await old.upsert([_document('guide', ['acme', 'acme'], fingerprint='v2')])  # no graph table to unlink from
    part_of = Relation(
        source=doc.chunks[0].id, source_kind='chunk', target=doc.id, target_kind='document', type='PART_OF'
    )
    await old.upsert([part_of])
    assert (await old.neighbours(NeighbourRequest((doc.id,), 'in'))).edges == (part_of,)
    assert 'relations' in (await (await lancedb.connect_async(path)).list_tables()).tables


async def test_a_writer_unlinks_relations_another_store_object_wrote(tmp_path: pathlib.Path) -> None:
    path = tmp_path / 'kb'
    doc = _document('guide', ['acme'])
    writer = _store(path)
    await writer.upsert([doc])  # connected before any graph table exists
    await _store(path).upsert([_mention(doc.chunks[0], 'e')])
    await writer.upsert([_document('guide', ['acme'], fingerprint='v2')])
    assert await _store(path).list_relations() == []


async def test_unstorable_relations_are_refused_before_anything_is_written(tmp_path: pathlib.Path) -> None:
    store = _store(tmp_path / 'kb')
    doc = _document('guide', ['acme'])
    huge = _mention(doc.chunks[0], 'e', metadata={'n': [1, 2**70]})
    with pytest.raises(UnsupportedValueError, match="metadata 'n'") as refused:
        await store.upsert([doc, huge])
    assert refused.value.key == 'n'
    nul = Relation(source='a\x00b', source_kind='chunk', target='e', target_kind='entity', type='MENTIONS')
    with pytest.raises(UnsupportedValueError, match='source'):
        await store.upsert([nul])
    assert await store.list_documents() == [] and await store.list_relations() == []
