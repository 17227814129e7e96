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
from typing import TYPE_CHECKING, Literal, Protocol

from ..content import MetadataValue
from ._chunking import Chunker
from ._limits import DEFAULT_LIMITS, IngestLimits
from ._parse import Parsed, parse_file
from ._readers._ocr import DEFAULT_OCR, OcrOptions
from ._readers._versions import ReaderBackend
from ._supervised import supervised_parse
from ._walk import Found

if TYPE_CHECKING:
    from .distributed._embedding import StoreEmbedding

__all__ = ['ExecutorKind', 'IngestExecutor', 'LocalExecutor', 'ParseJob', 'parse_files', 'watch_parent']

ExecutorKind = Literal['auto', 'process', 'thread']
"""The local pools by name: `ingest`'s ``executor=`` shorthand for a `LocalExecutor`."""


@dataclass(frozen=True, slots=True)
class ParseJob:
    """How every file of a run is parsed: plain, picklable data shipped to each worker."""

    chunker: Chunker
    metadata: dict[str, MetadataValue]
    labels: tuple[str, ...]
    limits: IngestLimits = DEFAULT_LIMITS
    """The bounds each file is parsed within (docs/ingestion.md#bounds-per-file)."""
    ocr: OcrOptions = DEFAULT_OCR
    """When and in which languages pages and images are OCR'd (docs/ingestion.md#ocr)."""
    reader: ReaderBackend = 'default'
    """Which readers read the files (docs/ingestion.md#the-unstructured-backend)."""
    roots: tuple[str, ...] = ()
    """The files and folders being ingested: where a page's includes may be read from (docs/ingestion.md#markdown)."""


class IngestExecutor(Protocol):
    """Where `ingest` parses (and, if it can, embeds) the files that must be written.

    ``parse`` yields one `Parsed` per file, in any order, as each is ready, and never raises
    for one bad file (`parse_file` turns that into a reason). It is used inside
    ``contextlib.aclosing``: when the run stops early, closing the generator must stop the work.
    """

    @property
    def embeds(self) -> bool:
        """Whether ``parse`` also embeds chunks: it is then given the store's embedding (or ``None``
        when the store has none to give) and returns `Parsed.vectors` made with it."""
        ...

    def parse(
        self, files: Sequence[Found], job: ParseJob, embedding: StoreEmbedding | None
    ) -> AsyncGenerator[Parsed, None]: ...


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
        results = parse_files(
            files,
            job.chunker,
            job.metadata,
            job.labels,
            concurrency=self.concurrency,
            executor=self.kind,
            limits=job.limits,
            ocr=job.ocr,
            reader=job.reader,
            roots=job.roots,
        )
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
    files: Sequence[Found],
    chunker: Chunker,
    metadata: dict[str, MetadataValue],
    labels: tuple[str, ...],
    *,
    concurrency: int | None,
    executor: ExecutorKind,
    limits: IngestLimits = DEFAULT_LIMITS,
    ocr: OcrOptions = DEFAULT_OCR,
    reader: ReaderBackend = 'default',
    roots: tuple[str, ...] = (),
) -> AsyncGenerator[Parsed, None]:
    """Parse ``files`` in workers, yielding each result as soon as it is ready (in no set order).

    Processes are supervised (`supervised_parse`): a file over ``limits.seconds`` or
    ``limits.memory_bytes`` gets its worker killed and fails alone. Threads cannot be
    killed: there the readers' own checks enforce ``limits``.

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
    jobs = [
        (str(found.path), chunker, metadata, labels, found.relative_path, limits, ocr, reader, roots) for found in files
    ]
    if use_processes:
        supervised = supervised_parse(
            jobs, parse_file, limits, workers, workers * IN_FLIGHT_PER_WORKER, _die_with_parent
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
            for job in itertools.islice(queued, workers * IN_FLIGHT_PER_WORKER - len(pending)):
                pending.add(loop.run_in_executor(pool, parse_file, *job))
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
