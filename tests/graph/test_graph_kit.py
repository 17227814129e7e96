"""The conformance kit's graph checks pass on real stores and fail graph stores that leak, naming the leak.

A graph answer cannot be re-checked downstream (an edge's visibility depends on both endpoints,
``truncated`` on edges nobody sees), so only direct calls catch a leaking store. The kit runs
(with pytest's own ``pytester``, exactly as a store author's project runs it: a `StoreConformance`
subclass) against `InMemoryStore`, `LanceDBStore`, and small stores written for the purpose: each
an `InMemoryStore` behind a wrapper that breaks the graph contract in one way, the way a store's
own query could:

* `FarNodeLeakStore` checks the relation and the requested endpoint, never the far one;
* `RelationScopeLeakStore` checks both endpoints, never the relation's own metadata;
* `EarlyTruncationStore` returns the right edges but says ``truncated`` from the count before filtering;
* `EdgeTypeBlindStore` ignores ``edge_types``;
* `SectionScopeLeakStore` resolves section and document nodes without the filter;
* `RelationKeepingStore` keeps a replaced document's relations, `MarkKeepingStore` its ledger marks;
* `BatchOrderStore` writes a batch's relations before it replaces the batch's documents (so the
  document's new relations are dropped with its old ones).

`HonestGraphStore` (the same wrapper with no bug) passes, so each failure is the bug's doing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import pytest

from tests.helpers import InnerWrites
from toolish_rag import Document, Entity, matches
from toolish_rag.content import Relation
from toolish_rag.graph import MAX_EDGE_LIMIT, GraphNode, NeighbourRequest, Neighbours, NodeRequest
from toolish_rag.search import SearchHit, SearchRequest
from toolish_rag.stores import InMemoryStore

pytest_plugins = ['pytester']

GRAPH_TESTS = {
    'test_graph_honours_every_filter',
    'test_graph_nodes_of_every_kind',
    'test_graph_neighbours',
    'test_graph_walks',
    'test_graph_replacing_and_deleting_documents',
    'test_graph_relation_writes',
    'test_graph_ledger',
}
"""The kit's graph tests that run on a store that does not persist (all but the reopen test)."""

READ_TESTS = {
    'test_graph_honours_every_filter',
    'test_graph_neighbours',
    'test_graph_walks',
    'test_graph_replacing_and_deleting_documents',
    'test_graph_relation_writes',
}
"""The tests that compare one hop's answers under some scope (the write tests do too, after writing)."""

Item = Document | Entity | Relation


class HonestGraphStore(InnerWrites):
    """A graph store delegating everything, unchanged, to an `InMemoryStore`."""

    inner: InMemoryStore

    def __init__(self, inner: InMemoryStore) -> None:
        self.inner = inner

    async def upsert(self, items: Iterable[Item]) -> None:
        await self.inner.upsert(items)

    async def vector_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        return await self.inner.vector_search(request)

    async def graph_nodes(self, request: NodeRequest) -> Sequence[GraphNode]:
        return await self.inner.graph_nodes(request)

    async def neighbours(self, request: NeighbourRequest) -> Neighbours:
        return await self.inner.neighbours(request)

    async def list_relations(
        self, *, document_ids: Sequence[str] | None = None, origin: str | None = None
    ) -> Sequence[Relation]:
        return await self.inner.list_relations(document_ids=document_ids, origin=origin)

    async def delete_relations(self, ids: Iterable[str]) -> int:
        return await self.inner.delete_relations(ids)

    async def list_entities(self) -> Sequence[Entity]:
        return await self.inner.list_entities()

    async def graph_marks(self, builder: str) -> dict[str, str]:
        return await self.inner.graph_marks(builder)

    async def set_graph_marks(self, builder: str, marks: Mapping[str, str | None]) -> None:
        await self.inner.set_graph_marks(builder, marks)

    @property
    def graph_built(self) -> bool:
        return self.inner.graph_built

    async def record_graph_built(self, builders: Sequence[str]) -> None:
        await self.inner.record_graph_built(builders)

    # For the leaky stores: the unfiltered hop, and which ids are in scope.

    async def unfiltered(self, request: NeighbourRequest) -> Neighbours:
        return await self.inner.neighbours(replace(request, filter=None, limit=MAX_EDGE_LIMIT))

    async def in_scope(self, ids: Iterable[str], request: NeighbourRequest) -> set[str]:
        return {n.id for n in await self.inner.graph_nodes(NodeRequest(tuple(ids), request.filter))}


def cut(request: NeighbourRequest, edges: Sequence[Relation], nodes: Iterable[GraphNode]) -> Neighbours:
    """A hop's answer from the edges a store kept: the first ``limit``, their far nodes, ``truncated``."""
    kept = sorted(edges, key=lambda e: e.id)[: request.limit]
    ends = {i for e in kept for i in (e.source, e.target)} - set(request.ids)
    far = sorted({n.id: n for n in nodes if n.id in ends}.values(), key=lambda n: n.id)
    return Neighbours(tuple(kept), tuple(far), len(edges) > request.limit)


class FarNodeLeakStore(HonestGraphStore):
    """The relation must match and the requested endpoint be in scope; the far endpoint is never checked."""

    async def neighbours(self, request: NeighbourRequest) -> Neighbours:
        everything = await self.unfiltered(request)
        near = await self.in_scope(request.ids, request)
        edges = [e for e in everything.edges if matches(request.filter, e) and {e.source, e.target} & near]
        return cut(request, edges, everything.nodes)


class RelationScopeLeakStore(HonestGraphStore):
    """Both endpoints must be in scope; the relation's own metadata and labels are never checked."""

    async def neighbours(self, request: NeighbourRequest) -> Neighbours:
        everything = await self.unfiltered(request)
        ends = await self.in_scope({i for e in everything.edges for i in (e.source, e.target)}, request)
        edges = [e for e in everything.edges if e.source in ends and e.target in ends]
        return cut(request, edges, everything.nodes)


class EarlyTruncationStore(HonestGraphStore):
    """The right edges and nodes; ``truncated`` from the count before the filter (a count query forgetting it)."""

    async def neighbours(self, request: NeighbourRequest) -> Neighbours:
        answer = await self.inner.neighbours(request)
        before = await self.inner.neighbours(replace(request, filter=None))
        return Neighbours(answer.edges, answer.nodes, before.truncated)


class EdgeTypeBlindStore(HonestGraphStore):
    async def neighbours(self, request: NeighbourRequest) -> Neighbours:
        return await self.inner.neighbours(replace(request, edge_types=None))


class SectionScopeLeakStore(HonestGraphStore):
    """Chunks and entities resolved in scope; sections and documents whether or not a chunk of theirs is."""

    async def graph_nodes(self, request: NodeRequest) -> Sequence[GraphNode]:
        scoped = list(await self.inner.graph_nodes(request))
        found = {n.id for n in scoped}
        unscoped = await self.inner.graph_nodes(replace(request, filter=None))
        return scoped + [n for n in unscoped if n.kind in ('section', 'document') and n.id not in found]


def document_ids(items: Sequence[Item]) -> list[str]:
    return [i.id for i in items if isinstance(i, Document)]


class RelationKeepingStore(HonestGraphStore):
    """Upserting a document leaves the relations of its old version in place."""

    async def upsert(self, items: Iterable[Item]) -> None:
        batch = list(items)
        ids = document_ids(batch)
        old = list(await self.inner.list_relations(document_ids=ids)) if ids else []
        await self.inner.upsert(batch)
        await self.inner.upsert([r for r in old if r.id not in {i.id for i in batch if isinstance(i, Relation)}])


class MarkKeepingStore(HonestGraphStore):
    """Upserting or deleting a document leaves the builders' ledger marks keyed by its id."""

    def __init__(self, inner: InMemoryStore) -> None:
        super().__init__(inner)
        self.builders: set[str] = set()

    async def set_graph_marks(self, builder: str, marks: Mapping[str, str | None]) -> None:
        self.builders.add(builder)
        await self.inner.set_graph_marks(builder, marks)

    async def _keeping_marks(self, ids: Sequence[str], write: Any) -> Any:
        before = {b: await self.inner.graph_marks(b) for b in sorted(self.builders)}
        result = await write
        for builder, marks in before.items():
            await self.inner.set_graph_marks(builder, {k: v for k, v in marks.items() if k in ids})
        return result

    async def upsert(self, items: Iterable[Item]) -> None:
        batch = list(items)
        await self._keeping_marks(document_ids(batch), self.inner.upsert(batch))

    async def delete_documents(self, document_ids: Iterable[str]) -> int:
        ids = list(document_ids)
        return int(await self._keeping_marks(ids, self.inner.delete_documents(ids)))


class BatchOrderStore(HonestGraphStore):
    """Writes a batch's relations, then replaces the documents it already held: their new relations go too."""

    async def upsert(self, items: Iterable[Item]) -> None:
        batch = list(items)
        stored = {d.id for d in await self.inner.list_documents()}
        replacing = [i for i in batch if isinstance(i, Document) and i.id in stored]
        await self.inner.upsert([i for i in batch if not (isinstance(i, Document) and i.id in stored)])
        await self.inner.upsert(replacing)


def wrapped(store: type[HonestGraphStore]) -> tuple[str, str]:
    """How the generated kit test imports and makes ``store`` (around an `InMemoryStore`)."""
    return (
        f'from toolish_rag.stores import InMemoryStore\nfrom {__name__} import {store.__name__}',
        f'{store.__name__}(InMemoryStore(embedder))',
    )


class KitRun:
    """The kit's graph tests against one store: test id -> failure text, or ``None`` when it passed."""

    def __init__(self, pytester: pytest.Pytester, make: tuple[str, str], *, persistent: bool = False) -> None:
        """Run the kit's graph tests against the store ``make`` gives: (import lines, expression in ``path`` and ``embedder``)."""
        imports, expression = make
        reopen = (
            f'\n    async def reopen_store(self, path, embedder):\n        return {expression}\n' if persistent else ''
        )
        # pytest-asyncio's default (strict) mode, as a store author's project may have it.
        pytester.makeini('[pytest]\nasyncio_default_fixture_loop_scope = function\n')
        pytester.makepyfile(
            test_kit=f"""
from toolish_rag.testing import StoreConformance
{imports}


class TestKit(StoreConformance):
    async def make_store(self, path, embedder):
        return {expression}
{reopen}"""
        )
        recorder = pytester.inline_run('-p', 'no:cacheprovider', '-W', 'ignore::DeprecationWarning', '-k', 'graph')
        self.results: dict[str, str | None] = {}
        self.skipped: set[str] = set()
        for report in recorder.getreports('pytest_runtest_logreport'):
            test_id = report.nodeid.split('::')[-1]
            if report.failed:
                # The exception's message only (the kit lists each broken call there), not the source.
                crash = getattr(report.longrepr, 'reprcrash', None)
                self.results[test_id] = crash.message if crash is not None else str(report.longrepr)
            elif report.skipped:
                self.skipped.add(test_id)
            else:
                self.results.setdefault(test_id, None)
        ran = set(self.results) - self.skipped
        assert ran >= GRAPH_TESTS, f'the graph tests did not all run: {self.results}, skipped {self.skipped}'

    @property
    def failed(self) -> dict[str, str]:
        return {test_id: text for test_id, text in self.results.items() if text is not None}


def test_the_kit_passes_on_the_memory_store(pytester: pytest.Pytester) -> None:
    """Persisted, so the reopen test runs too (``tests/test_conformance_memory.py`` runs both variants)."""
    make = ('from toolish_rag.stores import InMemoryStore', 'InMemoryStore(embedder, path=path)')
    run = KitRun(pytester, make, persistent=True)
    assert run.failed == {}
    assert 'test_graph_after_reopen' in run.results and not run.skipped


@pytest.mark.slow
def test_the_kit_passes_on_lancedb(pytester: pytest.Pytester) -> None:
    """Marked slow (about 40 s) because the default run already makes exactly these calls on LanceDB:
    ``stores/lancedb/tests/test_lancedb_conformance.py`` is a `StoreConformance` subclass, graph tests
    included. Here the kit runs as a store author's project runs it, for ``pytest -m slow``."""
    make = ('from toolish_rag_lancedb import LanceDBStore', 'LanceDBStore(path, embedder=embedder)')
    run = KitRun(pytester, make, persistent=True)
    assert run.failed == {}
    assert 'test_graph_after_reopen' in run.results and not run.skipped


def test_the_honest_wrapper_passes(pytester: pytest.Pytester) -> None:
    run = KitRun(pytester, wrapped(HonestGraphStore))
    assert run.failed == {}


def test_a_store_leaking_far_nodes_fails(pytester: pytest.Pytester) -> None:
    run = KitRun(pytester, wrapped(FarNodeLeakStore))
    assert set(run.failed) == READ_TESTS
    for text in run.failed.values():
        assert 'outside the scope: nodes [' in text and 'edges to nodes outside the scope [' in text
        assert 'edges whose relation the filter rejects' not in text and 'graph_nodes(' not in text
    # acme's chunk 2 names globex's entity: under acme's scope that edge and its node are foreign.
    assert 'MENTIONS-> ent-globex' in run.failed['test_graph_neighbours']


def test_a_store_ignoring_the_relations_own_scope_fails(pytester: pytest.Pytester) -> None:
    run = KitRun(pytester, wrapped(RelationScopeLeakStore))
    assert set(run.failed) == READ_TESTS
    for text in run.failed.values():
        assert 'edges whose relation the filter rejects [' in text
        assert 'edges to nodes outside the scope' not in text and 'outside the scope: nodes' not in text
    # globex's relation between two of acme's entities.
    assert 'ent-alice -ADVISES-> ent-acme' in run.failed['test_graph_neighbours']


def test_a_store_counting_truncated_before_filtering_fails(pytester: pytest.Pytester) -> None:
    run = KitRun(pytester, wrapped(EarlyTruncationStore))
    # Every edge and node it shows is right: only ``truncated`` lies, so one hop's answers and the
    # walks (whose ``truncated`` comes from the hops) fail; nothing is outside the scope.
    assert {'test_graph_honours_every_filter', 'test_graph_neighbours', 'test_graph_walks'} <= set(run.failed)
    assert set(run.failed) <= READ_TESTS
    for text in run.failed.values():
        assert 'outside the scope' not in text
    assert 'truncated True, expected False' in run.failed['test_graph_neighbours']
    assert '(truncated True), expected' in run.failed['test_graph_walks']


def test_a_store_ignoring_edge_types_fails(pytester: pytest.Pytester) -> None:
    run = KitRun(pytester, wrapped(EdgeTypeBlindStore))
    # The every-filter check asks for every type: it passes.
    assert set(run.failed) == {'test_graph_neighbours', 'test_graph_walks'}
    text = run.failed['test_graph_neighbours']
    assert "edge_types=['MENTIONS']" in text and 'edges of types not asked for [' in text
    assert 'outside the scope' not in text
    assert "edge_types=['MENTIONS']" in run.failed['test_graph_walks']


def test_a_store_resolving_sections_and_documents_out_of_scope_fails(pytester: pytest.Pytester) -> None:
    run = KitRun(pytester, wrapped(SectionScopeLeakStore))
    assert {'test_graph_nodes_of_every_kind', 'test_graph_honours_every_filter', 'test_graph_walks'} <= set(run.failed)
    text = run.failed['test_graph_nodes_of_every_kind']
    assert 'graph_nodes(ids=' in text and 'outside the scope: nodes [' in text
    assert 'neighbours(' not in text and 'edges' not in text


def test_a_store_keeping_a_replaced_documents_relations_fails(pytester: pytest.Pytester) -> None:
    run = KitRun(pytester, wrapped(RelationKeepingStore))
    assert set(run.failed) == {'test_graph_replacing_and_deleting_documents'}
    text = run.failed['test_graph_replacing_and_deleting_documents']
    assert 'after upserting document' in text and 'list_relations(document_ids=[' in text
    assert 'it should not' in text and 'lacks' not in text


def test_a_store_keeping_a_documents_ledger_marks_fails(pytester: pytest.Pytester) -> None:
    run = KitRun(pytester, wrapped(MarkKeepingStore))
    assert set(run.failed) == {'test_graph_replacing_and_deleting_documents'}
    text = run.failed['test_graph_replacing_and_deleting_documents']
    assert "graph_marks('exact') is {" in text and "graph_marks('structure') is {" in text
    assert 'after upserting document' in text and 'after deleting document' in text
    assert 'list_relations(' not in text


def test_a_store_writing_a_batchs_relations_before_its_documents_fails(pytester: pytest.Pytester) -> None:
    run = KitRun(pytester, wrapped(BatchOrderStore))
    assert set(run.failed) == {'test_graph_replacing_and_deleting_documents'}
    text = run.failed['test_graph_replacing_and_deleting_documents']
    assert 'after upserting document' in text and 'lacks [' in text and 'it should not' not in text
