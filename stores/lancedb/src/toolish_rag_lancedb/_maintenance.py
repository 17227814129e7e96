"""Index upkeep: the indexes every store has, the ANN index once it pays, and ``optimize``.

See docs/stores/lancedb.md (Design notes).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from lancedb.index import FTS, BTree, IvfSq, LabelList

from ._tables import Tables
from ._text_query import WORDS_COLUMN

__all__ = [
    'IndexPolicy',
    'IndexUpkeep',
    'MaintenanceStep',
    'WORDS_FTS',
    'default_vector_index',
    'describe_indexes',
]

MaintenanceStep = Literal['build-vector-index', 'optimize']

WORDS_FTS = FTS(
    with_position=True,
    base_tokenizer='whitespace',
    max_token_length=None,
    lower_case=False,
    stem=False,
    remove_stop_words=False,
    ascii_folding=False,
)
"""The full-text index on ``words``: whitespace splits, nothing else changes the core's tokens."""


@dataclass(frozen=True, slots=True)
class IndexPolicy:
    """The store's maintenance settings, read at each write (see `LanceDBStore`'s arguments)."""

    ann_threshold: int | None
    ann_rebuild_growth: float | None
    custom_vector_index: bool
    """A ``vector_index`` was given: it is never re-trained automatically."""
    optimize_every: int
    max_unindexed_rows: int


def default_vector_index(rows: int) -> IvfSq:
    """IVF-SQ with cosine distance and LanceDB's own partition size (about 8k rows per partition).

    Not sqrt(rows) partitions, as before: every ``optimize()`` (which the store runs right after
    building the index, and every ``optimize_every`` writes) lets LanceDB split and join IVF
    partitions towards its target size, so ~1k-row partitions were joined into a few uneven
    ones and a fixed ``nprobes`` probed an unpredictable share of the rows (recall@10 0.825 at 1M
    rows). Built at the target size, the partitions stay as trained; ``rows`` is unused but kept
    for callers that size the index. IVF-SQ rather than IVF-PQ: faster to build, and the scan of
    8-bit codes with ``refine_factor`` keeps recall where PQ loses it
    (``benchmarks/lancedb_ann_bench.py``).
    """
    del rows
    return IvfSq(distance_type='cosine')


class IndexUpkeep:
    """What index maintenance remembers between writes of one store object."""

    def __init__(self, tables: Tables) -> None:
        self._tables = tables
        self._ann_rows: int | None = None
        self._writes_since_optimize = 0
        self._base_indexes_checked = False
        self._relation_indexes_checked = False

    async def ensure_base_indexes(self) -> None:
        """The scalar and full-text indexes (once per store object; repairs an interrupted creation)."""
        table = self._tables.records
        if table is None or self._base_indexes_checked:
            return
        existing = {ix.name for ix in await table.list_indices()}
        if WORDS_COLUMN in self._tables.columns:
            text_index: tuple[str, Any] = (WORDS_COLUMN, WORDS_FTS)
        else:
            text_index = ('text', FTS(with_position=True, remove_stop_words=False))
        for column, config in (
            ('id', BTree()),
            ('document_id', BTree()),
            ('labels', LabelList()),
            text_index,
        ):
            if f'{column}_idx' not in existing:
                await table.create_index(column, config=config, replace=True)
        self._base_indexes_checked = True

    async def ensure_relation_indexes(self) -> None:
        """The relations table's scalar indexes (once per store object; repairs an interrupted creation)."""
        table = self._tables.relations
        if table is None or self._relation_indexes_checked:
            return
        existing = {ix.name for ix in await table.list_indices()}
        for column in ('id', 'source', 'target', 'document_id'):
            if f'{column}_idx' not in existing:
                await table.create_index(column, config=BTree(), replace=True)
        self._relation_indexes_checked = True

    async def after_write(self, policy: IndexPolicy) -> MaintenanceStep | None:
        """Count a write and say what the table needs now, if anything."""
        table = self._tables.records
        if table is None:
            return None
        self._writes_since_optimize += 1
        rows = int(await table.count_rows())
        if policy.ann_threshold is not None and not self._tables.has_ann and rows >= policy.ann_threshold:
            return 'build-vector-index'
        if self._tables.has_ann and not policy.custom_vector_index and policy.ann_rebuild_growth is not None:
            if self._ann_rows is None:
                self._ann_rows = rows
            elif rows >= policy.ann_rebuild_growth * self._ann_rows:
                return 'build-vector-index'
        unindexed = max((getattr(ix, 'num_unindexed_rows', 0) or 0 for ix in await table.list_indices()), default=0)
        if self._writes_since_optimize >= policy.optimize_every or unindexed >= policy.max_unindexed_rows:
            return 'optimize'
        return None

    async def build_vector_index(self, config: Any) -> None:
        """(Re)build the ANN index with ``config`` (``None``: `default_vector_index`)."""
        table = self._tables.records
        if table is None:
            return
        if config is None:
            config = default_vector_index(await table.count_rows())
        # The column vector search reads: with windows, the multivector column (its rows indexed).
        await table.create_index(self._tables.vector_column, config=config, replace=True)
        self._tables.has_ann = True
        self._ann_rows = int(await table.count_rows())

    async def optimize(self, cleanup_older_than: timedelta | None) -> None:
        """LanceDB ``optimize`` on every table; restarts the count of writes since."""
        tables = self._tables
        for table in (tables.records, tables.documents, tables.relations, tables.marks):
            if table is not None:
                await table.optimize(cleanup_older_than=cleanup_older_than)
        self._writes_since_optimize = 0


async def describe_indexes(table: Any) -> dict[str, dict[str, Any]]:
    """Per index of ``table``: its type, column and indexed/unindexed row counts."""
    out: dict[str, dict[str, Any]] = {}
    for ix in await table.list_indices():
        stats = await table.index_stats(ix.name)
        out[ix.name] = {
            'index_type': str(ix.index_type),
            'columns': list(ix.columns),
            'indexed_rows': stats.num_indexed_rows if stats else 0,
            'unindexed_rows': stats.num_unindexed_rows if stats else 0,
        }
    return out
