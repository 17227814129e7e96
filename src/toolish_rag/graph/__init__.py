"""Graph context: nodes, typed relations, and a bounded, scoped walk over them.

`model` (what a graph store answers), `reference` (the same answers from plain records), `walk`
(the walk the ``graph_context`` tool runs). What writes the graph lives beside ingestion, in
`toolish_rag.graph_builders`. See docs/graph.md.
"""

from .model import (
    MAX_EDGE_LIMIT,
    NODE_KIND_ORDER,
    Direction,
    GraphNode,
    NeighbourRequest,
    Neighbours,
    NodeKind,
    NodeRequest,
    edge_order,
)
from .reference import reference_neighbours, reference_nodes
from .walk import MAX_HOPS, MAX_WALK_NODES, GraphWalk, Via, WalkedNode, WalkRequest, walk

__all__ = [
    'MAX_EDGE_LIMIT',
    'NODE_KIND_ORDER',
    'MAX_HOPS',
    'MAX_WALK_NODES',
    'Direction',
    'GraphNode',
    'GraphWalk',
    'NeighbourRequest',
    'Neighbours',
    'NodeKind',
    'NodeRequest',
    'Via',
    'WalkRequest',
    'WalkedNode',
    'edge_order',
    'reference_neighbours',
    'reference_nodes',
    'walk',
]
