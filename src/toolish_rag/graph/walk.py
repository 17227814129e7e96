"""The bounded, scoped, breadth-first walk behind the ``graph_context`` tool.

The walk is the core's, so every store walks alike. See docs/graph.md#the-walk-precisely and
docs/graph.md#how-the-graph-core-is-built.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias, runtime_checkable

from ..content import Relation
from ..filters import Filter
from .model import MAX_EDGE_LIMIT, Direction, GraphNode, NeighbourRequest, Neighbours, NodeRequest, edge_order

if TYPE_CHECKING:  # `toolish_rag.protocols` imports this package's model: a runtime import would be a cycle
    from ..protocols import GraphSearch

__all__ = [
    'MAX_ALPHA',
    'MAX_HOPS',
    'MAX_WALK_NODES',
    'Budget',
    'GraphWalk',
    'NeighbourhoodReader',
    'Via',
    'WalkRequest',
    'WalkedNode',
    'walk',
]

MAX_HOPS = 3
"""The most hops a walk may take: past three, a neighbourhood is most of a corpus."""

MAX_WALK_NODES = 200
"""The most nodes one walk may return: what a model can read in one tool result."""

MAX_ALPHA = 4.0
"""The centrality weight ``alpha`` is clamped to ``[0, MAX_ALPHA]``: a hub lifts, never buries, a seed."""


@dataclass(frozen=True, slots=True)
class Via:
    """How a node was reached: from ``node`` over an edge of ``type`` (``relation_id``).

    ``direction`` ``'out'`` means the edge points from ``node`` to the node reached (``node`` is its
    source); ``'in'`` means it points the other way.
    """

    type: str
    node: str
    direction: Literal['out', 'in']
    relation_id: str


@dataclass(frozen=True, slots=True)
class WalkedNode:
    """A node of the walk: ``hop`` from the nearest seed (0 for a seed, whose ``via`` is ``None``)."""

    node: GraphNode
    hop: int
    via: Via | None
    score: float
    """``1/(1+hop)``; with the centrality order, times ``1 + alpha*centrality``."""
    centrality: float
    """Weighted in-degree over the returned edges (self-loops aside), normalised to ``[0, 1]``."""


Budget: TypeAlias = Literal['max_nodes', 'edge_limit']
"""A budget that can cut a walk: the nodes returned, or the edges one hop reads."""


@dataclass(frozen=True, slots=True)
class GraphWalk:
    """What a walk found: nodes in order, the edges between them (by id), and whether a budget cut it."""

    nodes: tuple[WalkedNode, ...]
    edges: tuple[Relation, ...]
    truncated: bool
    cut_by: tuple[Budget, ...] = ()
    """Which budgets cut the walk (empty exactly when it is not truncated), so a caller can say which to change:
    raising ``max_nodes`` cannot help a walk the per-hop ``edge_limit`` cut."""


@dataclass(frozen=True, slots=True)
class WalkRequest:
    """A walk: from ``seeds`` (node ids), at most ``hops`` hops out, at most ``max_nodes`` nodes.

    ``edge_limit`` bounds each hop's `NeighbourRequest`, so one hub cannot make a hop unbounded.
    Out-of-range ``hops``, ``max_nodes`` or ``edge_limit`` are errors (the tool validates them
    first, with a message for the model); ``alpha`` is clamped, since any weight is meaningful.
    """

    seeds: tuple[str, ...]
    hops: int = 2
    edge_types: frozenset[str] | None = None
    direction: Direction = 'both'
    max_nodes: int = 50
    filter: Filter | None = None
    order: Literal['centrality'] | None = None
    alpha: float = 1.0
    edge_limit: int = 1000

    def __post_init__(self) -> None:
        if not 0 <= self.hops <= MAX_HOPS:
            raise ValueError(f'hops must lie in [0, {MAX_HOPS}]')
        if not 1 <= self.max_nodes <= MAX_WALK_NODES:
            raise ValueError(f'max_nodes must lie in [1, {MAX_WALK_NODES}]')
        if not 1 <= self.edge_limit <= MAX_EDGE_LIMIT:
            raise ValueError(f'edge_limit must lie in [1, {MAX_EDGE_LIMIT}]')
        if self.direction not in ('out', 'in', 'both'):
            raise ValueError("direction must be 'out', 'in' or 'both'")
        if self.order not in (None, 'centrality'):
            raise ValueError("order must be None or 'centrality'")
        if math.isnan(self.alpha):
            raise ValueError('alpha must be a number')
        object.__setattr__(self, 'seeds', tuple(self.seeds))
        object.__setattr__(self, 'alpha', min(max(float(self.alpha), 0.0), MAX_ALPHA))


@runtime_checkable
class NeighbourhoodReader(Protocol):
    """Optional, beside `GraphSearch`: read at once everything a walk can reach, within its scope.

    ``walk_neighbourhood`` returns a `GraphSearch` over the request's reachable nodes and edges (the
    request's filter applied to every node and edge, at most ``hops`` from the seeds), or ``None``
    to be walked hop by hop. The walk itself stays the core's, so its answer must equal a walk of
    the store (the graph contract compares every walk with the reference). See docs/custom-store.md#optional-attributes.
    """

    async def walk_neighbourhood(self, request: WalkRequest) -> GraphSearch | None: ...


async def walk(store: GraphSearch, request: WalkRequest) -> GraphWalk:
    """Walk ``store`` breadth-first from ``request.seeds``: one ``graph_nodes`` call, one ``neighbours`` call per hop.

    A `NeighbourhoodReader` store may answer with a `GraphSearch` holding everything the walk can
    reach, read at once (PostgreSQL: one recursive query); the walk then runs on that, so it is the
    same walk (``None``: walk the store itself; the graph contract compares it with the reference walk).
    """
    if isinstance(store, NeighbourhoodReader):
        store = await store.walk_neighbourhood(request) or store
    state = _Walk(request.max_nodes)
    await _seed(store, request, state)
    for hop in range(1, request.hops + 1):
        if state.stopped:
            break
        frontier = tuple(sorted(node_id for node_id, (_, at) in state.nodes.items() if at.hop == hop - 1))
        if not frontier:
            break
        answer = await store.neighbours(
            NeighbourRequest(frontier, request.direction, request.edge_types, request.filter, request.edge_limit)
        )
        _take_hop(state, hop, frontier, request.direction, answer)
    return _finish(state, request)


@dataclass(slots=True)
class _Reached:
    """Where the walk met a node: its hop and the edge it came over."""

    hop: int
    via: Via | None


@dataclass(slots=True)
class _Walk:
    """The walk so far (mutable, private to one `walk` call)."""

    max_nodes: int
    nodes: dict[str, tuple[GraphNode, _Reached]] = field(default_factory=dict)
    """Id -> the node and where the walk met it, in the order met."""
    edges: dict[str, Relation] = field(default_factory=dict)
    """Every edge the store returned, by id."""
    truncated: bool = False
    stopped: bool = False
    cut_by: set[Budget] = field(default_factory=set)

    def cut(self) -> None:
        """``max_nodes`` left an in-scope node out: say so, and walk no further."""
        self.truncated = True
        self.stopped = True
        self.cut_by.add('max_nodes')


async def _seed(store: GraphSearch, request: WalkRequest, state: _Walk) -> None:
    """Resolve the seeds (in scope only, first occurrence, in the order given) as hop-0 nodes."""
    wanted = tuple(dict.fromkeys(request.seeds))
    if not wanted:
        return
    found = await store.graph_nodes(NodeRequest(wanted, request.filter))
    by_id: dict[str, GraphNode] = {}
    for node in sorted(found, key=lambda n: (n.id, n.kind)):
        by_id.setdefault(node.id, node)
    seeds = [by_id[seed] for seed in wanted if seed in by_id]
    for node in seeds[: state.max_nodes]:
        state.nodes[node.id] = (node, _Reached(0, None))
    if len(seeds) > state.max_nodes:
        state.cut()


def _take_hop(state: _Walk, hop: int, frontier: tuple[str, ...], direction: Direction, answer: Neighbours) -> None:
    """Add one hop's new nodes (in id order, up to the budget) and remember the edges read."""
    if answer.truncated:
        state.truncated = True
        state.cut_by.add('edge_limit')
    for edge in answer.edges:
        state.edges[edge.id] = edge
    vias = _vias(answer.edges, set(frontier), direction)
    offered: dict[str, GraphNode] = {}
    for node in sorted(answer.nodes, key=lambda n: (n.id, n.kind)):
        if node.id not in state.nodes and node.id in vias:
            offered.setdefault(node.id, node)
    for node_id in sorted(offered):
        if len(state.nodes) >= state.max_nodes:
            state.cut()
            return
        state.nodes[node_id] = (offered[node_id], _Reached(hop, vias[node_id]))


def _vias(edges: Iterable[Relation], frontier: set[str], direction: Direction) -> dict[str, Via]:
    """For each node an edge reaches from the frontier, the smallest ``(from id, type, relation id)`` edge."""
    best: dict[str, tuple[tuple[str, str, str], Via]] = {}
    for edge in edges:
        steps: list[tuple[str, str, Literal['out', 'in']]] = []
        if direction in ('out', 'both') and edge.source in frontier:
            steps.append((edge.source, edge.target, 'out'))
        if direction in ('in', 'both') and edge.target in frontier:
            steps.append((edge.target, edge.source, 'in'))
        for start, reached, way in steps:
            key = (start, edge.type, edge.id)
            if reached not in best or key < best[reached][0]:
                best[reached] = (key, Via(edge.type, start, way, edge.id))
    return {node_id: via for node_id, (_, via) in best.items()}


def _finish(state: _Walk, request: WalkRequest) -> GraphWalk:
    """Order the nodes, score them, and keep the edges read between two returned nodes."""
    edges = sorted(
        (e for e in state.edges.values() if e.source in state.nodes and e.target in state.nodes), key=edge_order
    )
    centrality = _centrality(state.nodes, edges)
    walked: list[WalkedNode] = []
    for node_id, (node, reached) in state.nodes.items():
        score = 1.0 / (1 + reached.hop)
        if request.order == 'centrality':
            score *= 1 + request.alpha * centrality[node_id]
        walked.append(WalkedNode(node, reached.hop, reached.via, score, centrality[node_id]))
    if request.order == 'centrality':
        walked.sort(key=lambda w: (-w.score, w.node.id))
    else:
        walked.sort(key=lambda w: (w.hop, w.node.id))
    cut_by = tuple(b for b in ('max_nodes', 'edge_limit') if b in state.cut_by)
    return GraphWalk(tuple(walked), tuple(edges), state.truncated, cut_by)


def _centrality(node_ids: Iterable[str], edges: Sequence[Relation]) -> dict[str, float]:
    """Weighted in-degree over ``edges`` (self-loops excluded), divided by its maximum (all 0 when that is 0)."""
    degree = dict.fromkeys(node_ids, 0.0)
    for edge in edges:
        if edge.source != edge.target:
            degree[edge.target] += edge.weight
    top = max(degree.values(), default=0.0)
    return {node_id: (value / top if top > 0 else 0.0) for node_id, value in degree.items()}
