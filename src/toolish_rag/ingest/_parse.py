"""One file into one `Document`: the job a parse worker runs, and `parse_path` for callers.

See docs/ingestion.md#how-the-pipeline-is-built.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..content import Document, MetadataValue
from ._chunking import Chunker
from ._fingerprint import fingerprint
from ._limits import DEFAULT_LIMITS, IngestLimits, bounded
from ._model import Block, ParsedDocument, ParsedSection, ReadError
from ._names import displayable
from ._readers import read_bytes
from ._readers._mkdocs import including
from ._readers._ocr import DEFAULT_OCR, NoTextFound, OcrOptions
from ._readers._versions import ReaderBackend, reader_key
from ._readers.text import title_from_path

__all__ = ['SOURCE_KEYS', 'ParseJob', 'Parsed', 'check_caller_metadata', 'file_uri', 'parse_file', 'parse_path']

NO_TEXT = 'no text to index (only markup, whitespace or pictures)'
"""Why a file that reads fine but holds no text is skipped (not failed): nothing is wrong with it."""

SOURCE_KEYS = ('path', 'uri')
"""Metadata keys ingestion records on every file's document (and so on its chunks)."""


def file_uri(path: str | os.PathLike[str]) -> str:
    """The uri a file's document gets: ``file://`` + its resolved absolute path."""
    return Path(path).resolve().as_uri()


def check_caller_metadata(metadata: Mapping[str, MetadataValue]) -> None:
    """Refuse a caller's ``metadata=`` that sets a `SOURCE_KEYS` key (``ValueError``).

    The same value on every file would make ``path`` and ``uri`` lie, and ingestion would
    overwrite it anyway: better to say so at the call than to ignore an argument.
    """
    clash = [key for key in SOURCE_KEYS if key in metadata]
    if clash:
        raise ValueError(
            f'metadata key(s) {", ".join(map(repr, clash))} are recorded by ingestion for each file '
            '(its path under the ingested root and its uri): they cannot be passed in metadata='
        )


@dataclass(frozen=True, slots=True)
class ParseJob:
    """How every file of a run is parsed: plain, picklable data shipped whole to each worker (`parse_file`)."""

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


@dataclass(frozen=True, slots=True)
class Parsed:
    """A worker's answer for one file: the document, or why there is none (``reason``).

    ``vectors``: when the worker also embedded the document (an executor that embeds, such
    as `RayExecutor`), one vector per chunk, in order, made with the store's embedding; the
    store then takes them instead of embedding those texts again (`distributed.vectors`).
    """

    path: str
    document: Document | None
    reason: str | None
    warnings: tuple[str, ...] = ()
    vectors: Sequence[Sequence[float]] | None = None
    skipped: bool = False
    """No document, and nothing wrong either (a file of blank lines): reported as skipped, not failed."""
    ocr_pages: tuple[int, ...] = ()
    """1-based pages (image frames) of the file whose text OCR read."""


def parse_path(
    path: str | os.PathLike[str],
    chunker: Chunker | None = None,
    *,
    metadata: Mapping[str, MetadataValue] | None = None,
    labels: Iterable[str] = (),
    ocr: OcrOptions = DEFAULT_OCR,
    reader: ReaderBackend = 'default',
) -> Document:
    """Read, parse and chunk one file into a `Document` (no store involved).

    Its ``path`` metadata is the file's name, as when `ingest` is given the file itself.
    Raises `ReadError` with the reason when the file cannot be ingested, ``ValueError`` when
    ``metadata`` sets ``path`` or ``uri``.
    """
    check_caller_metadata(metadata or {})
    result = parse_file(
        str(path), ParseJob(chunker or Chunker(), dict(metadata or {}), tuple(labels), ocr=ocr, reader=reader)
    )
    if result.document is None:
        raise ReadError(result.reason or 'unreadable')
    return result.document


def parse_file(path: str, job: ParseJob, relative_path: str | None = None) -> Parsed:
    """Read, parse, chunk and fingerprint ``path`` as ``job`` says; every failure becomes a `Parsed` with a reason.

    ``relative_path`` is the ``path`` metadata to record (default: the file's name). The
    readers check ``job.limits`` as they go (`bounded`); the worker running this enforces the rest.
    ``job.ocr`` goes to the readers that OCR (docs/ingestion.md#ocr); ``job.roots``: a page's
    includes are read only from inside them (docs/ingestion.md#markdown).
    """
    p = Path(path)
    try:
        data = p.read_bytes()
        if not data.strip():  # blank lines only (an empty __init__.py): nothing to ingest, nothing wrong
            return Parsed(path, None, 'empty file', skipped=True)
        shown = Path(displayable(p))  # what readers see: a title from a name that is not UTF-8 must be text
        limits, chunker = job.limits, job.chunker
        with bounded(limits):  # the chunker counts the text it indexes against the limits too
            with including(job.roots):
                parsed = _read(data, shown, job.reader, job.ocr)
            if len(parsed.source) > limits.text_chars:
                raise ReadError(f'more than the {limits.text_chars:,}-character limit of text')
            parsed = _title_only(parsed, shown) or parsed
            uri = file_uri(p)
            source = {'path': relative_path if relative_path is not None else shown.name, 'uri': uri}
            _warn_overridden(parsed.metadata, source, parsed.warnings)
            extra = {'source_format': parsed.format, 'file_name': shown.name, **job.metadata, **source}
            document = chunker.build(
                parsed,
                uri,
                fingerprint=fingerprint(data, chunker.config_key() + reader_key(shown, job.reader, job.ocr)),
                metadata=extra,
                labels=job.labels,
            )
    except NoTextFound as exc:  # an image without text: nothing wrong with it
        return Parsed(path, None, str(exc), skipped=True)
    except ReadError as exc:
        return Parsed(path, None, str(exc))
    except OSError as exc:
        return Parsed(path, None, f'cannot read file: {exc.strerror or exc}')
    except Exception as exc:  # a reader bug on one odd file must not stop the run
        return Parsed(path, None, f'reader error: {type(exc).__name__}: {exc}')
    if not document.chunks:  # markup or whitespace only, or a picture: nothing wrong, nothing to store
        return Parsed(path, None, NO_TEXT, tuple(parsed.warnings), skipped=True)
    return Parsed(path, document, None, tuple(parsed.warnings), ocr_pages=tuple(parsed.ocr_pages))


def _title_only(parsed: ParsedDocument, path: Path) -> ParsedDocument | None:
    """A document whose only text is its own title (an HTML ``<title>``, a front matter ``title:``): the title as its text.

    ``None`` when the document has text, or its title is only the file's name.
    """
    title = ' '.join(parsed.title.split())
    if parsed.source.strip() or not title or title == title_from_path(path):
        return None
    root = ParsedSection('', 0, 0, blocks=[Block(0, len(title))])
    return replace(parsed, source=title, root=root, page_starts=None)


def _read(data: bytes, path: Path, reader: ReaderBackend, ocr: OcrOptions) -> ParsedDocument:
    """``data`` through the backend's reader for ``path`` (the default readers where the backend takes no such file)."""
    if reader == 'unstructured':
        from ._readers.unstructured import SUFFIXES, read_unstructured

        if path.suffix.lower() in SUFFIXES:
            return read_unstructured(data, path)
    return read_bytes(data, path, ocr=ocr)


def _warn_overridden(found: dict[str, MetadataValue], source: dict[str, str], warnings: list[str]) -> None:
    """Warn about the file's own ``path`` / ``uri`` metadata (front matter, properties) that ``source`` replaces."""
    for key, value in source.items():
        if key in found and found[key] != value:
            warnings.append(
                f'metadata key {key!r} ({found[key]!r}) from the file replaced by the ingested {key} {value!r}'
            )
