"""Multi-vector chunks: a ``windows`` column of every record's window vectors, searched by MaxP.

See docs/stores/lancedb.md (Design notes).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from pydantic_ai.embeddings import Embedder

from toolish_rag.protocols import PrecomputedVectors
from toolish_rag.windows import EmbeddingWindows, embed_windows, window_budget
from toolish_rag.writes import embed_documents

__all__ = [
    'REBUILD_HINT',
    'WINDOWS_COLUMN',
    'WindowUse',
    'embed_records',
    'set_windows',
    'windows_apply',
    'windows_field',
    'windows_logger',
]

windows_logger = logging.getLogger('toolish_rag_lancedb')

WINDOWS_COLUMN = 'windows'

REBUILD_HINT = (
    'the LanceDB records table at %s was written without window vectors: long chunks are scored by '
    'their first vector (what the embedder reads of their beginning). Run `toolish-rag upgrade --store '
    'lancedb:<that folder>` (or `await store.upgrade()`) to score them by their best window.'
)


def windows_field(dims: int) -> pa.Field:
    """The multivector column for ``dims``-dimensional embeddings."""
    return pa.field(WINDOWS_COLUMN, pa.list_(pa.list_(pa.float32(), dims)))


async def windows_apply(embedder: Embedder, config: EmbeddingWindows | None) -> bool:
    """Whether ``config`` can give a text of ``embedder`` more than one vector."""
    if config is None or config.max_windows == 1:
        return False
    return await window_budget(embedder, config) is not None


async def embed_records(
    embedder: Embedder, texts: Sequence[str], config: EmbeddingWindows | None, known: PrecomputedVectors | None = None
) -> tuple[np.ndarray[Any, np.dtype[np.float32]], list[np.ndarray[Any, np.dtype[np.float32]]] | None]:
    """Each text's first vector, and (with ``config``) all its rows, from one embedding call (texts in ``known``: none)."""
    if config is None:
        embedded = await embed_documents(embedder, texts, known)
        vectors = np.asarray(embedded, dtype=np.float32).reshape(len(texts), -1)
        return vectors, None
    rows = await embed_windows(embedder, texts, config, batch_size=sys.maxsize, known=known)
    return np.stack([r[0] for r in rows]).astype(np.float32), rows


class WindowUse:
    """Whether a store's windows apply to its embedder (asked once) and its table (created with the column),
    and the one-time note for a table that predates them."""

    def __init__(self, config: EmbeddingWindows | None) -> None:
        self.config = config
        self._applies: bool | None = None
        self._noted = False

    def reset(self) -> None:
        """Forget the embedder's answer (after the store's embedder changed)."""
        self._applies = None

    async def wanted(self, embedder: Embedder) -> bool:
        """Whether the windows can give a record more than one vector (asked of the embedder once)."""
        if self._applies is None:
            self._applies = await windows_apply(embedder, self.config)
        return self._applies

    async def for_write(self, embedder: Embedder, records: Any, columns: frozenset[str]) -> EmbeddingWindows | None:
        """The windows a write embeds: when they apply and the table has the column (or is not created yet)."""
        if not await self.wanted(embedder):
            return None
        return self.config if records is None or WINDOWS_COLUMN in columns else None

    async def note_unwindowed(self, embedder: Embedder, columns: frozenset[str], uri: str) -> None:
        """Log once when the table predates windows that would apply to it."""
        if self._applies is False or self._noted:
            return
        self._noted = True
        if WINDOWS_COLUMN not in columns and await self.wanted(embedder):
            windows_logger.warning(REBUILD_HINT, uri)


def set_windows(data: pa.Table, vectors: np.ndarray[Any, Any], rows: Sequence[np.ndarray[Any, Any]] | None) -> pa.Table:
    """``data`` (records rows) with its ``windows`` column filled: each record's rows, or its one vector."""
    if WINDOWS_COLUMN not in data.column_names:
        return data
    field = data.schema.field(WINDOWS_COLUMN)
    dims = field.type.value_type.list_size
    if rows is None:
        rows = [v.reshape(1, -1) for v in vectors]
    counts = np.array([r.shape[0] for r in rows], dtype=np.int32)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    flat = np.vstack(rows).astype(np.float32) if len(rows) else np.zeros((0, dims), dtype=np.float32)
    inner = pa.FixedSizeListArray.from_arrays(pa.array(flat.reshape(-1), type=pa.float32()), dims)
    array = pa.ListArray.from_arrays(pa.array(offsets, type=pa.int32()), inner).cast(field.type)
    return data.set_column(data.schema.get_field_index(WINDOWS_COLUMN), field, array)
