"""Where each line of a page's text stands: its box found again in the text the reader wrote.

Readers know a line's box where they read it (pdfium's character boxes, Tesseract's word boxes);
the page text is then cleaned (running headers dropped, hyphenated words joined), so each line
is found again in the final text, in order, to give `TextBox` runs in source offsets. See
docs/grounded.md#where-a-quote-stands.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ...content import TextBox
from ._ocr import OcrPage

__all__ = ['Box', 'LineBox', 'WordedLine', 'fractions', 'locate_lines', 'ocr_lines']

Box = tuple[float, float, float, float]
"""``(x0, top, x1, bottom)`` as fractions of the page, origin top-left."""

LineBox = tuple[str, Box]
"""A line's text as the reader wrote it, and its box."""


class WordedLine(NamedTuple):
    """An OCR'd line: its text and box, and each of its words' text and box (Tesseract's), in the line's order.

    Located as a line, then kept as a `TextBox` per word, so a quote's box is the union of the words it
    covers: as tall as those words, not as the line's tallest (docs/grounded.md#how-tall-a-box-is).
    """

    text: str
    box: Box
    words: tuple[LineBox, ...]


_SLACK = 2
"""Characters that may stand between two lines found in order (the blank line between paragraphs)."""
_TABLE_SLACK = 256
"""Between a table's cells: their bars, line breaks, empty cells (``' |  |  | '``) and the header's rule
(``| --- | --- |``, a line of ~6 characters a column) only."""


def _fraction(value: float) -> float:
    return round(min(1.0, max(0.0, value)), 4)


def fractions(box: Box, width: float, height: float) -> Box:
    """``box`` in units of ``width`` and ``height`` (pixels, points), as fractions of the page, clamped to it."""
    x0, top, x1, bottom = box
    return _fraction(x0 / width), _fraction(top / height), _fraction(x1 / width), _fraction(bottom / height)


def ocr_lines(page: OcrPage) -> list[WordedLine]:
    """Each line of ``page``'s text (`OcrPage.laid_out`: a table row by row), the box around its words and theirs."""
    out: list[WordedLine] = []
    if page.width <= 0 or page.height <= 0:
        return out
    for text, words, _ in page.laid_out():
        if not words:
            continue
        box = (
            min(w.box[0] for w in words),
            min(w.box[1] for w in words),
            max(w.box[2] for w in words),
            max(w.box[3] for w in words),
        )
        placed = tuple((w.text, fractions(w.box, page.width, page.height)) for w in words)
        out.append(WordedLine(text, fractions(box, page.width, page.height), placed))
    return out


def locate_lines(text: str, lines: Sequence[LineBox | WordedLine], page: int, offset: int = 0) -> list[TextBox]:
    """The `TextBox` of each line of ``lines`` found, in order, in ``text`` (one page's final text).

    A line is looked for where the previous one ended (give or take a blank line); one that is
    not there (a running header dropped) is skipped, and one that ends in a hyphen is also found
    without it (a hyphenated word joined). A `WordedLine` gives a box per word where each of its
    words is found in the line, else the line's. Offsets are ``text``'s plus ``offset``.
    """
    out: list[TextBox] = []
    cursor = 0
    for item in lines:
        written, box = item[0], item[1]
        line = '\n'.join(part.rstrip() for part in written.strip().split('\n'))  # as the page text is cleaned
        if not line:
            continue
        found = _find(text, line, cursor)
        if found is None:
            continue
        start, end = found
        words = _word_boxes(text, start, end, item.words, page) if isinstance(item, WordedLine) else []
        out.extend(w.shifted(offset) for w in words or [TextBox(page, start, end, *box)])
        cursor = end
    return out


def _word_boxes(text: str, start: int, end: int, words: Sequence[LineBox], page: int) -> list[TextBox]:
    """A `TextBox` per word of the line found at ``text[start:end]``, in order, apart by spaces or a table's
    bars only (the last one maybe without its hyphen: a word joined); none when a word is not so found."""
    out: list[TextBox] = []
    cursor = start
    for word, box in words:
        for candidate in (word, word[:-1]) if word.endswith('-') and len(word) > 1 else (word,):
            at = text.find(candidate, cursor, end) if candidate else -1
            if at >= 0 and not text[cursor:at].strip(' |'):
                out.append(TextBox(page, at, at + len(candidate), *box))
                cursor = at + len(candidate)
                break
        else:
            return []
    return out


def _find(text: str, line: str, cursor: int) -> tuple[int, int] | None:
    window = text[cursor : cursor + len(line) + _TABLE_SLACK + 1]
    for candidate in (line, line[:-1] if line.endswith('-') else None):
        if candidate:
            at = window.find(candidate)
            before = window[:at] if at >= 0 else 'x'
            blank = len(before) <= _SLACK and not before.strip()  # the blank line between paragraphs
            if blank or ('|' in before and not before.strip(' \n|-:')):  # a table's bars, empty cells, rule
                return cursor + at, cursor + at + len(candidate)
    return None
