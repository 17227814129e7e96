"""Every write of a local store holds the folder's writer lock, so writers take turns across processes too.

An upsert is several commits over several tables whose crash-safety protocol assumes one writer:
another writer in between took this one's pending documents row for a crash's leftover and deleted
it, a document lost with both writers reporting success. See docs/stores/lancedb.md (Writes,
consistency and concurrency).
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from toolish_rag.stores.lock import LOCK_TIMEOUT_ENV, StoreLock, StoreLocked, held_by_this_process

if TYPE_CHECKING:
    from ._tables import Tables

__all__ = ['API_LOCK_TIMEOUT', 'WriteTurn']

API_LOCK_TIMEOUT = 60.0
"""Seconds a write through the Python API waits for another writer's (``$TOOLISH_RAG_LOCK_TIMEOUT`` if set)."""

_POLL = 0.02
_LOCATIONS: dict[str, threading.Lock] = {}
_LOCATIONS_GUARD = threading.Lock()


def _location_lock(path: str) -> threading.Lock:
    """One lock per local location in this process: store objects of one process take turns too."""
    with _LOCATIONS_GUARD:
        return _LOCATIONS.setdefault(path, threading.Lock())


def _timeout() -> float:
    raw = os.environ.get(LOCK_TIMEOUT_ENV, '').strip()
    try:
        return float(raw) if raw else API_LOCK_TIMEOUT
    except ValueError:
        raise ValueError(f'${LOCK_TIMEOUT_ENV} must be a number of seconds, got {raw!r}') from None


class WriteTurn:
    """``async with``: the store object's ``asyncio.Lock``; for a local location also this process's lock of
    the location and the folder's `StoreLock` (unless this process holds it already, as the CLI does), then
    every table moved to its latest version. Waits by polling, so a cancelled write never leaves a lock held."""

    def __init__(self, tables: Tables, lock: asyncio.Lock) -> None:
        self._tables = tables
        self._lock = lock
        self._location: threading.Lock | None = None
        self._held: StoreLock | None = None

    async def __aenter__(self) -> None:
        await self._lock.acquire()
        try:
            if '://' not in self._tables.uri:
                await self._take_turn(os.path.abspath(self._tables.uri))
        except BaseException:
            self._release()
            raise

    async def _take_turn(self, path: str) -> None:
        timeout, start = _timeout(), time.monotonic()
        location = _location_lock(path)
        while not location.acquire(blocking=False):
            if time.monotonic() - start >= timeout:
                raise StoreLocked(Path(path), None, round(time.monotonic() - start, 1))
            await asyncio.sleep(_POLL)
        self._location = location
        while not held_by_this_process(path):
            try:
                self._held = StoreLock(path, timeout=0, command=f'LanceDBStore (pid {os.getpid()})').acquire()
            except StoreLocked as busy:
                waited = time.monotonic() - start
                if waited >= timeout:
                    raise StoreLocked(busy.folder, busy.holder, round(waited, 1)) from None
                await asyncio.sleep(_POLL)
        if self._tables.db is not None:
            await self._tables.checkout_latest()  # another writer may have committed since this object's last write

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._release()

    def _release(self) -> None:
        held, location, self._held, self._location = self._held, self._location, None, None
        try:
            if held is not None:
                held.release()
        finally:
            if location is not None:
                location.release()
            self._lock.release()
