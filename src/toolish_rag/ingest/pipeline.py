"""`ingest`: files and folders (or ready-made documents) into any `DocumentStore`, idempotently.

For each file: hash it (``sha256`` of the bytes and the chunker configuration); when the
store already holds a document with that id and fingerprint, stop there — no parse, no
embedding. Otherwise parse and chunk it in a worker (processes or threads) and upsert it,
in batches, replacing any older version whole. ``sync=True`` then deletes the documents
whose files under the given folders are gone.

Each upsert commits whole documents with their fingerprints, so a run that dies half way
loses nothing it committed: the re-run skips those documents and finishes the rest.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import multiprocessing
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlparse

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

from ..content import Document, MetadataValue, document_id_for
from ..protocols import DocumentInfo, DocumentStore
from .chunking import Chunker
from .fingerprint import fingerprint
from .model import ReadError
from .readers import READERS, UNSUPPORTED, read_bytes
from .report import IngestIssue, IngestReport, render_report
from .walk import DEFAULT_MAX_FILE_BYTES, walk_paths

__all__ = ['file_uri', 'ingest', 'parse_path']

Source = str | os.PathLike[str] | Document


def file_uri(path: str | os.PathLike[str]) -> str:
    """The uri a file's document gets: ``file://`` + its resolved absolute path."""
    return Path(path).resolve().as_uri()


def _uri_path(uri: str) -> Path | None:
    parsed = urlparse(uri)
    return Path(unquote(parsed.path)) if parsed.scheme == 'file' else None


@dataclass(frozen=True, slots=True)
class _Parsed:
    path: str
    document: Document | None
    reason: str | None
    warnings: tuple[str, ...] = ()


def parse_path(
    path: str | os.PathLike[str],
    chunker: Chunker | None = None,
    *,
    metadata: Mapping[str, MetadataValue] | None = None,
    labels: Iterable[str] = (),
) -> Document:
    """Read, parse and chunk one file into a `Document` (no store involved).

    Raises `ReadError` with the reason when the file cannot be ingested.
    """
    result = _parse_job(str(path), chunker or Chunker(), dict(metadata or {}), tuple(labels))
    if result.document is None:
        raise ReadError(result.reason or 'unreadable')
    return result.document


def _parse_job(path: str, chunker: Chunker, metadata: dict[str, MetadataValue], labels: tuple[str, ...]) -> _Parsed:
    p = Path(path)
    try:
        data = p.read_bytes()
        parsed = read_bytes(data, p)
        extra = {'source_format': parsed.format, 'file_name': p.name, **metadata}
        document = chunker.build(
            parsed,
            file_uri(p),
            fingerprint=fingerprint(data, chunker.config_key()),
            metadata=extra,
            labels=labels,
        )
    except ReadError as exc:
        return _Parsed(path, None, str(exc))
    except OSError as exc:
        return _Parsed(path, None, f'cannot read file: {exc.strerror or exc}')
    except Exception as exc:  # a reader bug on one odd file must not stop the run
        return _Parsed(path, None, f'reader error: {type(exc).__name__}: {exc}')
    if not document.chunks:
        return _Parsed(path, None, 'no extractable text', tuple(parsed.warnings))
    return _Parsed(path, document, None, tuple(parsed.warnings))


def _hash_file(path: Path, key: str) -> str:
    return fingerprint(path.read_bytes(), key)


def _document_fingerprint(document: Document, key: str) -> str:
    return fingerprint(document.model_dump_json(exclude={'fingerprint'}).encode('utf-8'), key)


class _Progress:
    def __init__(self, enabled: bool | Console, report: IngestReport) -> None:
        self.report = report
        self.console = enabled if isinstance(enabled, Console) else Console(stderr=True)
        self.enabled = enabled is not False
        self.started = time.perf_counter()
        self.progress: Progress | None = None
        self.task: TaskID | None = None

    def start(self, total: int) -> None:
        if not self.enabled:
            return
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn('[bold]ingest'),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn('{task.fields[stats]}'),
            TimeElapsedColumn(),
            console=self.console,
            transient=False,
        )
        self.progress.start()
        self.task = self.progress.add_task('ingest', total=total, stats='')

    def advance(self) -> None:
        if self.progress is None or self.task is None:
            return
        r = self.report
        elapsed = max(time.perf_counter() - self.started, 1e-6)
        done = len(r.added) + len(r.updated) + len(r.unchanged) + len(r.failed)
        stats = (
            f'[green]+{len(r.added)}[/] [cyan]~{len(r.updated)}[/] ={len(r.unchanged)} '
            f'[red]!{len(r.failed)}[/]  {done / elapsed:.1f} docs/s  {r.chunks} chunks'
        )
        self.progress.update(self.task, advance=1, stats=stats)

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.console.print(render_report(self.report))


async def ingest(
    store: DocumentStore,
    sources: Source | Iterable[Source],
    *,
    chunker: Chunker | None = None,
    sync: bool = False,
    progress: bool | Console = True,
    concurrency: int | None = None,
    executor: Literal['auto', 'process', 'thread'] = 'auto',
    batch_chunks: int = 256,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    include_hidden: bool = False,
    metadata: Mapping[str, MetadataValue] | None = None,
    labels: Iterable[str] = (),
) -> IngestReport:
    """Ingest files, folders and/or `Document` objects into ``store``; returns an `IngestReport`.

    Args:
        store: any `DocumentStore`; it embeds what it is given.
        sources: paths (files or folders, walked recursively) and/or ready `Document` objects.
        chunker: how to split (default `Chunker()`); part of every file's fingerprint.
        sync: also delete stored documents whose files under the given paths no longer exist.
        progress: show a progress bar and a summary (``True``: on stderr; or a rich ``Console``).
        concurrency: parse workers (default: CPU count).
        executor: ``'process'`` parses in a process pool (spawned), ``'thread'`` in threads,
            ``'auto'`` picks processes when there are many files to parse.
        batch_chunks: upsert once at least this many chunks are waiting.
        max_file_bytes: larger files are skipped with a reason.
        include_hidden: descend into hidden folders and read hidden files.
        metadata / labels: added to every file's document (front matter keys win over nothing:
            explicit ``metadata`` overrides what the reader found).
    """
    chunker = chunker or Chunker()
    key = chunker.config_key()
    report = IngestReport()
    started = time.perf_counter()
    items: list[Source] = (
        [sources] if isinstance(sources, str | os.PathLike | Document) else list(sources)  # type: ignore[list-item]
    )
    documents = [s for s in items if isinstance(s, Document)]
    paths = [Path(s) for s in items if not isinstance(s, Document)]
    existing: dict[str, DocumentInfo] = {info.id: info for info in await store.list_documents()}
    found = list(
        walk_paths(paths, max_file_bytes=max_file_bytes, include_hidden=include_hidden, suffixes=frozenset(READERS))
    )
    ui = _Progress(progress, report)
    ui.start(len(found) + len(documents))
    extra_meta = dict(metadata or {})
    label_tuple = tuple(labels)
    batch: list[tuple[Document, bool]] = []
    batch_size = 0
    seen_ids: set[str] = set()

    async def flush() -> None:
        nonlocal batch, batch_size
        if not batch:
            return
        await store.upsert([d for d, _ in batch])
        for document, is_update in batch:
            (report.updated if is_update else report.added).append(document.uri)
            report.chunks += len(document.chunks)
            ui.advance()
        batch, batch_size = [], 0

    async def accept(document: Document) -> None:
        nonlocal batch_size
        batch.append((document, document.id in existing))
        batch_size += len(document.chunks)
        if batch_size >= batch_chunks:
            await flush()

    try:
        for doc in documents:
            fp = doc.fingerprint or _document_fingerprint(doc, key)
            seen_ids.add(doc.id)
            if doc.id in existing and existing[doc.id].fingerprint == fp:
                report.unchanged.append(doc.uri)
                ui.advance()
                continue
            await accept(doc if doc.fingerprint else doc.model_copy(update={'fingerprint': fp}))

        to_parse: list[Path] = []
        for item in found:
            if item.reason is not None:
                reason = item.reason
                suffix = item.path.suffix.lower()
                if reason.startswith('unsupported') and suffix in UNSUPPORTED:
                    reason = UNSUPPORTED[suffix]
                explicit = item.path == item.root and reason.startswith(('unsupported', 'no such', 'broken'))
                (report.failed if explicit else report.skipped).append(IngestIssue(str(item.path), reason))
                seen_ids.add(document_id_for(file_uri(item.path)))
                ui.advance()
                continue
            doc_id = document_id_for(file_uri(item.path))
            seen_ids.add(doc_id)
            if item.size == 0:
                report.skipped.append(IngestIssue(str(item.path), 'empty file'))
                ui.advance()
                continue
            info = existing.get(doc_id)
            if info is not None and info.fingerprint is not None:
                try:
                    fp = await asyncio.to_thread(_hash_file, item.path, key)
                except OSError as exc:
                    report.failed.append(IngestIssue(str(item.path), f'cannot read file: {exc.strerror or exc}'))
                    ui.advance()
                    continue
                if fp == info.fingerprint:
                    report.unchanged.append(info.uri)
                    ui.advance()
                    continue
            to_parse.append(item.path)

        workers = max(1, concurrency or os.cpu_count() or 1)
        use_processes = executor == 'process' or (executor == 'auto' and workers > 1 and len(to_parse) >= 64)
        pool: concurrent.futures.Executor
        if use_processes:
            pool = concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context('spawn'))
        else:
            pool = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix='toolish-ingest')
        loop = asyncio.get_running_loop()
        try:
            pending: set[asyncio.Future[_Parsed]] = set()

            async def drain(wait_all: bool) -> None:
                nonlocal pending
                while pending:
                    done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                    for fut in done:
                        result = fut.result()
                        report.warnings.extend(IngestIssue(result.path, w) for w in result.warnings)
                        if result.document is None:
                            report.failed.append(IngestIssue(result.path, result.reason or 'unreadable'))
                            ui.advance()
                        else:
                            await accept(result.document)
                    if not wait_all:
                        return

            for path in to_parse:
                pending.add(loop.run_in_executor(pool, _parse_job, str(path), chunker, extra_meta, label_tuple))
                if len(pending) >= workers * 4:
                    await drain(wait_all=False)
            await drain(wait_all=True)
            await flush()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

        if sync:
            roots = [p.resolve() for p in paths if p.exists() or not p.is_symlink()]
            stale: list[DocumentInfo] = []
            for info in existing.values():
                file_path = _uri_path(info.uri)
                if file_path is None or info.id in seen_ids or file_path.exists():
                    continue
                if any(file_path == r or file_path.is_relative_to(r) for r in roots):
                    stale.append(info)
            if stale:
                await store.delete_documents([i.id for i in stale])
                report.removed.extend(i.uri for i in stale)
    finally:
        report.seconds = time.perf_counter() - started
        for lst in (report.added, report.updated, report.unchanged, report.removed):
            lst.sort()
        report.failed.sort(key=lambda i: i.path)
        report.skipped.sort(key=lambda i: i.path)
        ui.stop()
    return report
