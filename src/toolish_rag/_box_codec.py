"""A chunk's boxes as one short string: what `Chunk.boxes` is in JSON, so every store keeps it compact.

An OCR'd chunk holds a box per word (sixty on a page of prose): as JSON arrays that cost 2.4 kB a
chunk, about 300 bytes as this string. The boxes become seven integer columns: the page, the
start after the previous box's end, the length, ``x0`` after the previous box's ``x1``, the width,
``top`` after the previous top and the height after the previous height, coordinates in
1/10,000 of the page (`QUANTUM`, what readers round to). Consecutive words differ little, so the
columns are small numbers: packed as 16-bit little-endian integers (32 or 64 when one does not
fit), raw-deflated when that is shorter, then base64. The first character names the packing:
``h``/``i``/``q`` for 16/32/64-bit, upper case when deflated. See docs/grounded.md#how-boxes-are-stored.
"""

from __future__ import annotations

import base64
import binascii
import sys
import zlib
from array import array
from collections.abc import Callable, Sequence
from itertools import accumulate
from operator import add, sub
from typing import TypeVar

__all__ = ['QUANTUM', 'on_grid', 'pack_boxes', 'unpack_boxes']

QUANTUM = 10_000
"""Box coordinates are kept in 1/10,000 of the page's width or height (readers round to it)."""

_COLUMNS = 7
_WIDTHS = ('h', 'i', 'q')
_MAX_UNPACKED = 1 << 24
"""Bytes a deflated string may unpack to (over a million boxes): a corrupt or hostile string fails, not the memory."""

_Row = tuple[int, int, int, float, float, float, float]
_T = TypeVar('_T')


def on_grid(value: float) -> float:
    """``value`` rounded to `QUANTUM` (a float equal to ``round(value, 4)``)."""
    return round(value * QUANTUM) / QUANTUM


def pack_boxes(boxes: Sequence[_Row]) -> str:
    """The string for ``boxes`` (page, start, end, x0, top, x1, bottom rows; coordinates on the grid)."""
    columns: list[list[int]] = [[] for _ in range(_COLUMNS)]
    page = end = right = top = height = 0
    for row in boxes:
        x0, y0, x1, y1 = (round(v * QUANTUM) for v in row[3:])
        values = (row[0] - page, row[1] - end, row[2] - row[1], x0 - right, x1 - x0, y0 - top, y1 - y0 - height)
        for column, value in zip(columns, values, strict=True):
            column.append(value)
        page, end, right, top, height = row[0], row[2], x1, y0, y1 - y0
    flat = [v for column in columns for v in column]
    for code in _WIDTHS:
        try:
            packed = array(code, flat)
        except OverflowError:
            continue
        if sys.byteorder == 'big':
            packed.byteswap()
        raw = packed.tobytes()
        deflated = zlib.compress(raw, 9, wbits=-15)
        if len(deflated) < len(raw):
            return code.upper() + base64.b64encode(deflated).decode('ascii')
        return code + base64.b64encode(raw).decode('ascii')
    raise ValueError('a box offset or page does not fit in 64 bits')


def unpack_boxes(text: str, make: Callable[[int, int, int, float, float, float, float], _T]) -> list[_T]:
    """The boxes ``text`` (from `pack_boxes`) stands for, each made by ``make(page, start, end, x0, top, x1,
    bottom)``; ``ValueError`` for a string that is not one."""
    code = text[:1]
    if code.lower() not in _WIDTHS:
        raise ValueError(f'not a packed boxes string (it starts with {code!r})')
    try:
        raw = base64.b64decode(text[1:], validate=True)
        if code.isupper():
            inflate = zlib.decompressobj(wbits=-15)
            raw = inflate.decompress(raw, _MAX_UNPACKED)
            if inflate.unconsumed_tail or not inflate.eof:
                raise ValueError('packed boxes string is truncated or too long')
    except (binascii.Error, zlib.error) as e:
        raise ValueError(f'packed boxes string is corrupt: {e}') from None
    values = array(code.lower())
    if len(raw) % (values.itemsize * _COLUMNS):
        raise ValueError('packed boxes string is corrupt: not a whole number of boxes')
    values.frombytes(raw)
    if sys.byteorder == 'big':
        values.byteswap()
    n = len(values) // _COLUMNS
    pages, gaps, lengths, lefts, widths, tops, heights = (values[i * n : (i + 1) * n] for i in range(_COLUMNS))
    ends = list(accumulate(map(add, gaps, lengths)))
    rights = list(accumulate(map(add, lefts, widths)))
    y0 = list(accumulate(tops))
    y1 = map(add, y0, accumulate(heights))
    q = QUANTUM
    return list(
        map(
            make,
            accumulate(pages),
            map(sub, ends, lengths),
            ends,
            [v / q for v in map(sub, rights, widths)],
            [v / q for v in y0],
            [v / q for v in rights],
            [v / q for v in y1],
        )
    )
