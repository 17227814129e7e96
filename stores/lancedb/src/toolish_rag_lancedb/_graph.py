"""`toolish_rag.protocols.GraphSearch` as LanceDB queries: nodes resolved and one hop read, always scoped.

See docs/stores/lancedb.md (Design notes).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from lancedb.query import ColumnOrdering

from toolish_rag.content import Chunk, Entity, NodeKind, Relation
from toolish_rag.filters import Filter
from toolish_rag.graph import NODE_KIND_ORDER, GraphNode, NeighbourRequest, Neighbours, NodeRequest

from ._filters import Pushdown, RowTarget, has_literal, sql_string
from ._queries import PinnedTable, Pins
from ._schema import RELATION_COLUMNS, RESULT_COLUMNS, in_lists, record_from_row, relation_from_row
from ._tables import Tables

__all__ = ['PAGE_MIN', 'GraphSnapshot', 'NodeScope', 'graph_nodes', 'neighbours', 'pinned_snapshot']

"""The kind an id naming several resolves to in `graph_nodes` (the first in scope), as in the reference."""

PAGE_MIN = 256
"""Relations read per page at least: a page is ``limit + 1`` rows, but no fewer than this, so a hop
whose first edges are mostly out of scope does not crawl."""

_BY_ID = [ColumnOrdering(column_name='id', ascending=True)]
Key: TypeAlias = tuple[str, NodeKind]
"""A node as an edge names it: id and kind."""


@dataclass(frozen=True, slots=True)
class GraphSnapshot:
    """The records and relations tables pinned at versions a reader saw together (see `pinned_snapshot`)."""

    records: PinnedTable
    relations: PinnedTable


_SNAPSHOT_ATTEMPTS = 3


async def pinned_snapshot(tables: Tables, record_pins: Pins, relation_pins: Pins) -> GraphSnapshot | None:
    """Both tables pinned at versions that stood together (``None``: no relation or no record yet).

    The relations version is read before and after the records version: when it did not move,
    both versions were current at once, the instant the records version was read. Under a
    stream of writes the last attempt stands (at worst one write's relations and chunks are
    seen on different sides of it, never a half-written table).
    """
    relations_version = records_version = -1
    for _ in range(_SNAPSHOT_ATTEMPTS):
        relations_table = await tables.relations_for_read()
        records_table = await tables.records_for_read()
        if relations_table is None or records_table is None:
            return None
        relations_version = int(await relations_table.version())
        records_version = int(await records_table.version())
        if int(await relations_table.version()) == relations_version:
            break
    return GraphSnapshot(
        await record_pins.at(tables, records_version), await relation_pins.at(tables, relations_version)
    )


class NodeScope:
    """The in-scope nodes of one pinned records version under one filter, resolved in batches.

    `resolve` looks up every (id, kind) not known yet; `node` answers from what was resolved
    (``None``: missing or out of scope, which a caller cannot and must not tell apart).
    """

    def __init__(self, records: PinnedTable, scope: Filter | None) -> None:
        self._table = records.table
        self._scope = Pushdown.of(scope, records.columns)
        self._known: dict[Key, GraphNode | None] = {}

    def node(self, node_id: str, kind: NodeKind) -> GraphNode | None:
        return self._known.get((node_id, kind))

    async def resolve(self, keys: Iterable[Key]) -> None:
        todo = [key for key in dict.fromkeys(keys) if key not in self._known]
        wanted: dict[NodeKind, list[str]] = {kind: [] for kind in NODE_KIND_ORDER}
        for node_id, kind in todo:
            self._known[(node_id, kind)] = None
            if has_literal(node_id):  # no stored id lacks a SQL literal: the others name nothing
                wanted[kind].append(node_id)
        records = await self._records([*wanted['chunk'], *wanted['entity']])
        sections = await self._first_chunks(
            'array_has_any(section_ids, make_array{})', 'section_ids', wanted['section']
        )
        documents = await self._first_chunks('document_id IN {}', 'document_id', wanted['document'])
        chunks = {r.id: r for r in records.values() if isinstance(r, Chunk)}
        chunks.update(await self._chunks([i for i in {*sections.values(), *documents.values()} if i not in chunks]))
        for node_id, kind in todo:
            record = records.get((node_id, kind))
            if isinstance(record, Chunk):
                self._known[(node_id, kind)] = GraphNode.of_chunk(record)
            elif isinstance(record, Entity):
                self._known[(node_id, kind)] = GraphNode.of_entity(record)
            elif kind == 'section' and node_id in sections:
                self._known[(node_id, kind)] = GraphNode.of_section(chunks[sections[node_id]], node_id)
            elif kind == 'document' and node_id in documents:
                self._known[(node_id, kind)] = GraphNode.of_document(chunks[documents[node_id]])

    def _where(self, *parts: str | None) -> str:
        return ' AND '.join(f'({p})' for p in (*parts, self._scope.where) if p)

    async def _records(self, ids: Sequence[str]) -> dict[Key, Chunk | Entity]:
        """The in-scope chunks and entities with these ids, by (id, kind)."""
        found: dict[Key, Chunk | Entity] = {}
        for batch in in_lists(sorted(set(ids))):
            rows = await self._table.query().where(self._where(f'id IN {batch}')).select(RESULT_COLUMNS).to_arrow()
            for record in map(record_from_row, rows.to_pylist()):
                if self._scope.keeps(record):
                    found[(record.id, record.kind)] = record
        return found

    async def _first_chunks(self, clause: str, column: str, ids: Sequence[str]) -> dict[str, str]:
        """Per section (``column='section_ids'``) or document id: its lowest-id in-scope chunk's id.

        Reads ids only (and the filter's columns when Python decides the scope).
        """
        first: dict[str, str] = {}
        columns = ['id', column, *(['metadata_json', 'labels'] if self._scope.residual is not None else [])]
        wanted = set(ids)
        for batch in in_lists(sorted(wanted)):
            where = self._where("kind = 'chunk'", clause.format(batch))
            for row in (await self._table.query().where(where).select(columns).to_arrow()).to_pylist():
                if self._scope.residual is not None and not self._scope.keeps(RowTarget.of(row)):
                    continue
                holders = row[column] if column == 'section_ids' else [row[column]]
                for node_id in wanted.intersection(holders or ()):
                    if node_id not in first or row['id'] < first[node_id]:
                        first[node_id] = row['id']
        return first

    async def _chunks(self, ids: Sequence[str]) -> dict[str, Chunk]:
        """Whole chunks by id (already known to be in scope)."""
        found: dict[str, Chunk] = {}
        for batch in in_lists(sorted(ids)):
            where = f"kind = 'chunk' AND id IN {batch}"
            rows = await self._table.query().where(where).select(RESULT_COLUMNS).to_arrow()
            for record in map(record_from_row, rows.to_pylist()):
                if isinstance(record, Chunk):
                    found[record.id] = record
        return found


async def graph_nodes(records: PinnedTable, request: NodeRequest) -> list[GraphNode]:
    """The in-scope nodes among ``request.ids``, each once, by id (one batch of queries for all)."""
    ids = list(dict.fromkeys(request.ids))
    scope = NodeScope(records, request.filter)
    await scope.resolve((node_id, kind) for node_id in ids for kind in NODE_KIND_ORDER)
    found: dict[str, GraphNode] = {}
    for node_id in ids:
        node = next((n for n in (scope.node(node_id, kind) for kind in NODE_KIND_ORDER) if n is not None), None)
        if node is not None:
            found[node_id] = node
    return [found[node_id] for node_id in sorted(found)]


async def neighbours(snapshot: GraphSnapshot, request: NeighbourRequest) -> Neighbours:
    """One hop around ``request.ids``: the first ``limit`` qualifying edges by id, their far nodes, and
    whether more qualified."""
    ids = [i for i in dict.fromkeys(request.ids) if has_literal(i)]
    types = None if request.edge_types is None else sorted(t for t in request.edge_types if has_literal(t))
    if not ids or types == []:
        return Neighbours(edges=(), nodes=())
    scope = NodeScope(snapshot.records, request.filter)
    qualifying: list[Relation] = []
    async for page in _edge_pages(snapshot.relations, request, ids, types):
        await scope.resolve(key for r in page for key in ((r.source, r.source_kind), (r.target, r.target_kind)))
        qualifying += [r for r in page if scope.node(r.source, r.source_kind) and scope.node(r.target, r.target_kind)]
        if len(qualifying) > request.limit:
            break
    edges = qualifying[: request.limit]
    asked = set(request.ids)
    far: dict[Key, GraphNode] = {}
    for relation in edges:
        for key in ((relation.source, relation.source_kind), (relation.target, relation.target_kind)):
            node = scope.node(*key)
            if key[0] not in asked and node is not None:
                far[key] = node
    return Neighbours(
        edges=tuple(edges), nodes=tuple(far[key] for key in sorted(far)), truncated=len(qualifying) > request.limit
    )


async def _edge_pages(
    relations: PinnedTable, request: NeighbourRequest, ids: Sequence[str], types: Sequence[str] | None
) -> AsyncIterator[list[Relation]]:
    """The relations touching ``ids`` on the requested side, of ``types``, satisfying the filter: in pages by id.

    Keyset paging (``id > last``) on the pinned version: every page is one ordered, limited query.
    """
    sides = {'out': ('source',), 'in': ('target',), 'both': ('source', 'target')}[request.direction]
    touching = ' OR '.join(f'{side} IN {batch}' for side in sides for batch in in_lists(ids))
    typed = None if types is None else ' OR '.join(f'type IN {batch}' for batch in in_lists(types))
    scope = Pushdown.of(request.filter, relations.columns)
    base = [p for p in (touching, typed, scope.where) if p]
    size = max(request.limit + 1, PAGE_MIN)
    last: str | None = None
    while True:
        parts = base if last is None else [*base, f'id > {sql_string(last)}']
        query = relations.table.query().where(' AND '.join(f'({p})' for p in parts)).select(RELATION_COLUMNS)
        rows: list[dict[str, Any]] = (await query.order_by(_BY_ID).limit(size).to_arrow()).to_pylist()
        yield [r for r in map(relation_from_row, rows) if scope.keeps(r)]
        if len(rows) < size:
            return
        last = rows[-1]['id']
