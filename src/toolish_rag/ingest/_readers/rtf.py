"""RTF via striprtf: the text, split into paragraphs (RTF heading styles are not kept)."""

from __future__ import annotations

from pathlib import Path

from .._model import OutlineBuilder, ParsedDocument, ReadError
from .text import paragraph_spans, title_from_path

__all__ = ['read_rtf']

VERSION = 0
"""Bump when the same bytes read differently: its files are then read again (docs/ingestion.md#reader-versions)."""


def read_rtf(data: bytes, path: Path) -> ParsedDocument:
    from striprtf.striprtf import rtf_to_text

    if not data.lstrip().startswith(b'{\\rtf'):
        raise ReadError('not an RTF file (no {\\rtf header)')
    try:
        text = rtf_to_text(data.decode('cp1252', errors='replace'), errors='replace')  # type: ignore[no-untyped-call]
    except Exception as exc:
        raise ReadError(f'malformed RTF: {exc}') from None
    text = text.replace('\r\n', '\n').replace('\r', '\n')
    outline = OutlineBuilder()
    for s, e in paragraph_spans(text):
        outline.add_span(s, e)
    return ParsedDocument(source=text, title=title_from_path(path), root=outline.root, format='rtf')
