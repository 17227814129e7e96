"""Format readers: bytes of a file in, a `ParsedDocument` (source text + section outline) out.

`read_file` picks the reader by file extension; the readers that OCR (`OCR_READERS`) are also
handed the run's `OcrOptions`. Every reader raises `ReadError` with a
human-readable reason for a file it cannot ingest (corrupt, encrypted, scanned, binary).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from .._model import ParsedDocument, ReadError
from ._ocr import DEFAULT_OCR, OcrOptions
from .epub import read_epub
from .html import read_html
from .image import read_image
from .markdown import read_markdown
from .office import read_docx, read_pptx, read_xlsx
from .pdf import read_pdf
from .python import read_python
from .rtf import read_rtf
from .text import read_text

__all__ = ['OCR_READERS', 'READERS', 'UNSUPPORTED', 'OcrReader', 'Reader', 'read_bytes', 'read_file', 'reader_for']

Reader = Callable[[bytes, Path], ParsedDocument]


class OcrReader(Protocol):
    """A reader that may OCR: it takes the run's `OcrOptions` as the keyword ``ocr``."""

    def __call__(self, data: bytes, path: Path, *, ocr: OcrOptions = DEFAULT_OCR) -> ParsedDocument: ...


READERS: dict[str, Reader] = {
    '.md': read_markdown,
    '.markdown': read_markdown,
    '.mdown': read_markdown,
    '.mkd': read_markdown,
    '.txt': read_text,
    '.text': read_text,
    '.rst': read_text,
    '.html': read_html,
    '.htm': read_html,
    '.xhtml': read_html,
    '.pdf': read_pdf,
    '.docx': read_docx,
    '.pptx': read_pptx,
    '.xlsx': read_xlsx,
    '.xlsm': read_xlsx,  # a macro-enabled workbook: its cells are read, its macros never run
    '.epub': read_epub,
    '.rtf': read_rtf,
    '.py': read_python,
    '.pyi': read_python,
    '.png': read_image,
    '.jpg': read_image,
    '.jpeg': read_image,
    '.tif': read_image,
    '.tiff': read_image,
}
"""File extension (lower case, with the dot) -> reader. Add entries to support more formats."""

UNSUPPORTED: dict[str, str] = {
    '.doc': 'legacy binary Word format: save it as .docx',
    '.ppt': 'legacy binary PowerPoint format: save it as .pptx',
    '.xls': 'legacy binary Excel format: save it as .xlsx',
    '.odt': 'OpenDocument text is not supported: save it as .docx',
    '.pages': 'Apple Pages is not supported: export it as .docx or .pdf',
}


OCR_READERS: tuple[OcrReader, ...] = (read_pdf, read_image)
"""The readers `read_bytes` hands the run's `OcrOptions` to (``ocr=``); others are called with the bytes and path."""


def reader_for(path: Path) -> Reader | None:
    return READERS.get(path.suffix.lower())


def read_bytes(data: bytes, path: Path, *, ocr: OcrOptions = DEFAULT_OCR) -> ParsedDocument:
    """Parse ``data`` as the file ``path`` (the extension picks the reader; ``ocr`` goes to `OCR_READERS`)."""
    reader = reader_for(path)
    if reader is None:
        reason = UNSUPPORTED.get(path.suffix.lower(), f'unsupported file type {path.suffix or "(no extension)"!r}')
        raise ReadError(reason)
    if reader in OCR_READERS:
        return reader(data, path, ocr=ocr)
    return reader(data, path)


def read_file(path: str | Path, *, ocr: OcrOptions = DEFAULT_OCR) -> ParsedDocument:
    """Read and parse one file (``ocr``: when and in which languages PDF pages and images are OCR'd)."""
    p = Path(path)
    return read_bytes(p.read_bytes(), p, ocr=ocr)
