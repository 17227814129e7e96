"""`InMemoryStore`'s window vectors: the extra embeddings of long chunks, and MaxP scoring.

See docs/stores/memory.md (Windows).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt
from pydantic_ai.embeddings import Embedder

from ...windows import EmbeddingWindows, plan_windows
from ._rows import GrowingMatrix

__all__ = [
    'WINDOW_FILES',
    'WindowVectors',
    'WindowWrite',
    'aligned',
    'load_windows',
    'plan_write',
    'save_windows',
    'window_key',
]

logger = logging.getLogger('toolish_rag.stores.memory')

WINDOW_FILES = ('windows.npy', 'window_counts.npy', 'windows.json')
"""The window files of a saved version (derived from the records, like the vectors)."""

Matrix = npt.NDArray[np.float32]


def _empty(width: int) -> Matrix:
    return np.zeros((0, width), dtype=np.float32)


@dataclass(frozen=True, eq=False)
class WindowVectors:
    """The extra window vectors of one snapshot's records (see docs/stores/memory.md).

    The vectors are a prefix of a buffer later versions append to (`GrowingMatrix`), so a write
    adding records copies only its own windows, not every record's.
    """

    counts: npt.NDArray[np.int32] = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    matrix: GrowingMatrix = field(default_factory=lambda: GrowingMatrix.of(_empty(0)))
    key: str | None = None
    """The `EmbeddingWindows.key` the windowed records (``counts >= 0``) were made with."""

    @classmethod
    def of(cls, counts: npt.NDArray[np.int32], vectors: Matrix, key: str | None) -> WindowVectors:
        return cls(counts, GrowingMatrix.of(vectors), key)

    @classmethod
    def unwindowed(cls, n: int, key: str | None = None) -> WindowVectors:
        """``n`` records never windowed (``counts == -1``)."""
        return cls.of(np.full(n, -1, dtype=np.int32), _empty(0), key)

    def __post_init__(self) -> None:
        assert int(np.maximum(self.counts, 0).sum()) == self.matrix.rows, 'window counts and vectors disagree'

    @property
    def vectors(self) -> Matrix:
        """The extra vectors, record after record (read-only)."""
        return self.matrix.view

    @property
    def extra(self) -> int:
        """How many extra vectors the snapshot holds."""
        return int(self.vectors.shape[0])

    @property
    def unknown(self) -> int:
        """How many records were never windowed."""
        return int((self.counts < 0).sum())

    def _starts(self) -> npt.NDArray[np.intp]:
        sizes = np.maximum(self.counts, 0)
        return np.concatenate([[0], np.cumsum(sizes)]).astype(np.intp)

    def rows(self, i: int) -> Matrix:
        """Record ``i``'s extra vectors."""
        starts = self._starts()
        return self.vectors[starts[i] : starts[i + 1]]

    def select(self, keep: list[int]) -> WindowVectors:
        """The windows of the records at positions ``keep`` (in that order)."""
        if not keep:
            return WindowVectors.of(np.zeros(0, dtype=np.int32), _empty(self.matrix.width), self.key)
        starts = self._starts()
        counts = self.counts[keep]
        if not self.extra:
            return WindowVectors(counts, self.matrix, self.key)
        picks = [np.arange(starts[i], starts[i + 1]) for i in keep if self.counts[i] > 0]
        index = np.concatenate(picks) if picks else np.zeros(0, dtype=np.intp)
        return WindowVectors.of(counts, self.vectors[index], self.key)

    def with_key(self, key: str | None) -> WindowVectors:
        return WindowVectors(self.counts, self.matrix, key)

    def concat(self, other: WindowVectors) -> WindowVectors:
        """These records' windows, then ``other``'s (which must share the key, or know none: then this one's)."""
        counts = np.concatenate([self.counts, other.counts]).astype(np.int32)
        if not other.extra:
            rows = self.matrix
        elif not self.extra and self.matrix.width != other.matrix.width:
            rows = GrowingMatrix.of(other.vectors)  # the first windows this store holds set the width
        else:
            rows = self.matrix.append(other.vectors)
        return WindowVectors(counts, rows, other.key if other.key is not None else self.key)

    def best(
        self, scores: Matrix, q: Matrix, scoring: str = 'best', slots: npt.NDArray[np.intp] | None = None
    ) -> Matrix:
        """Each record's score from ``scores`` (its first vector against ``q``) and its windows.

        ``'best'``: the best of its rows (MaxP); ``'mean_whole_best'``: the mean of its first
        row's score and its best row's (`EmbeddingWindows.scoring`). A record without windows
        keeps its score either way. ``slots``: the records ``scores`` are for (``None``: all);
        only their windows are multiplied, as one matrix (see `vector_scores`).
        """
        if not self.extra:
            return scores
        counts = self.counts if slots is None else self.counts[slots]
        owners = np.flatnonzero(counts > 0)
        if not owners.size:
            return scores
        sizes = counts[owners].astype(np.intp)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.intp)
        rows = self.vectors
        if slots is not None:  # the in-scope records' windows, gathered in order
            first = self._starts()[slots[owners]]
            rows = rows[np.arange(int(sizes.sum())) + np.repeat(first - starts, sizes)]
        extra = np.asarray(rows @ q, dtype=np.float32)
        best = np.maximum(scores[owners], np.maximum.reduceat(extra, starts))
        out = scores.copy()
        out[owners] = (scores[owners] + best) / np.float32(2) if scoring == 'mean_whole_best' else best
        return out


def save_windows(target: Path, windows: WindowVectors) -> None:
    """Write ``windows`` into a version directory (`WINDOW_FILES`)."""
    np.save(target / WINDOW_FILES[0], windows.vectors)
    np.save(target / WINDOW_FILES[1], windows.counts)
    (target / WINDOW_FILES[2]).write_text(json.dumps({'key': windows.key}), encoding='utf-8')


def load_windows(source: Path, records: int) -> WindowVectors:
    """The windows saved in ``source``; a version saved before windows existed has none (all ``-1``)."""
    if not (source / WINDOW_FILES[1]).exists():
        return WindowVectors.unwindowed(records)
    counts = np.load(source / WINDOW_FILES[1]).astype(np.int32)
    vectors = np.load(source / WINDOW_FILES[0]).astype(np.float32)
    key = json.loads((source / WINDOW_FILES[2]).read_text(encoding='utf-8')).get('key')
    if counts.shape[0] != records:
        raise ValueError(f'{source} holds windows for {counts.shape[0]} records but {records} records')
    return WindowVectors.of(counts, vectors, key)


def aligned(old: WindowVectors, key: str | None) -> WindowVectors:
    """``old`` as the next write under ``key`` (``None``: windows off) builds on.

    Windows made under another config are forgotten (their records score by their first vector
    until rebuilt): every windowed record of a snapshot was windowed under its one key.
    """
    if key is None or old.key == key:
        return old
    if int((old.counts >= 0).sum()):
        logger.warning(
            'this store was windowed with %s and is now opened with %s: its records are scored by '
            'their first vector until `await store.rebuild_windows()` embeds their windows again',
            old.key,
            key,
        )
        return WindowVectors.unwindowed(len(old.counts), key)
    return old.with_key(key)


@dataclass(frozen=True)
class WindowWrite:
    """The window texts a write embeds, and how their vectors become the new records' windows."""

    texts: list[str]
    counts: npt.NDArray[np.int32]
    reused: list[Matrix]
    """Per new record, its reused extra vectors (empty when computed or none)."""
    key: str | None

    def assemble(self, embedded: Matrix, width: int) -> WindowVectors:
        """The new records' windows, given the vectors of `texts` (normalised, in order)."""
        parts: list[Matrix] = []
        offset = 0
        for j, count in enumerate(self.counts.tolist()):
            if count <= 0:
                continue
            if self.reused[j].shape[0]:
                parts.append(self.reused[j])
            else:
                parts.append(embedded[offset : offset + count])
                offset += count
        vectors = np.vstack(parts).astype(np.float32) if parts else _empty(width)
        return WindowVectors.of(self.counts, vectors, self.key)


async def plan_write(
    embedder: Embedder, config: EmbeddingWindows | None, base: WindowVectors, texts: list[str], same: list[int | None]
) -> WindowWrite:
    """What a write of records with these ``texts`` embeds beyond their first vectors.

    ``same[j]`` is the position in ``base`` (already `aligned`) of a stored record with the same
    text as new record ``j``, whose windows are reused when it has them; any other record is
    windowed now (or, with ``config`` ``None``, stays unwindowed).
    """
    n = len(texts)
    counts = np.full(n, -1, dtype=np.int32)
    reused: list[Matrix] = [_empty(0)] * n
    todo: list[int] = []
    for j, i in enumerate(same):
        if i is not None and base.counts[i] >= 0:
            counts[j] = base.counts[i]
            reused[j] = base.rows(i)
        elif config is not None:
            todo.append(j)
    if not todo or config is None:
        return WindowWrite([], counts, reused, base.key)
    plan = await plan_windows(embedder, [texts[j] for j in todo], config)
    extra: list[str] = []
    for j, rows in zip(todo, plan.texts, strict=True):
        counts[j] = len(rows) - 1
        extra.extend(rows[1:])
    return WindowWrite(extra, counts, reused, plan.key)


async def window_key(embedder: Embedder, config: EmbeddingWindows | None) -> str | None:
    """The key of the windows ``config`` makes with ``embedder`` (``None``: windows off)."""
    return None if config is None else (await plan_windows(embedder, [], config)).key
