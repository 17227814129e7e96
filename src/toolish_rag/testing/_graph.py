"""The kit's graph checks (`GraphSearch` and `GraphStore`): every answer equal to the reference's.

Direct calls over `graph_corpus` (`toolish_rag.testing.graph_contract`). See docs/graph.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..protocols import DocumentStore, GraphBuiltWriter, GraphSearch, GraphStore, StoreFeatures
from ._corpus import EDGE_FILTERS
from ._kit import KitBase, check, report
from .graph_contract import (
    GRAPH_SCOPES,
    GraphCalls,
    GraphReference,
    graph_corpus,
    graph_scope_calls,
    ledger_problems,
    neighbour_calls,
    node_calls,
    relation_write_problems,
    replacement_problems,
    stored_problems,
    walk_calls,
)

_GRAPH = (GraphSearch, GraphStore, DocumentStore)
_NOT_RECORDING = (
    'a graph store says whether its graph has been built (toolish_rag.protocols.GraphBuiltWriter: graph_built, '
    'and record_graph_built, which build_graph calls); without it the graph tools are offered before any graph is'
)


async def _graph_built_problems(store: Any) -> list[str]:
    """Only `record_graph_built` (what `build_graph` calls) makes a store's graph built, never its records."""
    recording = store if isinstance(store, GraphBuiltWriter) else None
    if recording is None:
        return [_NOT_RECORDING]
    problems = []
    if StoreFeatures.of(store).graph_built:
        problems.append('a new store says its graph is built: only build_graph (record_graph_built) records one')
    await store.upsert(graph_corpus().items())
    if StoreFeatures.of(store).graph_built:
        problems.append(
            'writing relations made graph_built true: a graph is built by an operator (build_graph), never '
            "counted from the records (a tenant's records would change every tenant's tools)"
        )
    await recording.record_graph_built(['kit'])
    if not StoreFeatures.of(store).graph_built:
        problems.append('graph_built is still false after record_graph_built: the graph tools are never offered')
    return problems


class GraphChecks(KitBase):
    """A store that both reads and writes a graph: nodes, hops, walks, relation writes, the ledger."""

    @check(*_GRAPH, aspect='scope', every=True)
    async def test_graph_honours_every_filter(self, graph_loaded: Any) -> None:
        """Every edge filter in turn, on one store: nodes, edges (and ``truncated``) and a walk equal the reference.

        One store for all of them, so a cache keyed by something coarser than the filter (where
        ``True == 1``) serves one scope another's answer and fails here too."""
        corpus = graph_corpus()
        reference = GraphReference.of(corpus)
        calls = GraphCalls()
        for f in [None, *(f for _, f in EDGE_FILTERS)]:
            calls += graph_scope_calls(corpus, reference, f)
        assert not (problems := await calls.problems(graph_loaded, reference)), report(problems)

    @check(*_GRAPH, aspect='search', every=True)
    async def test_graph_nodes_of_every_kind(self, graph_loaded: Any) -> None:
        """Chunks, sections, documents and entities, in and out of scope; ids of no node; duplicates of none."""
        corpus = graph_corpus()
        calls = GraphCalls()
        for _, f in GRAPH_SCOPES:
            calls += node_calls(corpus, f)
        assert not (problems := await calls.problems(graph_loaded, GraphReference.of(corpus))), report(problems)

    @check(*_GRAPH, aspect='search', every=True)
    async def test_graph_neighbours(self, graph_loaded: Any) -> None:
        """Direction, edge types, ``limit`` and exactly when ``truncated``, order, self-loops, both endpoints in scope."""
        corpus = graph_corpus()
        reference = GraphReference.of(corpus)
        calls = GraphCalls()
        for _, f in GRAPH_SCOPES:
            calls += neighbour_calls(corpus, reference, f)
        assert not (problems := await calls.problems(graph_loaded, reference)), report(problems)

    @check(*_GRAPH, aspect='search', every=True)
    async def test_graph_walks(self, graph_loaded: Any) -> None:
        """`toolish_rag.graph.walk.walk` over the store equals the walk over the reference: hops, via, budgets, order."""
        corpus = graph_corpus()
        reference = GraphReference.of(corpus)
        calls = GraphCalls()
        for _, f in GRAPH_SCOPES[:4]:
            calls += walk_calls(corpus, reference, f)
        assert not (problems := await calls.problems(graph_loaded, reference)), report(problems)

    @check(*_GRAPH, aspect='writes', every=True)
    async def test_graph_replacing_and_deleting_documents(self, graph_loaded: Any) -> None:
        """A document's relations and ledger marks go with it; the same batch's and standalone relations stay."""
        assert not (problems := await replacement_problems(graph_loaded, graph_corpus())), report(problems)

    @check(*_GRAPH, aspect='writes', every=True)
    async def test_graph_relation_writes(self, graph_loaded: Any) -> None:
        """Relations rewritten by id (the last of an id in a batch wins) and deleted by id; entities listed."""
        assert not (problems := await relation_write_problems(graph_loaded, graph_corpus())), report(problems)

    @check(*_GRAPH, aspect='writes', every=True)
    async def test_graph_ledger(self, empty: Any) -> None:
        """Marks set, overwritten and deleted per builder, each builder's apart; the graph built only when recorded."""
        problems = await ledger_problems(empty)
        problems += await _graph_built_problems(empty)
        assert not problems, report(problems)

    @check(*_GRAPH, aspect='persistence', every=True)
    async def test_graph_after_reopen(self, empty: Any, store_path: Path, embedder: Any) -> None:
        """Reopened, a store holds the same relations and ledger, and answers alike."""
        made = empty
        corpus = graph_corpus()
        await made.upsert(corpus.items())
        marks = {'exact': {corpus.documents[0].id: 'fp-1', 'names': 'names-1'}}
        await made.set_graph_marks('exact', marks['exact'])
        if isinstance(made, GraphBuiltWriter):
            await made.record_graph_built(['kit'])
        del made
        reopened = await self.reopen_store(store_path, embedder)
        reference = GraphReference.of(corpus)
        problems = await stored_problems(reopened, 'after a reopen', corpus.relations, marks)
        if not StoreFeatures.of(reopened).graph_built:
            problems.append('the record that a graph was built is lost on reopening: persist it (the manifest)')
        calls = graph_scope_calls(corpus, reference, None) + graph_scope_calls(corpus, reference, GRAPH_SCOPES[1][1])
        problems += await calls.problems(reopened, reference)
        assert not problems, report(problems)
