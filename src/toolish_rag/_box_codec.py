"""A chunk's boxes as one short string: what `Chunk.boxes` is in JSON, so every store keeps it compact.

An OCR'd chunk holds a box per word (58 on the OCR'd files of the benchmarks): as JSON arrays that
cost 2.2 kB a chunk, 0.54 kB as this string. The boxes become seven integer columns: the page, the
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
from collections.abc import Sequence
from itertools import accumulate, chain, repeat
from operator import add, mul, sub, truediv
from typing import TypeVar

__all__ = ['QUANTUM', 'on_grid', 'pack_boxes', 'unpack_boxes']

QUANTUM = 10_000
"""Box coordinates are kept in 1/10,000 of the page's width or height (readers round to it)."""

_COLUMNS = 7
_WIDTHS = ('h', 'i', 'q')
_MAX_UNPACKED = 1 << 24
"""Bytes a deflated string may unpack to (over a million boxes): a corrupt or hostile string fails, not the memory."""

_Row = tuple[int, int, int, float, float, float, float]
_T = TypeVar('_T', bound=tuple[object, ...])


def on_grid(value: float) -> float:
    """``value`` rounded to `QUANTUM` (a float equal to ``round(value, 4)``)."""
    return round(value * QUANTUM) / QUANTUM


def _after(values: Sequence[int]) -> list[int]:
    """Each value's predecessor (0 before the first): what a column's deltas are taken from."""
    return [0, *values[:-1]]


def _quantised(values: Sequence[float]) -> list[int]:
    return list(map(round, map(mul, values, repeat(QUANTUM))))


def pack_boxes(boxes: Sequence[_Row]) -> str:
    """The string for ``boxes`` (page, start, end, x0, top, x1, bottom rows; coordinates on the grid)."""
    if not boxes:
        return _WIDTHS[0]
    pages, starts, ends, *corners = zip(*boxes, strict=True)
    x0, y0, x1, y1 = map(_quantised, corners)
    heights = list(map(sub, y1, y0))
    flat = list(
        chain(
            map(sub, pages, _after(pages)),
            map(sub, starts, _after(ends)),
            map(sub, ends, starts),
            map(sub, x0, _after(x1)),
            map(sub, x1, x0),
            map(sub, y0, _after(y0)),
            map(sub, heights, _after(heights)),
        )
    )
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


def unpack_boxes(text: str, kind: type[_T]) -> list[_T]:
    """The boxes ``text`` (from `pack_boxes`) stands for, each a ``kind`` (a tuple of page, start, end, x0, top,
    x1, bottom: `TextBox`, made without a call per box); ``ValueError`` for a string that is not one."""
    code = text[:1]
    if code.lower() not in _WIDTHS:
        raise ValueError(f'not a packed boxes string (it starts with {code!r})')
    try:
        raw = binascii.a2b_base64(text[1:], strict_mode=True)
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
    q = repeat(QUANTUM)
    corners = (
        map(truediv, map(sub, rights, widths), q),
        map(truediv, y0, q),
        map(truediv, rights, q),
        map(truediv, y1, q),
    )
    return list(
        map(tuple.__new__, repeat(kind), zip(accumulate(pages), map(sub, ends, lengths), ends, *corners, strict=True))
    )
