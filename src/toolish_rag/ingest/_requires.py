"""Imported first by `toolish_rag.ingest`: the readers' libraries are the ``documents`` extra, checked at once.

Without it, importing the package raises one `toolish_rag._extras.MissingExtraError` naming the extra and
its install command, rather than the first reader's ``ModuleNotFoundError`` (docs/design.md#distributions).
"""

from __future__ import annotations

from .._extras import require_extra

DOCUMENTS = (
    'rich',
    'markdown_it',
    'yaml',
    'charset_normalizer',
    'bs4',
    'lxml',
    'docx',
    'pptx',
    'openpyxl',
    'striprtf',
    'pypdfium2',
    'pdfplumber',
    'PIL',
    'pathspec',
)
"""The modules the ``documents`` extra installs (pyproject.toml), each imported by a reader or the pipeline."""

require_extra('toolish_rag.ingest (the document readers)', 'documents', *DOCUMENTS)
