"""Ingestion: real documents into any `DocumentStore`, section-aware and idempotent.

>>> from toolish_rag.ingest import Chunker, ingest, parse_path   # doctest: +SKIP
>>> report = await ingest(store, ['docs/'], chunker=Chunker(chunk_size=1000))  # doctest: +SKIP

* `readers` — one per format (Markdown, text, HTML, PDF, DOCX, PPTX, XLSX, EPUB, RTF) producing
  the extracted text and its real section outline;
* `Chunker` — section-aware chunking with character or token sizes and overlap;
* `ingest` — walk, hash, skip unchanged, parse in parallel, upsert in batches, sync removals
  (`pipeline`; its parts: `parse` one file, `workers` the parse pool, `writer` the batched
  upserts, `sync` what to delete, `progress` the bar);
* `IngestReport` / `render_report` / `format_report` / `format_lines` — what happened, for humans,
  logs and CLIs (``IngestReport.to_json()`` for machines);
* `RayExecutor` — ``ingest(..., executor=RayExecutor(address))`` parses and embeds on a Ray
  cluster (``toolish-rag[ray]``; `distributed`), any `IngestExecutor` likewise; the local
  pools are `LocalExecutor` (``executor='auto' | 'process' | 'thread'``).
"""

from .chunking import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, Chunker, Piece, token_counter
from .distributed import RayExecutor
from .fingerprint import fingerprint
from .model import Block, OutlineBuilder, ParsedDocument, ParsedSection, ReadError, normalise_metadata
from .parse import file_uri, parse_path
from .pipeline import ingest
from .readers import READERS, UNSUPPORTED, read_bytes, read_file
from .report import IngestIssue, IngestReport, format_lines, format_report, render_report
from .walk import DEFAULT_MAX_FILE_BYTES, SKIPPED_DIRS, walk_paths
from .workers import IngestExecutor, LocalExecutor, ParseJob

__all__ = [
    'DEFAULT_CHUNK_OVERLAP',
    'DEFAULT_CHUNK_SIZE',
    'DEFAULT_MAX_FILE_BYTES',
    'READERS',
    'SKIPPED_DIRS',
    'UNSUPPORTED',
    'Block',
    'Chunker',
    'IngestExecutor',
    'IngestIssue',
    'IngestReport',
    'LocalExecutor',
    'OutlineBuilder',
    'ParsedDocument',
    'ParseJob',
    'ParsedSection',
    'Piece',
    'RayExecutor',
    'ReadError',
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
]
