"""Graph context: nodes, typed relations, and a bounded, scoped walk over them.

* `toolish_rag.graph.model`: what a `GraphSearch` store answers (`GraphNode`, `Neighbours`) and
  the requests (`NodeRequest`, `NeighbourRequest`);
* `toolish_rag.graph.reference`: those answers computed from plain records, the semantics every
  store matches;
* `toolish_rag.graph.walk`: the breadth-first walk the ``graph_context`` tool runs (hop, via,
  truncated, deterministic order, centrality rerank);
* `toolish_rag.graph.builders`: what writes the graph (exact-name and vector linkers, document
  structure, Python code, model extraction), each idempotent.
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
