"""Parse workers in processes that are killed and replaced when a file exceeds its time or memory.

A ``ProcessPoolExecutor`` cannot stop one task: killing its worker breaks the whole pool.
Here each worker process (forked from a fork server, `_context`) has a supervisor thread in the
parent that sends it one file at a time, waits for the answer, and kills the process (then starts a fresh one) when the file
runs past ``IngestLimits.seconds`` or the process's resident memory passes
``IngestLimits.memory_bytes``; that file alone fails, with the reason. See
docs/ingestion.md#bounds-per-file.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import queue
import threading
import time
from collections.abc import AsyncGenerator, Callable, Iterator, Sequence
from multiprocessing.connection import Connection
from multiprocessing.context import ForkServerContext, SpawnContext
from multiprocessing.process import BaseProcess
from typing import Any

from ._limits import IngestLimits
from ._parse import Parsed

__all__ = ['supervised_parse']

Job = tuple[Any, ...]
"""The arguments of ``target`` for one file; the first is the file's path."""

_POLL = 0.05
_READY = 'ready'
_STARTUP_SECONDS = 120.0
"""How long a new worker may take to start (a spawned interpreter importing the readers), apart from any file."""
_PAGE = os.sysconf('SC_PAGE_SIZE') if hasattr(os, 'sysconf') else 4096


def _worker_main(
    conn: Connection, parent_pid: int, target: Callable[..., Parsed], initializer: Callable[[int], None] | None
) -> None:
    if initializer is not None:
        initializer(parent_pid)
    conn.send(_READY)  # imports done: the clock of the first file starts now, not during start-up
    while True:
        job = conn.recv()
        if job is None:
            return
        conn.send(target(*job))


def _context(target: Callable[..., Parsed]) -> ForkServerContext | SpawnContext:
    """Where workers come from: a fork server that imported ``target``'s module once (Linux, macOS), so a
    worker starts in milliseconds, not the ~2 CPU-seconds of a new interpreter importing the package; else spawn.

    The server is one per parent process and ends with it (then each worker's parent-death signal fires).
    """
    if 'forkserver' not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context('spawn')
    context = multiprocessing.get_context('forkserver')
    context.set_forkserver_preload(['toolish_rag.ingest._parse', target.__module__])  # once it runs: ignored
    return context


def _rss(pid: int) -> int | None:
    """Resident bytes of ``pid`` (Linux ``/proc``), or ``None`` where that cannot be read."""
    try:
        with open(f'/proc/{pid}/statm', 'rb') as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


class _Supervisor:
    """One worker process and the parent thread that feeds it and watches it."""

    def __init__(
        self,
        target: Callable[..., Parsed],
        limits: IngestLimits,
        stop: threading.Event,
        initializer: Callable[[int], None] | None,
    ) -> None:
        self.target, self.limits, self.stop, self.initializer = target, limits, stop, initializer
        self.process: BaseProcess | None = None
        self.conn: Connection | None = None

    def _start(self) -> tuple[BaseProcess, Connection]:
        context = _context(self.target)
        parent, child = context.Pipe()
        process = context.Process(
            target=_worker_main,
            args=(child, os.getpid(), self.target, self.initializer),
            name='toolish-ingest',
            daemon=True,
        )
        process.start()
        child.close()
        self.process, self.conn = process, parent
        give_up = time.monotonic() + _STARTUP_SECONDS
        while not parent.poll(_POLL):
            if self.stop.is_set() or not process.is_alive() or time.monotonic() > give_up:
                raise RuntimeError(f'it did not start (exit code {process.exitcode})')
        if parent.recv() != _READY:
            raise RuntimeError('it did not start')
        return process, parent

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.join()
        if self.conn is not None:
            self.conn.close()
        self.process = self.conn = None

    def close(self) -> None:
        if self.conn is not None and self.process is not None and self.process.is_alive():
            try:
                self.conn.send(None)
                self.process.join(2)
            except OSError:
                pass
        self.kill()

    def run(self, job: Job) -> Parsed:
        """Parse one file in the worker; on a breach, kill it (the next job starts a new one).

        Never raises: a worker that cannot start or be sent the job is that file's reason.
        """
        try:
            return self._run(job)
        except Exception as exc:
            self.kill()
            return Parsed(str(job[0]), None, f'the parse worker failed: {type(exc).__name__}: {exc}')

    def _run(self, job: Job) -> Parsed:
        process, conn = (self.process, self.conn) if self.process and self.conn else self._start()
        conn.send(job)
        path, limits = str(job[0]), self.limits
        deadline = None if limits.seconds is None else time.monotonic() + limits.seconds
        while not self.stop.is_set():
            if conn.poll(_POLL):
                try:
                    result: Parsed = conn.recv()
                    return result
                except (EOFError, OSError):
                    break
            if not process.is_alive():
                break
            if deadline is not None and time.monotonic() > deadline:
                self.kill()
                return Parsed(path, None, f'stopped: took longer than the {limits.seconds:g}-second limit per file')
            rss = _rss(process.pid) if limits.memory_bytes is not None and process.pid else None
            if rss is not None and limits.memory_bytes is not None and rss > limits.memory_bytes:
                self.kill()
                return Parsed(
                    path, None, f'stopped: used more than the {limits.memory_bytes:,}-byte memory limit per file'
                )
        process.join(1)  # the pipe closed as it died: let it be reaped for its exit code
        code = process.exitcode
        self.kill()
        return Parsed(path, None, f'the parse worker died (exit code {code})')


async def supervised_parse(
    jobs: Sequence[Job],
    target: Callable[..., Parsed],
    limits: IngestLimits,
    workers: int,
    in_flight: int,
    initializer: Callable[[int], None] | None = None,
) -> AsyncGenerator[Parsed, None]:
    """Run ``target(*job)`` for every job in ``workers`` supervised processes; yield each result when ready.

    ``target`` and ``initializer`` (called in each new worker with the parent's pid) must be
    importable module-level functions: the workers are spawned.

    At most ``in_flight`` results wait for the caller. Closing the generator stops the
    supervisors and kills the workers.
    """
    stop = threading.Event()
    results: queue.Queue[Parsed | None] = queue.Queue(maxsize=max(1, in_flight))
    pending = iter(jobs)
    lock = threading.Lock()

    def take() -> Iterator[Job]:
        while not stop.is_set():
            with lock:
                job = next(pending, None)
            if job is None:
                return
            yield job

    def put(item: Parsed | None) -> None:
        while not stop.is_set():
            try:
                results.put(item, timeout=_POLL)
                return
            except queue.Full:
                continue

    def supervise() -> None:
        supervisor = _Supervisor(target, limits, stop, initializer)
        try:
            for job in take():
                put(supervisor.run(job))
        finally:
            supervisor.close()
            put(None)

    count = max(1, min(workers, len(jobs)))
    threads = [threading.Thread(target=supervise, name='toolish-ingest-supervisor', daemon=True) for _ in range(count)]
    for thread in threads:
        thread.start()
    try:
        finished = 0
        while finished < count:
            item = await asyncio.to_thread(_get, results, stop)
            if item is None:
                finished += 1
            else:
                yield item
    finally:
        stop.set()
        await asyncio.to_thread(_join, threads)


def _join(threads: list[threading.Thread]) -> None:
    for thread in threads:
        thread.join()


def _get(results: queue.Queue[Parsed | None], stop: threading.Event) -> Parsed | None:
    """The next result; ``None`` once a supervisor has finished (or the run was stopped)."""
    while not stop.is_set():
        try:
            return results.get(timeout=_POLL)
        except queue.Empty:
            continue
    return None
