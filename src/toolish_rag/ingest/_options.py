"""`IngestOptions`: every option of an `ingest` run, written once, checked once.

``ingest(store, paths, options)`` or ``ingest(store, paths, sync=True, ocr='never')`` (the keywords
are these fields); copies change them with `IngestOptions.changed`. See docs/ingestion.md#options.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import TypedDict, Unpack

from rich.console import Console

from ..content import MetadataValue
from ._chunking import Chunker
from ._executor import ExecutorKind, IngestExecutor
from ._limits import DEFAULT_LIMITS, IngestLimits
from ._parse import check_caller_metadata
from ._readers._ocr import OcrMode, OcrOptions
from ._readers._versions import READER_BACKENDS, ReaderBackend
from ._walk import DEFAULT_MAX_FILE_BYTES

__all__ = ['IngestKeywords', 'IngestOptions']


@dataclass(frozen=True)
class IngestOptions:
    """The options of an `ingest` run; each field is also a keyword of `ingest` (docs/ingestion.md#options)."""

    chunker: Chunker = field(default_factory=Chunker)
    """How to split (``None`` is taken as the default `Chunker()`); part of every file's fingerprint."""
    sync: bool = False
    """Also delete stored documents whose files under the given paths no longer exist."""
    progress: bool | Console = True
    """Show a progress bar and a summary (``True``: on stderr; or a rich ``Console``)."""
    concurrency: int | None = None
    """Parse workers of the local pools (default: CPU count); unused by an executor with its own workers."""
    executor: ExecutorKind | IngestExecutor = 'auto'
    """``'process'`` (a spawned process pool), ``'thread'``, ``'auto'`` (processes for many files), or an
    `IngestExecutor` such as ``RayExecutor(address)``, which parses and embeds on a Ray cluster."""
    batch_chunks: int = 256
    """Upsert once at least this many chunks are waiting."""
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    """Larger files are skipped with a reason."""
    include_hidden: bool = False
    """Descend into hidden folders and read hidden files."""
    metadata: Mapping[str, MetadataValue] = field(default_factory=dict)
    """Added to every file's document (it overrides what the reader found); ``path`` and ``uri`` are
    recorded by ingestion itself: passing them raises ``ValueError``. Kept as a dict."""
    labels: Iterable[str] = ()
    """Added to every file's document; kept as a tuple."""
    limits: IngestLimits = DEFAULT_LIMITS
    """The bounds each file is parsed within: a file over one fails alone (docs/ingestion.md#bounds-per-file)."""
    follow_symlinks: bool = False
    """Also ingest files that symlinks lead to outside the given folders (else skipped and reported; links
    inside the given folders are always followed)."""
    ocr: OcrMode = 'auto'
    """``'auto'``: pages without a usable text layer and image files (each file that needed OCR is reported);
    ``'always'``: every page (without Tesseract it raises ``RuntimeError`` before any work); ``'never'``: none
    (docs/ingestion.md#ocr)."""
    ocr_languages: str | Sequence[str] | None = None
    """OCR languages (``'de'``, ``['deu', 'eng']``); default the store's ``language``; those without installed
    Tesseract data are left out, English when none is left. A list is kept as a tuple."""
    reader: ReaderBackend = 'default'
    """``'unstructured'``: that library's offline partitioners read DOCX, PPTX, XLSX, HTML, Markdown and text
    (the default readers the rest); without ``toolish-rag[unstructured]`` it raises ``RuntimeError`` before
    any work (docs/ingestion.md#the-unstructured-backend)."""
    exclude: Sequence[str] = ()
    """Gitignore-style globs (``'*.png'``, ``'img/**'``) matched against each file's path under its given
    folder: what they match is never read (docs/ingestion.md#what-is-read)."""
    gitignore: bool = True
    """Honour the ``.gitignore`` files of the walked folders (and of the git work tree they are in);
    ``False`` (``--no-ignore``) reads what they ignore too."""

    def __post_init__(self) -> None:
        if self.chunker is None:  # accepted, as `ingest(chunker=None)` always has
            object.__setattr__(self, 'chunker', Chunker())
        check_caller_metadata(self.metadata)
        object.__setattr__(self, 'metadata', dict(self.metadata))
        object.__setattr__(self, 'labels', tuple(self.labels))
        object.__setattr__(self, 'exclude', tuple(self.exclude))
        if isinstance(self.ocr_languages, Sequence) and not isinstance(self.ocr_languages, str):
            object.__setattr__(self, 'ocr_languages', tuple(self.ocr_languages))
        OcrOptions(self.ocr)  # an unknown mode raises ValueError here
        if self.reader not in READER_BACKENDS:
            raise ValueError(f'reader must be one of {", ".join(map(repr, READER_BACKENDS))}, not {self.reader!r}')

    def changed(self, **changes: Unpack[IngestKeywords]) -> IngestOptions:
        """A copy with ``changes`` (field names); a `TypeError` names any that is not a field."""
        unknown = sorted(set(changes) - {f.name for f in fields(self)})
        if unknown:
            raise TypeError(f'unknown ingest options {unknown}; the options are the fields of IngestOptions')
        return replace(self, **changes)

    def ocr_options(self, store_language: object = None) -> OcrOptions:
        """The run's `OcrOptions`: ``ocr_languages``, else the store's text ``language`` when it names one."""
        languages = self.ocr_languages
        if languages is None:
            named = isinstance(store_language, str) and store_language not in ('auto', 'none')
            return OcrOptions(self.ocr, (str(store_language),) if named else ())
        return OcrOptions(self.ocr, (languages,) if isinstance(languages, str) else tuple(languages))


class IngestKeywords(TypedDict, total=False):
    """`IngestOptions`' fields as `ingest` keywords (``ingest(store, paths, sync=True)``), typed.

    Only for type checkers and editors: the values are checked by `IngestOptions` itself, and
    `tests/ingest/test_ingest_options.py` keeps these keys and types equal to its fields.
    """

    chunker: Chunker
    sync: bool
    progress: bool | Console
    concurrency: int | None
    executor: ExecutorKind | IngestExecutor
    batch_chunks: int
    max_file_bytes: int
    include_hidden: bool
    metadata: Mapping[str, MetadataValue]
    labels: Iterable[str]
    limits: IngestLimits
    follow_symlinks: bool
    ocr: OcrMode
    ocr_languages: str | Sequence[str] | None
    reader: ReaderBackend
    exclude: Sequence[str]
    gitignore: bool
