"""Navigation (`toolish_rag.protocols.SectionReader`) as LanceDB queries: listing, outlines, section reads.

See docs/stores/lancedb.md (Design notes).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lancedb.query import ColumnOrdering

from toolish_rag.content import Chunk
from toolish_rag.filters import Filter, matches
from toolish_rag.sections import (
    ChunkOutline,
    DocumentPage,
    DocumentPageRequest,
    DocumentSummary,
    OutlineRequest,
    SectionPage,
    SectionReadRequest,
    document_order,
    title_matches,
)

from ._filters import Pushdown, RowTarget, sql_string
from ._queries import PinnedRecords
from ._schema import IN_LIST_BATCH, RESULT_COLUMNS, in_lists, record_from_row
from ._settling import DocumentLedger
from ._tables import Tables

__all__ = ['ChunkSelection', 'chunk_outlines', 'document_page', 'read_section', 'settled_documents']

_READING_ORDER = [
    ColumnOrdering(column_name='document_id', ascending=True),
    ColumnOrdering(column_name='sequence_number', ascending=True),
]
_POSITION_COLUMNS = ['id', 'document_id', 'sequence_number']
_OUTLINE_COLUMNS = [*_POSITION_COLUMNS, 'section_ids', 'payload']
_DOCUMENT_COLUMNS = ['id', 'uri', 'title', 'metadata_json']
_SNAPSHOT_ATTEMPTS = 3


def _quoted(text: str) -> str | None:
    """``text`` as a SQL literal, or ``None`` when no literal carries it (Python compares instead)."""
    try:
        return sql_string(text)
    except ValueError:
        return None


def _order_key(row: Mapping[str, Any]) -> tuple[str, int, str]:
    return (row['document_id'], int(row['sequence_number']), row['id'])


@dataclass(frozen=True, slots=True)
class ChunkSelection:
    """The in-scope chunks a request asks about: a SQL ``where`` and the checks left to Python.

    ``where`` alone is exact when `exact`; otherwise it selects a superset and `keeps`
    decides, from the columns `columns` adds to a read.
    """

    where: str
    residual: Filter | None = None
    """The scope filter, when its SQL (if any) only narrows."""
    document_ids: frozenset[str] | None = None
    """Allowed document ids, when not all of them went into the SQL."""
    section_id: str | None = None
    """A section id no SQL literal carries."""
    section_title: str | None = None

    @classmethod
    def build(
        cls,
        pinned: PinnedRecords,
        scope: Filter | None,
        *,
        document_ids: Sequence[str] | None = None,
        section_id: str | None = None,
        section_title: str | None = None,
    ) -> ChunkSelection:
        parts = ["kind = 'chunk'"]
        pushdown = Pushdown.of(scope, pinned.columns)
        if pushdown.where is not None:
            parts.append(f'({pushdown.where})')
        unpushed_ids = None
        if document_ids is not None:
            literals = [_quoted(i) for i in document_ids]
            if len(document_ids) <= IN_LIST_BATCH and None not in literals:
                parts.append(f'document_id IN ({", ".join(q for q in literals if q is not None)})')
            else:  # one query with a long IN list, or an id SQL cannot carry: Python decides
                unpushed_ids = frozenset(document_ids)
        unpushed_section = None
        if section_id is not None:
            literal = _quoted(section_id)
            if literal is None:
                unpushed_section = section_id
            else:
                parts.append(f'array_has(section_ids, {literal})')
        if section_title is not None:
            needle = _quoted(json.dumps(section_title, ensure_ascii=False))  # as the payload JSON writes it
            if needle is not None:
                parts.append(f'strpos(payload, {needle}) > 0')
        return cls(' AND '.join(parts), pushdown.residual, unpushed_ids, unpushed_section, section_title)

    @property
    def exact(self) -> bool:
        return self.residual is None and self.document_ids is None and self.section_id is None and not self.titled

    @property
    def titled(self) -> bool:
        return self.section_title is not None

    def columns(self, wanted: Sequence[str]) -> list[str]:
        """``wanted`` and the columns `keeps` reads."""
        extra: list[str] = []
        if self.residual is not None:
            extra += ['metadata_json', 'labels']
        if self.document_ids is not None:
            extra.append('document_id')
        if self.section_id is not None:
            extra.append('section_ids')
        if self.titled:
            extra.append('payload')
        return list(dict.fromkeys([*wanted, *extra]))

    def keeps(self, row: Mapping[str, Any]) -> bool:
        if self.document_ids is not None and row['document_id'] not in self.document_ids:
            return False
        if self.section_id is not None and self.section_id not in (row['section_ids'] or ()):
            return False
        if self.section_title is not None and self.section_title not in json.loads(row['payload'])['section_path']:
            return False
        return self.residual is None or matches(self.residual, RowTarget.of(row))

    async def rows(self, table: Any, wanted: Sequence[str]) -> list[dict[str, Any]]:
        """Every selected row, with the ``wanted`` columns (and those `keeps` needed), in no order."""
        found = await table.query().where(self.where).select(self.columns(wanted)).to_arrow()
        return [row for row in found.to_pylist() if self.keeps(row)]

    async def in_order(self, table: Any, wanted: Sequence[str], offset: int, limit: int) -> list[dict[str, Any]]:
        """The selected rows in reading order, ``offset``/``limit`` pushed down when `exact`."""
        if limit == 0:  # LanceDB 0.40 panics on an ordered query with limit 0 (DataFusion's TopK: k > 0)
            return []
        if not self.exact:
            candidates = await self.rows(table, [*wanted, *_POSITION_COLUMNS])
            return sorted(candidates, key=_order_key)[offset : offset + limit]
        query = table.query().where(self.where).select(self.columns([*wanted, *_POSITION_COLUMNS]))
        found = await query.order_by(_READING_ORDER).offset(offset).limit(limit).to_arrow()
        return sorted(found.to_pylist(), key=_order_key)  # ties broken by id, as the slow path does

    async def count(self, table: Any) -> int:
        if self.exact:
            return int(await table.count_rows(self.where))
        return len(await self.rows(table, []))


# -- listing ---------------------------------------------------------------------------------


async def settled_documents(
    tables: Tables, ledger: DocumentLedger, table: Any, document_id: str | None
) -> tuple[int, list[dict[str, Any]]]:
    """The documents rows (one document's, or all) settled against a records version, and that version.

    An upsert commits the documents table around the records commit (`toolish_rag_lancedb._settling`),
    so rows read while the records version stayed put agree with that version: the version is
    read before and after, and the read repeated if a commit landed in between. Under a stream
    of commits the last attempt stands (at worst a replaced document shows its previous title).
    """
    where = None
    if document_id is not None:
        literal = _quoted(document_id)
        where = f'id = {literal}' if literal is not None else None
    version, rows = -1, []
    for _ in range(_SNAPSHOT_ATTEMPTS):
        version = await tables.read_version()
        rows = await ledger.read(table, where=where, columns=list(_DOCUMENT_COLUMNS))
        if await tables.read_version() == version:
            break
    return version, rows


async def document_page(
    pinned: PinnedRecords, documents: Sequence[Mapping[str, Any]], request: DocumentPageRequest
) -> DocumentPage:
    """One page of the documents with an in-scope chunk, given their settled rows at ``pinned``'s version.

    Titles, uris and metadata are the documents rows' (the ledger keeps one per stored document,
    in step with its chunks); the chunk counts come from one read of ``document_id`` over the
    in-scope chunks, and the section counts from a second read, of the page's documents only.
    """
    candidates = {
        row['id']: row
        for row in documents
        if request.document_id in (None, row['id']) and title_matches(row['title'], request.title_contains)
    }
    if not candidates:
        return DocumentPage(documents=(), total=0)
    narrowed = request.document_id is not None or request.title_contains is not None
    selection = ChunkSelection.build(pinned, request.filter, document_ids=sorted(candidates) if narrowed else None)
    chunk_counts = Counter(
        row['document_id']
        for row in await selection.rows(pinned.table, ['document_id'])
        if row['document_id'] in candidates
    )
    listed = sorted((candidates[i] for i in chunk_counts), key=lambda row: document_order(row['title'], row['id']))
    page = listed[request.offset : request.offset + request.limit]
    section_counts = await _section_counts(pinned, request.filter, [row['id'] for row in page])
    summaries = tuple(
        DocumentSummary(
            id=row['id'],
            title=row['title'],
            uri=row['uri'],
            chunk_count=chunk_counts[row['id']],
            section_count=section_counts.get(row['id'], 0),
            metadata=json.loads(row['metadata_json'] or '{}'),
        )
        for row in page
    )
    return DocumentPage(documents=summaries, total=len(listed))


async def _section_counts(pinned: PinnedRecords, scope: Filter | None, document_ids: Sequence[str]) -> dict[str, int]:
    """Per document, how many distinct sections hold an in-scope chunk."""
    if not document_ids:
        return {}
    selection = ChunkSelection.build(pinned, scope, document_ids=document_ids)
    sections: dict[str, set[str]] = {}
    for row in await selection.rows(pinned.table, ['document_id', 'section_ids']):
        sections.setdefault(row['document_id'], set()).update(row['section_ids'] or ())
    return {document_id: len(ids) for document_id, ids in sections.items()}


# -- outlines and section reads ------------------------------------------------------------------


async def chunk_outlines(pinned: PinnedRecords, request: OutlineRequest) -> list[ChunkOutline]:
    """The skeletons of the in-scope chunks ``request`` asks about, in reading order (ids, positions, names)."""
    if request.limit == 0:
        return []
    selection = ChunkSelection.build(
        pinned,
        request.filter,
        document_ids=None if request.document_id is None else [request.document_id],
        section_id=request.section_id,
        section_title=request.section_title,
    )
    return [_outline(row) for row in await selection.in_order(pinned.table, _OUTLINE_COLUMNS, 0, request.limit)]


def _outline(row: Mapping[str, Any]) -> ChunkOutline:
    payload = json.loads(row['payload'])
    return ChunkOutline(
        id=row['id'],
        document_id=row['document_id'],
        document_title=payload['document_title'],
        sequence_number=int(row['sequence_number']),
        section_ids=tuple(row['section_ids'] or ()),
        section_path=tuple(payload['section_path']),
    )


async def read_section(pinned: PinnedRecords, request: SectionReadRequest) -> SectionPage:
    """One page of a section's (or document's) in-scope chunks: positions first, then the page's rows."""
    selection = ChunkSelection.build(
        pinned,
        request.filter,
        document_ids=None if request.document_id is None else [request.document_id],
        section_id=request.section_id,
    )
    if selection.exact:
        total = await selection.count(pinned.table)
        page = (
            [] if request.offset >= total else await selection.in_order(pinned.table, [], request.offset, request.limit)
        )
    else:  # one read of the candidates' positions serves both the total and the page
        in_scope = sorted(await selection.rows(pinned.table, _POSITION_COLUMNS), key=_order_key)
        total, page = len(in_scope), in_scope[request.offset : request.offset + request.limit]
    return SectionPage(chunks=await _chunks_by_id(pinned.table, [row['id'] for row in page]), total=total)


async def _chunks_by_id(table: Any, ids: Sequence[str]) -> tuple[Chunk, ...]:
    """The full chunks with these ids, in the order given (record ids always have a SQL literal)."""
    found: dict[str, Chunk] = {}
    for batch in in_lists(list(ids)):
        rows = await table.query().where(f"kind = 'chunk' AND id IN {batch}").select(RESULT_COLUMNS).to_arrow()
        for row in rows.to_pylist():
            record = record_from_row(row)
            if isinstance(record, Chunk):
                found[record.id] = record
    return tuple(found[i] for i in ids if i in found)
