"""The graph requests answered from plain records: the semantics every `GraphSearch` store matches.

The oracle the conformance kit compares stores with. See docs/graph.md#how-the-graph-core-is-built.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..content import Chunk, Entity, NodeKind, Relation
from ..filters import Filter, matches
from .model import NODE_KIND_ORDER, GraphNode, NeighbourRequest, Neighbours, NodeRequest, edge_order

__all__ = ['reference_neighbours', 'reference_nodes']


def reference_nodes(records: Iterable[Chunk | Entity], request: NodeRequest) -> list[GraphNode]:
    """The in-scope nodes among ``request.ids``, each once, sorted by id."""
    scope = _Scope(records, request.filter)
    found: dict[str, GraphNode] = {}
    for node_id in request.ids:
        for kind in NODE_KIND_ORDER:
            node = scope.node(node_id, kind)
            if node is not None:
                found[node_id] = node
                break
    return [found[node_id] for node_id in sorted(found)]


def reference_neighbours(
    records: Iterable[Chunk | Entity], relations: Iterable[Relation], request: NeighbourRequest
) -> Neighbours:
    """One hop around ``request.ids``: the qualifying edges in `edge_order`, cut at ``limit``."""
    scope = _Scope(records, request.filter)
    ids = set(request.ids)
    by_id = {relation.id: relation for relation in relations}  # one record per id: the last, as an upsert keeps
    qualifying: list[Relation] = []
    for relation in by_id.values():
        if request.edge_types is not None and relation.type not in request.edge_types:
            continue
        if not _touches(relation, ids, request):
            continue
        if not matches(request.filter, relation):
            continue
        if scope.node(relation.source, relation.source_kind) is None:
            continue
        if scope.node(relation.target, relation.target_kind) is None:
            continue
        qualifying.append(relation)
    qualifying.sort(key=edge_order)
    edges = qualifying[: request.limit]
    far: dict[tuple[str, NodeKind], GraphNode] = {}
    for relation in edges:
        for node_id, kind in ((relation.source, relation.source_kind), (relation.target, relation.target_kind)):
            node = scope.node(node_id, kind)
            if node_id not in ids and node is not None:
                far[(node_id, kind)] = node
    nodes = tuple(far[key] for key in sorted(far))
    return Neighbours(edges=tuple(edges), nodes=nodes, truncated=len(qualifying) > request.limit)


def _touches(relation: Relation, ids: set[str], request: NeighbourRequest) -> bool:
    """Whether ``relation`` has one of ``ids`` on the side ``request.direction`` names."""
    out = relation.source in ids
    in_ = relation.target in ids
    if request.direction == 'out':
        return out
    if request.direction == 'in':
        return in_
    return out or in_


class _Scope:
    """The in-scope nodes of some records under one filter, resolved by id and kind.

    Chunks are kept in reading order (document, then sequence number) so a section or document
    node is always built from the same in-scope chunk, the first: `GraphNode.of_section` and
    `GraphNode.of_document` give the same values from any chunk of one document, and this keeps
    the oracle deterministic anyway.
    """

    __slots__ = ('_chunks', '_entities', '_filter')

    def __init__(self, records: Iterable[Chunk | Entity], filter: Filter | None) -> None:
        chunks: dict[str, Chunk] = {}
        entities: dict[str, Entity] = {}
        for record in records:
            if isinstance(record, Chunk):
                chunks[record.id] = record
            else:
                entities[record.id] = record
        self._chunks = sorted(chunks.values(), key=lambda c: (c.document_id, c.sequence_number, c.id))
        self._entities = entities
        self._filter = filter

    def node(self, node_id: str, kind: NodeKind) -> GraphNode | None:
        """The node ``node_id`` of ``kind`` when it exists and is in scope, else ``None``."""
        if kind == 'entity':
            entity = self._entities.get(node_id)
            return GraphNode.of_entity(entity) if entity is not None and matches(self._filter, entity) else None
        for chunk in self._chunks:
            if not matches(self._filter, chunk):
                continue
            if kind == 'chunk' and chunk.id == node_id:
                return GraphNode.of_chunk(chunk)
            if kind == 'section' and node_id in chunk.section_ids:
                return GraphNode.of_section(chunk, node_id)
            if kind == 'document' and chunk.document_id == node_id:
                return GraphNode.of_document(chunk)
        return None
