"""Where a verified quote stands on its page: the page it starts on, the boxes of its lines, its paragraph number.

From the chunk's `TextBox` runs (PDF text layers, OCR'd images), cut to the quote itself; a
quote in a chunk without boxes takes the chunk's page. See docs/grounded.md#where-a-quote-stands.
"""

from __future__ import annotations

import re

from ..content import Chunk, TextBox

__all__ = ['QuotePlace', 'paragraph_number', 'quote_place']

QuotePlace = tuple[int | None, tuple[tuple[float, float, float, float], ...]]
"""The 1-based page a quote starts on and the boxes ``(x0, top, x1, bottom)`` of its span on that page."""

_NUMBERED = re.compile(
    r'(?:(?:§+|¶|Art(?:icle)?\.?|Para(?:graph)?\.?)\s*\d{1,4}[a-z]?(?:\.\d{1,4})*'
    r'|\d{1,4}(?:\.\d{1,4}){0,4}[.)]|\([0-9a-zA-Z]{1,4}\)|[0-9a-z]{1,3}\))(?=\s)'
)
"""A paragraph's own number where it starts: ``12.``, ``3.2.1``, ``(a)``, ``iv)``, ``§ 4``, ``¶ 7``, ``Article 5``."""


def quote_place(chunk: Chunk, start: int, end: int) -> QuotePlace:
    """The page ``chunk.urtext[start:end]`` starts on and its boxes there (none without the chunk's boxes)."""
    parts = [part for box in chunk.boxes if (part := box.within(start, end, chunk.urtext)) is not None]
    if not parts:
        return _page_without_boxes(chunk, start), ()
    page = parts[0].page
    return page, tuple(part.box for part in _words_joined([p for p in parts if p.page == page], chunk.urtext))


def _words_joined(parts: list[TextBox], text: str) -> list[TextBox]:
    """Neighbouring words of one line (an OCR'd line keeps a box per word) as one box around them: apart by one
    space in ``text``, side by side at most a box's height apart; pieces further apart (columns) stay apart."""
    out: list[TextBox] = []
    for part in parts:
        last = out[-1] if out else None
        if (
            last is not None
            and text[last.end : part.start] == ' '
            and min(last.bottom, part.bottom) > max(last.top, part.top)  # on one line
            and 0 <= part.x0 - last.x1 <= max(last.bottom - last.top, part.bottom - part.top)
        ):
            out[-1] = TextBox(
                page=last.page,
                start=last.start,
                end=part.end,
                x0=last.x0,
                top=min(last.top, part.top),
                x1=part.x1,
                bottom=max(last.bottom, part.bottom),
            )
        else:
            out.append(part)
    return out


def _page_without_boxes(chunk: Chunk, start: int) -> int | None:
    """The page of the last box at or before ``start`` (a quote in a gap between lines), else the chunk's first."""
    before = [box.page for box in chunk.boxes if box.start <= start]
    return before[-1] if before else chunk.page


def paragraph_number(text: str, start: int) -> str | None:
    """The number the paragraph holding ``text[start]`` opens with (``12``, ``3.2``, ``(a)``), when it is in ``text``.

    A paragraph starts after a blank line or at the start of ``text``; bare numbers need their
    ``.`` or ``)`` (``12 people`` is no paragraph 12).
    """
    head = text.rfind('\n\n', 0, start)
    found = _NUMBERED.match(text[head + 2 if head >= 0 else 0 :].lstrip(' \t')[:40])
    return found.group(0).rstrip('.') if found is not None else None
