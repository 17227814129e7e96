"""Opening a tantivy store by location: the ``tantivy`` entry point of ``toolish_rag.stores``.

Kept apart from `_store` and `_partitioned` so that neither imports the other: a directory a
`PartitionedTantivyStore` created opens as one, any other as a `TantivyStore`.
See docs/stores/tantivy.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._partitioned import PARTITIONS_FILE, PartitionedTantivyStore
from ._store import TantivyStore

__all__ = ['open_store']


def open_store(
    location: str, *, embedder: Any = None, language: str | None = None
) -> TantivyStore | PartitionedTantivyStore:
    """Entry point for ``toolish_rag.stores``: ``"tantivy:./index"`` (or ``"tantivy"`` for RAM).

    A directory a `PartitionedTantivyStore` created opens as one, with its saved partition key,
    so every tool that opens it by spec keeps its strict isolation.
    ``embedder`` is accepted for the common signature and ignored: this store never embeds.
    ``language``: as `TantivyStore` (``None``: the saved analysis, or the default for a new index).
    """
    if location and (Path(location) / PARTITIONS_FILE).exists():
        return PartitionedTantivyStore(location, language=language)
    return TantivyStore(location or None, language=language)
