"""Every write of a local store holds the folder's writer lock, so writers take turns across processes too.

An upsert is several commits over several tables whose crash-safety protocol assumes one writer:
another writer in between took this one's pending documents row for a crash's leftover and deleted
it, a document lost with both writers reporting success. See docs/stores/lancedb.md (Writes,
consistency and concurrency).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from types import TracebackType
from typing import TYPE_CHECKING

from toolish_rag.stores.lock import API_LOCK_TIMEOUT, write_turn

if TYPE_CHECKING:
    from ._tables import Tables

__all__ = ['API_LOCK_TIMEOUT', 'WriteTurn']


class WriteTurn:
    """``async with``: the store object's ``asyncio.Lock``; for a local location also the location's turn
    (`toolish_rag.stores.lock.write_turn`: this process's lock of the folder and its `StoreLock`, unless this
    process holds it already, as the CLI does), then every table moved to its latest version. Waits by
    polling, so a cancelled write never leaves a lock held."""

    def __init__(self, tables: Tables, lock: asyncio.Lock) -> None:
        self._tables = tables
        self._lock = lock
        self._turn: contextlib.AsyncExitStack | None = None

    async def __aenter__(self) -> None:
        await self._lock.acquire()
        turn = contextlib.AsyncExitStack()
        try:
            if '://' not in self._tables.uri:
                path = os.path.abspath(self._tables.uri)
                await turn.enter_async_context(write_turn(path, command=f'LanceDBStore (pid {os.getpid()})'))
                if self._tables.db is not None:
                    await (
                        self._tables.checkout_latest()
                    )  # another writer may have committed since this object's last write
        except BaseException:
            try:
                await turn.aclose()
            finally:
                self._lock.release()
            raise
        self._turn = turn

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        turn, self._turn = self._turn, None
        try:
            if turn is not None:
                await turn.aclose()
        finally:
            self._lock.release()
