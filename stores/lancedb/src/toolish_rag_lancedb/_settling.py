"""Keeping the documents table in step with the records, whatever instant a crash hits.

See docs/stores/lancedb.md (Design notes).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from toolish_rag.content import Document

from ._schema import DOCUMENTS_SCHEMA, PENDING_FIELDS, document_table, in_lists
from ._tables import Tables

__all__ = ['DocumentLedger', 'settled']


def settled(row: Mapping[str, Any], records_version: int) -> dict[str, Any] | None:
    """What a documents row stands for: itself once its chunks were committed (the records
    table moved past the version it was written at), else the row it replaced (``None``: none)."""
    pending = row.get('pending_version')
    if pending is None or records_version > pending:
        return {**row, 'pending_version': None, 'previous_json': None}
    previous = row.get('previous_json')
    if previous is None:
        return None
    restored: dict[str, Any] = json.loads(previous)
    return {**restored, 'pending_version': None, 'previous_json': None}


class DocumentLedger:
    """The documents table's writes and reads, through the pending-row protocol above.

    ``settled`` is per store object: ``False`` until this object has resolved whatever pending
    rows a crashed writer left, and again after one of its own writes was interrupted.
    """

    def __init__(self, tables: Tables) -> None:
        self._tables = tables
        self.settled = False

    async def settle(self) -> None:
        """Before this object's first change to either table: resolve a crashed write."""
        await self._tables.connect()
        if not self.settled and self._tables.documents is not None:
            await self._settle_pending()

    async def write_pending(self, documents: Sequence[Document]) -> None:
        """Step 1: the documents' rows, marked with the records version they precede."""
        version = int(await self._tables.records.version())
        previous = await self._current_rows([d.id for d in documents])
        await self._merge(document_table(documents, pending=(version, previous)))

    async def write_final(self, documents: Sequence[Document]) -> None:
        """Step 3 (or the only step, when no records changed): the documents' final rows."""
        await self._merge(document_table(documents))

    async def read(
        self, table: Any, *, where: str | None = None, columns: list[str] | None = None
    ) -> list[dict[str, Any]]:
        """The settled rows of the documents ``table`` (optionally ``where``), as a reader sees them."""
        if columns is not None:
            names = set((await table.schema()).names)
            columns = columns + [name for name in PENDING_FIELDS if name in names]
        records_version = await self._tables.read_version()
        query = table.query()
        if where is not None:
            query = query.where(where)
        if columns is not None:
            query = query.select(columns)
        found = (await query.to_arrow()).to_pylist()
        return [s for s in (settled(r, records_version) for r in found) if s is not None]

    async def _merge(self, rows: pa.Table) -> None:
        await (
            self._tables.documents.merge_insert('id')
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute(rows)
        )

    async def _current_rows(self, ids: Sequence[str]) -> dict[str, str]:
        """The settled rows of these documents now stored, as JSON (what a revert restores)."""
        out: dict[str, str] = {}
        records_version = await self._tables.records_version()
        for batch in in_lists(ids):
            for row in (await self._tables.documents.query().where(f'id IN {batch}').to_arrow()).to_pylist():
                row_now = settled(row, records_version)
                if row_now is not None:
                    out[row_now['id']] = json.dumps(row_now, ensure_ascii=False)
        return out

    async def _settle_pending(self) -> None:
        """Resolve the pending rows a crashed writer left (once per store object, before writing).

        A pending row whose records version has since moved on was followed by its chunk commit:
        it becomes final. Otherwise the chunks never landed: the previous row comes back (or
        the row goes, for a document that did not exist before).
        """
        documents = self._tables.documents
        names = set((await documents.schema()).names)
        missing = [name for name in PENDING_FIELDS if name not in names]
        if missing:  # a store written before the pending columns existed
            await documents.add_columns(pa.schema([DOCUMENTS_SCHEMA.field(name) for name in missing]))
        rows = (await documents.query().where('pending_version IS NOT NULL').to_arrow()).to_pylist()
        if rows:
            records_version = await self._tables.records_version()
            keep: list[dict[str, Any]] = []
            drop: list[str] = []
            for row in rows:
                row_now = settled(row, records_version)
                if row_now is None:
                    drop.append(row['id'])
                else:
                    keep.append(row_now)
            if keep:
                await self._merge(pa.Table.from_pylist(keep, schema=DOCUMENTS_SCHEMA))
            for batch in in_lists(drop):
                await documents.delete(f'id IN {batch}')
        self.settled = True
