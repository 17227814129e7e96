"""Which cells of a workbook each line of its tables was read from: what a spreadsheet chunk cites.

A table of a sheet is written as a pipe table: an optional caption line (the narrow rows above
it), then one line per row, the ``| --- |`` line after the header. Each line is given the sheet
rows it stands for, across the table's columns; `ParsedDocument.cells_in` joins them into a
chunk's range (``Sheet1!A1:D20``). See docs/grounded.md#where-a-quote-stands.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .._model import CellRun

__all__ = ['SheetTable', 'cell_runs']

_SEPARATOR = re.compile(r'\|(?: -{3,} \|)+')


class SheetTable(NamedTuple):
    """A table as written into the source (``start``/``end``) and where it was read (1-based, inclusive)."""

    start: int
    end: int
    sheet: str
    rows: list[int]
    """The sheet row of each row written (blank rows are not), in order."""
    col0: int
    col1: int


def cell_runs(source: str, tables: list[SheetTable]) -> list[CellRun]:
    """A `CellRun` for each line of each table; a table whose lines do not match its rows is one run."""
    out: list[CellRun] = []
    for table in tables:
        lines, at = [], table.start
        for line in source[table.start : table.end].split('\n'):
            lines.append((at, at + len(line), line))
            at += len(line) + 1
        body = [ln for ln in lines if ln[2].startswith('|') and not _SEPARATOR.fullmatch(ln[2])]
        caption = len(table.rows) - len(body)
        if caption < 0 or not table.rows or (caption > 0) != (lines[0][2][:1] != '|'):
            out.append(
                CellRun(
                    table.start,
                    table.end,
                    table.sheet,
                    min(table.rows or [1]),
                    table.col0,
                    max(table.rows or [1]),
                    table.col1,
                )
            )
            continue
        if caption:
            start, end, _ = lines[0]
            out.append(CellRun(start, end, table.sheet, table.rows[0], table.col0, table.rows[caption - 1], table.col1))
        for (start, end, _), row in zip(body, table.rows[caption:], strict=True):
            out.append(CellRun(start, end, table.sheet, row, table.col0, row, table.col1))
    return out
