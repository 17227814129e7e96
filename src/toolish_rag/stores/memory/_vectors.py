"""The memory store's vectors of record texts: embedded in batches, normalised, taken from precomputed ones where given.

See docs/stores/memory.md.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from pydantic_ai.embeddings import Embedder

from ...protocols import PrecomputedVectors
from ...writes import embed_documents

__all__ = ['EMBED_BATCH', 'embed_normalised']

EMBED_BATCH = 256
"""Texts per embedding call."""


async def embed_normalised(
    embedder: Embedder, texts: list[str], known: PrecomputedVectors | None = None, *, width: int = 0
) -> npt.NDArray[np.float32]:
    """Unit vectors of ``texts`` (as ``embed_documents`` makes them), a text in ``known`` taking that vector.

    No texts: a ``(0, width)`` matrix, and no embedding call.
    """
    if not texts:
        return np.zeros((0, width), dtype=np.float32)
    parts: list[npt.NDArray[np.float32]] = []
    for start in range(0, len(texts), EMBED_BATCH):
        vectors = await embed_documents(embedder, texts[start : start + EMBED_BATCH], known)
        parts.append(np.asarray(vectors, dtype=np.float32))
    matrix = np.vstack(parts)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    normalised: npt.NDArray[np.float32] = (matrix / norms).astype(np.float32)
    return normalised
