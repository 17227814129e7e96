"""Re-embedding an `InMemoryStore`'s records with another embedder: the new version it saves.

See docs/stores/manifest.md (Re-embedding).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import numpy as np
import numpy.typing as npt
from pydantic_ai.embeddings import Embedder

from ...analysis import TextAnalyzer
from ...windows import EmbeddingWindows
from ._snapshot import Snapshot
from ._windows import WindowVectors, aligned, plan_write, window_key

__all__ = ['reembedded']

Embed = Callable[[list[str]], Awaitable[npt.NDArray[np.float32]]]
"""Normalised vectors of texts, by the new embedder."""


async def reembedded(
    old: Snapshot, embedder: Embedder, windows: EmbeddingWindows | None, analyzer: TextAnalyzer, embed: Embed
) -> Snapshot:
    """``old`` (compacted: every slot live) with every record's first vector and windows made by ``embed``,
    in one segment; its BM25 postings are rebuilt from the unchanged texts when first searched."""
    records = [old.records[i] for i in range(len(old.records))]
    texts = [r.text for r in records]
    if not texts:
        return Snapshot.build(
            [], np.zeros((0, 0), dtype=np.float32), old.documents, old.graph, WindowVectors(), analyzer
        )
    vectors = await embed(texts)
    width = vectors.shape[1]
    base = aligned(WindowVectors.unwindowed(0, None), await window_key(embedder, windows))
    plan = await plan_write(embedder, windows, base, texts, [None] * len(texts))
    extra = await embed(plan.texts) if plan.texts else np.zeros((0, width), dtype=np.float32)
    return Snapshot.build(records, vectors, old.documents, old.graph, plan.assemble(extra, width), analyzer)
