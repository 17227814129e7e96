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

import bisect
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
            area = _within(page, result.bbox, crop=True)
            ruled = (area if area is not None else page).find_tables(
                {**_LINES, 'vertical_strategy': 'explicit', 'explicit_vertical_lines': columns}
            )
            better = [g[0] for g in map(_grid, ruled) if g is not None]
            if len(better) == 1 and len(better[0].rows) == len(result.rows):  # only the unruled rows replaced
                head = result.header_rows
                rows = [
                    cut if i >= head and _whole(row) else row
                    for i, (row, cut) in enumerate(zip(result.rows, better[0].rows, strict=True))
                ]
                result = replace(result, rows=rows)
        if _tabular(result):
            found.append(result)
    if found:
        return sorted(found, key=lambda t: (t.bbox[1], t.bbox[0]))
    out: list[PdfTable] = []
    for table in page.find_tables(_TEXT):
        grid = _grid(table)
        if grid is not None and _tabular(grid[0]) and _confident(grid[0], grid[1], page):
            out.append(grid[0])
    return out


def _tabular(table: PdfTable) -> bool:
    """Whether at least half the rows hold two different texts: else a framed box (a code listing, a note)."""
    return sum(1 for row in table.rows if len({c for c in row if c}) >= 2) * 2 >= len(table.rows)


def _whole(row: list[str]) -> bool:
    return bool(row[0]) and len(set(row)) == 1


def _unruled_body(table: PdfTable) -> bool:
    """Whether some body row is one cell across the whole width (no vertical rules below the header)."""
    return any(_whole(row) for row in table.rows[table.header_rows :])


def _edges(values: list[float]) -> list[float]:
    out: list[float] = []
    for v in sorted(values):
        if not out or v - out[-1] > 1.0:
            out.append(v)
    return out


def _index(edges: list[float], value: float) -> int:
    """The index of the edge nearest ``value``."""
    i = bisect.bisect_left(edges, value)
    if i == len(edges) or (i > 0 and value - edges[i - 1] <= edges[i] - value):
        return i - 1
    return i


_MAX_GRID = 250_000
"""Grid positions (column edges times row edges) beyond which a ruled figure is no table to read."""


def _cell_texts(table: Any, cells: list[_Cell], xs: list[float], ys: list[float]) -> None:
    """Each cell's text: the page's characters whose centre is in it, in one pass over the characters."""
    from pdfplumber.utils.text import extract_text

    at: dict[tuple[int, int], int] = {}
    for n, c in enumerate(cells):
        for r in range(c.r0, c.r1):
            for k in range(c.c0, c.c1):
                at[r, k] = n
    x0, top, x1, bottom = table.bbox
    buckets: list[list[Any]] = [[] for _ in cells]
    for ch in table.page.chars:
        cx, cy = (ch['x0'] + ch['x1']) / 2, (ch['top'] + ch['bottom']) / 2
        if x0 <= cx <= x1 and top <= cy <= bottom:
            owner = at.get((bisect.bisect_right(ys, cy) - 1, bisect.bisect_right(xs, cx) - 1))
            if owner is not None:
                buckets[owner].append(ch)
    for c, chars in zip(cells, buckets, strict=True):
        c.text = clean_cell(extract_text(chars)) if chars else ''


def _grid(table: Any) -> tuple[PdfTable, list[float]] | None:
    """The table as a `PdfTable`, and the x of its kept columns' edges."""
    cells = [_Cell(tuple(bbox), '') for bbox in table.cells]
    if not cells:
        return None
    xs = _edges([v for c in cells for v in (c.bbox[0], c.bbox[2])])
    ys = _edges([v for c in cells for v in (c.bbox[1], c.bbox[3])])
    if len(xs) < 2 or len(ys) < 2 or len(xs) * len(ys) > _MAX_GRID:
        return None
    for c in cells:
        c.c0, c.c1 = _index(xs, c.bbox[0]), _index(xs, c.bbox[2])
        c.r0, c.r1 = _index(ys, c.bbox[1]), _index(ys, c.bbox[3])
    _cell_texts(table, cells, xs, ys)
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
    columns = [(xs[k], xs[k + 1]) for k in cols]
    texts = _uncovered_texts(table, owner, columns, [(ys[k], ys[k + 1]) for k in rows])
    texts.update(_split_spans(table, owner, columns))
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
    grid = [
        [texts.get((i, j), c.text if c is not None else '') for j, c in enumerate(row)]
        for i, row in enumerate(owner, start=top)
    ]
    if sum(1 for row in grid if any(row)) < 2 or max(sum(1 for c in row if c) for row in grid) < 2:
        return None  # one row or one column: not a table
    x0 = min(c.bbox[0] for row in owner for c in row if c is not None)
    x1 = max(c.bbox[2] for row in owner for c in row if c is not None)
    y0 = min(c.bbox[1] for row in owner for c in row if c is not None)
    y1 = max(c.bbox[3] for row in owner for c in row if c is not None)
    edges = [xs[k] for k in cols] + [xs[cols[-1] + 1]]
    return PdfTable((x0, y0, x1, y1), grid, _header_rows(owner)), edges


_MAX_UNCOVERED = 200
"""Grid positions without a cell whose text is looked up (each is a search of the page's characters)."""


def _uncovered_texts(
    table: Any, owner: list[list[_Cell | None]], columns: list[tuple[float, float]], rows: list[tuple[float, float]]
) -> dict[tuple[int, int], str]:
    """Text at the grid positions no ruled cell covers (a column drawn without its row rules), by (row, column)."""
    missing = [(i, j) for i, row in enumerate(owner) for j, c in enumerate(row) if c is None]
    page = _region(table) if missing else None
    if not missing or len(missing) > _MAX_UNCOVERED or page is None:
        return {}
    out: dict[tuple[int, int], str] = {}
    for i, j in missing:
        (x0, x1), (top, bottom) = columns[j], rows[i]
        inside = _within(page, (x0, top, x1, bottom))
        text = clean_cell(inside.extract_text()) if inside is not None else ''
        if text:
            out[i, j] = text
    return out


_WORD_GAP = 12.0
"""Points: words this far apart in a cell spanning columns are the texts of separate, unruled columns."""
_MAX_SPLITS = 50
_SPLIT_ROWS = 4
"""Only cells in the top rows are split: where unruled column groups are (the header)."""


def _region(table: Any) -> Any:
    """The table's part of its page (searching its characters only), cached on the table."""
    region = getattr(table, '_toolish_region', None)
    if region is None:
        page = getattr(table, 'page', None)
        if page is None:
            return None
        region = _within(page, table.bbox)
        table._toolish_region = region
    return region


def _within(page: Any, bbox: tuple[float, float, float, float], *, crop: bool = False) -> Any:
    """``page.within_bbox`` (or ``crop``: objects cut at the edge kept) with ``bbox`` clipped to the page; None if empty.

    A table's rules may run past the page's edge.
    """
    x0, top, x1, bottom = page.bbox
    box = (max(bbox[0], x0), max(bbox[1], top), min(bbox[2], x1), min(bbox[3], bottom))
    if box[0] >= box[2] or box[1] >= box[3]:
        return None
    return page.crop(box) if crop else page.within_bbox(box)


def _split_spans(
    table: Any, owner: list[list[_Cell | None]], columns: list[tuple[float, float]]
) -> dict[tuple[int, int], str]:
    """Texts for the positions of a cell across columns whose words stand in separate column groups.

    A header such as ``12/31/2009   12/31/2010   6/30/2011`` over six columns, drawn without
    the rules between the years: each group of words goes to the columns whose centres lie
    nearest it, by (row, column). A cell whose words run on as one line (or several lines
    overlapping) is left whole.
    """
    page = _region(table)
    if page is None:
        return {}
    out: dict[tuple[int, int], str] = {}
    done: set[int] = set()
    for row in owner[:_SPLIT_ROWS]:
        for cell in row:
            if cell is None or id(cell) in done or not cell.text or len(done) >= _MAX_SPLITS:
                continue
            spanned = [k for k, c in enumerate(row) if c is cell]
            if len(spanned) < 2:
                continue
            done.add(id(cell))
            inside = _within(page, cell.bbox)
            words = sorted(inside.extract_words() if inside is not None else [], key=lambda w: w['x0'])
            groups: list[list[Any]] = []
            for w in words:
                if groups and w['x0'] - max(g['x1'] for g in groups[-1]) < _WORD_GAP:
                    groups[-1].append(w)
                else:
                    groups.append([w])
            if len(groups) < 2:
                continue
            bounds = [(max(g['x1'] for g in a) + min(g['x0'] for g in b)) / 2 for a, b in itertools.pairwise(groups)]
            owners = [sum(1 for b in bounds if (columns[k][0] + columns[k][1]) / 2 > b) for k in spanned]
            if len(set(owners)) != len(groups):
                continue  # a group over no column centre: not column texts
            for k, g in zip(spanned, owners, strict=True):
                line = sorted(groups[g], key=lambda w: (round(w['top']), w['x0']))
                for r in range(len(owner)):
                    if owner[r][k] is cell:
                        out[r, k] = clean_cell(' '.join(w['text'] for w in line))
    return out


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
    last_row = {id(c): i for i, row in enumerate(owner) for c in row if c is not None}
    header, r = 1, 0
    while r < header and r < n:
        row = owner[r]
        for c in row:
            if c is None:
                continue
            end = last_row[id(c)]  # the last row this cell covers
            header = max(header, end + 1)
        if any(a is not None and a is b and a.text for a, b in itertools.pairwise(row)):
            header = max(header, r + 2)  # a group header spans columns: the row below names them
        r += 1
    if header * 2 > n and n > 4:
        return 1  # a cell down most of the table is a row label, not a header
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
    area = _within(page, table.bbox)
    words = area.extract_words() if area is not None else []
    return not any(w['x0'] + 1 < x < w['x1'] - 1 for w in words for x in inner)
