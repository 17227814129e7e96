"""`ingest`: files and folders (or ready-made documents) into any `DocumentStore`, idempotently.

See docs/ingestion.md#how-the-pipeline-is-built.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from contextlib import aclosing, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from rich.console import Console

from .._store_attributes import text_analyzer_of
from ..content import Document, MetadataValue, document_id_for
from ..protocols import DocumentInfo, DocumentStore
from ._chunking import Chunker
from ._fingerprint import document_fingerprint, file_fingerprint
from ._limits import DEFAULT_LIMITS, IngestLimits
from ._parse import check_caller_metadata, file_uri, parse_path
from ._progress import IngestProgress
from ._readers import READERS, UNSUPPORTED
from ._readers._ocr import INSTALL_TESSERACT, OcrMode, OcrOptions, tesseract_path
from ._readers._versions import READER_BACKENDS, ReaderBackend, reader_key
from ._report import IngestInterrupted, IngestIssue, IngestReport, naming_the_limit, ocr_pages_text
from ._sync import stale_documents, stored_under
from ._walk import DEFAULT_MAX_FILE_BYTES, LEAVES_ROOT, Found, walk_paths
from ._workers import ExecutorKind, IngestExecutor, LocalExecutor, ParseJob
from ._writer import BatchWriter
from .distributed._embedding import StoreEmbedding
from .distributed._vectors import VectorCache

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
    *,
    chunker: Chunker | None = None,
    sync: bool = False,
    progress: bool | Console = True,
    concurrency: int | None = None,
    executor: ExecutorKind | IngestExecutor = 'auto',
    batch_chunks: int = 256,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    include_hidden: bool = False,
    metadata: Mapping[str, MetadataValue] | None = None,
    labels: Iterable[str] = (),
    limits: IngestLimits = DEFAULT_LIMITS,
    follow_symlinks: bool = False,
    ocr: OcrMode = 'auto',
    ocr_languages: str | Sequence[str] | None = None,
    reader: ReaderBackend = 'default',
    exclude: Sequence[str] = (),
    gitignore: bool = True,
) -> IngestReport:
    """Ingest files, folders and/or `Document` objects into ``store``; returns an `IngestReport`.

    Args:
        store: any `DocumentStore`; it embeds what it is given.
        sources: paths (files or folders, walked recursively) and/or ready `Document` objects.
        chunker: how to split (default `Chunker()`); part of every file's fingerprint.
        sync: also delete stored documents whose files under the given paths no longer exist.
        progress: show a progress bar and a summary (``True``: on stderr; or a rich ``Console``).
        concurrency: parse workers of the local pools (default: CPU count).
        executor: ``'process'`` parses in a process pool (spawned), ``'thread'`` in threads,
            ``'auto'`` picks processes when there are many files to parse; or an
            `IngestExecutor` such as ``RayExecutor(address)``, which parses and embeds on a
            Ray cluster (its own arguments say how many workers; ``concurrency`` is unused).
        batch_chunks: upsert once at least this many chunks are waiting.
        max_file_bytes: larger files are skipped with a reason.
        include_hidden: descend into hidden folders and read hidden files.
        limits: the bounds each file is parsed within (time, memory, unpacked bytes, elements,
            nesting, text): a file over one fails alone with the reason (docs/ingestion.md#bounds-per-file).
        follow_symlinks: also ingest files that symlinks lead to outside the given folders (by
            default they are skipped and reported; links inside the given folders are followed).
        metadata / labels: added to every file's document (front matter keys win over nothing:
            explicit ``metadata`` overrides what the reader found). ``path`` and ``uri`` are
            recorded by ingestion itself: passing them raises ``ValueError``.
        ocr: ``'auto'`` reads PDF pages without a usable text layer and image files with Tesseract;
            ``'always'`` every page; ``'never'`` none (docs/ingestion.md#ocr). ``'always'`` without
            Tesseract raises ``RuntimeError`` before any work; ``'auto'`` reports each file that needed it.
        ocr_languages: OCR languages (``'de'``, ``['deu', 'eng']``); default the store's ``language``;
            those without installed Tesseract data are left out, English when none is left.
        reader: ``'unstructured'`` reads DOCX, PPTX, XLSX, HTML, Markdown and text with the
            ``unstructured`` library's offline partitioners (the default readers read the rest);
            without ``toolish-rag[unstructured]`` it raises ``RuntimeError`` before any work
            (docs/ingestion.md#the-unstructured-backend).
        exclude: gitignore-style globs (``'*.png'``, ``'img/**'``) matched against each file's path
            under its given folder: what they match is never read (docs/ingestion.md#what-is-read).
        gitignore: honour the ``.gitignore`` files of the walked folders (and of the git work tree
            they are in); ``False`` (``--no-ignore``) reads what they ignore too.
    """
    check_caller_metadata(metadata or {})
    ocr_options = _ocr_options(store, ocr, ocr_languages)
    _check_reader(reader)
    chunker = chunker or Chunker()
    runner = LocalExecutor(executor, concurrency) if isinstance(executor, str) else executor
    items: list[Source] = (
        [sources] if isinstance(sources, str | os.PathLike | Document) else list(sources)  # type: ignore[list-item]
    )
    documents = [s for s in items if isinstance(s, Document)]
    paths = [Path(s) for s in items if not isinstance(s, Document)]
    roots = tuple(dict.fromkeys(str(p.expanduser().absolute()) for p in paths))
    settings = _Settings(
        chunker, chunker.config_key(), runner, dict(metadata or {}), tuple(labels), limits, ocr_options, reader, roots
    )
    walked = walk_paths(
        paths,
        max_file_bytes=max_file_bytes,
        include_hidden=include_hidden,
        suffixes=frozenset(READERS),
        follow_symlinks=follow_symlinks,
        exclude=exclude,
        gitignore=gitignore,
    )
    found = list(walked)
    report = IngestReport(warnings=_empty_folders(paths, found))
    started = time.perf_counter()
    run: _Run | None = None
    try:  # a cancellation anywhere in here is an IngestInterrupted carrying what was done
        run = await _Run.open(store, settings, report, progress, batch_chunks)
        run.ui.start(len(found) + len(documents))
        await run.take_documents(documents)
        await run.parse_and_write(await run.select_files(found))
        if sync:
            await run.remove_stale(paths)
    except asyncio.CancelledError as cancelled:  # Ctrl-C: the summary says so, the caller gets what was done
        report.interrupted = True
        raise IngestInterrupted(report) from cancelled
    finally:
        if run is not None:
            run.finish(started)
    return report


def _ocr_options(store: DocumentStore, mode: OcrMode, languages: str | Sequence[str] | None) -> OcrOptions:
    """The run's `OcrOptions`; ``'always'`` without Tesseract fails here, before any work."""
    options = OcrOptions(mode, _ocr_language_list(store, languages))
    if mode == 'always' and tesseract_path() is None:
        raise RuntimeError(f"ocr='always': {INSTALL_TESSERACT}")
    return options


def _check_reader(reader: ReaderBackend) -> None:
    """An unknown backend raises ``ValueError``; ``'unstructured'`` without its extra ``RuntimeError``, before any work."""
    if reader not in READER_BACKENDS:
        raise ValueError(f'reader must be one of {", ".join(map(repr, READER_BACKENDS))}, not {reader!r}')
    if reader == 'unstructured':
        from ._readers.unstructured import require_unstructured

        require_unstructured()


def _ocr_language_list(store: DocumentStore, languages: str | Sequence[str] | None) -> tuple[str, ...]:
    if languages is None:  # the store's text language (its `HasTextAnalyzer`), when it names one
        analyzer = text_analyzer_of(store)
        configured = analyzer.language if analyzer is not None else 'none'
        return (configured,) if configured not in ('auto', 'none') else ()
    return (languages,) if isinstance(languages, str) else tuple(languages)


def _empty_folders(paths: Sequence[Path], found: Sequence[Found]) -> list[IngestIssue]:
    """A warning for each given folder in which the walk found no file a reader takes (an empty folder, a typo'd one)."""
    with_files = {item.root for item in found if item.reason is None}
    roots = (Path(p).expanduser().absolute() for p in paths)
    return [IngestIssue(str(r), f'no supported files under {r}') for r in roots if r.is_dir() and r not in with_files]


@dataclass(frozen=True, slots=True)
class _Settings:
    """How the caller asked to parse and fingerprint, fixed for the whole run."""

    chunker: Chunker
    config_key: str
    """``chunker.config_key()``: part of every fingerprint, computed once."""
    executor: IngestExecutor
    metadata: dict[str, MetadataValue]
    labels: tuple[str, ...]
    limits: IngestLimits
    ocr: OcrOptions
    reader: ReaderBackend
    roots: tuple[str, ...]
    """The given files and folders: a page's includes are read from inside them only."""


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
        cls,
        store: DocumentStore,
        settings: _Settings,
        report: IngestReport,
        progress: bool | Console,
        batch_chunks: int,
    ) -> _Run:
        """A run over ``store`` as it is now: its documents listed, its embedding read when the executor embeds."""
        existing = {info.id: info for info in await store.list_documents()}
        embedding = await StoreEmbedding.of(store) if settings.executor.embeds else None
        vectors = VectorCache(embedding) if embedding is not None else None
        ui = IngestProgress(progress, report)

        def written() -> None:
            ui.advance()
            if vectors is not None:
                vectors.settled()

        writer = BatchWriter(store, report, existing.keys(), batch_chunks, written)
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
            key = self.settings.config_key + reader_key(path, self.settings.reader, self.settings.ocr)
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

        The store's upserts embed from `vectors` meanwhile: a document that came with its
        chunks' vectors is not embedded again.
        """
        s, vectors = self.settings, self.vectors
        job = ParseJob(s.chunker, s.metadata, s.labels, s.limits, s.ocr, s.reader, s.roots)
        parsed = s.executor.parse(files, job, vectors.embedding if vectors is not None else None)
        with vectors.serving(self.store) if vectors is not None else nullcontext():
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
        """Hand ``document`` to the writer (its vectors, if any, to the cache the store's upserts read)."""
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
