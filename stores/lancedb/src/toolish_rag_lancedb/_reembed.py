"""Re-embedding a LanceDB store's records with another embedder: the records table rewritten in one commit.

The new table version holds the new vectors, windows and the model's name in its schema metadata,
so a crash leaves the old version or the new one; the manifest records the new embedder after it.
See docs/stores/manifest.md (Re-embedding).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
from pydantic_ai.embeddings import Embedder

from toolish_rag.windows import EmbeddingWindows

from ._schema import META_DIMS, META_MODEL, RECORDS_TABLE
from ._tables import Tables
from ._windows import WINDOWS_COLUMN, WindowUse, embed_records, set_windows, windows_field

__all__ = ['rewrite_records']


async def rewrite_records(
    tables: Tables, embedder: Embedder, windows: EmbeddingWindows | None, *, add_windows: bool = False
) -> int:
    """Overwrite the records table with every row's vectors (and windows) made by ``embedder``; returns the
    row count. ``add_windows``: give a table that predates them its windows column (`LanceDBStore.upgrade`).
    Under the store's write lock; the table's indexes are made again by the next write's upkeep."""
    await tables.connect()
    table = tables.records
    if table is None:
        return 0
    data: pa.Table = await table.query().to_arrow()
    texts = [t or '' for t in data.column('text').to_pylist()]
    use = WindowUse(windows)
    if add_windows and WINDOWS_COLUMN not in data.column_names and await use.wanted(embedder):
        data = data.append_column(windows_field(1), pa.nulls(len(data), type=windows_field(1).type))
        config: EmbeddingWindows | None = windows
    else:
        config = await use.for_write(embedder, table, tables.columns)
    if texts:
        vectors, rows = await embed_records(embedder, texts, config)
    else:
        probe = await embedder.embed_documents(['dimensions'])
        vectors, rows = np.zeros((0, len(probe.embeddings[0])), dtype=np.float32), None
    model: Any = embedder.model
    name = model if isinstance(model, str) else model.model_name
    data = set_windows(_with_vectors(data, vectors, name), vectors, rows)
    tables.records = await tables.db.create_table(RECORDS_TABLE, data=data, mode='overwrite')
    await tables.refresh_schema()
    return len(texts)


def _with_vectors(data: pa.Table, vectors: np.ndarray[Any, Any], model_name: str) -> pa.Table:
    """``data`` with its ``vector`` column (and the empty ``windows`` column) sized for ``vectors``."""
    dims = int(vectors.shape[1])
    vector = pa.field('vector', pa.list_(pa.float32(), dims))
    flat = pa.array(vectors.astype(np.float32).reshape(-1), type=pa.float32())
    data = data.set_column(data.schema.get_field_index('vector'), vector, pa.FixedSizeListArray.from_arrays(flat, dims))
    if WINDOWS_COLUMN in data.column_names:
        field = windows_field(dims)
        data = data.set_column(data.schema.get_field_index(WINDOWS_COLUMN), field, pa.nulls(len(data), type=field.type))
    metadata = {**(data.schema.metadata or {}), META_DIMS: str(dims).encode(), META_MODEL: model_name.encode()}
    return data.replace_schema_metadata(metadata)
