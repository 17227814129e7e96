"""The parse workers: who turns the files to ingest into documents, and hands each back as it is ready.

See docs/ingestion.md#how-the-pipeline-is-built.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import itertools
import os
import signal
import sys
import threading
import time
from collections.abc import AsyncGenerator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ._embedding import StoreEmbedding
from ._executor import ExecutorKind
from ._parse import Parsed, ParseJob, parse_file
from ._supervised import supervised_parse
from ._walk import Found

__all__ = ['LocalExecutor', 'parse_files', 'watch_parent']


@dataclass(frozen=True, slots=True)
class LocalExecutor:
    """Parse in a process or thread pool on this machine; the store embeds in ``upsert``."""

    kind: ExecutorKind = 'auto'
    concurrency: int | None = None
    """Workers (default: the CPU count)."""

    @property
    def embeds(self) -> bool:
        return False

    async def parse(
        self, files: Sequence[Found], job: ParseJob, embedding: StoreEmbedding | None
    ) -> AsyncGenerator[Parsed, None]:
        results = parse_files(files, job, concurrency=self.concurrency, executor=self.kind)
        async with contextlib.aclosing(results) as parsed:
            async for result in parsed:
                yield result


PROCESS_POOL_MIN_FILES = 64
"""``executor='auto'`` spawns processes from this many files to parse: each one starts a new
interpreter and imports the readers, which a handful of files does not pay back."""

IN_FLIGHT_PER_WORKER = 4
"""Jobs queued per worker: enough to keep it busy, few enough that memory stays flat on big trees."""

_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


async def parse_files(
    files: Sequence[Found], job: ParseJob, *, concurrency: int | None, executor: ExecutorKind
) -> AsyncGenerator[Parsed, None]:
    """Parse ``files`` as ``job`` says in workers, yielding each result as soon as it is ready (in no set order).

    Processes are supervised (`supervised_parse`): a file over ``job.limits.seconds`` or
    ``job.limits.memory_bytes`` gets its worker killed and fails alone. Threads cannot be
    killed: there the readers' own checks enforce the limits.

    Use it inside ``contextlib.aclosing``: when the caller stops early (a write failed), the
    pool is shut down and its workers joined right away rather than whenever the generator is
    collected.
    """
    if not files:
        return
    workers = max(1, concurrency or os.cpu_count() or 1)
    use_processes = executor == 'process' or (
        executor == 'auto' and workers > 1 and len(files) >= PROCESS_POOL_MIN_FILES
    )
    jobs = [(str(found.path), job, found.relative_path) for found in files]
    if use_processes:
        supervised = supervised_parse(
            jobs, parse_file, job.limits, workers, workers * IN_FLIGHT_PER_WORKER, _die_with_parent
        )
        async with contextlib.aclosing(supervised) as results:
            async for result in results:
                yield result
        return
    pool = ThreadPoolExecutor(workers, thread_name_prefix='toolish-ingest')
    loop = asyncio.get_running_loop()
    queued = iter(jobs)
    pending: set[asyncio.Future[Parsed]] = set()
    try:
        while True:
            for args in itertools.islice(queued, workers * IN_FLIGHT_PER_WORKER - len(pending)):
                pending.add(loop.run_in_executor(pool, parse_file, *args))
            if not pending:
                return
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for future in done:
                yield future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _die_with_parent(parent_pid: int) -> None:
    """Worker initializer: end this worker when the run (``parent_pid``) ends, however it ends.

    The worker's own parent is the run's process (spawn) or the fork server the run started
    (`_supervised._context`), which exits when the run does. On Linux the kernel does it:
    ``PR_SET_PDEATHSIG`` sends SIGKILL when that parent goes (strictly, the parent *thread*:
    a spawned worker's supervisor thread stops it before that thread ends). Elsewhere a
    watchdog thread polls the parent pid.
    """
    parent = os.getppid()
    if not _set_parent_death_signal(signal.SIGKILL):
        watch_parent(parent)
    elif os.getppid() != parent or parent == 1 or not _exists(parent_pid):  # it died before the signal was armed
        os._exit(1)


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _set_parent_death_signal(sig: int) -> bool:
    if not sys.platform.startswith('linux'):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        result = libc.prctl(
            _PR_SET_PDEATHSIG, ctypes.c_ulong(sig), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)
        )
    except (OSError, AttributeError):  # no libc symbol table, or no prctl in it
        return False
    return int(result) == 0


def watch_parent(parent_pid: int, interval: float = 0.5) -> None:
    """Start a daemon thread that ends this process once ``parent_pid`` is no longer its parent.

    The portable fallback for `_die_with_parent`: an orphan is re-parented (to init or a
    subreaper), so its parent pid changes.
    """

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(interval)
        os._exit(1)

    threading.Thread(target=watch, name='toolish-ingest-watchdog', daemon=True).start()
