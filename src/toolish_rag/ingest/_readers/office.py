"""Office Open XML: DOCX (python-docx), PPTX (python-pptx), XLSX (openpyxl).

See docs/ingestion.md#formats.
"""

from __future__ import annotations

import datetime as _dt
import io
import re
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._limits import check_time, current_limits
from .._model import Block, OutlineBuilder, ParsedDocument, ReadError, normalise_metadata
from ._cells import SheetTable, cell_runs
from ._containers import open_container
from ._docx_pages import has_rendered_breaks, page_breaks
from ._tables import SpanCell, add_cells_as_text, add_table, header_rows_from_spans, normalise_grid, span_grid
from .text import title_from_path

__all__ = ['XML_DEPTH_LIMIT', 'parse_failure', 'read_docx', 'read_pptx', 'read_xlsx']

VERSION = 3
"""Bump when the same bytes read differently: its files are then read again (docs/ingestion.md#reader-versions)."""

_HEADING_STYLE = re.compile(r'^heading\s*(\d)$', re.IGNORECASE)


def _clean(text: str) -> str:
    return ' '.join(text.replace('\x0b', ' ').split())


def _cell(value: Any) -> str:
    if value is None:
        return ''
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, _dt.datetime):
        return value.isoformat(sep=' ')
    if isinstance(value, _dt.date | _dt.time):
        return value.isoformat()
    return _clean(str(value))


def _rows_block(outline: OutlineBuilder, rows: list[list[str]], header_rows: int | None = None) -> Block | None:
    """A table: leading rows much narrower than the table are its caption; the header is given or guessed."""
    lead = next((i for i, r in enumerate(rows) if any(r)), len(rows))
    grid = normalise_grid(rows)
    if not grid:
        return None
    # the header is the first row about as wide as the table; narrower rows above it are captions
    widest = max(sum(1 for c in r if c) for r in grid[:20])
    first = next(i for i, r in enumerate(grid) if sum(1 for c in r if c) * 2 >= widest)
    caption = ' '.join(c for r in grid[:first] for c in r if c)
    if header_rows is not None:
        header_rows = max(1, header_rows - lead - first)
    return add_table(outline, grid[first:], header_rows, caption)


_CFB_MAGIC = bytes.fromhex('D0CF11E0A1B11AE1')
"""An OLE compound file (CFB): legacy .doc/.xls/.ppt, and encrypted DOCX/XLSX/PPTX."""
_MAX_REGULAR_SECTOR = 0xFFFFFFFA
_ENCRYPTION_STREAMS = frozenset({'EncryptionInfo', 'EncryptedPackage'})
"""Streams of an encrypted OOXML file (MS-OFFCRYPTO): the key data and the encrypted ZIP."""


def _cfb_entry_names(data: bytes) -> set[str]:
    """The names in an OLE compound file's directory (MS-CFB), or an empty set when it is malformed.

    Reads the header, the FAT (through the header's 109 DIFAT slots and any DIFAT
    sectors) and the directory's sector chain; every loop is bounded by the file's
    sector count, so a damaged or looping file ends the walk instead of hanging it.
    Parsing the directory (rather than searching the bytes for a UTF-16 name) keeps a
    legacy .doc whose text mentions ``EncryptionInfo`` from looking encrypted.
    """
    if len(data) < 512 or not data.startswith(_CFB_MAGIC):
        return set()
    shift = int.from_bytes(data[0x1E:0x20], 'little')
    if shift not in (9, 12):
        return set()
    size = 1 << shift
    limit = len(data) // size + 1

    def sector(n: int) -> list[int]:
        raw = data[(n + 1) * size : (n + 2) * size]
        return list(struct.unpack(f'<{len(raw) // 4}I', raw[: len(raw) // 4 * 4]))

    def u32(offset: int) -> int:
        return int.from_bytes(data[offset : offset + 4], 'little')

    fat_sectors = list(struct.unpack('<109I', data[0x4C:0x200]))
    difat = u32(0x44)
    for _ in range(limit):
        if difat > _MAX_REGULAR_SECTOR:
            break
        entries = sector(difat)
        if not entries:
            break
        fat_sectors += entries[:-1]
        difat = entries[-1]
    fat = [entry for s in fat_sectors if s <= _MAX_REGULAR_SECTOR for entry in sector(s)]
    names: set[str] = set()
    current = u32(0x30)
    for _ in range(limit):
        if current > _MAX_REGULAR_SECTOR:
            break
        raw = data[(current + 1) * size : (current + 2) * size]
        for at in range(0, len(raw) - 127, 128):
            entry = raw[at : at + 128]
            length, kind = int.from_bytes(entry[0x40:0x42], 'little'), entry[0x42]
            if kind in (1, 2, 5) and 2 <= length <= 64 and length % 2 == 0:
                names.add(entry[: length - 2].decode('utf-16-le', 'replace'))
        current = fat[current] if current < len(fat) else _MAX_REGULAR_SECTOR + 1
    return names


def _not_a_zip(data: bytes, kind: str, exc: Exception) -> ReadError:
    """Why ``data`` is no OOXML ZIP: encrypted, a legacy binary Office file, or damaged.

    Office encrypts a DOCX/XLSX/PPTX by wrapping it in an OLE compound file with an
    ``EncryptionInfo`` stream; a legacy .doc/.xls/.ppt (renamed, or saved with the wrong
    extension) is a compound file without one. Both used to read as "corrupt".
    """
    if data.startswith(_CFB_MAGIC):
        names = _cfb_entry_names(data)
        if names & _ENCRYPTION_STREAMS:
            return ReadError(
                f'encrypted {kind}: the file is password-protected; save a copy without a password to ingest it'
            )
        return ReadError(
            f'not {kind} but a legacy binary Office file (an OLE compound file, as .doc/.xls/.ppt are); '
            f'save it as .{kind.lower()} to ingest it'
        )
    return ReadError(f'corrupt {kind} (not a readable ZIP container): {exc}')


XML_DEPTH_LIMIT = 256
"""Nesting lxml parses without ``XML_PARSE_HUGE`` (python-docx, python-pptx and openpyxl leave it off)."""


def parse_failure(kind: str, exc: Exception) -> ReadError:
    """Why a parser refused a container: XML nested past lxml's own limit (a valid file, e.g. 300 tables
    one inside the other, is not corrupt), else corrupt."""
    detail = str(exc)
    if detail.startswith('Excessive depth in document'):
        return ReadError(
            f'{kind} nested deeper than the {XML_DEPTH_LIMIT}-level limit of its XML parser (lxml), as tables '
            'inside tables so many levels deep are: not read'
        )
    return ReadError(f'corrupt {kind}: {detail}')


def _open_zip(data: bytes, kind: str) -> None:
    """Check the container before a parser sees it: readable, every CRC right, within the `IngestLimits`."""
    try:
        open_container(data, kind).close()
    except zipfile.BadZipFile as exc:
        raise _not_a_zip(data, kind, exc) from None


def read_docx(data: bytes, path: Path) -> ParsedDocument:
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    _open_zip(data, 'DOCX')
    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:
        raise parse_failure('DOCX', exc) from None
    outline = OutlineBuilder()
    warnings: list[str] = []
    title = _clean(document.core_properties.title or '')
    list_lines: list[str] = []

    def flush_list() -> None:
        if list_lines:
            outline.block('\n'.join(list_lines), 'list')
            list_lines.clear()

    rendered = has_rendered_breaks(document.element.body)
    outline.start_page()
    after = 0  # page breaks after the text of the item before
    for number, item in enumerate(document.iter_inner_content()):
        if number % 1024 == 0:
            check_time()
        if not isinstance(item, Table | Paragraph):
            continue
        before, then = page_breaks(item._tbl if isinstance(item, Table) else item._p, rendered)
        if after + before:
            flush_list()
            for _ in range(after + before):
                outline.start_page()
        after = then
        if isinstance(item, Table):
            flush_list()
            _docx_table(outline, item)
            continue
        named = _docx_paragraph(outline, item, list_lines, flush_list)  # always written, whatever the title
        title = title or named
    flush_list()
    props = document.core_properties
    metadata = normalise_metadata({'author': props.author or None, 'subject': props.subject or None}, warnings)
    return ParsedDocument(
        source=outline.text(),
        title=title or title_from_path(path),
        root=outline.root,
        format='docx',
        metadata={k: v for k, v in metadata.items() if v is not None},
        warnings=warnings,
        page_starts=outline.page_starts if len(outline.page_starts) > 1 else None,  # pages where the file says
    )


def _docx_paragraph(outline: OutlineBuilder, item: Any, list_lines: list[str], flush_list: Callable[[], None]) -> str:
    """Write a paragraph: a heading, a list item (kept in ``list_lines`` until the list ends) or a block; returns
    its text when it is the document's ``Title``, else ``''``."""
    text = _clean(item.text)
    style = item.style.name if item.style is not None else ''
    ppr = item._p.pPr
    num: Any = ppr.numPr if ppr is not None else None
    match = _HEADING_STYLE.match(style or '')
    if text and match:
        flush_list()
        outline.heading(text, int(match.group(1)))
    elif text and (num is not None or (style or '').lower().startswith('list')) and style != 'Title':
        depth = 0
        if num is not None and num.ilvl is not None and num.ilvl.val is not None:
            depth = int(num.ilvl.val)
        list_lines.append(f'{"  " * depth}- {text}')
    elif text:
        flush_list()
        outline.block(text)
        return text if style == 'Title' else ''
    return ''


def _docx_table(outline: OutlineBuilder, table: Any) -> None:
    """A Word table read from its XML: each ``w:tc`` once, with its ``gridSpan`` and ``vMerge``, laid out by
    `span_grid` (python-docx's ``row.cells`` repeats a cell once per grid column it spans: a ``gridSpan``
    of 1000 made a thousand). The header is the rows marked "repeat as header row" (``w:tblHeader``), else guessed;
    tables inside its cells follow it.
    """
    from docx.oxml.ns import qn
    from docx.table import _Cell

    rows: list[list[SpanCell]] = []
    nested: list[Any] = []
    marked = 0
    for number, tr in enumerate(table._tbl.tr_lst):
        if number % 1024 == 0:
            check_time()
        row = [SpanCell('', tr.grid_before)] if tr.grid_before > 0 else []
        for tc in tr.tc_lst:
            cell = _Cell(tc, table)
            row.append(SpanCell(_clean(cell.text), tc.grid_span, 1, tc.vMerge == 'continue'))
            nested.extend(cell.tables)
        rows.append(row)
        props = tr.trPr
        if marked == number and props is not None and props.find(qn('w:tblHeader')) is not None:
            marked += 1
    grid = span_grid(rows)
    if grid is None:
        add_cells_as_text(outline, rows)  # out of bounds: its cells as lines of text
    else:
        _rows_block(outline, grid, marked or None)
    for inner in nested:  # a table inside a cell: written after its table, as HTML's are
        _docx_table(outline, inner)


def _shape_text(shape: Any, outline: OutlineBuilder, skip: Any) -> None:
    if shape is skip:
        return
    try:
        kind = shape.shape_type
    except NotImplementedError:  # python-pptx names no type for some shapes: their text is still read
        kind = None
    if kind is not None and hasattr(shape, 'shapes'):  # group
        for inner in shape.shapes:
            _shape_text(inner, outline, skip)
        return
    if getattr(shape, 'has_table', False):
        _pptx_table(outline, shape.table)
        return
    if getattr(shape, 'has_text_frame', False):
        paragraphs = [(p.level, _clean(''.join(r.text for r in p.runs) or p.text)) for p in shape.text_frame.paragraphs]
        paragraphs = [(lvl, t) for lvl, t in paragraphs if t]
        if len(paragraphs) == 1:
            outline.block(paragraphs[0][1])
        elif paragraphs:
            outline.block('\n'.join(f'{"  " * lvl}- {t}' for lvl, t in paragraphs), 'list')


def _pptx_table(outline: OutlineBuilder, table: Any) -> None:
    """A PowerPoint table: a merged cell's text in every position it covers; the header row as the deck marks it."""
    rows: list[list[str]] = []
    for row in table.rows:
        cells: list[str] = []
        for cell in row.cells:
            if cell.is_spanned:  # covered by a merge: the text of its origin cell, found below
                cells.append('')
                continue
            cells.append(_clean(cell.text))
        rows.append(cells)
    for r, row in enumerate(table.rows):
        for c, cell in enumerate(row.cells):
            if cell.is_merge_origin:
                for rr in range(r, min(len(rows), r + cell.span_height)):
                    for cc in range(c, min(len(rows[rr]), c + cell.span_width)):
                        rows[rr][cc] = rows[r][c]
    first_row = bool(getattr(table, 'first_row', True))
    _rows_block(outline, rows, 1 if first_row else None)


def read_pptx(data: bytes, path: Path) -> ParsedDocument:
    import pptx

    _open_zip(data, 'PPTX')
    try:
        presentation = pptx.Presentation(io.BytesIO(data))
    except Exception as exc:
        raise parse_failure('PPTX', exc) from None
    outline = OutlineBuilder()
    first_title = ''
    for number, slide in enumerate(presentation.slides, start=1):
        check_time()
        outline.start_page()
        title_shape = slide.shapes.title
        slide_title = (
            _clean(title_shape.text_frame.text) if title_shape is not None and title_shape.has_text_frame else ''
        )
        first_title = first_title or slide_title
        outline.heading(slide_title or f'Slide {number}', 1)
        for shape in slide.shapes:
            _shape_text(shape, outline, title_shape)
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            text = notes.text.strip() if notes is not None else ''
            if text:
                outline.block(f'Notes: {text}')
    if not outline.length:
        raise ReadError('no extractable text: the presentation has no text on its slides')
    # a deck's core "title" property is often left over from its template: the first slide title is more reliable
    title = first_title or _clean(presentation.core_properties.title or '') or title_from_path(path)
    return ParsedDocument(
        source=outline.text(),
        title=title,
        root=outline.root,
        format='pptx',
        metadata={'slide_count': len(presentation.slides)},
        page_starts=outline.page_starts,
    )


def read_xlsx(data: bytes, path: Path) -> ParsedDocument:
    import openpyxl  # type: ignore[import-untyped]

    _open_zip(data, 'XLSX')
    try:
        workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except Exception as exc:
        raise parse_failure('XLSX', exc) from None
    outline = OutlineBuilder()
    tables: list[SheetTable] = []
    try:
        budget = current_limits().elements
        archive = zipfile.ZipFile(io.BytesIO(data))
        for sheet in workbook.worksheets:
            outline.start_page()
            outline.heading(sheet.title, 1)
            rows, budget = _sheet_rows(sheet, budget)
            merges = _merges(archive, sheet)
            budget = _fill_merges(rows, merges, budget)
            for top, left, bottom, right in _regions(rows):
                region = [row[left:right] + [''] * (right - len(row[left:right])) for row in rows[top:bottom]]
                inside = [
                    (r0 - top, c0 - left, r1 - top, c1 - left)
                    for r0, c0, r1, c1 in merges
                    if top <= r0 < bottom and left <= c0 < right
                ]
                header = header_rows_from_spans(inside, len(region))
                header -= sum(1 for row in region[:header] if not any(row))
                drawn = [top + 1 + i for i, row in enumerate(region) if any(row)]  # their 1-based sheet rows
                region = [row for row in region if any(row)]  # blank separator rows inside
                block = _rows_block(outline, region, header or None)
                if block is not None:
                    tables.append(SheetTable(block.start, block.end, sheet.title, drawn, left + 1, right))
        title = _clean(workbook.properties.title or '') if workbook.properties else ''
        sheets = len(workbook.worksheets)
    finally:
        workbook.close()
    source = outline.text()
    return ParsedDocument(
        source=source,
        title=title or title_from_path(path),
        root=outline.root,
        format='xlsx',
        metadata={'sheet_count': sheets},
        page_starts=outline.page_starts,
        cells=cell_runs(source, tables),
    )


def _sheet_rows(sheet: Any, budget: int) -> tuple[list[list[str]], int]:
    """The rows of a read-only ``sheet`` as a grid from A1, and what is left of the ``budget`` of rows and cells.

    The sheet's declared dimension is dropped first (``reset_dimensions``): a sheet
    declaring ``A1:XFD1048576`` would otherwise pad every row to 16,384 columns. Rows
    then run to their last cell present, and every row and cell counts against the budget.
    Empty rows at the end are dropped; those inside keep the row numbers.
    """
    sheet.reset_dimensions()
    rows: list[list[str]] = []
    for number, values in enumerate(sheet.iter_rows(values_only=True)):
        budget -= 1 + len(values)
        if budget < 0:
            raise ReadError(
                f'the workbook has more than the {current_limits().elements:,}-element limit of rows and cells'
            )
        if number % 4096 == 0:
            check_time()
        cells = [_cell(v) for v in values or ()]
        while cells and not cells[-1]:
            cells.pop()
        rows.append(cells)
    while rows and not rows[-1]:
        rows.pop()
    return rows, budget


_MERGE = re.compile(rb'<(?:\w+:)?mergeCell\b[^>]*?\bref="([A-Z]{1,3})(\d{1,7}):([A-Z]{1,3})(\d{1,7})"')


def _column(letters: bytes) -> int:
    n = 0
    for ch in letters:
        n = n * 26 + ch - 64
    return n - 1


def _merges(archive: zipfile.ZipFile, sheet: Any) -> list[tuple[int, int, int, int]]:
    """A sheet's merged ranges ``(row0, col0, row1, col1)``, 0-based, ends exclusive (read-only openpyxl has none).

    The sheet's XML is scanned in pieces for its ``<mergeCell ref="B1:C1"/>`` elements.
    """
    name = getattr(sheet, '_worksheet_path', None)
    if not isinstance(name, str):
        return []
    found: list[tuple[int, int, int, int]] = []
    try:
        stream = archive.open(name.lstrip('/'))
    except KeyError:
        return []
    with stream:
        tail = b''
        while piece := stream.read(1 << 20):
            text = tail + piece
            last = 0
            for m in _MERGE.finditer(text):
                c0, r0, c1, r1 = _column(m[1]), int(m[2]) - 1, _column(m[3]) + 1, int(m[4])
                if r1 > r0 and c1 > c0:
                    found.append((r0, c0, r1, c1))
                last = m.end()
            tail = text[max(last, len(text) - 256) :]
    return found


def _fill_merges(rows: list[list[str]], merges: list[tuple[int, int, int, int]], budget: int) -> int:
    """Repeat each merged cell's text in every position it covers, within the sheet's data; returns the budget left."""
    width = max((len(r) for r in rows), default=0)
    for r0, c0, r1, c1 in merges:
        if r0 >= len(rows) or c0 >= len(rows[r0]) or not rows[r0][c0]:
            continue
        text = rows[r0][c0]
        for r in range(r0, min(r1, len(rows))):
            row = rows[r]
            stop = min(c1, width)
            budget -= max(0, stop - c0)
            if budget < 0:
                raise ReadError(
                    f'the workbook has more than the {current_limits().elements:,}-element limit of rows and cells'
                )
            row.extend([''] * (stop - len(row)))
            for c in range(c0, stop):
                row[c] = text
    return budget


_MAX_REGIONS = 200
"""A sheet of more groups of cells than this is read as one table (the grouping would cost more than it helps)."""


def _regions(rows: list[list[str]]) -> list[tuple[int, int, int, int]]:
    """The tables of a sheet: boxes ``(top, left, bottom, right)`` of cells connected by side, in reading order.

    Boxes that overlap, or one below another (up to two empty rows between) starting in
    the same column and no wider, are one table (blank rows that part a long table); else
    an empty column or row parts two tables. Linear in the cells: runs of filled cells per
    row, joined to the runs they touch in the row above (union-find).
    """
    runs: list[tuple[int, int, int]] = []  # (row, first column, last column + 1)
    parent: list[int] = []

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    previous: list[int] = []  # the runs of the row above
    for r, row in enumerate(rows):
        here: list[int] = []
        c = 0
        while c < len(row):
            if not row[c]:
                c += 1
                continue
            start = c
            while c < len(row) and row[c]:
                c += 1
            runs.append((r, start, c))
            parent.append(len(parent))
            here.append(len(runs) - 1)
        j = 0
        for i in here:  # both lists are in column order: a sweep joins the overlapping runs
            _, c0, c1 = runs[i]
            while j < len(previous) and runs[previous[j]][2] <= c0:
                j += 1
            k = j
            while k < len(previous) and runs[previous[k]][1] < c1:
                parent[find(i)] = find(previous[k])
                k += 1
        previous = here
    found: dict[int, list[int]] = {}
    for i, (r, c0, c1) in enumerate(runs):
        root = find(i)
        box = found.get(root)
        if box is None:
            found[root] = [r, c0, r + 1, c1]
        else:
            box[:] = [min(box[0], r), min(box[1], c0), max(box[2], r + 1), max(box[3], c1)]
    boxes = list(found.values())
    if len(boxes) > _MAX_REGIONS:
        width = max(len(row) for row in rows)
        return [(0, 0, len(rows), width)]
    return _merged_regions(boxes)


def _merged_regions(boxes: list[list[int]]) -> list[tuple[int, int, int, int]]:
    """``boxes`` with those that overlap, or stand one below another in one column and no wider, made one."""
    merged = True
    while merged:
        merged = False
        for i, a in enumerate(boxes):
            for j in range(i + 1, len(boxes)):
                b = boxes[j]
                overlap = a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
                below = 0 <= b[0] - a[2] <= 2 and a[1] == b[1] and b[3] <= a[3]
                above = 0 <= a[0] - b[2] <= 2 and b[1] == a[1] and a[3] <= b[3]
                if overlap or below or above:
                    a[:] = [min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])]
                    del boxes[j]
                    merged = True
                    break
            if merged:
                break
    return sorted((b[0], b[1], b[2], b[3]) for b in boxes)
