"""Structures successive versions of `InMemoryStore` share, so a write copies only what it changes.

`GrowingMatrix` and `GrowingList` (append-only buffers, each version a prefix view) and `LayeredMap`
(a shared base plus a small overlay). See docs/stores/memory.md (Shared rows).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Generic, TypeVar, overload

import numpy as np
import numpy.typing as npt

__all__ = ['GrowingList', 'GrowingMatrix', 'LayeredMap']

_T = TypeVar('_T')
_K = TypeVar('_K')
_V = TypeVar('_V')

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
    """The first ``rows`` rows of a shared buffer (see docs/stores/memory.md): immutable, appendable."""

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


@dataclass(eq=False)
class _ListBuffer(Generic[_T]):
    items: list[_T]
    tip: int
    lock: threading.Lock = field(default_factory=threading.Lock)


class GrowingList(Sequence[_T]):
    """The first ``len`` items of a list later versions append to (as `GrowingMatrix`, for records)."""

    __slots__ = ('_buffer', '_length')

    def __init__(self, buffer: _ListBuffer[_T], length: int) -> None:
        self._buffer = buffer
        self._length = length

    @classmethod
    def of(cls, items: Iterable[_T]) -> GrowingList[_T]:
        listed = list(items)
        return cls(_ListBuffer(listed, len(listed)), len(listed))

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, i: int) -> _T: ...
    @overload
    def __getitem__(self, i: slice) -> list[_T]: ...
    def __getitem__(self, i: int | slice) -> _T | list[_T]:
        if isinstance(i, slice):
            return [self._buffer.items[j] for j in range(*i.indices(self._length))]
        if i < 0:
            i += self._length
        if not 0 <= i < self._length:
            raise IndexError(i)
        return self._buffer.items[i]

    def __iter__(self) -> Iterator[_T]:
        return islice(self._buffer.items, self._length)

    def append(self, more: Sequence[_T]) -> GrowingList[_T]:
        """This list with ``more`` after its items; ``self`` is unchanged."""
        if not more:
            return self
        buffer = self._buffer
        with buffer.lock:
            if buffer.tip == self._length:
                del buffer.items[self._length :]  # what a failed write appended and nobody reads
                buffer.items.extend(more)
                buffer.tip = self._length + len(more)
                return GrowingList(buffer, buffer.tip)
        items = [*islice(buffer.items, self._length), *more]
        return GrowingList(_ListBuffer(items, len(items)), len(items))


class _Gone:
    """An overlay's mark for a key the base holds that this version removed."""


_GONE = _Gone()
_FOLD_MIN = 4096
"""An overlay up to this size (or an eighth of the base) is copied by each write; beyond, it is folded
into a new base (a copy of every entry, once per that many changes)."""


class LayeredMap(Mapping[_K, _V]):
    """A read-only mapping made of a base dict, shared between versions, and this version's changes.

    Iteration follows insertion order as a dict's would: a key set again (or removed and set
    again) moves to the end. `changed` makes the next version's mapping.
    """

    __slots__ = ('_base', '_overlay', '_size')

    def __init__(self, base: dict[_K, _V], overlay: dict[_K, _V | _Gone] | None = None, size: int | None = None):
        self._base = base
        self._overlay: dict[_K, _V | _Gone] = overlay if overlay is not None else {}
        self._size = len(base) if size is None else size

    def __getitem__(self, key: _K) -> _V:
        if key in self._overlay:
            value = self._overlay[key]
            if isinstance(value, _Gone):
                raise KeyError(key)
            return value
        return self._base[key]

    @overload
    def get(self, key: _K, /) -> _V | None: ...
    @overload
    def get(self, key: _K, default: _V | _T, /) -> _V | _T: ...
    def get(self, key: _K, default: object = None, /) -> object:
        if key in self._overlay:
            value = self._overlay[key]
            return default if isinstance(value, _Gone) else value
        return self._base.get(key, default)

    def __contains__(self, key: object) -> bool:
        if key in self._overlay:
            return not isinstance(self._overlay[key], _Gone)  # type: ignore[index]
        return key in self._base

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[_K]:
        overlay = self._overlay
        if not overlay:
            return iter(self._base)
        return self._ordered()

    def _ordered(self) -> Iterator[_K]:
        overlay = self._overlay
        yield from (k for k in self._base if k not in overlay)
        yield from (k for k, v in overlay.items() if not isinstance(v, _Gone))

    def changed(self, removed: Iterable[_K] = (), added: Iterable[tuple[_K, _V]] = ()) -> LayeredMap[_K, _V]:
        """This mapping without the ``removed`` keys, then with the ``added`` items (at the end)."""
        overlay = dict(self._overlay)
        size = self._size

        def holds(key: _K) -> bool:
            if key in overlay:
                return not isinstance(overlay[key], _Gone)
            return key in self._base

        for key in removed:
            size -= holds(key)
            overlay.pop(key, None)
            if key in self._base:
                overlay[key] = _GONE
        for key, value in added:
            size += not holds(key)
            overlay.pop(key, None)
            overlay[key] = value
        nxt = LayeredMap(self._base, overlay, size)
        if len(overlay) > max(_FOLD_MIN, len(self._base) // 8):
            return LayeredMap({k: nxt[k] for k in nxt})
        return nxt
