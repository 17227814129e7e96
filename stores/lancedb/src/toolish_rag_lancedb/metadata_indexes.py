"""Scalar indexes on the typed metadata columns, so a filter costs an index lookup, not a scan.

Why
===

Every search pushes its scope down as a LanceDB prefilter (`toolish_rag_lancedb.filters`). On
a column without an index, LanceDB evaluates that prefilter by reading the column for every row
of the table and building a row-id mask of the rows it admits: at a million chunks that scan
(about 25 ms on 2 cores) cost a text search four times its BM25 search. With a scalar index on
the column the same clause becomes a ``ScalarIndexQuery`` (``explain_plan`` shows it): a lookup in
a sorted copy (BTREE) or per-value bitmaps (BITMAP, LABEL_LIST) that hands the mask to the search
directly, whatever share of the rows it admits.

Which index for which column
============================

=================================  ==========  ===================================================
column                             index       serves
=================================  ==========  ===================================================
``md__K__num``, ``md__K__str``     BTREE       ``=``, ``IN``, ``<``... ``IS NULL``, ``starts_with``
``md__K__bool``                    BITMAP      ``=``, ``IS NULL`` (two values)
``md__K__lstr``, ``md__K__lbool``  LABEL_LIST  ``array_has``/``array_has_any`` (``eq``, ``in_``, ``contains``)
=================================  ==========  ===================================================

LanceDB builds no LABEL_LIST on a list of floats, so ``md__K__lnum`` stays scanned, as do the
``lsx``/``lsr`` helper columns (``starts_with``/``ends_with`` on lists, a ``strpos``): no index
serves them; a clause LanceDB cannot answer from an index is still
evaluated exactly (as a refine filter), so an index never changes an answer, only its cost. The
LanceDB store's tests run the conformance kit's filter edge cases on indexed columns too.

When
====

From ``threshold`` rows (`LanceDBStore`'s ``metadata_index_threshold``): below it a scan costs
well under a millisecond and an index only adds write work. ``optimize()`` creates the missing
ones (a new key's column gets its index at the next ``optimize``, which runs every few writes) and
folds new rows into all of them; rows written since are scanned until then, as for every index.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from lancedb.index import Bitmap, BTree, LabelList

from .filters import METADATA_PREFIX

__all__ = ['ensure_metadata_indexes', 'metadata_index_config']

_CONFIGS: dict[str, type[Any]] = {
    'num': BTree,
    'str': BTree,
    'bool': Bitmap,
    'lstr': LabelList,
    'lbool': LabelList,
}


def metadata_index_config(column: str) -> Any | None:
    """The scalar index config for a typed metadata column, or ``None`` (not metadata, or a helper column)."""
    if not column.startswith(METADATA_PREFIX):
        return None
    kind = column.rsplit('__', 1)[-1]
    config = _CONFIGS.get(kind)
    return None if config is None else config()


async def ensure_metadata_indexes(table: Any, columns: Collection[str], threshold: int | None) -> list[str]:
    """Create the missing index of every typed metadata column once ``table`` has ``threshold`` rows.

    Returns the columns indexed now. ``threshold=None``: never.
    """
    if threshold is None:
        return []
    wanted = {c: cfg for c in sorted(columns) if (cfg := metadata_index_config(c)) is not None}
    if not wanted or int(await table.count_rows()) < threshold:
        return []
    indexed = {column for ix in await table.list_indices() for column in ix.columns}
    created = []
    for column, config in wanted.items():
        if column not in indexed:
            await table.create_index(column, config=config, replace=True)
            created.append(column)
    return created
