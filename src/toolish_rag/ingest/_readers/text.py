"""Plain text: decoding (BOMs, UTF-8, a detected legacy encoding) and paragraph blocks."""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable
from pathlib import Path

from .._model import OutlineBuilder, ParsedDocument, ReadError

__all__ = ['decode_text', 'paragraph_spans', 'read_text', 'title_from_path', 'trim_spans']

_BOMS = (
    (codecs.BOM_UTF32_LE, 'utf-32-le'),
    (codecs.BOM_UTF32_BE, 'utf-32-be'),
    (codecs.BOM_UTF8, 'utf-8'),
    (codecs.BOM_UTF16_LE, 'utf-16-le'),
    (codecs.BOM_UTF16_BE, 'utf-16-be'),
)


def decode_text(data: bytes) -> str:
    """Decode a text file: BOM first, then UTF-8, then the best guess of charset-normalizer.

    Raises `ReadError` for binary content (NUL bytes in what is not UTF-16/32). Line
    endings are normalised to ``\\n``.
    """
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
            from charset_normalizer import from_bytes

            matches = list(from_bytes(data))
            if matches:
                # among equally plausible guesses prefer Windows-1252/Latin-1, by far the most common legacy text
                least = min(m.chaos for m in matches)
                tied = [m for m in matches if m.chaos == least]
                western = next((m for m in tied if m.encoding in ('cp1252', 'latin_1', 'iso8859_15')), None)
                text = str(western or tied[0])
            else:
                text = data.decode('cp1252', errors='replace')
            if text.count('\ufffd') > max(8, len(text) // 100):
                raise ReadError('binary file: no text encoding fits') from None
    return text.replace('\r\n', '\n').replace('\r', '\n')


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
    text = decode_text(data)
    outline = OutlineBuilder()
    for s, e in paragraph_spans(text):
        outline.add_span(s, e)
    return ParsedDocument(source=text, title=title_from_path(path), root=outline.root, format='text')
