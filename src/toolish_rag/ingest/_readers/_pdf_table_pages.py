"""Which PDF pages may hold a table, and their tables found by pdfplumber, placed in the page's reading order.

See docs/ingestion.md#pdf-layout.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from dataclasses import replace
from typing import Any, Protocol

from ._pdf_layout import Piece
from ._pdf_tables import find_tables
from ._tables import normalise_grid, render_table

__all__ = ['FoundTable', 'TableFinder', 'looks_tabular', 'pieces_in', 'table_row_boxes', 'with_tables']

FoundTable = tuple[tuple[float, float, float, float], str, str]
"""A table on a page: its box in PDF points (y up), its rendered text and that text's header."""


class _PageLayer(Protocol):
    pieces: list[Piece]
    rotated: bool

    def may_hold_table(self) -> bool: ...


def looks_tabular(pieces: list[Piece], per_row: int = 3, edges: int = 3) -> bool:
    """Four or more lines of ``per_row`` or more pieces whose left edges line up in ``edges`` or more
    places (the cells of a table); two columns of prose or a few figure labels do not."""
    rows: dict[int, list[Piece]] = {}
    for piece in pieces:
        rows.setdefault(round(piece.bottom), []).append(piece)
    lined_up: Counter[int] = Counter()
    for row in rows.values():
        if len(row) >= per_row:
            lined_up.update({round(p.x0 / 4) for p in row})
    return sum(1 for n in lined_up.values() if n >= 4) >= edges


class TableFinder:
    """pdfplumber (and `_pdf_tables.find_tables`) on the pages that may hold a table, opened on first need.

    pdfplumber parses the page again (~0.1-0.5 s), so a page is looked at only when it draws
    horizontal and vertical rules (a ruled table) or has four rows of three or more pieces apart
    (an unruled one); pages turned by ``/Rotate`` are left as text. A page pdfplumber fails on
    stays text.
    """

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pdf: Any = None
        self.broken = False

    def tables(self, index: int, layer: _PageLayer) -> list[FoundTable]:
        """``(bbox in PDF points, y up; rendered text; its header)`` per table, top to bottom."""
        if self.broken or layer.rotated or not layer.pieces:
            return []
        if not layer.may_hold_table():
            return []
        try:
            if self.pdf is None:
                import pdfplumber

                self.pdf = pdfplumber.open(io.BytesIO(self.data))
            page = self.pdf.pages[index]
        except Exception:  # pdfplumber cannot open what pdfium could: the document stays text
            self.broken = True
            return []
        try:
            found = find_tables(page)
            height = float(page.height)
        except Exception:  # the table finder failed on this page: it stays text
            return []
        out = []
        for table in found:
            grid = normalise_grid(table.rows)
            if len(grid) < 2 or max(len(r) for r in grid) < 2:
                continue
            header_rows = table.header_rows - next((i for i, r in enumerate(table.rows) if any(r)), 0)
            rendered = render_table(grid, max(0, header_rows))
            x0, top, x1, bottom = table.bbox
            out.append(((x0, height - bottom, x1, height - top), rendered.text, rendered.header))
        return out

    def close(self) -> None:
        if self.pdf is not None:
            self.pdf.close()


def _inside(p: Piece, box: tuple[float, float, float, float]) -> bool:
    cx, cy = (p.x0 + p.x1) / 2, (p.bottom + p.top) / 2
    return box[0] - 1 <= cx <= box[2] + 1 and box[1] - 1 <= cy <= box[3] + 1


def pieces_in(pieces: list[Piece], box: tuple[float, float, float, float]) -> list[Piece]:
    """The pieces a table found at ``box`` (PDF points, y up) stands for: `with_tables` leaves them out."""
    return [p for p in pieces if _inside(p, box)]


def with_tables(pieces: list[Piece], tables: list[FoundTable]) -> list[Piece]:
    """The pieces outside every table, and one piece per table standing for it (its rendered text)."""
    if not tables:
        return pieces
    kept = [p for p in pieces if not any(_inside(p, t[0]) for t in tables)]
    for index, (box, text, _header) in enumerate(tables):
        kept.append(Piece(text, box[0], box[2], box[1], box[3], 0.0, False, False, index))
    return kept


_LOOKAHEAD = 2
"""Rendered rows a physical line may skip (rows whose words the page draws elsewhere, or not at all)."""

_Box = tuple[float, float, float, float]
_CELL_SEPARATOR = re.compile(r'(?<!\\) \| ')


def table_row_boxes(text: str, inside: list[Piece]) -> list[tuple[str, _Box]]:
    """Runs of a rendered table ``text`` and the boxes ``(left, bottom, right, top)`` of the pieces drawing them:
    a cell each where the row's pieces fall into its cells, else the row, so a quoted cell or row is
    highlighted where it is drawn.

    ``inside``: the page's pieces within the table. They are taken line by line, top down, each line given
    to the first row (of the next few) holding all its words. A run nothing drew (the ``| --- |`` line, a
    row not drawn) joins the run before it (or after it), so the runs cover ``text`` in order but for the
    cell bars and empty cells between them. Nothing drawn: the table is one run of its own box.
    """
    rows = text.split('\n')
    words = [set(row.replace('|', ' ').casefold().split()) for row in rows]
    drawn: list[list[Piece]] = [[] for _ in rows]
    at = 0
    for line in _drawn_lines(inside):
        tokens = set(' '.join(p.text for p in line).replace('|', ' ').casefold().split())
        hit = next((i for i in range(at, min(len(rows), at + _LOOKAHEAD + 1)) if tokens <= words[i]), None)
        if hit is not None:
            at = hit
            drawn[hit].extend(line)
    runs: list[tuple[int, int, _Box | None]] = []
    at = 0
    for row, pieces in zip(rows, drawn, strict=True):
        runs.extend((at + start, at + end, box) for start, end, box in _cell_runs(row, pieces))
        at += len(row) + 1
    joined: list[tuple[int, int, _Box]] = []
    waiting: int | None = None  # the start of runs without a box before the first with one
    for start, end, box in runs:
        if start == end or (box is None and not text[start:end].strip(' |-:\n')):
            continue  # an empty cell, the header's rule: nothing drawn, nothing to find
        if box is not None:
            joined.append((start if waiting is None else waiting, end, box))
            waiting = None
        elif joined:
            joined[-1] = (joined[-1][0], end, joined[-1][2])
        elif waiting is None:
            waiting = start
    return [(text[start:end], box) for start, end, box in joined] if joined and waiting is None else []


def _cell_runs(row: str, pieces: list[Piece]) -> list[tuple[int, int, _Box | None]]:
    """A row's runs as offsets in it: each cell's text with the box of the pieces drawing it, when each piece
    is in one cell (a piece drawn across cells cut into its words first); else the whole row with all its
    pieces' box (``None`` when none). A cell nothing drew that repeats the cell before it (a merged cell the
    rendering spreads) is where that cell is drawn."""
    whole: list[tuple[int, int, _Box | None]] = [(0, len(row), _union(pieces))]
    if not pieces or not (row.startswith('| ') and row.endswith(' |')):
        return whole
    spans, at = [], 2
    for separator in _CELL_SEPARATOR.finditer(row, 2, len(row) - 2):
        spans.append((at, separator.start()))
        at = separator.end()
    spans.append((at, len(row) - 2))
    if len(spans) < 2:
        return whole
    texts = [' '.join(row[s:e].replace('\\|', ' ').casefold().split()) for s, e in spans]
    owned = _owners(_cut_across_cells(pieces, texts), texts)
    if owned is None:
        return whole  # a piece across two cells: the row it is
    for i in range(1, len(spans)):
        if not owned[i] and owned[i - 1] and texts[i] == texts[i - 1]:
            owned[i] = list(owned[i - 1])  # its pieces: a cell of two lines is highlighted line by line
    return [run for (s, e), mine in zip(spans, owned, strict=True) for run in _piece_runs(row, s, e, mine)]


def _cut_across_cells(pieces: list[Piece], texts: list[str]) -> list[Piece]:
    """``pieces``, each one whose text is in no cell's (drawn across two or more) cut into its words."""
    out: list[Piece] = []
    for piece in pieces:
        text = f' {" ".join(piece.text.casefold().split())} '
        if len(piece.words) < 2 or any(text in f' {cell} ' for cell in texts):
            out.append(piece)
        else:
            out.extend(replace(piece, text=w, x0=b[0], x1=b[2], em=b, words=((w, b),)) for w, b in piece.words)
    return out


def _owners(pieces: list[Piece], texts: list[str]) -> list[list[Piece]] | None:
    """The pieces of each cell, left to right: a piece goes to the first cell from the last one given a piece
    whose words hold its words, the next such cell when it stands right of all that cell has (``No | No``)."""
    words = [set(text.split()) for text in texts]
    owned: list[list[Piece]] = [[] for _ in texts]
    at = 0
    for piece in sorted(pieces, key=lambda p: (p.x0, -p.top)):
        tokens = set(piece.text.casefold().split())
        fits = [i for i in range(at, len(texts)) if tokens <= words[i]]
        if not fits:
            return None
        hit = fits[0]
        if hit == at and owned[at] and len(fits) > 1 and piece.x0 >= max(p.x1 for p in owned[at]):
            hit = fits[1]  # beside what this cell has: the next cell of the same text
        owned[hit].append(piece)
        at = hit
    return owned


def _piece_runs(row: str, start: int, end: int, pieces: list[Piece]) -> list[tuple[int, int, _Box | None]]:
    """A cell's runs: each piece's own text and box where the cell's text is its pieces' in reading order (a
    cell of several lines is highlighted line by line), else the whole cell with its pieces' box."""
    at, out = start, []
    for piece in sorted(pieces, key=lambda p: (-round(p.bottom), p.x0)):
        found = row.find(piece.text, at, end)
        if found < 0 or row[at:found].strip():
            return [(start, end, _union(pieces))]
        out.append((found, found + len(piece.text), _union([piece])))
        at = found + len(piece.text)
    return out if out and not row[at:end].strip() else [(start, end, _union(pieces))]


def _union(pieces: list[Piece]) -> _Box | None:
    boxes = [p.em or (p.x0, p.bottom, p.x1, p.top) for p in pieces]
    if not boxes:
        return None
    return min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes)


def _drawn_lines(pieces: list[Piece]) -> list[list[Piece]]:
    """``pieces`` grouped by baseline, top down."""
    lines: list[list[Piece]] = []
    for piece in sorted(pieces, key=lambda p: -p.bottom):
        if lines and abs(lines[-1][0].bottom - piece.bottom) < max(piece.size, 1.0) * 0.5:
            lines[-1].append(piece)
        else:
            lines.append([piece])
    return lines
