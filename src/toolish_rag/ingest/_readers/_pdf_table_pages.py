"""Which PDF pages may hold a table, and their tables found by pdfplumber, placed in the page's reading order.

See docs/ingestion.md#pdf-layout.
"""

from __future__ import annotations

import io
from collections import Counter
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


def table_row_boxes(text: str, inside: list[Piece]) -> list[tuple[str, tuple[float, float, float, float]]]:
    """Each line of a rendered table ``text`` (its rows, the ``| --- |`` line with the header above it) and the
    box ``(left, bottom, right, top)`` of the pieces drawing it, so a quote of a row is highlighted on that row.

    ``inside``: the page's pieces within the table. They are taken line by line, top down, each given to the
    first row (of the next few) holding all its words; a row none drew joins the row above (or below), so
    the lines still cover ``text`` in order. Nothing drawn: the table is one line of its own box.
    """
    rows = text.split('\n')
    words = [set(row.replace('|', ' ').casefold().split()) for row in rows]
    boxes: list[list[float] | None] = [None] * len(rows)
    at = 0
    for line in _drawn_lines(inside):
        tokens = set(' '.join(p.text for p in line).replace('|', ' ').casefold().split())
        hit = next((i for i in range(at, min(len(rows), at + _LOOKAHEAD + 1)) if tokens <= words[i]), None)
        if hit is None:
            continue
        at = hit
        for p in line:
            x0, bottom, x1, top = p.em or (p.x0, p.bottom, p.x1, p.top)
            box = boxes[hit]
            boxes[hit] = (
                [x0, bottom, x1, top]
                if box is None
                else [min(box[0], x0), min(box[1], bottom), max(box[2], x1), max(box[3], top)]
            )
    out: list[tuple[str, tuple[float, float, float, float]]] = []
    pending = ''  # rows above the first drawn one
    for row, box in zip(rows, boxes, strict=True):
        if box is None:
            if out:
                out[-1] = (out[-1][0] + '\n' + row, out[-1][1])
            else:
                pending += row + '\n'
            continue
        out.append((pending + row, (box[0], box[1], box[2], box[3])))
        pending = ''
    return out if out and not pending else []


def _drawn_lines(pieces: list[Piece]) -> list[list[Piece]]:
    """``pieces`` grouped by baseline, top down."""
    lines: list[list[Piece]] = []
    for piece in sorted(pieces, key=lambda p: -p.bottom):
        if lines and abs(lines[-1][0].bottom - piece.bottom) < max(piece.size, 1.0) * 0.5:
            lines[-1].append(piece)
        else:
            lines.append([piece])
    return lines
