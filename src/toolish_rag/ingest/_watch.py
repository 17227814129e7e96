"""`watch`: keep a store in step with files and folders as they change (``toolish-rag ingest PATH --watch``).

See docs/ingestion.md#how-the-pipeline-is-built.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from .._extras import install_command
from ..protocols import DocumentStore
from ._options import IngestKeywords, IngestOptions
from ._parse import file_uri
from ._pipeline import ingest
from ._readers import READERS
from ._report import IngestIssue, IngestReport
from ._sync import stale_documents
from ._walk import SKIPPED_DIRS
from ._workers import LocalExecutor

if TYPE_CHECKING:
    from watchfiles import Change
    from watchfiles.main import FileChange

    Watcher = Callable[..., AsyncIterator[set[FileChange]]]
    """watchfiles' ``awatch``: the only part of watchfiles used, imported by `_awatch`."""

__all__ = ['DEFAULT_DEBOUNCE_MS', 'MAX_BATCH_WAIT_FACTOR', 'OnReport', 'WatchScope', 'watch']

DEFAULT_DEBOUNCE_MS = 500
"""Quiet time after the last change before a batch is applied: longer than an editor's save."""

MAX_BATCH_WAIT_FACTOR = 10
"""A batch is applied at most this many ``debounce_ms`` after its first change, quiet or not."""

_WATCHER_STEP_MS = 50
"""How often watchfiles hands over what it saw; the quiet period is measured on top of it."""

_EDITOR_TEMP = re.compile(r'^\.#|^#.*#$|~$|\.sw[a-p]$|^4913$')
"""Editor temporaries: emacs locks and autosaves, backups, vim swap files and vim's write probe."""

OnReport = Callable[[IngestReport], Awaitable[None] | None]
"""Called with each run's report: the initial run's first (with ``initial=True``), then each batch's."""


async def watch(
    store: DocumentStore,
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    options: IngestOptions | None = None,
    *,
    debounce_ms: int = DEFAULT_DEBOUNCE_MS,
    stop_event: asyncio.Event | None = None,
    on_report: OnReport | None = None,
    initial: bool = True,
    **changes: Unpack[IngestKeywords],
) -> IngestReport:
    """Ingest ``paths``, then re-ingest what changes and remove what is deleted, until ``stop_event`` is set.

    Args:
        store: any `DocumentStore`, as for `ingest`.
        paths: files and folders (folders watched recursively); each must exist.
        debounce_ms: apply a batch once no change came for this long.
        stop_event: set it to stop (the batch being applied is finished first); without it,
            `watch` runs until cancelled.
        on_report: receives each run's `IngestReport` (sync or async): the initial run's, then
            one per batch, narrowed to the paths that changed plus what was written or removed.
        initial: run `ingest` over ``paths`` before watching (default). Without it only later
            changes are applied.
        options / changes: the `IngestOptions` of every `ingest` call, or their fields as keywords
            (``chunker``, ``metadata``, ``include_hidden``...; keywords change a copy of ``options``).
            ``sync``, ``progress`` and a non-local ``executor`` apply to the initial run only: batches remove deleted paths themselves, show no progress bar, and parse
            their few files with the local executor (``'process'``, ``'thread'``, ``'auto'``) given, else
            in process (an executor's start cost, Ray's ~9 s, would dwarf them).

    Returns:
        The change batches' reports merged (the initial run's not included).

    Raises:
        ImportError: watchfiles is not installed (the extra ``toolish-rag[watch]``).
        FileNotFoundError: a path does not exist.
    """
    awatch = _awatch()
    run = (options or IngestOptions()).changed(**changes)
    scope = WatchScope.of(paths, include_hidden=run.include_hidden)
    stop = stop_event or asyncio.Event()
    halt = asyncio.Event()  # ends the watchers; ``stop`` is the caller's and is left as it is
    queue: asyncio.Queue[set[Path]] = asyncio.Queue()
    feeders = [
        asyncio.create_task(_feed(awatch(*targets, **options, stop_event=halt, watch_filter=scope.relevant), queue))
        for targets, options in scope.watchers(debounce_ms)
    ]
    # An executor with a fixed start cost (Ray: actors start and load the model, ~9 s) serves the initial
    # run only: a batch is a few files, and the store embeds them. A local one serves every batch too, so
    # the CLI's worker processes bound each batch's files (they fork from the server the first run started).
    local = run.executor if isinstance(run.executor, str | LocalExecutor) else 'auto'
    batch = run.changed(sync=False, progress=False, executor=local)
    total = IngestReport()
    try:
        # Arms the watchers before the initial run: each task's first step creates its watcher
        # (watchfiles' `RustNotify`, which starts watching at once) before its first await, and
        # this sleep lets every task take that step.
        await asyncio.sleep(0)
        for feeder in feeders:
            if feeder.done():
                feeder.result()  # a watcher that could not start (the path just went, no inotify watches left)
        if initial:
            await _emit(on_report, await ingest(store, scope.roots, run))
        while (changed := await _next_batch(queue, stop, feeders, debounce_ms / 1000)) is not None:
            report = await _apply(store, scope, changed, batch)
            if report.files_seen or report.removed or report.warnings:  # else only folders or untracked paths moved
                _merge(total, report)
                await _emit(on_report, report)
    finally:
        halt.set()
        for feeder in feeders:
            feeder.cancel()
        await asyncio.gather(*feeders, return_exceptions=True)
    return total


@dataclass(frozen=True, slots=True)
class WatchScope:
    """The watched paths, and which changes under them can matter to the store (as the walk sees them)."""

    roots: tuple[Path, ...]
    """Absolute, not resolved (as `walk_paths` makes them), in the order given: `ingest` takes them so."""
    real_roots: tuple[Path, ...]
    """``roots`` resolved: some platforms report events under the real path."""
    folders: frozenset[Path]
    """The roots (both forms) that are folders: a path under a file root is not in scope."""
    include_hidden: bool = False

    @classmethod
    def of(
        cls, paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], *, include_hidden: bool
    ) -> WatchScope:
        given = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
        roots = tuple(dict.fromkeys(Path(p).expanduser().absolute() for p in given))
        for root in roots:
            if not root.exists():
                raise FileNotFoundError(f'cannot watch {root}: no such file or directory')
        real = tuple(r.resolve() for r in roots)
        folders = frozenset(p for p in roots + real if p.is_dir())
        return cls(roots, real, folders, include_hidden)

    def watchers(self, debounce_ms: int) -> list[tuple[tuple[Path, ...], dict[str, Any]]]:
        """What to watch: folders recursively; a file through its folder, not recursively.

        A file is not watched itself: an editor that saves by rename replaces the watched
        inode, and the watch would go blind after the first save.
        """
        folders = tuple(r for r in self.roots if r in self.folders)
        parents = tuple(dict.fromkeys(r.parent for r in self.roots if r not in self.folders))
        timing = {'debounce': debounce_ms, 'step': min(_WATCHER_STEP_MS, debounce_ms)}
        return [
            (targets, {'recursive': recursive, **timing})
            for targets, recursive in ((folders, True), (parents, False))
            if targets
        ]

    def relevant(self, change: Change, raw_path: str) -> bool:
        """watchfiles' filter: could this change alter what ingesting the roots stores?

        Deleted paths pass whatever their suffix: a deleted folder cannot be told from a
        file any more, and the removal rule only deletes what is stored.
        """
        path = Path(raw_path)
        parts = next((p for r in range(len(self.roots)) if (p := self._parts_under(path, r)) is not None), None)
        if parts is None or _EDITOR_TEMP.search(path.name):
            return False
        if any(p in SKIPPED_DIRS or (p.startswith('.') and not self.include_hidden) for p in parts):
            return False
        if not path.exists() or path.is_dir():
            return True
        return path.suffix.lower() in READERS

    def holding(self, paths: Iterable[Path]) -> list[Path]:
        """The roots (in the order given) that hold at least one of ``paths``."""
        wanted = list(paths)
        return [root for r, root in enumerate(self.roots) if any(self._parts_under(p, r) is not None for p in wanted)]

    def _parts_under(self, path: Path, index: int) -> tuple[str, ...] | None:
        """``path``'s parts below root ``index`` (``()`` for the root itself); ``None`` when it is not there."""
        for base in (self.roots[index], self.real_roots[index]):
            if path == base:
                return ()
            if base in self.folders and path.is_relative_to(base):
                return path.relative_to(base).parts
        return None


async def _feed(changes: AsyncIterator[set[FileChange]], queue: asyncio.Queue[set[Path]]) -> None:
    """Move each set of changed paths from a watchfiles ``awatch`` into ``queue`` (kinds are dropped)."""
    async for batch in changes:
        queue.put_nowait({Path(path) for _, path in batch})


async def _next_batch(
    queue: asyncio.Queue[set[Path]], stop: asyncio.Event, feeders: Sequence[asyncio.Task[None]], debounce_s: float
) -> set[Path] | None:
    """The next batch of changed paths, once quiet for ``debounce_s``; ``None`` when stopped."""
    first = await _first_change(queue, stop, feeders)
    if first is None:
        return None
    changed = set(first)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + debounce_s * MAX_BATCH_WAIT_FACTOR
    while not stop.is_set() and (wait := min(debounce_s, deadline - loop.time())) > 0:
        try:
            changed |= await asyncio.wait_for(queue.get(), wait)
        except TimeoutError:
            break
    return None if stop.is_set() else changed


async def _first_change(
    queue: asyncio.Queue[set[Path]], stop: asyncio.Event, feeders: Sequence[asyncio.Task[None]]
) -> set[Path] | None:
    """Wait for a change or for ``stop``; a watcher that failed raises its error here (it cannot be waited out)."""
    get = asyncio.ensure_future(queue.get())
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({get, stopped, *feeders}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        get.cancel()
        stopped.cancel()
    for feeder in feeders:
        if feeder.done():
            feeder.result()  # raises the watcher's error
            raise RuntimeError('a file watcher ended while watching')  # only `halt` ends one, and it is not set
    if stop.is_set() or get.cancelled():
        return None
    return get.result()


async def _apply(store: DocumentStore, scope: WatchScope, changed: set[Path], batch: IngestOptions) -> IngestReport:
    """One batch: re-ingest the roots holding what exists, remove what is gone; the report narrowed to ``changed``."""
    started = time.perf_counter()
    present = sorted(p for p in changed if p.exists())
    gone = sorted(p for p in changed if not p.exists())
    report = IngestReport()
    if present:
        report = _narrowed(await ingest(store, scope.holding(present), batch), present)
    if gone:
        stale = stale_documents(await store.list_documents(), frozenset(), gone)
        if stale:
            await store.delete_documents([info.id for info in stale])
            report.removed.extend(sorted(info.uri for info in stale))
    report.seconds = time.perf_counter() - started
    return report


def _narrowed(report: IngestReport, touched: Sequence[Path]) -> IngestReport:
    """``report`` without the unchanged, failed and skipped files (and warnings) outside ``touched``.

    What was written stays whole: it changed, whether or not its event has come yet.
    """
    marks = [file_uri(p) for p in touched]

    def hit(uri: str) -> bool:
        return any(uri == m or uri.startswith(m + '/') for m in marks)

    def issues(found: list[IngestIssue]) -> list[IngestIssue]:
        return [i for i in found if hit(file_uri(i.path))]

    return IngestReport(
        added=report.added,
        updated=report.updated,
        unchanged=[u for u in report.unchanged if hit(u)],
        removed=report.removed,
        failed=issues(report.failed),
        skipped=issues(report.skipped),
        warnings=issues(report.warnings),
        ocr=issues(report.ocr),
        chunks=report.chunks,
    )


def _merge(total: IngestReport, report: IngestReport) -> None:
    total.added += report.added
    total.updated += report.updated
    total.unchanged += report.unchanged
    total.removed += report.removed
    total.failed += report.failed
    total.skipped += report.skipped
    total.warnings += report.warnings
    total.ocr += report.ocr
    total.chunks += report.chunks
    total.seconds += report.seconds


async def _emit(on_report: OnReport | None, report: IngestReport) -> None:
    if on_report is not None:
        result = on_report(report)
        if inspect.isawaitable(result):
            await result


def _awatch() -> Watcher:
    """watchfiles' ``awatch``, imported here so that the core never needs the extra."""
    try:
        from watchfiles import awatch
    except ImportError as exc:
        raise ImportError(f'watching for changes needs watchfiles: {install_command("watch")}') from exc
    return awatch
