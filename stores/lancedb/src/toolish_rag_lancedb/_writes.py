"""The records side of a write: what one upsert commits, and the deletes.

An upsert's records change is one LanceDB commit, so a reader sees a document's old chunks
or its new ones, never a mix: `plan_records_commit` looks up the chunk ids the batch's
documents have now (an indexed lookup), and writes the new chunks with ``merge_insert`` on
``id`` plus ``when_not_matched_by_source_delete`` scoped to exactly the stale ids. A batch of
only new documents is a plain append. The documents table is written around that commit by
`toolish_rag_lancedb._settling`; the store orders the steps (``LanceDBStore.upsert``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pyarrow as pa

from toolish_rag.content import Chunk, Document, Entity, Record

from ._filters import column_type, metadata_columns
from ._manifest import record_languages
from ._schema import in_list, in_lists, record_table
from ._tables import Tables
from ._windows import set_windows

__all__ = [
    'CONFLICT_ATTEMPTS',
    'CommitStep',
    'RecordsCommit',
    'delete_document_rows',
    'delete_entity_rows',
    'plan_records_commit',
    'records_to_write',
    'retry_conflicts',
    'skipped_on_conflict',
]

CommitStep = Literal['unlink-graph', 'pending-documents', 'records', 'final-documents', 'relations']
"""An upsert's commits, in order: see `toolish_rag_lancedb._settling`, `toolish_rag_lancedb._relations`
and ``LanceDBStore.before_commit``."""


@dataclass(frozen=True, slots=True)
class RecordsCommit:
    """An upsert's one records commit: a plain append (``merge`` is ``None``) or a merge."""

    table: Any
    data: pa.Table
    merge: Any = None

    async def run(self) -> None:
        if self.merge is None:
            await self.table.add(self.data)
        else:
            await self.merge.execute(self.data)


def records_to_write(documents: Sequence[Document], entities: Sequence[Entity]) -> list[Record]:
    """The batch's chunks and entities, one per id (the last one given wins, in its place)."""
    by_id: dict[str, Record] = {}
    for doc in documents:
        for chunk in doc.chunks:
            by_id.pop(chunk.id, None)
            by_id[chunk.id] = chunk
    for entity in entities:
        by_id.pop(entity.id, None)
        by_id[entity.id] = entity
    return list(by_id.values())


async def plan_records_commit(
    tables: Tables,
    records: Sequence[Record],
    vectors: np.ndarray[Any, Any] | None,
    documents: Sequence[Document],
    entities: Sequence[Entity],
    windows: Sequence[np.ndarray[Any, Any]] | None = None,
) -> RecordsCommit | None:
    """The commit that brings the records table to this batch, or ``None`` if nothing changes.

    Adds the typed metadata columns the batch needs first, and refuses record ids that belong
    to another document (or kind of record).
    """
    table = tables.records
    await _add_metadata_columns(tables, records)
    await _check_clashes(table, records, documents)
    schema = await table.schema()
    words = await _analysed_words(tables, records)
    data = record_table(records, vectors if vectors is not None else np.zeros((0, 1)), schema, words)
    data = set_windows(data, vectors if vectors is not None else np.zeros((0, 1)), windows)
    stored = await _stored_chunk_ids(table, documents) if documents else set()
    stale = stored - {r.id for r in records}
    if not stored and not entities:
        # Only new documents and no id clashes (checked above): a plain append.
        return RecordsCommit(table, data) if data.num_rows else None
    if not data.num_rows and not stale:
        return None
    merge = table.merge_insert('id').when_matched_update_all().when_not_matched_insert_all()
    if stale:
        # The stale chunks go in the same commit as the new ones: a reader sees the old
        # version or the new one, never a mix.
        scope = ' OR '.join(f'id IN {batch}' for batch in in_lists(sorted(stale)))
        merge = merge.when_not_matched_by_source_delete(f"kind = 'chunk' AND ({scope})")
    return RecordsCommit(table, data, merge)


async def _analysed_words(tables: Tables, records: Sequence[Record]) -> list[str] | None:
    """Each record's text as the ``words`` column holds it, for a table with a language analyzer."""
    analyzer = tables.text_analyzer
    if analyzer is None or not records:
        return None if analyzer is None else []
    owners = [r.document_id if isinstance(r, Chunk) else r.id for r in records]
    analysis = await asyncio.to_thread(analyzer.analyse, [r.text for r in records], owners)
    if analyzer.auto:
        await asyncio.to_thread(record_languages, tables, analysis.languages)
    return [' '.join(t) for t in analysis.tokens]


async def _add_metadata_columns(tables: Tables, records: Sequence[Record]) -> None:
    """Schema evolution: a typed ``md__*`` column for every (key, type) first written now."""
    wanted: set[str] = set()
    for record in records:
        wanted.update(metadata_columns(record.metadata))
    missing = sorted(wanted - tables.columns)
    if missing:
        fields = [pa.field(name, column_type(name.rsplit('__', 1)[1])) for name in missing]
        await tables.records.add_columns(pa.schema(fields))
        await tables.refresh_schema()


async def _stored_chunk_ids(table: Any, documents: Sequence[Document]) -> set[str]:
    """Ids of the chunks now stored for these documents (an indexed lookup)."""
    found: set[str] = set()
    for batch in in_lists([d.id for d in documents]):
        rows = await table.query().where(f"kind = 'chunk' AND document_id IN {batch}").select(['id']).to_arrow()
        found.update(rows.column('id').to_pylist())
    return found


async def _check_clashes(table: Any, records: Sequence[Record], documents: Sequence[Document]) -> None:
    """Refuse a record id that already belongs to another document (or kind of record)."""
    scope = in_list(d.id for d in documents) if documents else None
    owned = f" AND NOT (kind = 'chunk' AND document_id IN {scope})" if scope else ''
    checks = [f'id IN {batch}{owned}' for batch in in_lists([r.id for r in records if isinstance(r, Chunk)])]
    checks += [
        f"id IN {batch} AND kind = 'chunk'" for batch in in_lists([r.id for r in records if isinstance(r, Entity)])
    ]
    for where in checks:
        clash = await table.query().where(where).select(['id', 'kind', 'document_id']).limit(1).to_arrow()
        if clash.num_rows:
            row = clash.to_pylist()[0]
            owner = f'document {row["document_id"]!r}' if row['kind'] == 'chunk' else 'an entity'
            raise ValueError(f'record id {row["id"]!r} already belongs to {owner}')


async def delete_document_rows(tables: Tables, ids: Sequence[str]) -> int:
    """Delete these documents and their chunks; how many of the documents were stored."""
    existed = 0
    for batch in in_lists(ids):
        # Chunks first: a crash in between leaves a listed document with no chunks, which a
        # re-run deletes, never chunks that no listing can reach.
        if tables.records is not None:
            await tables.records.delete(f"kind = 'chunk' AND document_id IN {batch}")
        if tables.documents is not None:
            existed += await tables.documents.count_rows(f'id IN {batch}')
            await tables.documents.delete(f'id IN {batch}')
    return existed


async def delete_entity_rows(tables: Tables, ids: Sequence[str]) -> int:
    """Delete these entities; how many of them were stored."""
    existed = 0
    for batch in in_lists(ids):
        where = f"kind = 'entity' AND id IN {batch}"
        count = await tables.records.count_rows(where)
        if count:
            existed += count
            await tables.records.delete(where)
    return existed


CONFLICT_ATTEMPTS = 4
"""How many times an upsert runs when another process's commits keep preempting its own."""


def is_commit_conflict(error: BaseException) -> bool:
    """LanceDB's ``Retryable commit conflict`` (another process committed to the table in between)."""
    return isinstance(error, RuntimeError) and 'commit conflict' in str(error).lower()


async def retry_conflicts(tables: Tables, write: Callable[[], Awaitable[None]]) -> None:
    """Run ``write``; after a commit conflict, move every table to its latest version and run it again,
    up to `CONFLICT_ATTEMPTS` times in all (an upsert is idempotent: its pending rows settle first)."""
    for attempt in range(CONFLICT_ATTEMPTS):
        try:
            await write()
            return
        except RuntimeError as e:
            if attempt + 1 == CONFLICT_ATTEMPTS or not is_commit_conflict(e):
                raise
        await asyncio.sleep(0.05 * 2**attempt)
        await tables.checkout_latest()


@contextmanager
def skipped_on_conflict(uri: str) -> Iterator[None]:
    """Index upkeep after a write another process's commit preempted: logged and left for the next write."""
    try:
        yield
    except RuntimeError as e:
        if not is_commit_conflict(e):
            raise
        logging.getLogger('toolish_rag_lancedb').info('%s: index upkeep skipped after a concurrent commit', uri)
