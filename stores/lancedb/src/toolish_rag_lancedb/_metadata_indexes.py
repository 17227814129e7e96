"""Scalar indexes on the typed metadata columns, so a filter costs an index lookup, not a scan.

See docs/stores/lancedb.md (Design notes).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from lancedb.index import Bitmap, BTree, LabelList

from ._filters import METADATA_PREFIX

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
