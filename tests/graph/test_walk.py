"""The walk (`toolish_rag.graph.walk`): hop, via, truncated, order, centrality, seeds and scope.

Every test runs on two real `GraphSearch` stores: the in-memory store, and `OracleGraph`, which
answers from `toolish_rag.graph.reference` (what every store must match). A walk that passes on the
oracle and fails on the store is the store's bug; one failing on both is the walk's.

Most graphs are entities named by one letter (tenant a unless said), with relations ``r*`` between
them; `walked` reduces a walk to ``(id, hop, via)`` rows to compare with what a reader works out by
hand.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from toolish_rag import DocumentBuilder, Entity
from toolish_rag.content import Chunk, Document, NodeKind, Relation
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.filters import Eq, Filter, matches
from toolish_rag.graph import (
    MAX_EDGE_LIMIT,
    GraphNode,
    GraphWalk,
    NeighbourRequest,
    Neighbours,
    NodeRequest,
    Via,
    WalkRequest,
    reference_neighbours,
    reference_nodes,
    walk,
)
from toolish_rag.protocols import GraphSearch
from toolish_rag.stores import InMemoryStore

TENANT_A: Filter = Eq(key='tenant', value='a')
Item = Document | Entity | Relation
STORES = ('oracle', 'memory')


# -- stores --------------------------------------------------------------------------------------


@dataclass
class OracleGraph:
    """A `GraphSearch` answering from the reference semantics over plain records and relations."""

    records: list[Chunk | Entity]
    relations: list[Relation]

    async def graph_nodes(self, request: NodeRequest) -> Sequence[GraphNode]:
        return reference_nodes(self.records, request)

    async def neighbours(self, request: NeighbourRequest) -> Neighbours:
        return reference_neighbours(self.records, self.relations, request)


@dataclass
class Recording:
    """Passes every request to a real store and keeps it: how many round trips a walk makes."""

    inner: GraphSearch
    requests: list[NodeRequest | NeighbourRequest] = field(default_factory=list)

    async def graph_nodes(self, request: NodeRequest) -> Sequence[GraphNode]:
        self.requests.append(request)
        return await self.inner.graph_nodes(request)

    async def neighbours(self, request: NeighbourRequest) -> Neighbours:
        self.requests.append(request)
        return await self.inner.neighbours(request)


async def make_store(kind: str, items: Iterable[Item], *, batches: int = 1) -> OracleGraph | InMemoryStore:
    """A store of ``kind`` holding ``items`` (the in-memory one written in ``batches`` upserts)."""
    items = list(items)
    if kind == 'oracle':
        records: list[Chunk | Entity] = []
        for item in items:
            if isinstance(item, Document):
                records.extend(item.chunks)
            elif isinstance(item, Entity):
                records.append(item)
        return OracleGraph(records, [r for r in items if isinstance(r, Relation)])
    store = InMemoryStore(HashingEmbeddingModel(16))
    for start in range(batches):
        await store.upsert(items[start::batches])
    return store


@pytest.fixture(params=STORES)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


# -- graphs --------------------------------------------------------------------------------------


def ents(*ids: str, tenant: str = 'a') -> list[Entity]:
    return [Entity(id=i, name=i.upper(), metadata={'tenant': tenant}) for i in ids]


def rel(
    id: str,
    source: str,
    target: str,
    type: str = 'LINKS',
    *,
    weight: float = 1.0,
    tenant: str = 'a',
    source_kind: NodeKind = 'entity',
    target_kind: NodeKind = 'entity',
) -> Relation:
    return Relation(
        id=id,
        source=source,
        source_kind=source_kind,
        target=target,
        target_kind=target_kind,
        type=type,
        weight=weight,
        metadata={'tenant': tenant},
    )


Row = tuple[str, int, tuple[str, str, str, str] | None]


def walked(result: GraphWalk) -> list[Row]:
    """The walk's nodes in order, as (id, hop, via as (type, from, direction, relation id))."""
    rows: list[Row] = []
    for w in result.nodes:
        via = None if w.via is None else (w.via.type, w.via.node, w.via.direction, w.via.relation_id)
        rows.append((w.node.id, w.hop, via))
    return rows


def ids_of(result: GraphWalk) -> list[str]:
    return [w.node.id for w in result.nodes]


def edges_of(result: GraphWalk) -> list[str]:
    return [e.id for e in result.edges]


async def run(kind: str, items: Iterable[Item], **request: Any) -> GraphWalk:
    store = await make_store(kind, items)
    return await walk(store, WalkRequest(**request))


# -- hop and via ---------------------------------------------------------------------------------

CHAIN: list[Item] = [*ents('a', 'b', 'c', 'd'), rel('r1', 'a', 'b'), rel('r2', 'b', 'c'), rel('r3', 'c', 'd')]


async def test_a_chain_is_walked_hop_by_hop(kind: str) -> None:
    two = await run(kind, CHAIN, seeds=('a',), hops=2)
    assert walked(two) == [
        ('a', 0, None),
        ('b', 1, ('LINKS', 'a', 'out', 'r1')),
        ('c', 2, ('LINKS', 'b', 'out', 'r2')),
    ]
    assert two.nodes[1].via == Via(type='LINKS', node='a', direction='out', relation_id='r1')
    assert edges_of(two) == ['r1', 'r2']
    assert not two.truncated  # hops ended it: that is the request, not a cut
    three = await run(kind, CHAIN, seeds=('a',), hops=3)
    assert ids_of(three) == ['a', 'b', 'c', 'd']
    assert edges_of(three) == ['r1', 'r2', 'r3']
    assert not three.truncated
    zero = await run(kind, CHAIN, seeds=('b',), hops=0)
    assert walked(zero) == [('b', 0, None)]
    assert zero.edges == ()
    assert not zero.truncated


async def test_direction_follows_edges_one_way_and_via_says_which(kind: str) -> None:
    backwards = await run(kind, CHAIN, seeds=('d',), hops=3, direction='in')
    assert walked(backwards) == [
        ('d', 0, None),
        ('c', 1, ('LINKS', 'd', 'in', 'r3')),
        ('b', 2, ('LINKS', 'c', 'in', 'r2')),
        ('a', 3, ('LINKS', 'b', 'in', 'r1')),
    ]
    forwards = await run(kind, CHAIN, seeds=('c',), hops=3, direction='out')
    assert walked(forwards) == [('c', 0, None), ('d', 1, ('LINKS', 'c', 'out', 'r3'))]
    both = await run(kind, CHAIN, seeds=('c',), hops=1)
    assert walked(both) == [
        ('c', 0, None),
        ('b', 1, ('LINKS', 'c', 'in', 'r2')),
        ('d', 1, ('LINKS', 'c', 'out', 'r3')),
    ]


CYCLE: list[Item] = [*ents('a', 'b', 'c'), rel('r1', 'a', 'b'), rel('r2', 'b', 'c'), rel('r3', 'c', 'a')]


async def test_a_cycle_is_walked_once_each_node_at_its_nearest_hop(kind: str) -> None:
    store = Recording(await make_store(kind, CYCLE))
    result = await walk(store, WalkRequest(('a',), hops=3))
    assert walked(result) == [
        ('a', 0, None),
        ('b', 1, ('LINKS', 'a', 'out', 'r1')),
        ('c', 1, ('LINKS', 'a', 'in', 'r3')),
    ]
    assert edges_of(result) == ['r1', 'r2', 'r3']  # r2 (b -> c) is read at hop 2, between two returned nodes
    assert not result.truncated
    # Hop 2 finds nothing new, so hop 3 has no frontier and asks nothing.
    assert [r.ids for r in store.requests] == [('a',), ('a',), ('b', 'c')]
    around = await run(kind, CYCLE, seeds=('a',), hops=3, direction='out')
    assert walked(around) == [
        ('a', 0, None),
        ('b', 1, ('LINKS', 'a', 'out', 'r1')),
        ('c', 2, ('LINKS', 'b', 'out', 'r2')),
    ]
    assert edges_of(around) == ['r1', 'r2', 'r3']


async def test_via_is_the_smallest_from_node_type_and_relation_id(kind: str) -> None:
    items: list[Item] = [
        *ents('a', 'b', 'x', 'y'),
        rel('r0', 'b', 'x', 'AAA'),  # from b: loses to any edge from a
        rel('r1', 'a', 'x', 'LIKES'),
        rel('r9', 'a', 'x', 'KNOWS'),  # smallest type from a
        rel('r5', 'a', 'y', 'KNOWS'),
        rel('r2', 'y', 'a', 'KNOWS'),  # same from and type: the smaller relation id, pointing in
    ]
    result = await run(kind, items, seeds=('b', 'a'), hops=1)
    assert walked(result) == [
        ('a', 0, None),
        ('b', 0, None),
        ('x', 1, ('KNOWS', 'a', 'out', 'r9')),
        ('y', 1, ('KNOWS', 'a', 'in', 'r2')),
    ]
    assert edges_of(result) == ['r0', 'r1', 'r2', 'r5', 'r9']


async def test_a_self_loop_adds_no_node_and_no_centrality(kind: str) -> None:
    items: list[Item] = [
        *ents('a', 'b'),
        rel('r0', 'a', 'a', 'SAME_AS', weight=5.0),
        rel('r1', 'a', 'b'),
        rel('r2', 'b', 'b'),
    ]
    result = await run(kind, items, seeds=('a',), hops=3)
    assert walked(result) == [('a', 0, None), ('b', 1, ('LINKS', 'a', 'out', 'r1'))]
    assert edges_of(result) == ['r0', 'r1', 'r2']
    assert [w.centrality for w in result.nodes] == [0.0, 1.0]  # with the loop counted, a would be the hub
    assert not result.truncated


async def test_chunk_section_and_document_nodes_are_walked_like_entities(kind: str) -> None:
    builder = DocumentBuilder('file:///h.md', 'Handbook', id='H', metadata={'tenant': 'a'})
    chunk_id = builder.add_chunk(builder.section('Leave'), 'Acme grants leave.')
    document = builder.build()
    chunk = document.chunks[0]
    items: list[Item] = [
        document,
        *ents('acme'),
        rel('r1', 'acme', chunk_id, 'MENTIONED_IN', target_kind='chunk'),
        rel('r2', chunk_id, 'H-s0', 'PART_OF', source_kind='chunk', target_kind='section'),
        rel('r3', 'H-s0', 'H', 'PART_OF', source_kind='section', target_kind='document'),
    ]
    result = await run(kind, items, seeds=('acme',), hops=3, direction='out', filter=TENANT_A)
    assert [(w.node, w.hop) for w in result.nodes] == [
        (GraphNode('acme', 'entity', 'ACME', '', None, frozenset()), 0),
        (GraphNode.of_chunk(chunk), 1),
        (GraphNode.of_section(chunk, 'H-s0'), 2),
        (GraphNode.of_document(chunk), 3),
    ]
    assert edges_of(result) == ['r1', 'r2', 'r3']


# -- truncated -----------------------------------------------------------------------------------

STAR: list[Item] = [*ents('a', 'b1', 'b2', 'b3', 'b4', 'b5'), *(rel(f'r{i}', 'a', f'b{i}') for i in range(1, 6))]


async def test_max_nodes_keeps_new_nodes_in_id_order_and_says_truncated(kind: str) -> None:
    cut = await run(kind, STAR, seeds=('a',), hops=1, max_nodes=3)
    assert ids_of(cut) == ['a', 'b1', 'b2']
    assert edges_of(cut) == ['r1', 'r2']  # only edges between returned nodes
    assert cut.truncated
    whole = await run(kind, STAR, seeds=('a',), hops=1, max_nodes=6)
    assert ids_of(whole) == ['a', 'b1', 'b2', 'b3', 'b4', 'b5']
    assert not whole.truncated  # exactly full is not cut


async def test_a_full_walk_is_truncated_only_if_the_next_hop_had_a_new_node(kind: str) -> None:
    grows: list[Item] = [*ents('a', 'b1', 'b2', 'c'), rel('r1', 'a', 'b1'), rel('r2', 'a', 'b2'), rel('r3', 'b1', 'c')]
    assert not (await run(kind, grows, seeds=('a',), hops=1, max_nodes=3)).truncated  # hops ended it
    cut = await run(kind, grows, seeds=('a',), hops=2, max_nodes=3)
    assert ids_of(cut) == ['a', 'b1', 'b2']
    assert cut.truncated  # c was in reach and left out
    closed: list[Item] = [*ents('a', 'b1', 'b2'), rel('r1', 'a', 'b1'), rel('r2', 'a', 'b2'), rel('r3', 'b1', 'b2')]
    full = await run(kind, closed, seeds=('a',), hops=3, max_nodes=3)
    assert ids_of(full) == ['a', 'b1', 'b2']
    assert edges_of(full) == ['r1', 'r2', 'r3']
    assert not full.truncated  # the next hop only met returned nodes


async def test_a_foreign_node_left_out_is_not_a_cut(kind: str) -> None:
    items: list[Item] = [
        *ents('a', 'b1', 'b3'),
        *ents('b2', tenant='b'),
        rel('r1', 'a', 'b1'),
        rel('r2', 'a', 'b2'),  # to a foreign node
        rel('r3', 'a', 'b3', tenant='b'),  # a foreign relation to an in-scope node
    ]
    scoped = await run(kind, items, seeds=('a',), hops=2, max_nodes=2, filter=TENANT_A)
    assert ids_of(scoped) == ['a', 'b1']
    assert not scoped.truncated
    unscoped = await run(kind, items, seeds=('a',), hops=2, max_nodes=2)
    assert ids_of(unscoped) == ['a', 'b1']
    assert unscoped.truncated


async def test_edge_limit_cuts_each_hop_in_relation_id_order(kind: str) -> None:
    items: list[Item] = [
        *ents('a', 'b1', 'b2', 'b3'),
        *ents('x', tenant='b'),
        rel('r1', 'a', 'b1'),
        rel('r2', 'a', 'b2'),
        rel('r3', 'a', 'b3'),
        rel('r0', 'a', 'x'),  # foreign endpoint, first in edge order
        rel('r00', 'a', 'b1', tenant='b'),  # foreign relation
    ]
    cut = await run(kind, items, seeds=('a',), hops=1, edge_limit=2, filter=TENANT_A)
    assert ids_of(cut) == ['a', 'b1', 'b2']
    assert edges_of(cut) == ['r1', 'r2']
    assert cut.truncated
    fits = await run(kind, items, seeds=('a',), hops=1, edge_limit=3, filter=TENANT_A)
    assert ids_of(fits) == ['a', 'b1', 'b2', 'b3']
    assert not fits.truncated  # r0 and r00 are not counted: they are not edges in this scope
    assert (await run(kind, items, seeds=('a',), hops=1, edge_limit=3)).truncated


# -- seeds and scope -----------------------------------------------------------------------------


async def test_seeds_keep_their_order_for_the_budget_and_drop_foreign_missing_and_repeated_ids(kind: str) -> None:
    items: list[Item] = [*ents('a', 'b', 'c'), *ents('x', tenant='b')]
    seeds = ('ghost', 'x', 'c', 'a', 'c', 'b')
    store = Recording(await make_store(kind, items))
    cut = await walk(store, WalkRequest(seeds, hops=2, max_nodes=2, filter=TENANT_A))
    assert walked(cut) == [('a', 0, None), ('c', 0, None)]  # the first two in-scope seeds, shown in id order
    assert cut.truncated
    assert store.requests == [NodeRequest(('ghost', 'x', 'c', 'a', 'b'), TENANT_A)]  # one call; a cut walk stops
    whole = await run(kind, items, seeds=seeds, hops=2, max_nodes=3, filter=TENANT_A)
    assert ids_of(whole) == ['a', 'b', 'c']
    assert not whole.truncated
    none = await run(kind, items, seeds=('x', 'ghost'), filter=TENANT_A)
    assert none == GraphWalk((), (), False)


async def test_a_path_through_a_foreign_node_or_relation_is_not_followed(kind: str) -> None:
    items: list[Item] = [
        *ents('a', 'c', 'd'),
        *ents('x', tenant='b'),
        rel('r1', 'a', 'x'),
        rel('r2', 'x', 'c'),
        rel('r3', 'a', 'd', tenant='b'),
    ]
    scoped = await run(kind, items, seeds=('a',), hops=3, filter=TENANT_A)
    assert walked(scoped) == [('a', 0, None)]
    assert scoped.edges == ()
    assert not scoped.truncated
    unscoped = await run(kind, items, seeds=('a',), hops=3)
    assert ids_of(unscoped) == ['a', 'd', 'x', 'c']  # (hop, id): c is two hops away through x


async def test_each_hop_is_one_batched_request_with_sorted_ids(kind: str) -> None:
    items: list[Item] = [*ents('a', 'b', 'c', 'd', 'e'), rel('r1', 'a', 'c'), rel('r2', 'a', 'b'), rel('r3', 'c', 'd')]
    store = Recording(await make_store(kind, items))
    await walk(store, WalkRequest(('a', 'e', 'a'), hops=3, edge_types=frozenset({'LINKS'}), edge_limit=7))
    assert store.requests == [
        NodeRequest(('a', 'e')),
        NeighbourRequest(('a', 'e'), 'both', frozenset({'LINKS'}), None, 7),
        NeighbourRequest(('b', 'c'), 'both', frozenset({'LINKS'}), None, 7),
        NeighbourRequest(('d',), 'both', frozenset({'LINKS'}), None, 7),
    ]


async def test_edge_types_restrict_the_walk(kind: str) -> None:
    items: list[Item] = [*ents('a', 'b', 'c'), rel('r1', 'a', 'b', 'CALLS'), rel('r2', 'a', 'c', 'IMPORTS')]
    result = await run(kind, items, seeds=('a',), edge_types=frozenset({'CALLS'}))
    assert walked(result) == [('a', 0, None), ('b', 1, ('CALLS', 'a', 'out', 'r1'))]
    assert edges_of(result) == ['r1']


# -- order and determinism -----------------------------------------------------------------------


def _tangle() -> list[Entity | Relation]:
    names = [f'n{i:02d}' for i in range(14)]
    rng = random.Random(7)
    relations = [
        rel(f'r{i:02d}', rng.choice(names), rng.choice(names), rng.choice(['LINKS', 'CALLS']), weight=rng.randint(0, 3))
        for i in range(30)
    ]
    return [*ents(*names), *relations]


async def test_the_result_does_not_depend_on_write_order(kind: str) -> None:
    items = _tangle()
    shuffled = list(items)
    random.Random(3).shuffle(shuffled)
    orders: tuple[Literal['centrality'] | None, ...] = (None, 'centrality')
    for order in orders:
        request = WalkRequest(('n03', 'n11'), hops=3, max_nodes=9, order=order)
        first = await walk(await make_store(kind, items), request)
        second = await walk(await make_store(kind, shuffled, batches=4), request)
        assert first == second
        assert len(first.nodes) == 9
    plain = await walk(await make_store(kind, items), WalkRequest(('n03', 'n11'), hops=3, max_nodes=9))
    assert [(w.hop, w.node.id) for w in plain.nodes] == sorted((w.hop, w.node.id) for w in plain.nodes)
    assert [w.score for w in plain.nodes] == [1 / (1 + w.hop) for w in plain.nodes]


# -- centrality ----------------------------------------------------------------------------------

WEIGHTED: list[Item] = [
    *ents('a', 'b', 'c'),
    rel('r1', 'a', 'b', weight=2.0),
    rel('r2', 'c', 'b', weight=1.0),
    rel('r3', 'a', 'c', weight=0.5),
    rel('r4', 'b', 'b', weight=10.0),  # self-loop: not counted
]
# Hand computation: in-degree b = 2 + 1 = 3, c = 0.5, a = 0; normalised by 3: b 1, c 1/6, a 0.
CENTRALITY = {'a': 0.0, 'b': 1.0, 'c': 1 / 6}


async def test_centrality_is_weighted_in_degree_over_returned_edges_normalised(kind: str) -> None:
    result = await run(kind, WEIGHTED, seeds=('a',), hops=2)
    assert edges_of(result) == ['r1', 'r2', 'r3', 'r4']
    assert ids_of(result) == ['a', 'b', 'c']  # no order: (hop, id), centrality still reported
    assert {w.node.id: w.centrality for w in result.nodes} == pytest.approx(CENTRALITY)
    assert [w.score for w in result.nodes] == [1.0, 0.5, 0.5]


@pytest.mark.parametrize(
    ('alpha', 'clamped', 'order', 'scores'),
    [
        (1.0, 1.0, ['a', 'b', 'c'], {'a': 1.0, 'b': 0.5 * 2, 'c': 0.5 * (1 + 1 / 6)}),  # a and b tie: by id
        (4.0, 4.0, ['b', 'a', 'c'], {'a': 1.0, 'b': 0.5 * 5, 'c': 0.5 * (1 + 4 / 6)}),
        (10.0, 4.0, ['b', 'a', 'c'], {'a': 1.0, 'b': 0.5 * 5, 'c': 0.5 * (1 + 4 / 6)}),
        (-1.0, 0.0, ['a', 'b', 'c'], {'a': 1.0, 'b': 0.5, 'c': 0.5}),
    ],
)
async def test_centrality_order_scores_and_orders_with_alpha_clamped(
    kind: str, alpha: float, clamped: float, order: list[str], scores: dict[str, float]
) -> None:
    request = WalkRequest(('a',), hops=2, order='centrality', alpha=alpha)
    assert request.alpha == clamped
    result = await walk(await make_store(kind, WEIGHTED), request)
    assert ids_of(result) == order
    assert {w.node.id: w.score for w in result.nodes} == pytest.approx(scores)
    assert {w.node.id: w.centrality for w in result.nodes} == pytest.approx(CENTRALITY)


async def test_centrality_counts_only_returned_edges_and_is_zero_without_weight(kind: str) -> None:
    # c -> b exists but is never read with hops=1 (it touches no seed): b's in-degree is r1 alone.
    result = await run(kind, WEIGHTED, seeds=('a',), hops=1)
    assert edges_of(result) == ['r1', 'r3']
    assert {w.node.id: w.centrality for w in result.nodes} == pytest.approx({'a': 0.0, 'b': 1.0, 'c': 0.25})
    weightless: list[Item] = [*ents('a', 'b'), rel('r1', 'a', 'b', weight=0.0)]
    flat = await run(kind, weightless, seeds=('a',), order='centrality', alpha=4.0)
    assert [(w.node.id, w.centrality, w.score) for w in flat.nodes] == [('a', 0.0, 1.0), ('b', 0.0, 0.5)]


# -- the request ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    'bad',
    [
        {'hops': -1},
        {'hops': 4},
        {'max_nodes': 0},
        {'max_nodes': 201},
        {'edge_limit': 0},
        {'edge_limit': MAX_EDGE_LIMIT + 1},
        {'direction': 'sideways'},
        {'order': 'pagerank'},
        {'alpha': float('nan')},
    ],
)
def test_out_of_range_requests_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        WalkRequest(('a',), **bad)


def test_the_walk_orders_by_the_word_the_tool_uses() -> None:
    """One meaning per word (issue 26): `rerank` is the search reranker's; the walk's ordering is `order`,
    as in the graph_context tool's argument."""
    assert 'order' in {f.name for f in fields(WalkRequest)}
    assert 'rerank' not in {f.name for f in fields(WalkRequest)}
    assert WalkRequest(('a',), order='centrality').order == 'centrality'


def test_limits_are_accepted_at_their_bounds_and_alpha_is_clamped() -> None:
    assert WalkRequest(('a',), hops=3, max_nodes=200, edge_limit=MAX_EDGE_LIMIT).hops == 3
    assert WalkRequest(('a',), hops=0, max_nodes=1, edge_limit=1).max_nodes == 1
    assert WalkRequest(('a',), alpha=float('inf')).alpha == 4.0
    assert WalkRequest(['a', 'b']).seeds == ('a', 'b')  # type: ignore[arg-type]


# -- property: a scoped walk is the walk of the scope alone ---------------------------------------


@dataclass(frozen=True)
class World:
    """Documents, entities and relations of two tenants; chunks, entities and relations each drawn a or b."""

    documents: tuple[Document, ...]
    entities: tuple[Entity, ...]
    relations: tuple[Relation, ...]

    def items(self) -> list[Document | Entity | Relation]:
        return [*self.documents, *self.entities, *self.relations]

    def records(self) -> list[Chunk | Entity]:
        return [*(c for d in self.documents for c in d.chunks), *self.entities]

    def tenant_a(self) -> World:
        """Only tenant a's records and relations: a document keeps its tenant-a chunks (if any)."""
        documents = []
        for document in self.documents:
            chunks = tuple(c for c in document.chunks if c.metadata['tenant'] == 'a')
            if chunks:
                documents.append(document.model_copy(update={'chunks': chunks}))
        entities = tuple(e for e in self.entities if e.metadata['tenant'] == 'a')
        relations = tuple(r for r in self.relations if r.metadata['tenant'] == 'a')
        return World(tuple(documents), entities, relations)


tenants = st.sampled_from(['a', 'b'])


@st.composite
def worlds(draw: st.DrawFn) -> World:
    nodes: list[tuple[str, NodeKind]] = []
    documents = []
    for d in range(draw(st.integers(1, 3))):
        builder = DocumentBuilder(f'file:///{d}.md', f'Doc {d}', id=f'D{d}')
        sections = [builder.section(f'S{s}') for s in range(draw(st.integers(1, 2)))]
        nodes += [(f'D{d}', 'document'), *((s, 'section') for s in sections)]
        for c in range(draw(st.integers(1, 3))):
            section = draw(st.sampled_from(sections))
            nodes.append((builder.add_chunk(section, f'text {d} {c}', metadata={'tenant': draw(tenants)}), 'chunk'))
        documents.append(builder.build())
    entities = [
        Entity(id=f'e{i}', name=f'E{i}', metadata={'tenant': draw(tenants)}) for i in range(draw(st.integers(0, 4)))
    ]
    nodes += [(e.id, 'entity') for e in entities]
    relations = []
    for i in range(draw(st.integers(0, 14))):
        (source, source_kind), (target, target_kind) = draw(st.sampled_from(nodes)), draw(st.sampled_from(nodes))
        relations.append(
            Relation(
                id=f'r{i:02d}',
                source=source,
                source_kind=source_kind,
                target=target,
                target_kind=target_kind,
                type=draw(st.sampled_from(['LINKS', 'PART_OF'])),
                weight=draw(st.sampled_from([0.0, 1.0, 2.5])),
                metadata={'tenant': draw(tenants)},
            )
        )
    return World(tuple(documents), tuple(entities), tuple(relations))


@st.composite
def walks(draw: st.DrawFn, world: World) -> WalkRequest:
    ids = sorted({c.id for c in world.records()} | {d.id for d in world.documents} | {'ghost'})
    ids += [s.id for d in world.documents for s in d.sections]
    return WalkRequest(
        seeds=tuple(draw(st.lists(st.sampled_from(ids), min_size=1, max_size=4))),
        hops=draw(st.integers(0, 3)),
        edge_types=draw(st.sampled_from([None, frozenset({'LINKS'})])),
        direction=draw(st.sampled_from(['out', 'in', 'both'])),
        max_nodes=draw(st.integers(1, 8)),
        order=draw(st.sampled_from([None, 'centrality'])),
        edge_limit=draw(st.integers(1, 6)),
    )


def _assert_in_scope(world: World, result: GraphWalk, f: Filter) -> None:
    """Every node resolves in scope by the oracle, and every edge is an in-scope edge by the oracle."""
    records = world.records()
    for w in result.nodes:
        assert reference_nodes(records, NodeRequest((w.node.id,), f)) == [w.node]
    for edge in result.edges:
        assert matches(f, edge)
        around = reference_neighbours(
            records, world.relations, NeighbourRequest((edge.source,), 'out', frozenset({edge.type}), f, MAX_EDGE_LIMIT)
        )
        assert edge in around.edges


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), world=worlds())
def test_a_scoped_walk_never_leaves_its_scope_and_equals_the_walk_of_the_scope_alone(
    data: st.DataObject, world: World
) -> None:
    base = data.draw(walks(world))
    scoped = replace(base, filter=TENANT_A)

    async def body() -> None:
        alone = world.tenant_a()
        expected = await walk(OracleGraph(alone.records(), list(alone.relations)), base)
        for kind in STORES:
            result = await walk(await make_store(kind, world.items()), scoped)
            _assert_in_scope(world, result, TENANT_A)
            assert result == expected, kind
            assert await walk(await make_store(kind, alone.items()), base) == expected, kind

    asyncio.run(body())
