"""One writer at a time per store folder: an exclusive lock every CLI writer takes before writing.

``toolish-rag.lock`` in the store's folder is locked with ``flock`` (the kernel releases it when its
holder exits, even by ``kill -9``) and names its holder (pid, command, since) for the message a second
writer gets. See docs/deploy.md (One writer at a time).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO

from ..errors import ToolishRagError

__all__ = [
    'API_LOCK_TIMEOUT',
    'DEFAULT_LOCK_TIMEOUT',
    'LOCK_FILE',
    'LOCK_TIMEOUT_ENV',
    'LockHolder',
    'StoreLock',
    'StoreLocked',
    'held_by_this_process',
    'write_turn',
]

LOCK_FILE = 'toolish-rag.lock'
LOCK_TIMEOUT_ENV = 'TOOLISH_RAG_LOCK_TIMEOUT'
"""Seconds a second writer waits for the lock before it is refused (unset: `DEFAULT_LOCK_TIMEOUT`)."""
DEFAULT_LOCK_TIMEOUT = 5.0
API_LOCK_TIMEOUT = 60.0
"""Seconds a write through the Python API waits for another writer's turn (`write_turn`; ``$TOOLISH_RAG_LOCK_TIMEOUT`` if set)."""

_POLL = 0.05
_TURN_POLL = 0.02
_LOCATIONS: dict[str, threading.Lock] = {}
_LOCATIONS_GUARD = threading.Lock()

_HELD: dict[str, int] = {}
"""The lock files this process holds (by absolute path), and through how many `StoreLock` objects."""


def held_by_this_process(folder: str | os.PathLike[str]) -> bool:
    """Whether a `StoreLock` of this process holds the lock of the store in ``folder``.

    For a store that takes the lock around each write (LanceDB through the Python API): inside a command
    that already holds it (the CLI), taking it again on another open file would wait for itself.
    """
    return _HELD.get(os.path.abspath(Path(folder) / LOCK_FILE), 0) > 0


@dataclass(frozen=True)
class LockHolder:
    """Who holds a store's lock, as it wrote itself into the lock file."""

    pid: int
    command: str
    since: float
    """When it took the lock (seconds since the epoch)."""

    def describe(self) -> str:
        taken = time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(self.since))
        return f'pid {self.pid} ({self.command}) since {taken}'


class StoreLocked(ToolishRagError):
    """Another writer holds the store's lock, and kept it past the timeout."""

    def __init__(self, folder: Path, holder: LockHolder | None, waited: float) -> None:
        self.folder = folder
        self.holder = holder
        who = holder.describe() if holder is not None else 'another process'
        super().__init__(
            f'{folder} is being written by {who}; waited {waited:g} s. One writer at a time: wait for it to '
            f'finish, or raise ${LOCK_TIMEOUT_ENV}'
        )


def _timeout(timeout: float | None, default: float = DEFAULT_LOCK_TIMEOUT) -> float:
    if timeout is not None:
        return timeout
    raw = os.environ.get(LOCK_TIMEOUT_ENV, '').strip()
    try:
        return float(raw) if raw else default
    except ValueError:
        raise ValueError(f'${LOCK_TIMEOUT_ENV} must be a number of seconds, got {raw!r}') from None


def _read_holder(path: Path) -> LockHolder | None:
    try:
        data = json.loads(path.read_text(encoding='utf-8'))
        return LockHolder(int(data['pid']), str(data['command']), float(data['since']))
    except (OSError, ValueError, KeyError, TypeError):
        return None


class StoreLock:
    """The exclusive writer lock of the store in ``folder`` (created if missing), as a context manager.

    ``timeout``: seconds to wait for a holder to finish (``None``: ``$TOOLISH_RAG_LOCK_TIMEOUT``, else
    `DEFAULT_LOCK_TIMEOUT`); then `StoreLocked` names the holder. A holder that died released the lock
    with its process, so a crashed writer never blocks the next one. The lock is per open file, so two
    threads of one process exclude each other too. Local folders only: object storage is not locked.
    """

    def __init__(self, folder: str | os.PathLike[str], *, timeout: float | None = None, command: str | None = None):
        self.folder = Path(folder)
        self.timeout = _timeout(timeout)
        self.command = command or ' '.join([Path(sys.argv[0]).name, *sys.argv[1:]])[:200]
        self._file: IO[str] | None = None

    @property
    def path(self) -> Path:
        return self.folder / LOCK_FILE

    def acquire(self) -> StoreLock:
        self.folder.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, 'a+', encoding='utf-8')  # noqa: SIM115 - held until release()
        start = time.monotonic()
        while not _try_lock(handle):
            waited = time.monotonic() - start
            if waited >= self.timeout:
                handle.close()
                raise StoreLocked(self.folder, _read_holder(self.path), round(waited, 1))
            time.sleep(_POLL)
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps({'pid': os.getpid(), 'command': self.command, 'since': time.time()}))
        handle.flush()
        self._file = handle
        key = os.path.abspath(self.path)
        _HELD[key] = _HELD.get(key, 0) + 1
        return self

    def release(self) -> None:
        if self._file is not None:
            self._file.seek(0)
            self._file.truncate()
            self._file.flush()
            _unlock(self._file)
            self._file.close()
            self._file = None
            key = os.path.abspath(self.path)
            if _HELD.get(key, 0) <= 1:
                _HELD.pop(key, None)
            else:
                _HELD[key] -= 1

    @property
    def held(self) -> bool:
        return self._file is not None

    def __enter__(self) -> StoreLock:
        return self.acquire()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def _location_lock(path: str) -> threading.Lock:
    """One lock per store folder in this process: store objects of one process take turns too."""
    with _LOCATIONS_GUARD:
        return _LOCATIONS.setdefault(path, threading.Lock())


@contextlib.asynccontextmanager
async def write_turn(
    folder: str | os.PathLike[str], *, command: str, timeout: float | None = None
) -> AsyncIterator[None]:
    """``async with``: one write's turn at the store in ``folder``, across the objects and processes writing it.

    This process's lock of the folder, then the folder's `StoreLock` (unless this process holds it
    already, as the CLI does for a whole command). Waits by polling, so a cancelled write never
    leaves a lock held; `StoreLocked` after ``timeout`` seconds (``None``: ``$TOOLISH_RAG_LOCK_TIMEOUT``,
    else `API_LOCK_TIMEOUT`), naming the holder. A store takes
    it around each write through the Python API (the memory store; LanceDB has its own). See
    docs/deploy.md (One writer at a time).
    """
    path, start, timeout = os.path.abspath(folder), time.monotonic(), _timeout(timeout, API_LOCK_TIMEOUT)
    location = _location_lock(path)
    while not location.acquire(blocking=False):
        if time.monotonic() - start >= timeout:
            raise StoreLocked(Path(path), None, round(time.monotonic() - start, 1))
        await asyncio.sleep(_TURN_POLL)
    held: StoreLock | None = None
    try:
        while not held_by_this_process(path):
            try:
                held = StoreLock(path, timeout=0, command=command).acquire()
            except StoreLocked as busy:
                waited = time.monotonic() - start
                if waited >= timeout:
                    raise StoreLocked(busy.folder, busy.holder, round(waited, 1)) from None
                await asyncio.sleep(_TURN_POLL)
        yield
    finally:
        try:
            if held is not None:
                held.release()
        finally:
            location.release()


if sys.platform == 'win32':  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _try_lock(handle: IO[str]) -> bool:
        try:
            handle.seek(0)
            msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(handle: IO[str]) -> None:
        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _try_lock(handle: IO[str]) -> bool:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(handle: IO[str]) -> None:
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
