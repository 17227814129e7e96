"""Office Open XML: DOCX (python-docx), PPTX (python-pptx), XLSX (openpyxl).

* DOCX: ``Heading N`` styles (and paragraphs with an outline level) become sections; the
  ``Title`` style becomes the document title; list paragraphs become ``- item`` lines
  (indented by list level); tables become ``a | b`` rows with their header row.
* PPTX: one section per slide, titled by the slide title; bullets keep their level;
  speaker notes are kept as a ``Notes:`` block; the slide number is the chunk's page.
* XLSX: one section per sheet; rows become ``a | b`` lines, the first non-empty row is the
  header every piece of the table carries.
"""

from __future__ import annotations

import datetime as _dt
import io
import re
import zipfile
from pathlib import Path
from typing import Any

from ..model import OutlineBuilder, ParsedDocument, ReadError, normalise_metadata
from .text import title_from_path

__all__ = ['read_docx', 'read_pptx', 'read_xlsx']

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


def _open_zip(data: bytes, kind: str) -> None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            bad = zf.testzip()
    except zipfile.BadZipFile as exc:
        raise ReadError(f'corrupt {kind} (not a readable ZIP container): {exc}') from None
    if bad is not None:
        raise ReadError(f'corrupt {kind}: damaged member {bad}')


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

    for item in document.iter_inner_content():
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
        for sheet in workbook.worksheets:
            outline.heading(sheet.title, 1)
            rows: list[list[str]] = []
            for values in sheet.iter_rows(values_only=True):
                cells = [_cell(v) for v in values]
                while cells and not cells[-1]:
                    cells.pop()
                if cells:
                    rows.append(cells)
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
