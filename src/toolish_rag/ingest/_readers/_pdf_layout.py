"""A PDF page's text in reading order, from pdfium's characters and their positions.

Characters become line pieces (split where a gap is too wide for a word space), pieces become
columns when the page has a gutter that prose lines on both sides leave empty, and each column
becomes paragraphs where the line spacing, size or weight changes. See docs/ingestion.md#pdf-layout.
"""

from __future__ import annotations

import ctypes
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ['Piece', 'page_paragraphs', 'page_pieces', 'turned']


@dataclass(slots=True)
class Piece:
    """Text on one baseline, between two wide gaps. PDF coordinates: y grows upwards."""

    text: str
    x0: float
    x1: float
    bottom: float
    top: float
    size: float
    """Font size in points (the loose character box height: ascent to descent)."""
    bold: bool
    italic: bool = False
    table: int = -1
    """A table found on the page (its index; ``text`` is the rendered table), or -1 for text."""
    em: tuple[float, float, float, float] | None = None
    """``(left, bottom, right, top)`` of its characters' em boxes (from the baseline's font descent, one font
    size tall): what a citation highlights; ``None`` where the loose box stands for it (a table, turned text)."""
    words: tuple[tuple[str, tuple[float, float, float, float]], ...] = ()
    """Each word of ``text`` and its characters' em box: a piece drawn across a table's cells is cut by them."""

    @property
    def width(self) -> float:
        return self.x1 - self.x0


@dataclass(slots=True)
class _Builder:
    chars: list[str] = field(default_factory=list)
    x0: float = 0.0
    x1: float = 0.0
    bottom: float = 0.0
    top: float = 0.0
    sizes: list[float] = field(default_factory=list)
    bold: list[bool] = field(default_factory=list)
    italic: list[bool] = field(default_factory=list)
    em: list[float] = field(default_factory=list)
    words: list[tuple[list[str], list[float]]] = field(default_factory=list)

    def add(self, ch: str, box: tuple[float, ...], bold: bool, italic: bool, em: tuple[float, ...]) -> None:
        left, bottom, right, top = box
        if not self.sizes:
            self.x0, self.x1, self.bottom, self.top = left, right, bottom, top
            self.em = list(em)
        else:
            self.x0, self.x1 = min(self.x0, left), max(self.x1, right)
            self.bottom, self.top = min(self.bottom, bottom), max(self.top, top)
            self.em = [min(self.em[0], em[0]), min(self.em[1], em[1]), max(self.em[2], em[2]), max(self.em[3], em[3])]
        if not self.words or self.chars[-1:] == [' ']:
            self.words.append(([], list(em)))
        word, spans = self.words[-1]
        word.append(ch)
        spans[:] = min(spans[0], em[0]), min(spans[1], em[1]), max(spans[2], em[2]), max(spans[3], em[3])
        self.chars.append(ch)
        self.sizes.append(top - bottom)
        self.bold.append(bold)
        self.italic.append(italic)

    def piece(self) -> Piece | None:
        text = ' '.join(''.join(self.chars).split())
        if not text or not self.sizes:
            return None
        size = round(statistics.median(self.sizes), 1)
        bold, italic = sum(self.bold) * 2 > len(self.bold), sum(self.italic) * 2 > len(self.italic)
        em = (self.em[0], self.em[1], self.em[2], self.em[3])
        words = tuple((''.join(w), (b[0], b[1], b[2], b[3])) for w, b in self.words)
        return Piece(text, self.x0, self.x1, self.bottom, self.top, size, bold, italic, em=em, words=words)


_ITALIC_FLAG = 0x40  # PDF font descriptor flag bit 7


def _font_style(raw: Any, textpage: Any, index: int, buffer: Any, flags: Any) -> tuple[bool, bool]:
    """(bold, italic) of the font of character ``index``: its weight, descriptor flags and name."""
    weight = raw.FPDFText_GetFontWeight(textpage, index)
    raw.FPDFText_GetFontInfo(textpage, index, buffer, len(buffer), ctypes.byref(flags))
    name = buffer.value.lower()
    bold = weight >= 600 or any(w in name for w in (b'bold', b'black', b'heavy', b'semibold'))
    italic = bool(flags.value & _ITALIC_FLAG) or b'italic' in name or b'oblique' in name
    return bold, italic


def turned(box: tuple[float, float, float, float], rotation: int, width: float, height: float) -> tuple[float, ...]:
    """A character box ``(left, bottom, right, top)`` in the page as shown (its ``/Rotate`` applied clockwise)."""
    left, bottom, right, top = box
    if rotation == 90:
        return bottom, width - right, top, width - left
    if rotation == 180:
        return width - right, height - top, width - left, height - bottom
    if rotation == 270:
        return height - top, left, height - bottom, right
    return box


def _em_box(raw: Any, textpage: Any, i: int, loose: Any, matrix: Any) -> tuple[float, float, float, float]:
    """Character ``i``'s em box ``(left, bottom, right, top)``: its loose box (origin to advance along the
    baseline, the font's descent to its ascent across it) cut to one font size from the descent side, as
    pdfminer and pdfplumber measure a character; the loose box itself for text at a slant.
    docs/grounded.md#where-a-quote-stands says why."""
    left, bottom, right, top = box = (loose.left, loose.bottom, loose.right, loose.top)
    if not raw.FPDFText_GetMatrix(textpage, i, ctypes.byref(matrix)):
        return box
    size = raw.FPDFText_GetFontSize(textpage, i)
    if size <= 0:
        return box
    up_x, up_y = matrix.c * size, matrix.d * size  # the glyph's up: one font size, on the page
    if abs(up_x) <= abs(up_y) * 0.01:  # upright (or upside down)
        return (left, bottom, right, bottom + up_y) if up_y > 0 else (left, top + up_y, right, top)
    if abs(up_y) <= abs(up_x) * 0.01:  # turned a quarter (a page turned by /Rotate draws its text so)
        return (left, bottom, left + up_x, top) if up_x > 0 else (right + up_x, bottom, right, top)
    return box


def _char(raw: Any, textpage: Any, i: int, count: int) -> tuple[str, int]:
    """Character ``i`` of the page and how many of pdfium's indices it takes: pdfium gives UTF-16 code
    units, so a surrogate pair is one character of two indices; a lone surrogate is U+FFFD. U+0002 is
    pdfium's mark for a hyphen the page draws at a line's end: the ``-`` it draws."""
    code = raw.FPDFText_GetUnicode(textpage, i)
    if code == 0x02:
        return '-', 1
    if 0xD800 <= code <= 0xDBFF and i + 1 < count:
        following = raw.FPDFText_GetUnicode(textpage, i + 1)
        if 0xDC00 <= following <= 0xDFFF:
            return chr(0x10000 + ((code - 0xD800) << 10) + (following - 0xDC00)), 2
    if 0xD800 <= code <= 0xDFFF or not 0 < code < 0x110000:
        return '\ufffd', 1
    return chr(code), 1


def page_pieces(textpage: Any, rotation: int = 0, width: float = 0.0, height: float = 0.0) -> list[Piece]:
    """Every piece of text on the page, in pdfium's order (content order, lines split at ``\\r\\n``).

    ``rotation`` (the page's ``/Rotate``) and the unrotated ``width`` and ``height`` put the boxes
    in the page as shown, where its lines run left to right.
    """
    import pypdfium2.raw as raw

    count = raw.FPDFText_CountChars(textpage)
    rect, matrix = raw.FS_RECTF(), raw.FS_MATRIX()
    buffer = ctypes.create_string_buffer(128)
    flags = ctypes.c_int()
    style_of: dict[int, tuple[bool, bool]] = {}
    pieces: list[Piece] = []
    current = _Builder()
    last_right: float | None = None
    pending_space = False

    def close() -> None:
        nonlocal current, last_right
        piece = current.piece()
        if piece is not None:
            pieces.append(piece)
        current, last_right = _Builder(), None

    taken = 0  # indices before this are read (the low half of a surrogate pair is read with its high half)
    for i in range(count):
        if i < taken:
            continue
        ch, used = _char(raw, textpage, i, count)
        taken = i + used
        if ch in '\r\n':
            close()
            pending_space = False
            continue
        if ch.isspace() or ch == '\x00' or ch == '\ufffe':
            pending_space = True
            continue
        if not raw.FPDFText_GetLooseCharBox(textpage, i, ctypes.byref(rect)):
            continue
        box = turned((rect.left, rect.bottom, rect.right, rect.top), rotation, width, height)
        size = max(box[3] - box[1], 1.0)
        if last_right is not None:
            gap = box[0] - last_right
            other_line = abs(box[1] - current.bottom) > size * 0.5 and not current.bottom < box[1] < current.top
            if other_line or gap > size * 1.2 or gap < -size * 2:  # a column gap, a table cell, a new line
                close()
                pending_space = False
        if pending_space and current.chars:
            current.chars.append(' ')
        pending_space = False
        obj = raw.FPDFText_GetTextObject(textpage, i)
        key = ctypes.cast(obj, ctypes.c_void_p).value or 0
        style = style_of.get(key)
        if style is None:
            style = style_of[key] = _font_style(raw, textpage, i, buffer, flags)
        current.add(ch, box, *style, turned(_em_box(raw, textpage, i, rect, matrix), rotation, width, height))
        last_right = box[2]
    close()
    return pieces


# --- columns ---------------------------------------------------------------------------------------

MIN_COLUMN_SHARE = 0.2
"""Each column holds at least this share of the page's narrow-piece characters."""


def _gutter(pieces: Sequence[Piece], lo: float, hi: float) -> float | None:
    """The x of a vertical gap between ``lo`` and ``hi`` that splits the narrow pieces into two columns of prose.

    Pieces wider than 60% of the span are headings or full-width lines: they neither hold a
    gutter open nor close it. Each side must hold ``MIN_COLUMN_SHARE`` of the characters and its
    lines must mostly fill their column (median width at least half the column's): table cells
    do not, so a table is not read column by column.
    """
    span = hi - lo
    if span <= 0:
        return None
    narrow = [p for p in pieces if p.width < span * 0.6 and lo - 1 <= p.x0 and p.x1 <= hi + 1]
    chars = sum(len(p.text) for p in narrow)
    if len(narrow) < 6 or chars < 200:
        return None
    intervals = sorted((p.x0, p.x1) for p in narrow)
    best: tuple[float, float] | None = None
    reach = intervals[0][1]
    for x0, x1 in intervals[1:]:
        if x0 > reach + 6:  # an empty band at least 6 pt wide
            mid = (reach + x0) / 2
            if lo + span * 0.2 < mid < hi - span * 0.2 and (best is None or x0 - reach > best[1] - best[0]):
                best = (reach, x0)
        reach = max(reach, x1)
    if best is None:
        return None
    cut = (best[0] + best[1]) / 2
    for side in ([p for p in narrow if p.x1 <= cut], [p for p in narrow if p.x0 >= cut]):
        side_chars = sum(len(p.text) for p in side)
        if side_chars < chars * MIN_COLUMN_SHARE:
            return None
        extent = max(p.x1 for p in side) - min(p.x0 for p in side)
        if statistics.median(p.width for p in side) < extent * 0.5:
            return None
    return cut


def _ordered(pieces: list[Piece], lo: float, hi: float, depth: int = 0) -> list[list[Piece]]:
    """The pieces as columns in reading order: bands split by full-width pieces, each band's columns left to right."""
    by_height = sorted(pieces, key=lambda p: (-p.top, p.x0))
    cut = _gutter(pieces, lo, hi) if depth < 2 else None
    if cut is None:
        return [by_height]
    out: list[list[Piece]] = []
    band: list[Piece] = []

    def flush() -> None:
        if band:
            left = [p for p in band if p.x1 <= cut]
            right = [p for p in band if p.x1 > cut]
            out.extend(_ordered(left, lo, cut, depth + 1))
            out.extend(_ordered(right, cut, hi, depth + 1))
            band.clear()

    for piece in by_height:
        if piece.x0 < cut < piece.x1:  # crosses the gutter: a heading or figure across both columns
            flush()
            out.append([piece])
        else:
            band.append(piece)
    flush()
    return [column for column in out if column]


# --- paragraphs ------------------------------------------------------------------------------------


@dataclass(slots=True)
class Line:
    """Pieces on one baseline of one column, joined."""

    text: str
    size: float
    bold: bool
    top: float
    bottom: float
    italic: bool = False
    table: int = -1
    pieces: tuple[Piece, ...] = ()
    """What it is made of, left to right (its text joins theirs with spaces): where each stands on the page."""


def _lines(column: Iterable[Piece]) -> list[Line]:
    lines: list[list[Piece]] = []
    for piece in column:  # sorted by top, descending
        if lines:
            last = lines[-1][0]
            joinable = piece.table < 0 and last.table < 0  # a table is a line (a paragraph) of its own
            if joinable and abs(piece.bottom - last.bottom) < min(piece.size, last.size) * 0.5:
                lines[-1].append(piece)
                continue
        lines.append([piece])
    out = []
    for group in lines:
        group.sort(key=lambda p: p.x0)
        main = max(group, key=lambda p: len(p.text))
        out.append(
            Line(
                ' '.join(p.text for p in group),
                main.size,
                all(p.bold for p in group),
                max(p.top for p in group),
                min(p.bottom for p in group),
                all(p.italic for p in group),
                main.table,
                tuple(group),
            )
        )
    return out


def page_paragraphs(pieces: list[Piece], page_width: float) -> list[list[Line]]:
    """The page's lines in reading order, grouped into paragraphs.

    A paragraph ends where the gap to the next line is more than ~0.7 of the font size (more than
    the leading), where the size or the weight changes, or at the end of a column.
    """
    if not pieces:
        return []
    lo = min(p.x0 for p in pieces)
    hi = max(p.x1 for p in pieces)
    paragraphs: list[list[Line]] = []
    for column in _ordered(pieces, lo, hi if hi > lo else page_width):
        current: list[Line] = []
        for line in _lines(column):
            if current:
                prev = current[-1]
                gap = prev.bottom - line.top
                style_change = abs(line.size - prev.size) > max(line.size, prev.size) * 0.12 or (
                    line.bold,
                    line.italic,
                ) != (prev.bold, prev.italic)
                table = line.table >= 0 or prev.table >= 0
                if gap > max(line.size, prev.size) * 0.7 or gap < -max(line.size, prev.size) or style_change or table:
                    paragraphs.append(current)
                    current = []
            current.append(line)
        if current:
            paragraphs.append(current)
    return paragraphs
