"""`ingest`: files and folders (or ready-made documents) into any `DocumentStore`, idempotently.

See docs/ingestion.md#how-the-pipeline-is-built.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar, Unpack

from .._store_attributes import text_analyzer_of
from ..content import Document, document_id_for
from ..protocols import DocumentInfo, DocumentStore, PrecomputedVectorsWriter
from ._embedding import StoreEmbedding
from ._executor import IngestExecutor
from ._fingerprint import document_fingerprint, file_fingerprint
from ._options import IngestKeywords, IngestOptions
from ._parse import ParseJob, file_uri, parse_path
from ._progress import IngestProgress
from ._readers import READERS, UNSUPPORTED
from ._readers._ocr import INSTALL_TESSERACT, OcrOptions, tesseract_path
from ._readers._versions import reader_key
from ._report import IngestInterrupted, IngestIssue, IngestReport, naming_the_limit, ocr_pages_text
from ._sync import stale_documents, stored_under
from ._vectors import VectorCache
from ._walk import LEAVES_ROOT, Found, walk_paths
from ._workers import LocalExecutor
from ._writer import BatchWriter

__all__ = ['file_uri', 'ingest', 'parse_path']

Source = str | os.PathLike[str] | Document

_T = TypeVar('_T')

_KEPT_LINKED = (
    'kept {count} an earlier run ingested through this symlink, which leaves the ingested folder: '
    'delete {them}, or ingest with follow_symlinks=True (--follow-symlinks) to update {them}'
)


async def ingest(
    store: DocumentStore,
    sources: Source | Iterable[Source],
    options: IngestOptions | None = None,
    **changes: Unpack[IngestKeywords],
) -> IngestReport:
    """Ingest files, folders and/or `Document` objects into ``store``; returns an `IngestReport`.

    ``store`` is any `DocumentStore` (it embeds what it is given); ``sources`` are paths (files or
    folders, walked recursively) and/or ready `Document` objects. How: an `IngestOptions`, and/or
    its fields as keywords (``ingest(store, 'docs', sync=True, ocr='never')``; keywords change a
    copy of ``options``). The options are documented on `IngestOptions` (docs/ingestion.md#options).
    ``ValueError`` for a bad option; ``RuntimeError`` before any work when ``ocr='always'`` lacks
    Tesseract or ``reader='unstructured'`` its extra; `IngestInterrupted` (with the report) on cancel.
    """
    o = (options or IngestOptions()).changed(**changes)
    ocr = _ocr_options(store, o)
    _check_environment(ocr, o)
    runner = LocalExecutor(o.executor, o.concurrency) if isinstance(o.executor, str) else o.executor
    items: list[Source] = (
        [sources] if isinstance(sources, str | os.PathLike | Document) else list(sources)  # type: ignore[list-item]
    )
    documents = [s for s in items if isinstance(s, Document)]
    paths = [Path(s) for s in items if not isinstance(s, Document)]
    roots = tuple(dict.fromkeys(str(p.expanduser().absolute()) for p in paths))
    job = ParseJob(o.chunker, dict(o.metadata), tuple(o.labels), o.limits, ocr, o.reader, roots)
    walked = walk_paths(
        paths,
        max_file_bytes=o.max_file_bytes,
        include_hidden=o.include_hidden,
        suffixes=frozenset(READERS),
        follow_symlinks=o.follow_symlinks,
        exclude=o.exclude,
        gitignore=o.gitignore,
    )
    found = list(walked)
    report = IngestReport(warnings=_empty_folders(paths, found))
    started = time.perf_counter()
    run: _Run | None = None
    try:  # a cancellation anywhere in here is an IngestInterrupted carrying what was done
        run = await _Run.open(store, _Settings(job, job.chunker.config_key(), runner), report, o)
        run.ui.start(len(found) + len(documents))
        await run.take_documents(documents)
        await run.parse_and_write(await run.select_files(found))
        if o.sync:
            await run.remove_stale(paths)
    except asyncio.CancelledError as cancelled:  # Ctrl-C: the summary says so, the caller gets what was done
        report.interrupted = True
        raise IngestInterrupted(report) from cancelled
    finally:
        if run is not None:
            run.finish(started)
    return report


def _check_environment(ocr: OcrOptions, options: IngestOptions) -> None:
    """``ocr='always'`` without Tesseract, ``reader='unstructured'`` without its extra: ``RuntimeError``, before any work."""
    if ocr.mode == 'always' and tesseract_path() is None:
        raise RuntimeError(f"ocr='always': {INSTALL_TESSERACT}")
    if options.reader == 'unstructured':
        from ._readers.unstructured import require_unstructured

        require_unstructured()


def _empty_folders(paths: Sequence[Path], found: Sequence[Found]) -> list[IngestIssue]:
    """A warning for each given folder in which the walk found no file a reader takes (an empty folder, a typo'd one)."""
    with_files = {item.root for item in found if item.reason is None}
    roots = (Path(p).expanduser().absolute() for p in paths)
    return [IngestIssue(str(r), f'no supported files under {r}') for r in roots if r.is_dir() and r not in with_files]


@dataclass(frozen=True, slots=True)
class _Settings:
    """How the run parses and fingerprints, fixed for the whole run."""

    job: ParseJob
    config_key: str
    """``job.chunker.config_key()``: part of every fingerprint, computed once."""
    executor: IngestExecutor


@dataclass(slots=True)
class _Run:
    """What one run builds up: the store's documents before it, the ids it has seen, its report."""

    store: DocumentStore
    settings: _Settings
    existing: dict[str, DocumentInfo]
    report: IngestReport
    ui: IngestProgress
    writer: BatchWriter
    vectors: VectorCache | None
    """The store's embedding and the executor's vectors waiting to be written, when the executor embeds."""
    seen_ids: set[str] = field(default_factory=set)
    """Ids of every document and file this run met, written or not: ``sync`` keeps them."""

    @classmethod
    async def open(
        cls, store: DocumentStore, settings: _Settings, report: IngestReport, options: IngestOptions
    ) -> _Run:
        """A run over ``store`` as it is now: its documents listed; its embedding read when the executor
        embeds and the store takes precomputed vectors (`PrecomputedVectorsWriter`)."""
        existing = {info.id: info for info in await store.list_documents()}
        takes = settings.executor.embeds and isinstance(store, PrecomputedVectorsWriter)
        embedding = await StoreEmbedding.of(store) if takes else None
        vectors = VectorCache(embedding) if embedding is not None else None
        ui = IngestProgress(options.progress, report)

        def written() -> None:
            ui.advance()
            if vectors is not None:
                vectors.settled()

        writer = BatchWriter(store, report, existing.keys(), options.batch_chunks, written, vectors)
        return cls(store, settings, existing, report, ui, writer, vectors)

    async def take_documents(self, documents: Sequence[Document]) -> None:
        """Ready-made documents: unchanged when their fingerprint (given, or of their content) is stored."""
        for document in documents:
            fp = document.fingerprint or document_fingerprint(document, self.settings.config_key)
            self.seen_ids.add(document.id)
            info = self.existing.get(document.id)
            if info is not None and info.fingerprint == fp:
                self._settle(self.report.unchanged, document.uri)
            else:
                await self._write(document if document.fingerprint else document.model_copy(update={'fingerprint': fp}))

    async def select_files(self, found: Sequence[Found]) -> list[Found]:
        """Settle what the walk found without parsing it where possible; return the files to parse."""
        to_parse: list[Found] = []
        for item in found:
            doc_id = document_id_for(file_uri(item.path))
            self.seen_ids.add(doc_id)
            if item.reason is not None:
                if item.reason.startswith(LEAVES_ROOT):
                    self._warn_kept(item.path)
                is_failure, issue = _walk_issue(item)
                self._settle(self.report.failed if is_failure else self.report.skipped, issue)
            elif item.size == 0:
                self._settle(self.report.skipped, IngestIssue(str(item.path), 'empty file'))
            elif not await self._settled_by_hash(item, doc_id):
                to_parse.append(item)
        return to_parse

    def _warn_kept(self, link: Path) -> None:
        """Warn about documents an earlier run took in through ``link`` (leaving the folder): kept, not removed."""
        kept = stored_under(self.existing.values(), Path(os.path.realpath(link)))
        if kept:
            self.seen_ids.update(info.id for info in kept)
            count, them = (f'{len(kept)} documents', 'them') if len(kept) > 1 else ('the document', 'it')
            self.report.warnings.append(IngestIssue(str(link), _KEPT_LINKED.format(count=count, them=them)))

    async def _settled_by_hash(self, item: Found, doc_id: str) -> bool:
        """True when hashing settles ``item``: stored with this fingerprint, or unreadable (recorded).

        A stored copy whose ``path`` / ``uri`` metadata is not what this run records is not
        settled, whatever its fingerprint (which covers only the bytes and the chunker): it
        was written before ingestion recorded them, or from another root, and a filter on
        ``path`` must not silently miss or misplace it. A store that lists no metadata at
        all is trusted on the fingerprint alone, or every run would rewrite every file.
        """
        path = item.path
        info = self.existing.get(doc_id)
        if info is None or info.fingerprint is None:
            return False
        if info.metadata and (info.metadata.get('path'), info.metadata.get('uri')) != (item.relative_path, info.uri):
            return False
        try:
            key = self.settings.config_key + reader_key(path, self.settings.job.reader, self.settings.job.ocr)
            fp = await asyncio.to_thread(file_fingerprint, path, key)
        except OSError as exc:
            self._settle(self.report.failed, IngestIssue(str(path), f'cannot read file: {exc.strerror or exc}'))
            return True
        if fp != info.fingerprint:
            return False
        self._settle(self.report.unchanged, info.uri)
        return True

    async def parse_and_write(self, files: Sequence[Found]) -> None:
        """Parse ``files`` in workers and write each document as it comes back, then the last batch.

        A document that came with its chunks' vectors is written with them (`BatchWriter`): the
        store does not embed those texts again.
        """
        s, vectors = self.settings, self.vectors
        parsed = s.executor.parse(files, s.job, vectors.embedding if vectors is not None else None)
        async with aclosing(parsed) as results:
            while (result := await self.writer.meanwhile(anext(results, None))) is not None:
                self.report.warnings.extend(IngestIssue(result.path, w) for w in result.warnings)
                if result.ocr_pages:
                    self.report.ocr.append(IngestIssue(result.path, ocr_pages_text(result.ocr_pages)))
                if result.document is None:
                    outcome = self.report.skipped if result.skipped else self.report.failed
                    self._settle(outcome, IngestIssue(result.path, naming_the_limit(result.reason or 'unreadable')))
                else:
                    await self._write(result.document, result.vectors)
        await self.writer.flush()

    async def _write(self, document: Document, vectors: Sequence[Sequence[float]] | None = None) -> None:
        """Hand ``document`` to the writer (its vectors, if any, to the cache the writer hands the store)."""
        if self.vectors is not None:
            self.vectors.add(document, vectors)
        await self.writer.add(document)

    async def remove_stale(self, paths: Sequence[Path]) -> None:
        """``sync=True``: delete the documents whose files under ``paths`` are gone."""
        stale = stale_documents(self.existing.values(), self.seen_ids, paths)
        if stale:
            await self.store.delete_documents([info.id for info in stale])
            self.report.removed.extend(info.uri for info in stale)

    def finish(self, started: float) -> None:
        """Time the run, put the report in a stable order, end the progress bar (also after a crash)."""
        report = self.report
        report.seconds = time.perf_counter() - started
        for uris in (report.added, report.updated, report.unchanged, report.removed):
            uris.sort()
        report.failed.sort(key=lambda i: i.path)
        report.skipped.sort(key=lambda i: i.path)
        report.ocr.sort(key=lambda i: i.path)
        self.ui.stop()

    def _settle(self, outcome: list[_T], entry: _T) -> None:
        outcome.append(entry)
        self.ui.advance()


def _walk_issue(item: Found) -> tuple[bool, IngestIssue]:
    """A path the walk set aside: ``(is_failure, issue)``.

    It is a failure when the caller named it directly and it cannot be ingested (missing,
    a broken link, an unsupported type); inside a folder it is only skipped.
    """
    reason = item.reason or ''
    suffix = item.path.suffix.lower()
    if reason.startswith('unsupported') and suffix in UNSUPPORTED:
        reason = UNSUPPORTED[suffix]
    explicit = item.path == item.root and reason.startswith(('unsupported', 'no such', 'broken'))
    return explicit, IngestIssue(str(item.path), reason)


def _ocr_options(store: object, options: IngestOptions) -> OcrOptions:
    """The run's OCR options: its ``ocr_languages``, else the store's text language (`HasTextAnalyzer`) when it names one."""
    analyzer = text_analyzer_of(store)
    return options.ocr_options(analyzer.language if analyzer is not None else None)
