"""Thread-safe caches the in-memory store's versions hold: an LRU map and a value built once.

See docs/stores/memory.md (Caches).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

__all__ = ['Lru', 'Once']

_K = TypeVar('_K')
_V = TypeVar('_V')


@dataclass
class Lru(Generic[_K, _V]):
    """A small least-recently-used cache that threads may share.

    Searches run in `asyncio.to_thread` workers, so several threads read, insert and evict at
    once; an ``OrderedDict``'s get, ``move_to_end`` and ``popitem`` are each atomic but not
    together (one thread evicted a key between another's get and ``move_to_end``: a
    ``KeyError``). Every operation therefore holds the lock. Values are computed by the caller
    outside it: two threads may compute the same value and the later ``put`` wins, harmless
    because the values are pure functions of the key.
    """

    size: int
    _items: OrderedDict[_K, _V] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, key: _K) -> _V | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def items(self) -> list[tuple[_K, _V]]:
        """The entries, least recently used first (a copy)."""
        with self._lock:
            return list(self._items.items())

    def put(self, key: _K, value: _V) -> _V:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value


@dataclass
class Once(Generic[_V]):
    """A value built on first use, once, whichever thread asks first.

    Snapshots with the same records share their cells (see `_Snapshot.with_graph`), so an index one
    of them built serves the other: a graph-only write neither rebuilds nor re-triggers it.
    """

    _value: _V | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def built(self) -> bool:
        """Whether `get` would answer at once, without building."""
        return self._value is not None

    def get(self, build: Callable[[], _V]) -> _V:
        with self._lock:
            if self._value is None:
                self._value = build()
            return self._value
