"""Ingestion: real files into any `DocumentStore`, section-aware and idempotent.

`ingest` walks, parses, chunks and upserts; `Chunker` splits; the readers extract each format's
text and sections. Everything public is exported here; the `_`-prefixed submodules may change.
See docs/ingestion.md.
"""

from . import _requires  # noqa: F401  (first: a missing `documents` extra is named before any reader fails)

# isort: split

from ._chunking import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, Chunker, Piece, token_counter
from ._embedding import StoreEmbedding
from ._executor import ExecutorKind, IngestExecutor
from ._fingerprint import fingerprint
from ._limits import IngestLimits
from ._model import Block, OutlineBuilder, ParsedDocument, ParsedSection, ReadError, normalise_metadata
from ._options import IngestKeywords, IngestOptions
from ._parse import ParseJob, file_uri, parse_path
from ._pipeline import ingest
from ._readers import READERS, UNSUPPORTED, read_bytes, read_file
from ._readers._ocr import OcrOptions
from ._report import IngestInterrupted, IngestIssue, IngestReport, format_lines, format_report, render_report
from ._vectors import VectorCache
from ._walk import DEFAULT_MAX_FILE_BYTES, SKIPPED_DIRS, walk_paths
from ._watch import watch
from ._workers import LocalExecutor
from .distributed import RayExecutor

__all__ = [
    'DEFAULT_CHUNK_OVERLAP',
    'DEFAULT_CHUNK_SIZE',
    'DEFAULT_MAX_FILE_BYTES',
    'READERS',
    'SKIPPED_DIRS',
    'UNSUPPORTED',
    'Block',
    'Chunker',
    'ExecutorKind',
    'IngestExecutor',
    'IngestInterrupted',
    'IngestIssue',
    'IngestKeywords',
    'IngestLimits',
    'IngestOptions',
    'IngestReport',
    'LocalExecutor',
    'OcrOptions',
    'OutlineBuilder',
    'ParsedDocument',
    'ParseJob',
    'ParsedSection',
    'Piece',
    'RayExecutor',
    'ReadError',
    'StoreEmbedding',
    'VectorCache',
    'file_uri',
    'fingerprint',
    'format_lines',
    'format_report',
    'ingest',
    'normalise_metadata',
    'parse_path',
    'read_bytes',
    'read_file',
    'render_report',
    'token_counter',
    'walk_paths',
    'watch',
]
