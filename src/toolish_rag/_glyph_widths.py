"""How wide a character usually is: Helvetica's advance widths, to cut a line's box at a character.

A chunk keeps one box per line (`toolish_rag.content.TextBox`); a quote that starts or ends
within a line takes its share of the line's width by these widths rather than by its count of
characters (an ``m`` is four times an ``i``). Proportional fonts differ from Helvetica far less
than from a fixed width. See docs/grounded.md#where-a-quote-stands.
"""

from __future__ import annotations

import unicodedata
from functools import cache

__all__ = ['advance', 'width_of']

_ASCII = (
    '278 278 355 556 556 889 667 191 333 333 389 584 278 333 278 278 556 556 556 556 556 556 556 556 556 556 '
    '278 278 584 584 584 556 1015 667 667 722 722 667 611 778 722 278 500 667 556 833 722 778 667 778 722 667 '
    '611 722 667 944 667 667 611 278 278 278 469 556 333 556 556 500 556 556 278 556 556 222 222 500 222 833 '
    '556 556 556 556 333 500 278 556 500 722 500 500 500 334 260 334 584'
)
_WIDTHS = dict(zip(map(chr, range(32, 127)), map(int, _ASCII.split()), strict=True))
"""Helvetica's advance widths (its AFM, 1/1000 em) of ASCII 32-126."""

_WIDE = 1000
"""East Asian wide and full-width characters: one em."""


@cache
def advance(ch: str) -> int:
    """``ch``'s usual advance width in 1/1000 em (a letter with an accent as its base letter)."""
    known = _WIDTHS.get(ch)
    if known is not None:
        return known
    if unicodedata.east_asian_width(ch) in ('W', 'F'):
        return _WIDE
    if unicodedata.combining(ch):
        return 0
    base = unicodedata.normalize('NFD', ch)[:1]
    return _WIDTHS.get(base, 556)


def width_of(text: str) -> int:
    """The usual width of ``text`` in 1/1000 em."""
    return sum(advance(c) for c in text)
