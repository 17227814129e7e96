"""Plain text: decoding (BOMs, UTF-8, a detected legacy encoding) and paragraph blocks."""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable
from pathlib import Path

from .._model import OutlineBuilder, ParsedDocument, ReadError
from ._codepages import CODE_PAGES, guess_code_page

__all__ = ['decode_text', 'decode_text_noting', 'paragraph_spans', 'read_text', 'title_from_path', 'trim_spans']

VERSION = 0
"""Bump when the same bytes read differently: its files are then read again (docs/ingestion.md#reader-versions)."""

_BOMS = (
    (codecs.BOM_UTF32_LE, 'utf-32-le'),
    (codecs.BOM_UTF32_BE, 'utf-32-be'),
    (codecs.BOM_UTF8, 'utf-8'),
    (codecs.BOM_UTF16_LE, 'utf-16-le'),
    (codecs.BOM_UTF16_BE, 'utf-16-be'),
)


def decode_text(data: bytes) -> str:
    """Decode a text file: BOM first, then UTF-8, then the legacy code page whose letters fit one language.

    Raises `ReadError` for binary content (NUL bytes in what is not UTF-16/32). Line
    endings are normalised to ``\\n``. `decode_text_noting` also says when the code page was a guess.
    """
    return decode_text_noting(data)[0]


def decode_text_noting(data: bytes) -> tuple[str, str | None]:
    """`decode_text`, and a warning for the ingest report when the encoding is unsure (``None`` when sure)."""
    warning: str | None = None
    text: str | None = None
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                text = data[len(bom) :].decode(encoding)
            except UnicodeDecodeError as exc:
                raise ReadError(f'undecodable {encoding} text: {exc.reason} at byte {exc.start}') from None
            break
    if text is None:
        if b'\x00' in data[:8192]:
            raise ReadError('binary file (NUL bytes): not text')
        try:
            text = data.decode('utf-8')
        except UnicodeDecodeError:
            text, warning = _legacy(data)
            if text.count('\ufffd') > max(8, len(text) // 100):
                raise ReadError('binary file: no text encoding fits') from None
    return text.replace('\r\n', '\n').replace('\r', '\n'), warning


def _legacy(data: bytes) -> tuple[str, str | None]:
    """Not UTF-8: the Windows code page that fits (Western first on a tie), else charset-normalizer's guess
    (multi-byte encodings such as Shift-JIS or GB18030). See docs/ingestion.md#formats."""
    guess = guess_code_page(data)
    if guess is not None and guess.fit >= 0.9:
        return guess.text, guess.warning()
    from charset_normalizer import from_bytes

    best = from_bytes(data).best()
    if best is not None and (guess is None or best.encoding not in CODE_PAGES):
        return str(best), f'not UTF-8: read as {best.encoding} (a guess); save the file as UTF-8 to be sure'
    if guess is not None:
        return guess.text, guess.warning()
    return data.decode('cp1252', errors='replace'), 'not UTF-8 and no encoding fits: read as cp1252'


def title_from_path(path: Path) -> str:
    """A readable title from a file name: ``refund_policy-v2.md`` -> ``refund policy v2``."""
    return re.sub(r'[_\-]+', ' ', path.stem).strip() or path.name


_BLANK = re.compile(r'\n[ \t]*\n')


def paragraph_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """``(start, end)`` of each blank-line separated paragraph of ``text[start:end]``, trimmed."""
    end = len(text) if end is None else end
    spans: list[tuple[int, int]] = []
    pos = start
    for m in _BLANK.finditer(text, start, end):
        spans.append((pos, m.start()))
        pos = m.end()
    spans.append((pos, end))
    return trim_spans(text, spans)


def trim_spans(text: str, spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` of ``text`` without their leading and trailing whitespace; spans left empty are dropped."""
    out = []
    for s, e in spans:
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e > s:
            out.append((s, e))
    return out


def read_text(data: bytes, path: Path) -> ParsedDocument:
    text, warning = decode_text_noting(data)
    outline = OutlineBuilder()
    for s, e in paragraph_spans(text):
        outline.add_span(s, e)
    warnings = [warning] if warning else []
    return ParsedDocument(source=text, title=title_from_path(path), root=outline.root, format='text', warnings=warnings)
