"""Property: under tenant a's scope a graph store answers exactly like a store holding only tenant a's graph.

Random graphs of two tenants (documents with nested sections whose chunks are drawn a or b,
entities a or b, relations a or b between any nodes, a node that exists nowhere included, owned by
a document or standalone) go into one store; tenant a's records and relations alone go into
another of the same kind. Then, on `InMemoryStore` and on `LanceDBStore`:

* ``graph_nodes`` of every id under tenant a's filter equals the alone store's answer (no filter);
* random ``neighbours`` requests (ids, direction, edge types, limit) under the filter equal the alone
  store's: the same edges in the same order, the same nodes, the same ``truncated``, so not even a
  count reflects tenant b;
* random walks (`toolish_rag.graph.walk.walk`: seeds, hops, budgets, centrality) equal too;
* and, stated directly: no answer holds a node or an edge of tenant b.

A scope is a view of the store, not a filter over its answers: this is that, in one equation. The
LanceDB leg runs fewer examples (each makes two tables on disk) so the file stays under a minute.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, find, given, settings, strategies as st

from toolish_rag import DocumentBuilder, Entity
from toolish_rag.content import Document, NodeKind, Relation
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.filters import Filter, PropertyFilter as F
from toolish_rag.graph import Direction, GraphNode, NeighbourRequest, Neighbours, NodeRequest, WalkRequest, walk
from toolish_rag.stores import InMemoryStore
from toolish_rag_lancedb import LanceDBStore

TENANT_A: Filter = F.eq('tenant', 'a')
GHOST = 'ghost'
TYPES = ['MENTIONS', 'LINKS_TO', 'PART_OF']
DIRECTIONS: list[Direction] = ['out', 'in', 'both']


@dataclass(frozen=True)
class Graph:
    """Documents, entities and relations; every chunk, entity and relation of tenant a or b."""

    documents: tuple[Document, ...]
    entities: tuple[Entity, ...]
    relations: tuple[Relation, ...]

    def items(self) -> list[Document | Entity | Relation]:
        return [*self.documents, *self.entities, *self.relations]

    @property
    def node_ids(self) -> list[str]:
        chunks = [c for d in self.documents for c in d.chunks]
        ids = {c.id for c in chunks} | {c.document_id for c in chunks} | {s for c in chunks for s in c.section_ids}
        return sorted(ids | {e.id for e in self.entities})

    def tenant_a(self) -> Graph:
        """Tenant a's records and relations only: a document keeps its tenant-a chunks (and goes if none)."""
        documents = []
        for document in self.documents:
            chunks = [c for c in document.chunks if c.metadata['tenant'] == 'a']
            if chunks:
                documents.append(Document.model_validate({**dict(document), 'chunks': chunks}))
        return Graph(
            tuple(documents),
            tuple(e for e in self.entities if e.metadata['tenant'] == 'a'),
            tuple(r for r in self.relations if r.metadata['tenant'] == 'a'),
        )


tenants = st.sampled_from(['a', 'b'])


@st.composite
def graphs(draw: st.DrawFn) -> Graph:
    nodes: list[tuple[str, NodeKind]] = [(GHOST, 'entity')]
    documents = []
    for d in range(draw(st.integers(1, 3))):
        b = DocumentBuilder(f'file:///{d}.md', f'Doc {d}', id=f'D{d}', metadata={'year': 2020 + d})
        sections: list[str | None] = [None]
        for s in range(draw(st.integers(0, 3))):
            sections.append(b.section(f'S{s}', parent=draw(st.sampled_from(sections))))
        for c in range(draw(st.integers(1, 4))):
            section = draw(st.sampled_from(sections))
            b.add_chunk(section, f'text {d} {c}', metadata={'tenant': draw(tenants)})
        document = b.build()
        documents.append(document)
        nodes += [(document.id, 'document'), *((s.id, 'section') for s in document.sections)]
        nodes += [(c.id, 'chunk') for c in document.chunks]
    entities = [
        Entity(id=f'e{i}', name=f'E{i}', metadata={'tenant': draw(tenants)}) for i in range(draw(st.integers(0, 4)))
    ]
    nodes += [(e.id, 'entity') for e in entities]
    owners = [None, *(d.id for d in documents)]
    relations = []
    for i in range(draw(st.integers(0, 16))):
        (source, source_kind), (target, target_kind) = draw(st.sampled_from(nodes)), draw(st.sampled_from(nodes))
        relations.append(
            Relation(
                source=source,
                source_kind=source_kind,
                target=target,
                target_kind=target_kind,
                type=draw(st.sampled_from(TYPES)),
                weight=draw(st.sampled_from([0.0, 1.0, 2.5])),
                metadata={'tenant': draw(tenants)},
                document_id=draw(st.sampled_from(owners)),
                origin=f'o{i}',  # the default id digests the origin: two equal edges stay two records
            )
        )
    return Graph(tuple(documents), tuple(entities), tuple(relations))


@dataclass(frozen=True)
class Probes:
    """The requests one example makes (without filter: the scoped store gets tenant a's added)."""

    hops: tuple[NeighbourRequest, ...]
    walks: tuple[WalkRequest, ...]


@st.composite
def probes(draw: st.DrawFn, graph: Graph) -> Probes:
    ids = st.sampled_from([*graph.node_ids, GHOST])
    types = st.sampled_from([None, frozenset({'MENTIONS'}), frozenset({'LINKS_TO', 'PART_OF'})])
    directions = st.sampled_from(DIRECTIONS)
    hops = [
        NeighbourRequest(
            tuple(draw(st.lists(ids, min_size=1, max_size=5))),
            draw(directions),
            draw(types),
            limit=draw(st.integers(1, 8)),
        )
        for _ in range(3)
    ]
    walks = [
        WalkRequest(
            tuple(draw(st.lists(ids, min_size=1, max_size=4))),
            hops=draw(st.integers(0, 3)),
            edge_types=draw(types),
            direction=draw(directions),
            max_nodes=draw(st.integers(1, 10)),
            order=draw(st.sampled_from([None, 'centrality'])),
            edge_limit=draw(st.integers(1, 8)),
        )
        for _ in range(2)
    ]
    return Probes(tuple(hops), tuple(walks))


def by_id(nodes: Iterable[GraphNode]) -> list[GraphNode]:
    return sorted(nodes, key=lambda n: n.id)


def hop_answer(answer: Neighbours) -> tuple[tuple[Relation, ...], list[GraphNode], bool]:
    return tuple(answer.edges), by_id(answer.nodes), answer.truncated


def assert_nothing_foreign(alone: Graph, node_ids: Iterable[str], edges: Iterable[Relation]) -> None:
    """Stated without the alone store: every node and edge shown is tenant a's (0 foreign nodes or edges)."""
    own_nodes, own_edges = set(alone.node_ids), {r.id for r in alone.relations}
    foreign_nodes = set(node_ids) - own_nodes
    foreign_edges = [f'{e.source} -{e.type}-> {e.target}' for e in edges if e.id not in own_edges]
    assert not foreign_nodes and not foreign_edges, f'foreign nodes {foreign_nodes}, edges {foreign_edges}'


async def check(graph: Graph, probe: Probes, make: Callable[[str], Awaitable[Any]]) -> None:
    """``make(name)`` gives an empty store; one gets the whole graph, one tenant a's alone."""
    alone = graph.tenant_a()
    everything, only_a = await make('everything'), await make('tenant-a')
    await everything.upsert(graph.items())
    await only_a.upsert(alone.items())

    ids = (*graph.node_ids, GHOST)
    scoped_nodes = by_id(await everything.graph_nodes(NodeRequest(ids, TENANT_A)))
    assert scoped_nodes == by_id(await only_a.graph_nodes(NodeRequest(ids)))
    assert_nothing_foreign(alone, [n.id for n in scoped_nodes], ())

    for request in probe.hops:
        scoped = await everything.neighbours(replace(request, filter=TENANT_A))
        assert hop_answer(scoped) == hop_answer(await only_a.neighbours(request)), request
        assert_nothing_foreign(alone, [n.id for n in scoped.nodes], scoped.edges)

    for walk_request in probe.walks:
        scoped_walk = await walk(everything, replace(walk_request, filter=TENANT_A))
        assert scoped_walk == await walk(only_a, walk_request), walk_request
        assert_nothing_foreign(alone, [w.node.id for w in scoped_walk.nodes], scoped_walk.edges)


def run(graph: Graph, probe: Probes, store: str) -> None:
    """`check` on two new stores of kind ``store`` (LanceDB's in a temporary directory, closed after)."""

    async def body(root: Path) -> None:
        made: list[InMemoryStore | LanceDBStore] = []

        async def make(name: str) -> Any:
            new = (
                InMemoryStore(HashingEmbeddingModel(16))
                if store == 'memory'
                else LanceDBStore(root / name, embedder=HashingEmbeddingModel(16))
            )
            made.append(new)
            return new

        try:
            await check(graph, probe, make)
        finally:
            for opened in made:
                if isinstance(opened, LanceDBStore):
                    await opened.aclose()

    with tempfile.TemporaryDirectory() as root:
        asyncio.run(body(Path(root)))


SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large]


@settings(max_examples=60, deadline=None, suppress_health_check=SLOW_OK)
@given(data=st.data(), graph=graphs())
def test_memory_store_scoped_is_the_scope_alone(data: st.DataObject, graph: Graph) -> None:
    run(graph, data.draw(probes(graph)), 'memory')


@settings(max_examples=15, deadline=None, suppress_health_check=SLOW_OK)
@given(data=st.data(), graph=graphs())
def test_lancedb_store_scoped_is_the_scope_alone(data: st.DataObject, graph: Graph) -> None:
    run(graph, data.draw(probes(graph)), 'lancedb')


def tenants_of(graph: Graph) -> dict[str, str]:
    """The tenant of each chunk and entity."""
    tenant = {c.id: str(c.metadata['tenant']) for d in graph.documents for c in d.chunks}
    return tenant | {e.id: str(e.metadata['tenant']) for e in graph.entities}


def foreign_relation_between_a_nodes(graph: Graph) -> bool:
    tenant = tenants_of(graph)
    return any(
        r.metadata['tenant'] == 'b' and tenant.get(r.source) == tenant.get(r.target) == 'a' for r in graph.relations
    )


def a_relation_to_a_b_node(graph: Graph) -> bool:
    tenant = tenants_of(graph)
    return any(
        r.metadata['tenant'] == 'a' and {tenant.get(r.source), tenant.get(r.target)} == {'a', 'b'}
        for r in graph.relations
    )


def a_relation_to_no_node(graph: Graph) -> bool:
    return any(GHOST in (r.source, r.target) for r in graph.relations)


def a_document_of_both_tenants(graph: Graph) -> bool:
    return any(len({c.metadata['tenant'] for c in d.chunks}) == 2 for d in graph.documents)


@pytest.mark.parametrize(
    'shape',
    [foreign_relation_between_a_nodes, a_relation_to_a_b_node, a_relation_to_no_node, a_document_of_both_tenants],
)
def test_the_graphs_reach_where_tenants_meet(shape: Callable[[Graph], bool]) -> None:
    """The strategy makes what the property is about (`hypothesis.find` raises if it cannot)."""
    assert shape(find(graphs(), shape, settings=settings(max_examples=2_000, database=None)))
