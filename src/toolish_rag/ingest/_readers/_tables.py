"""A table as text: the one Markdown pipe-table rendering every reader uses.

Readers hand over a grid (rows of cell strings, a merged cell's text repeated in every
position it covers) and how many leading rows are header; `add_table` writes it as a
table block whose ``header_end`` marks where the header (rows plus the ``| --- |`` line)
ends, so the chunker repeats the header with every row group. A PDF reader uses it with
`_pdf_tables.find_tables`::

    for table in find_tables(page):          # words inside table.bbox are left out of the running text
        add_table(outline, table.rows, table.header_rows)

Each row is one line and a cell can never break it: whitespace (newlines included) is
collapsed and ``|`` escaped. See docs/ingestion.md#tables.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .._limits import current_limits
from .._model import Block, OutlineBuilder, ReadError

__all__ = [
    'RenderedTable',
    'SpanCell',
    'add_cells_as_text',
    'add_span_table',
    'add_table',
    'clean_cell',
    'guess_header_rows',
    'header_rows_from_spans',
    'normalise_grid',
    'render_table',
    'span_grid',
]

_SPACE = re.compile(r'\s+')
_NUMBERISH = re.compile(r'^[\s$€£¥%+\-\u2212\u2013.,:/()0-9]*[0-9][\s$€£¥%+\-\u2212\u2013.,:/()0-9a-zA-Z]{0,3}$')
"""A cell that reads as a number, amount, percentage or date (``1,234``, ``-3.5%``, ``12/31/2010``)."""


def clean_cell(text: object) -> str:
    """One cell's text on one line: whitespace collapsed, ``None`` as empty."""
    if text is None:
        return ''
    value = text if isinstance(text, str) else str(text)
    if value.isprintable() and '  ' not in value and value[:1] != ' ' and value[-1:] != ' ':
        return value  # already one line of single spaces: the common case, without a regex
    return _SPACE.sub(' ', value).strip()


def normalise_grid(rows: Sequence[Sequence[object]]) -> list[list[str]]:
    """Cells cleaned, rows padded to the widest; empty rows at either end and empty columns at the right dropped.

    Empty rows and columns inside the table stay: a grid position keeps its place.
    """
    grid = [[clean_cell(c) for c in row] for row in rows]
    while grid and not any(grid[-1]):
        grid.pop()
    start = next((i for i, row in enumerate(grid) if any(row)), len(grid))
    grid = grid[start:]
    if not grid:
        return []
    width = max((j + 1 for row in grid for j, c in enumerate(row) if c), default=0)
    return [row[:width] + [''] * (width - len(row)) for row in grid]


def guess_header_rows(rows: Sequence[Sequence[str]]) -> int:
    """How many leading rows of a grid without header markup are header: 0 or 1 (or more for spans).

    The first row is a header when the table has a body and the first row holds no
    number-like cell while some body column does, or when every cell of it is filled
    and short; leading rows repeating a text across columns (a merged group header)
    extend the header by one row each.
    """
    if len(rows) < 2:
        return 0
    spans = 0
    while spans < len(rows) - 2 and _spans_columns(rows[spans]):
        spans += 1
    first = rows[spans]
    body = rows[spans + 1 :]
    if any(_NUMBERISH.match(c) for c in first if c):
        return spans
    numeric_body = any(any(_NUMBERISH.match(c) for c in row if c) for row in body)
    filled = sum(1 for c in first if c) >= max(1, len(first) - 1)
    short = all(len(c) <= 60 for c in first)
    if spans or numeric_body or (filled and short):
        return spans + 1
    return 0


def header_rows_from_spans(spans: Iterable[tuple[int, int, int, int]], n_rows: int) -> int:
    """Header rows of a grid with merged cells ``(row0, col0, row1, col1)``, ends exclusive; 0 when none is on top.

    A cell merged across rows from the top extends the header to its last row, and a cell
    merged across columns (a group header) extends it to the row below, which names the
    columns of the group. At least one row is left for the body.
    """
    spans = list(spans)
    if not any(r0 == 0 for r0, _, _, _ in spans):
        return 0
    header, r = 1, 0
    while r < header and r < n_rows:
        for r0, c0, r1, c1 in spans:
            if r0 == r:
                header = max(header, r1, r + 2 if c1 - c0 > 1 else 0)
        r += 1
    return max(0, min(header, n_rows - 1))


def _spans_columns(row: Sequence[str]) -> bool:
    return any(a and a == b for a, b in itertools.pairwise(row))


_BAR = re.compile(r'(\\*)\|')


def _escape(cell: str) -> str:
    """``|`` as ``\\|`` (GFM's escape), backslashes right before it doubled; other backslashes stay as written."""
    return _BAR.sub(lambda m: m[1] * 2 + '\\|', clean_cell(cell))


def _line(row: Sequence[str], width: int) -> str:
    cells = [_escape(c) for c in row] + [''] * (width - len(row))
    return '| ' + ' | '.join(cells) + ' |'


@dataclass(frozen=True, slots=True)
class RenderedTable:
    """A table as a Markdown pipe table; ``text`` starts with ``header`` (``''`` when it has none)."""

    text: str
    header: str


def render_table(rows: Sequence[Sequence[str]], header_rows: int = 1, caption: str = '') -> RenderedTable:
    """``rows`` as a pipe table: the header row(s), the ``| --- |`` line, then one line per row.

    A ``caption`` is a first line of its own, part of the header (so every piece of a split
    table repeats it); a caption starting with ``|`` is escaped so it never reads as a row.
    With ``header_rows == 0`` there is no separator line and no header to repeat.
    """
    if not rows:
        return RenderedTable('', '')
    width = max(len(r) for r in rows)
    header_rows = max(0, min(header_rows, len(rows)))
    lines = [_line(r, width) for r in rows]
    title = clean_cell(caption)
    title = '\\' + title if title.startswith('|') else title
    if not header_rows:
        return RenderedTable('\n'.join([title, *lines] if title else lines), title)
    head = [*([title] if title else []), *lines[:header_rows], '| ' + ' | '.join(['---'] * width) + ' |']
    header = '\n'.join(head)
    body = lines[header_rows:]
    return RenderedTable('\n'.join([header, *body]), header)


def add_table(
    outline: OutlineBuilder, rows: Sequence[Sequence[object]], header_rows: int | None = None, caption: str = ''
) -> Block | None:
    """Write a table block: ``rows`` normalised and rendered; ``header_rows=None`` guesses it.

    A table of one row is no table: it is written as a plain text line.
    """
    grid = normalise_grid(rows)
    if not grid:
        return None
    if header_rows is None:
        header_rows = guess_header_rows(grid)
    else:  # empty rows dropped from the top no longer count
        header_rows -= next((i for i, row in enumerate(rows) if any(clean_cell(c) for c in row)), 0)
    if len(grid) < 2:
        lines = [' '.join(c for c in row if c) for row in grid]
        title = clean_cell(caption)
        return outline.block('\n'.join([title, *lines] if title else lines))
    rendered = render_table(grid, max(0, header_rows), caption)
    return outline.block(rendered.text, 'table', header=rendered.header or None)


@dataclass(frozen=True, slots=True)
class SpanCell:
    """One cell as written: its text and how many columns and rows it spans (HTML ``colspan``/``rowspan``,
    DOCX ``gridSpan``), or (``continues``) that it carries on the cell above it (DOCX ``vMerge``)."""

    text: str
    columns: int = 1
    rows: int = 1
    continues: bool = False


GRID_PER_CELL = 16
"""A table's grid may hold this many positions per cell written (at least `GRID_FLOOR`); a larger one is read as rows of text."""
GRID_FLOOR = 4096
COPY_FLOOR = 65_536
"""Characters a table's merged cells may add by repeating their text, beyond 4x the text written in it."""


def _placed(rows: Sequence[Sequence[SpanCell]]) -> list[list[Any]]:
    """Each cell as a box ``[row0, row1, col0, col1, text]`` (ends exclusive) in the columns as written.

    HTML's rules: a cell takes the first column its row's earlier cells and the rowspans from
    above leave free; a ``continues`` cell below a box starting in its column extends that box.
    The work per row is its cells plus the rowspans crossing it, counted against the element limit.
    """
    boxes: list[list[Any]] = []
    crossing: list[list[Any]] = []  # boxes from rows above still covering this row, by first column
    ending: dict[int, list[Any]] = {}  # first column -> the box that ended on the row above
    work, limit = 0, current_limits().elements
    for r, row in enumerate(rows):
        crossing = [box for box in crossing if box[1] > r]
        work += len(row) + len(crossing) + 1
        if work > limit:
            raise ReadError(f'a table with more than the {limit:,}-element limit of cells')
        placed: dict[int, list[Any]] = {}
        column, k = 0, 0
        for cell in row:
            while k < len(crossing) and crossing[k][3] <= column:
                k += 1
            while k < len(crossing) and crossing[k][2] <= column:  # taken by a rowspan from above
                column = max(column, crossing[k][3])
                k += 1
            above = ending.get(column) if cell.continues else None
            if above is not None and above[3] == column + max(1, cell.columns):
                above[1] = r + 1
                box = above
            else:
                box = [r, min(len(rows), r + max(1, cell.rows)), column, column + max(1, cell.columns), cell.text]
                boxes.append(box)
                if box[1] > r + 1:
                    crossing.append(box)
            placed[column] = box
            column = box[3]
        crossing.sort(key=lambda box: box[2])
        ending = placed
    return boxes


def span_grid(rows: Sequence[Sequence[SpanCell]]) -> list[list[str]] | None:
    """The grid of a table with merged cells, its work bounded by the cells written; ``None``: read it as text.

    The columns are those the cells' edges mark (a ``colspan=1000`` over a table of three
    columns is one position, not a thousand); a merged cell's text is repeated in each
    position it covers while the repeats stay within 4x the table's text plus `COPY_FLOOR`
    characters (then the positions stay empty: the text is in its first one). A grid of more
    than `GRID_PER_CELL` positions per cell is ``None``. See docs/ingestion.md#tables.
    """
    boxes = _placed(rows)
    if not boxes:
        return []
    edges = sorted({edge for box in boxes for edge in (box[2], box[3])})
    at = {edge: i for i, edge in enumerate(edges)}
    width, height = len(edges) - 1, len(rows)
    if width * height > max(GRID_PER_CELL * len(boxes), GRID_FLOOR):
        return None
    grid = [[''] * width for _ in range(height)]
    copies = 4 * sum(len(box[4]) for box in boxes) + COPY_FLOOR
    for r0, r1, c0, c1, text in boxes:
        grid[r0][at[c0]] = text
        for r in range(r0, r1):
            for c in range(at[c0] + (r == r0), at[c1]):
                if copies < len(text):
                    break
                grid[r][c] = text
                copies -= len(text)
    return grid


def add_span_table(
    outline: OutlineBuilder, rows: Sequence[Sequence[SpanCell]], header_rows: int | None = None, caption: str = ''
) -> Block | None:
    """`add_table` for a table with merged cells (`span_grid`); one whose grid is out of bounds is written as
    lines of its cells' text, so nothing written is lost."""
    grid = span_grid(rows)
    if grid is not None:
        return add_table(outline, grid, header_rows, caption)
    return add_cells_as_text(outline, rows, caption)


def add_cells_as_text(outline: OutlineBuilder, rows: Sequence[Sequence[SpanCell]], caption: str = '') -> Block | None:
    """A table out of `span_grid`'s bounds as a text block: a line per row, its cells' text apart by ``|``."""
    lines = [' | '.join(c for c in (clean_cell(cell.text) for cell in row) if c) for row in rows]
    text = '\n'.join(line for line in [clean_cell(caption), *lines] if line)
    return outline.block(text) if text else None
