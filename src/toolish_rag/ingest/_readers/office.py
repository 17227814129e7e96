"""Office Open XML: DOCX (python-docx), PPTX (python-pptx), XLSX (openpyxl).

See docs/ingestion.md#formats.
"""

from __future__ import annotations

import datetime as _dt
import io
import re
import struct
import zipfile
from pathlib import Path
from typing import Any

from .._limits import check_time, current_limits
from .._model import OutlineBuilder, ParsedDocument, ReadError, normalise_metadata
from ._containers import open_container
from .text import title_from_path

__all__ = ['read_docx', 'read_pptx', 'read_xlsx']

VERSION = 0
"""Bump when the same bytes read differently: its files are then read again (docs/ingestion.md#reader-versions)."""

_HEADING_STYLE = re.compile(r'^heading\s*(\d)$', re.IGNORECASE)


def _clean(text: str) -> str:
    return ' '.join(text.replace('\x0b', ' ').split())


def _cell(value: Any) -> str:
    if value is None:
        return ''
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, _dt.datetime | _dt.date | _dt.time):
        return value.isoformat()
    return _clean(str(value))


def _rows_block(outline: OutlineBuilder, rows: list[list[str]]) -> None:
    rows = [r for r in rows if any(c for c in r)]
    if not rows:
        return
    # the header is the first row about as wide as the table; narrower rows above it are captions
    widest = max(sum(1 for c in r if c) for r in rows[:20])
    first = next(i for i, r in enumerate(rows) if sum(1 for c in r if c) * 2 >= widest)
    for caption in rows[:first]:
        outline.block(' '.join(c for c in caption if c))
    lines = [' | '.join(r) for r in rows[first:]]
    outline.block('\n'.join(lines), 'table', header=lines[0])


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
        raise ReadError(f'corrupt DOCX: {exc}') from None
    outline = OutlineBuilder()
    warnings: list[str] = []
    title = _clean(document.core_properties.title or '')
    list_lines: list[str] = []

    def flush_list() -> None:
        if list_lines:
            outline.block('\n'.join(list_lines), 'list')
            list_lines.clear()

    for number, item in enumerate(document.iter_inner_content()):
        if number % 1024 == 0:
            check_time()
        if isinstance(item, Table):
            flush_list()
            rows: list[list[str]] = []
            for row in item.rows:
                cells: list[str] = []
                last: Any = None
                for cell in row.cells:
                    if cell._tc is last:  # a merged cell repeats: keep it once
                        continue
                    last = cell._tc
                    cells.append(_clean(cell.text))
                rows.append(cells)
            _rows_block(outline, rows)
            continue
        if not isinstance(item, Paragraph):
            continue
        text = _clean(item.text)
        style = item.style.name if item.style is not None else ''
        ppr = item._p.pPr
        num: Any = ppr.numPr if ppr is not None else None
        match = _HEADING_STYLE.match(style or '')
        if text and match:
            flush_list()
            outline.heading(text, int(match.group(1)))
        elif text and style == 'Title':
            flush_list()
            title = title or text
            outline.block(text)
        elif text and (num is not None or (style or '').lower().startswith('list')):
            depth = 0
            if num is not None and num.ilvl is not None and num.ilvl.val is not None:
                depth = int(num.ilvl.val)
            list_lines.append(f'{"  " * depth}- {text}')
        elif text:
            flush_list()
            outline.block(text)
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
    )


def _shape_text(shape: Any, outline: OutlineBuilder, skip: Any) -> None:
    if shape is skip:
        return
    if getattr(shape, 'shape_type', None) is not None and hasattr(shape, 'shapes'):  # group
        for inner in shape.shapes:
            _shape_text(inner, outline, skip)
        return
    if getattr(shape, 'has_table', False):
        rows = [[_clean(c.text) for c in row.cells] for row in shape.table.rows]
        _rows_block(outline, rows)
        return
    if getattr(shape, 'has_text_frame', False):
        paragraphs = [(p.level, _clean(''.join(r.text for r in p.runs) or p.text)) for p in shape.text_frame.paragraphs]
        paragraphs = [(lvl, t) for lvl, t in paragraphs if t]
        if len(paragraphs) == 1:
            outline.block(paragraphs[0][1])
        elif paragraphs:
            outline.block('\n'.join(f'{"  " * lvl}- {t}' for lvl, t in paragraphs), 'list')


def read_pptx(data: bytes, path: Path) -> ParsedDocument:
    import pptx

    _open_zip(data, 'PPTX')
    try:
        presentation = pptx.Presentation(io.BytesIO(data))
    except Exception as exc:
        raise ReadError(f'corrupt PPTX: {exc}') from None
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
        raise ReadError(f'corrupt XLSX: {exc}') from None
    outline = OutlineBuilder()
    try:
        budget = current_limits().elements
        for sheet in workbook.worksheets:
            outline.heading(sheet.title, 1)
            rows, budget = _sheet_rows(sheet, budget)
            _rows_block(outline, rows)
        title = _clean(workbook.properties.title or '') if workbook.properties else ''
        sheets = len(workbook.worksheets)
    finally:
        workbook.close()
    return ParsedDocument(
        source=outline.text(),
        title=title or title_from_path(path),
        root=outline.root,
        format='xlsx',
        metadata={'sheet_count': sheets},
    )


def _sheet_rows(sheet: Any, budget: int) -> tuple[list[list[str]], int]:
    """The non-empty rows of a read-only ``sheet``, and what is left of the ``budget`` of rows and cells.

    The sheet's declared dimension is dropped first (``reset_dimensions``): a sheet
    declaring ``A1:XFD1048576`` would otherwise pad every row to 16,384 columns. Rows
    then run to their last cell present, and every row and cell counts against the budget.
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
        if not values:
            continue
        cells = [_cell(v) for v in values]
        while cells and not cells[-1]:
            cells.pop()
        if cells:
            rows.append(cells)
    used = sorted({i for row in rows for i, cell in enumerate(row) if cell})  # columns empty in every row: dropped
    if used and len(used) < max(len(row) for row in rows):
        rows = [[row[i] if i < len(row) else '' for i in used] for row in rows]
    return rows, budget
