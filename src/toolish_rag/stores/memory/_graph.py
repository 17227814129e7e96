"""The in-memory store's graph: a snapshot's relations and builders' ledger, and the two scoped reads over them.

Immutable like the records; the adjacency index is built on a state's first graph read. See docs/stores/memory.md.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from ...content import Chunk, Entity, NodeKind, Record, Relation
from ...filters import Filter, matches
from ...graph.model import NODE_KIND_ORDER, Direction, GraphNode, NeighbourRequest, Neighbours, NodeRequest, edge_order
from ._navigation import MaskSource, NavigationIndex, NavigationScope, positions_of

__all__ = [
    'GraphIndex',
    'GraphSource',
    'GraphState',
    'Marks',
    'NodeScope',
    'entities_of',
    'neighbours_of',
    'nodes_of',
]

Marks = Mapping[str, Mapping[str, str]]
"""The builders' ledger: builder name -> key -> value (see `toolish_rag.protocols.GraphStore`)."""

_NO_POSITIONS: npt.NDArray[np.intp] = np.zeros(0, dtype=np.intp)


@dataclass(frozen=True)
class GraphIndex:
    """A state's relations in `edge_order`, with the positions of each node's outgoing and incoming ones.

    Positions index ``relations`` and every array is ascending, so a union of them, sorted, is already
    in edge order: `neighbours_of` reads candidates in the order it returns and cuts them.
    """

    relations: tuple[Relation, ...]
    by_source: dict[str, npt.NDArray[np.intp]]
    by_target: dict[str, npt.NDArray[np.intp]]

    @classmethod
    def build(cls, relations: Iterable[Relation]) -> GraphIndex:
        ordered = tuple(sorted(relations, key=edge_order))
        by_source: dict[str, list[int]] = {}
        by_target: dict[str, list[int]] = {}
        for position, relation in enumerate(ordered):
            by_source.setdefault(relation.source, []).append(position)
            by_target.setdefault(relation.target, []).append(position)
        return cls(
            relations=ordered,
            by_source={k: positions_of(v) for k, v in by_source.items()},
            by_target={k: positions_of(v) for k, v in by_target.items()},
        )

    def touching(self, ids: Iterable[str], direction: Direction) -> npt.NDArray[np.intp]:
        """Positions of the relations touching ``ids`` on the side ``direction`` names, each once, in edge order."""
        sides = {'out': (self.by_source,), 'in': (self.by_target,), 'both': (self.by_source, self.by_target)}[direction]
        found = [side[i] for i in set(ids) for side in sides if i in side]
        return np.unique(np.concatenate(found)) if found else _NO_POSITIONS


@dataclass
class GraphState:
    """A snapshot's relations (by id) and ledger. Never changed once published: writes make a new state.

    Only the adjacency index is filled in later, once, on the first graph read (see docs/stores/memory.md).
    """

    relations: Mapping[str, Relation] = field(default_factory=dict)
    marks: Marks = field(default_factory=dict)
    _index: GraphIndex | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def index(self) -> GraphIndex:
        with self._lock:
            if self._index is None:
                self._index = GraphIndex.build(self.relations.values())
            return self._index

    def without_documents(self, document_ids: Set[str]) -> GraphState:
        """This state minus the relations and ledger keys bound to these documents (itself if none are)."""
        relations = {k: r for k, r in self.relations.items() if r.document_id not in document_ids}
        marks = {b: {k: v for k, v in m.items() if k not in document_ids} for b, m in self.marks.items()}
        marks = {b: m for b, m in marks.items() if m}
        if len(relations) == len(self.relations) and marks == self.marks:
            return self
        return GraphState(relations, marks)

    def with_relations(self, relations: Sequence[Relation]) -> GraphState:
        """This state with ``relations`` inserted or replaced by id (itself if each is already stored as is)."""
        if all(self.relations.get(r.id) == r for r in relations):
            return self
        return GraphState({**self.relations, **{r.id: r for r in relations}}, self.marks)

    def without_relations(self, ids: Iterable[str]) -> tuple[GraphState, int]:
        """This state without the relations ``ids`` names, and how many of them existed."""
        gone = {i for i in ids if i in self.relations}
        if not gone:
            return self, 0
        return GraphState({k: r for k, r in self.relations.items() if k not in gone}, self.marks), len(gone)

    def with_marks(self, builder: str, changes: Mapping[str, str | None]) -> GraphState:
        """This state with ``builder``'s ledger keys set (``None``: deleted); itself if nothing changes."""
        for key, value in changes.items():
            if not isinstance(key, str) or not (value is None or isinstance(value, str)):
                raise TypeError(f'ledger keys and values are strings (None deletes a key), got {key!r}: {value!r}')
        current = dict(self.marks.get(builder, {}))
        for key, value in changes.items():
            if value is None:
                current.pop(key, None)
            else:
                current[key] = value
        if current == self.marks.get(builder, {}):
            return self
        marks = {b: m for b, m in self.marks.items() if b != builder}
        if current:
            marks[builder] = current
        return GraphState(self.relations, marks)

    def listed(self, document_ids: Sequence[str] | None, origin: str | None) -> list[Relation]:
        """`GraphStore.list_relations`: of these documents (``None``: all) and this origin, in edge order."""
        wanted = None if document_ids is None else set(document_ids)
        found = (
            r
            for r in self.relations.values()
            if (wanted is None or r.document_id in wanted) and (origin is None or r.origin == origin)
        )
        return sorted(found, key=edge_order)


class GraphSource(MaskSource, Protocol):
    """What the graph reads need of a snapshot: records by id, filter masks, navigation and the graph."""

    @property
    def index(self) -> Mapping[str, int]:
        """Record id -> its position in ``records`` (and in a filter's mask)."""
        ...

    @property
    def graph(self) -> GraphState: ...


class NodeScope:
    """Which nodes one request's filter admits, each node and each chunk decided at most once.

    Made per request: what it remembers is only valid for one snapshot and one filter.
    """

    def __init__(self, source: GraphSource, f: Filter | None, work: int) -> None:
        self._records: Sequence[Record] = source.records
        self._positions = source.index
        self._filter = f
        # The filter's mask when cached, or when ``work`` makes building it cheaper than testing records one by one.
        scope = NavigationScope.of(source, f, work)
        self._navigation: NavigationIndex = scope.navigation
        self._mask = scope.mask
        self._rows: dict[int, bool] = {}
        self._nodes: dict[tuple[str, NodeKind | None], GraphNode | None] = {}

    def node(self, node_id: str, kind: NodeKind) -> GraphNode | None:
        """The in-scope node ``node_id`` of ``kind``, else ``None``: absent and foreign alike."""
        key = (node_id, kind)
        if key not in self._nodes:
            self._nodes[key] = self._resolve(node_id, kind)
        return self._nodes[key]

    def any_node(self, node_id: str) -> GraphNode | None:
        """The first in-scope node of the kinds in `NODE_KIND_ORDER` named ``node_id`` (a foreign one hides none)."""
        return next((n for n in (self.node(node_id, kind) for kind in NODE_KIND_ORDER) if n is not None), None)

    def _resolve(self, node_id: str, kind: NodeKind) -> GraphNode | None:
        nav = self._navigation
        if kind == 'section':
            position = self._first_admitted(nav.by_section.get(node_id, _NO_POSITIONS))
            return None if position is None else GraphNode.of_section(nav.chunks[position], node_id)
        if kind == 'document':
            position = self._first_admitted(nav.document_positions(node_id))
            return None if position is None else GraphNode.of_document(nav.chunks[position])
        row = self._positions.get(node_id)
        if row is None or self._records[row].kind != kind or not self._admits(row):
            return None
        record = self._records[row]
        return GraphNode.of_chunk(record) if isinstance(record, Chunk) else GraphNode.of_entity(record)

    def _admits(self, row: int) -> bool:
        if self._filter is None:
            return True
        if self._mask is not None:
            return bool(self._mask[row])
        admitted = self._rows.get(row)
        if admitted is None:
            admitted = self._rows[row] = matches(self._filter, self._records[row])
        return admitted

    def _first_admitted(self, positions: npt.NDArray[np.intp]) -> int | None:
        """The first position (reading order) whose chunk is in scope, testing no chunk past it."""
        if not len(positions):
            return None
        if self._filter is None:
            return int(positions[0])
        rows = self._navigation.rows[positions]
        if self._mask is not None:
            hits = np.flatnonzero(self._mask[rows])
            return int(positions[hits[0]]) if hits.size else None
        return next((int(p) for p, row in zip(positions, rows.tolist(), strict=True) if self._admits(row)), None)


def nodes_of(source: GraphSource, request: NodeRequest) -> list[GraphNode]:
    """`GraphSearch.graph_nodes`: the in-scope nodes among ``request.ids``, in request order, each once."""
    scope = NodeScope(source, request.filter, len(request.ids))
    found = (scope.any_node(node_id) for node_id in dict.fromkeys(request.ids))
    return [node for node in found if node is not None]


def neighbours_of(source: GraphSource, request: NeighbourRequest) -> Neighbours:
    """`GraphSearch.neighbours` (reference: `toolish_rag.graph.reference.reference_neighbours`).

    Candidates come from the adjacency index already in edge order, so the walk stops at the first
    qualifying edge past ``limit``: that one only says ``truncated``. Scope is tested cheapest first
    (type, the relation's own filter, then its endpoints), each endpoint once per request.
    """
    graph = source.graph.index()
    candidates = graph.touching(request.ids, request.direction)
    scope = NodeScope(source, request.filter, 2 * len(candidates))
    requested = set(request.ids)
    edges: list[Relation] = []
    far: dict[tuple[str, NodeKind], GraphNode] = {}
    truncated = False
    for position in candidates.tolist():
        relation = graph.relations[position]
        if request.edge_types is not None and relation.type not in request.edge_types:
            continue
        if not matches(request.filter, relation):
            continue
        source_node = scope.node(relation.source, relation.source_kind)
        target_node = scope.node(relation.target, relation.target_kind) if source_node is not None else None
        if source_node is None or target_node is None:
            continue
        if len(edges) == request.limit:
            truncated = True
            break
        edges.append(relation)
        for node in (source_node, target_node):
            if node.id not in requested:
                far[(node.id, node.kind)] = node  # an id naming two kinds (an entity and a document) is two nodes
    return Neighbours(tuple(edges), tuple(far[k] for k in sorted(far)), truncated)


def entities_of(records: Iterable[Record]) -> list[Entity]:
    """`GraphStore.list_entities`: every entity, in id order (unscoped: for builders)."""
    return sorted((r for r in records if isinstance(r, Entity)), key=lambda e: e.id)
