"""Append-only matrices that successive versions of `InMemoryStore` share.

A write used to build the next version's vector matrix with ``np.vstack`` of the kept rows and
the new ones: a copy of the whole matrix (1.5 GB at a million 384-d vectors) for a write of ten
rows. Here every version is a prefix view of one over-allocated buffer: a write that appends
puts its rows after the last version's and publishes a longer view, so earlier versions (still
read by searches in flight) see exactly the rows they saw, and the buffer is copied only when it
is full (capacity grows by a quarter, so the copies cost O(1) per row over time while the
headroom stays a quarter of the matrix, not the half that doubling would leave idle).

Only the version at the tip of a buffer may append in place. A write that fails after appending
leaves rows beyond the published view that nobody reads; the next write appends from the same
published version, sees that it is no longer the tip and copies instead of overwriting anything a
reader could hold. Rows are never changed once written: deleting a record marks it dead in the
snapshot (`toolish_rag.stores.memory`), and compaction builds a new buffer.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

__all__ = ['GrowingMatrix']

Matrix = npt.NDArray[np.float32]

_MIN_CAPACITY = 1024


def _capacity(rows: int) -> int:
    return max(_MIN_CAPACITY, rows + rows // 4)


@dataclass(eq=False)
class _Buffer:
    data: Matrix
    tip: int
    """How many rows some version has claimed: only the version that many rows long appends in place."""
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass(frozen=True, eq=False)
class GrowingMatrix:
    """The first ``rows`` rows of a shared buffer (see the module): immutable, appendable."""

    _buffer: _Buffer
    rows: int

    @classmethod
    def of(cls, matrix: Matrix) -> GrowingMatrix:
        """A matrix holding ``matrix``'s rows (copied into a buffer with room to grow)."""
        data = np.zeros((_capacity(matrix.shape[0]), matrix.shape[1]), dtype=np.float32)
        data[: matrix.shape[0]] = matrix
        return cls(_Buffer(data, matrix.shape[0]), matrix.shape[0])

    @property
    def width(self) -> int:
        return int(self._buffer.data.shape[1])

    @property
    def view(self) -> Matrix:
        """This version's rows (a read-only view: nothing may write through it)."""
        view = self._buffer.data[: self.rows]
        view.flags.writeable = False
        return view

    def append(self, more: Matrix) -> GrowingMatrix:
        """This matrix with ``more``'s rows after its own; ``self`` is unchanged."""
        if more.shape[0] == 0:
            return self
        if more.shape[1] != self.width:
            raise ValueError(f'rows of width {more.shape[1]} appended to a matrix of width {self.width}')
        end = self.rows + more.shape[0]
        buffer = self._buffer
        with buffer.lock:
            if buffer.tip == self.rows and end <= buffer.data.shape[0]:
                buffer.data[self.rows : end] = more
                buffer.tip = end
                return GrowingMatrix(buffer, end)
        data = np.zeros((_capacity(end), self.width), dtype=np.float32)
        data[: self.rows] = buffer.data[: self.rows]
        data[self.rows : end] = more
        return GrowingMatrix(_Buffer(data, end), end)
