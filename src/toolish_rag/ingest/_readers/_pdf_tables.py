"""Tables on a PDF page, found with pdfplumber's table finder.

Ruled tables first (the ``lines`` strategy: drawn cell borders); only on a page where none
is found, the ``text`` strategy (columns from word alignment), and only when what it finds
looks like a table rather than running text. Each table comes back as a grid: a merged cell's
text is repeated in every position it covers (the convention of the fidelity truth), the
thin gaps between double rules are dropped, and the header rows are counted from the
spanning cells at the top. A caption row above (``Table 3 ...``) and a note row below
(``Note: ...``) are left outside the table's ``bbox``, so they stay running text.

Render a table with `_tables.add_table(outline, table.rows, table.header_rows)` and leave
the words inside ``table.bbox`` out of the page's running text. See docs/ingestion.md#tables.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, replace
from typing import Any

from ._tables import clean_cell

__all__ = ['PdfTable', 'find_tables']

_LINES = {'vertical_strategy': 'lines', 'horizontal_strategy': 'lines'}
_TEXT = {'vertical_strategy': 'text', 'horizontal_strategy': 'text'}
_GAP = 7.0
"""Points: a grid column or row this thin holding no text of its own is the gap of a double rule."""
_CAPTION = re.compile(r'^(?:table|tab\.|exhibit|figure|fig\.)\s*[\w.\-]+', re.IGNORECASE)
_NOTE = re.compile(r'^(?:notes?|sources?)\s*[:.]', re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class PdfTable:
    """A table on a page: where it is (pdfplumber's ``(x0, top, x1, bottom)``), its grid, its header rows."""

    bbox: tuple[float, float, float, float]
    rows: list[list[str]]
    header_rows: int


@dataclass(slots=True)
class _Cell:
    bbox: tuple[float, float, float, float]
    text: str
    c0: int = 0
    c1: int = 0
    r0: int = 0
    r1: int = 0


def find_tables(page: Any) -> list[PdfTable]:
    """The tables on a pdfplumber ``page``, top to bottom (empty when there are none)."""
    found: list[PdfTable] = []
    for table in page.find_tables(_LINES):
        grid = _grid(table)
        if grid is None:
            continue
        result, columns = grid
        if _unruled_body(result) and len(columns) > 2:
            # rules under the header only: cut the body at the header's columns
            ruled = page.crop(result.bbox).find_tables(
                {**_LINES, 'vertical_strategy': 'explicit', 'explicit_vertical_lines': columns}
            )
            better = [g[0] for g in map(_grid, ruled) if g is not None]
            if len(better) == 1 and len(better[0].rows) == len(result.rows):  # the header kept as it was ruled
                head = result.header_rows
                result = replace(result, rows=result.rows[:head] + better[0].rows[head:])
        found.append(result)
    if found:
        return sorted(found, key=lambda t: (t.bbox[1], t.bbox[0]))
    out: list[PdfTable] = []
    for table in page.find_tables(_TEXT):
        grid = _grid(table)
        if grid is not None and _confident(grid[0], grid[1], page):
            out.append(grid[0])
    return out


def _unruled_body(table: PdfTable) -> bool:
    """Whether most body rows are one cell across the whole width (no vertical rules below the header)."""
    body = table.rows[table.header_rows :]
    whole = sum(1 for row in body if len(set(row)) == 1 and row[0])
    return len(body) >= 2 and whole * 2 > len(body)


def _edges(values: list[float]) -> list[float]:
    out: list[float] = []
    for v in sorted(values):
        if not out or v - out[-1] > 1.0:
            out.append(v)
    return out


def _index(edges: list[float], value: float) -> int:
    return min(range(len(edges)), key=lambda i: abs(edges[i] - value))


def _grid(table: Any) -> tuple[PdfTable, list[float]] | None:
    """The table as a `PdfTable`, and the x of its kept columns' edges."""
    cells: list[_Cell] = []
    for row, values in zip(table.rows, table.extract(), strict=False):
        for bbox, value in zip(row.cells, values, strict=False):
            if bbox is not None:
                cells.append(_Cell(tuple(bbox), clean_cell(value)))
    if not cells:
        return None
    xs = _edges([v for c in cells for v in (c.bbox[0], c.bbox[2])])
    ys = _edges([v for c in cells for v in (c.bbox[1], c.bbox[3])])
    if len(xs) < 2 or len(ys) < 2:
        return None
    for c in cells:
        c.c0, c.c1 = _index(xs, c.bbox[0]), _index(xs, c.bbox[2])
        c.r0, c.r1 = _index(ys, c.bbox[1]), _index(ys, c.bbox[3])
    cols = _kept(xs, cells, lambda c: (c.c0, c.c1))
    rows = _kept(ys, cells, lambda c: (c.r0, c.r1))
    if len(cols) < 2 or len(rows) < 2:
        return None
    owner: list[list[_Cell | None]] = [[None] * len(cols) for _ in rows]
    for c in cells:
        for i, r in enumerate(rows):
            if c.r0 <= r < c.r1:
                for j, k in enumerate(cols):
                    if c.c0 <= k < c.c1:
                        owner[i][j] = c
    # a caption row on top and note rows at the bottom: one cell across the whole width
    top, bottom = 0, len(rows)
    if _whole_row(owner[0]) and owner[0][0] is not None and _CAPTION.match(owner[0][0].text):
        top = 1
    while bottom - top > 2 and _whole_row(owner[bottom - 1]):
        last = owner[bottom - 1][0]
        if last is None or not _NOTE.match(last.text):
            break
        bottom -= 1
    owner = owner[top:bottom]
    grid = [[c.text if c is not None else '' for c in row] for row in owner]
    if sum(1 for row in grid if any(row)) < 2 or max(sum(1 for c in row if c) for row in grid) < 2:
        return None  # one row or one column: not a table
    x0 = min(c.bbox[0] for row in owner for c in row if c is not None)
    x1 = max(c.bbox[2] for row in owner for c in row if c is not None)
    y0 = min(c.bbox[1] for row in owner for c in row if c is not None)
    y1 = max(c.bbox[3] for row in owner for c in row if c is not None)
    edges = [xs[k] for k in cols] + [xs[cols[-1] + 1]]
    return PdfTable((x0, y0, x1, y1), grid, _header_rows(owner)), edges


def _kept(edges: list[float], cells: list[_Cell], span: Any) -> list[int]:
    """Grid lines (columns or rows) to keep: all but the thin ones no text-bearing cell starts and ends in."""
    out: list[int] = []
    for k in range(len(edges) - 1):
        thin = edges[k + 1] - edges[k] < _GAP
        own_text = any(span(c) == (k, k + 1) and c.text for c in cells)
        covered = any(span(c)[0] <= k < span(c)[1] for c in cells)
        if covered and (not thin or own_text):
            out.append(k)
    return out


def _whole_row(row: list[_Cell | None]) -> bool:
    return bool(row) and row[0] is not None and all(c is row[0] for c in row)


def _header_rows(owner: list[list[_Cell | None]]) -> int:
    """Rows down to the end of every cell spanning rows from the top, plus one below each group header."""
    n = len(owner)
    if n < 2:
        return 0
    header, r = 1, 0
    while r < header and r < n:
        row = owner[r]
        for c in row:
            if c is None:
                continue
            end = max(i for i in range(n) if owner[i].count(c))  # last row this cell covers
            header = max(header, end + 1)
        if any(a is not None and a is b and a.text for a, b in itertools.pairwise(row)):
            header = max(header, r + 2)  # a group header spans columns: the row below names them
        r += 1
    return header if header < n else n - 1


def _confident(table: PdfTable, columns: list[float], page: Any) -> bool:
    """A text-strategy table is kept only when it reads like one: a filled grid of short cells, no word cut."""
    rows = table.rows
    cells = [c for row in rows for c in row]
    if len(rows) < 3 or len(rows[0]) < 3:
        return False
    filled = sum(1 for c in cells if c) / len(cells)
    short = sum(1 for c in cells if c and len(c) <= 25) / max(1, sum(1 for c in cells if c))
    x0, top, x1, bottom = table.bbox
    area = (x1 - x0) * (bottom - top) / max(1.0, float(page.width) * float(page.height))
    if filled < 0.8 or short < 0.9 or area >= 0.5:
        return False
    inner = columns[1:-1]
    words = page.crop(table.bbox).extract_words()
    return not any(w['x0'] + 1 < x < w['x1'] - 1 for w in words for x in inner)
