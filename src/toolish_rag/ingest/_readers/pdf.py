"""PDF via pdfium (pypdfium2): text per page in reading order, OCR where a page has no usable text layer.

Pages recorded; sections from the outline or the fonts; running headers, footers and page numbers
dropped; words hyphenated at line ends joined. See docs/ingestion.md#pdf-layout and #ocr.
"""

from __future__ import annotations

import io
import itertools
import math
import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._limits import check_time
from .._model import OutlineBuilder, ParsedDocument, ReadError
from ._ocr import INSTALL_TESSERACT, join_hyphenated, ocr_image, ocr_options, tesseract_path, text_is_garbage
from ._pdf_layout import Line, Piece, page_paragraphs, page_pieces
from ._pdf_tables import find_tables
from ._tables import normalise_grid, render_table
from .text import paragraph_spans, title_from_path

__all__ = ['read_pdf']

VERSION = 1
"""Bump when the same bytes read differently: its files are then read again (docs/ingestion.md#reader-versions)."""


@dataclass(slots=True)
class _Line:
    text: str
    size: float
    bold: bool
    italic: bool = False
    lines: int = 1
    """Lines of the paragraph this stands for."""


def _pattern(title: str) -> re.Pattern[str] | None:
    chars = [re.escape(c) for c in title if not c.isspace()]
    if len(chars) < 2:
        return None
    return re.compile(r'\s*'.join(chars), re.IGNORECASE)


def _clean_page(text: str) -> str:
    lines = [line.rstrip() for line in text.split('\n')]
    out: list[str] = []
    for line in lines:
        if not line.strip():
            if out and out[-1] != '':
                out.append('')
            continue
        out.append(line)
    return '\n'.join(out).strip('\n')


def _strip_running(pages: list[str]) -> list[str]:
    if len(pages) < 3:
        return pages

    def key(line: str) -> str:
        return re.sub(r'\d+', '#', ' '.join(line.split()))

    edge_keys: Counter[str] = Counter()
    for page in pages:
        lines = [ln for ln in page.split('\n') if ln.strip()]
        edge_keys.update({key(ln) for ln in lines[:2] + lines[-2:]})
    # a line repeated (numbers aside) at the top or bottom of most pages: a running header, footer or page number
    running = {k for k, n in edge_keys.items() if n >= max(3, int(len(pages) * 0.6)) and k.strip()}
    if not running:
        return pages
    out = []
    for page in pages:
        lines = page.split('\n')
        nonblank = [i for i, ln in enumerate(lines) if ln.strip()]
        edges = set(nonblank[:2] + nonblank[-2:])
        kept = [ln for i, ln in enumerate(lines) if not (i in edges and key(ln) in running)]
        out.append(_clean_page('\n'.join(kept)))
    return out


def _outline_entries(pdf: Any) -> list[tuple[int, int, str]]:
    entries: list[tuple[int, int, str]] = []
    try:
        for bookmark in pdf.get_toc(max_depth=16):
            dest = bookmark.get_dest()
            page = dest.get_index() if dest is not None else None
            title = ' '.join((bookmark.get_title() or '').split())
            if title and page is not None and page >= 0:
                entries.append((page, bookmark.level + 1, title))
    except Exception:
        return []
    return entries


def _adjacent(page_lines: list[list[_Line]], a: tuple[int, _Line], b: tuple[int, _Line]) -> bool:
    if a[0] != b[0]:
        return False
    lines = page_lines[a[0]]
    ia = next(i for i, ln in enumerate(lines) if ln is a[1])
    return ia + 1 < len(lines) and lines[ia + 1] is b[1]


def _font_headings(page_lines: list[list[_Line]]) -> list[tuple[int, int, str]]:
    sizes: Counter[float] = Counter()
    for lines in page_lines:
        for line in lines:
            sizes[line.size] += len(line.text)
    if not sizes:
        return []
    body = sizes.most_common(1)[0][0]
    candidates: list[tuple[int, _Line]] = []
    for page_no, lines in enumerate(page_lines):
        for index, line in enumerate(lines):
            t = line.text
            if index + 1 == len(lines):
                continue  # a heading is followed by something on its page
            if not (2 < len(t) <= 120) or not any(c.isalpha() for c in t) or t.endswith((',', ';')):
                continue
            # an italic line stands alone as a heading when short and not a sentence (``Elastic Stop Nut``)
            italic_heading = line.italic and line.lines == 1 and len(t.split()) <= 8 and not t.endswith(('.', ':'))
            if line.size >= body * 1.15 or ((line.bold or italic_heading) and line.size >= body * 0.95):
                candidates.append((page_no, line))
    total_chars = sum(sizes.values())
    if not candidates or len(candidates) > max(3, total_chars // 150):
        return []  # no headings, or "bold" is used for body text / table cells: not a hierarchy
    # three or more heading-like lines in a row are a table header or a cover page, not headings
    kept: list[tuple[int, _Line]] = []
    run: list[tuple[int, _Line]] = []
    for item in [*candidates, None]:
        if item is not None and run and _adjacent(page_lines, run[-1], item):
            run.append(item)
            continue
        if len(run) < 3:
            kept.extend(run)
        run = [item] if item is not None else []
    candidates = kept
    if not candidates:
        return []
    styles = sorted({(c.size, c.bold, c.italic) for _, c in candidates}, reverse=True)
    level = {style: i + 1 for i, style in enumerate(styles[:6])}
    return [(p, level.get((c.size, c.bold, c.italic), 6), c.text) for p, c in candidates]


def _document_title(pdf: Any) -> str | None:
    try:
        title = ' '.join(str(pdf.get_metadata_dict().get('Title') or '').split())
    except Exception:
        return None
    if not title or title.lower().startswith(('microsoft word', 'untitled')) or re.fullmatch(r'\S+\.\w{2,4}', title):
        return None
    return title


_PDFIUM = threading.RLock()
"""pdfium is not thread-safe, not even across documents: every call into it holds this lock
(OCR, a subprocess, runs outside it)."""

OCR_DPI = 300.0
MAX_OCR_PIXELS = 40_000_000
"""A page is rendered for OCR at `OCR_DPI`, or less where that would pass this many pixels (~40 MB grey)."""
IMAGE_COVERAGE = 0.25
"""A page with (almost) no text whose images cover this share of it is a scan: OCR'd under ``ocr='auto'``."""
LITTLE_TEXT = 40
"""Non-space characters under which a page's text layer is no text layer (a page number, a stamp)."""


@dataclass(slots=True)
class _Page:
    text: str
    lines: list[_Line]
    ocr: bool = False
    needs_ocr: bool = False
    tables: list[tuple[str, str]] = field(default_factory=list)
    """Each table's rendered text and header, as written into ``text``."""


def _open(data: bytes) -> Any:
    import pypdfium2 as pdfium

    if not data.lstrip()[:1024].startswith(b'%PDF') and b'%PDF' not in data[:1024]:
        raise ReadError('not a PDF (no %PDF header)')
    try:
        return pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if 'password' in str(exc).lower():
            raise ReadError('encrypted PDF: a password is required to open it') from None
        raise ReadError(f'malformed PDF: {exc}') from None


def _image_coverage(page: Any) -> float:
    """Share of the page's area under image objects (capped at 1)."""
    import pypdfium2.raw as raw

    width, height = page.get_size()
    area = 0.0
    for obj in page.get_objects(filter=[raw.FPDF_PAGEOBJ_IMAGE], max_depth=4):
        left, bottom, right, top = obj.get_bounds()
        area += max(0.0, min(right, width) - max(left, 0.0)) * max(0.0, min(top, height) - max(bottom, 0.0))
    return min(1.0, area / (width * height)) if width * height > 0 else 0.0


@dataclass(slots=True)
class _Layer:
    """A page's text layer as pdfium gives it: pieces of text with positions, in the page as shown."""

    pieces: list[Piece]
    width: float
    height: float
    rotated: bool
    verticals: int
    """Places across the page where vertical rules are drawn (header and footer bands aside)."""
    horizontals: int
    """Heights at which horizontal rules are drawn (header and footer bands aside)."""

    def may_hold_table(self) -> bool:
        """Rules making a grid of two or more columns, or some rules and cells lined up, or cells lined up well."""
        if self.verticals >= 3 and self.horizontals >= 3:
            return True
        if self.horizontals >= 3 and _looks_tabular(self.pieces, per_row=2, edges=2):
            return True  # rules under the header only (or a box around two columns)
        return _looks_tabular(self.pieces)


def _layer(page: Any) -> _Layer:
    import pypdfium2.raw as raw

    textpage = page.get_textpage()
    rotation = page.get_rotation() % 360
    left, bottom, right, top = page.get_mediabox()
    try:
        pieces = page_pieces(textpage, rotation, right - left, top - bottom)
    finally:
        textpage.close()
    # thin horizontal and vertical strokes, those in the top and bottom 12% of the page left out (running
    # headers draw banners there): where they are drawn at three or more heights, a table may be ruled
    ys: set[int] = set()
    xs: set[int] = set()
    _, low, _, high = page.get_bbox()
    margin = (high - low) * 0.12
    for obj in page.get_objects(filter=[raw.FPDF_PAGEOBJ_PATH], max_depth=2):
        x0, y0, x1, y1 = obj.get_bounds()
        if not low + margin < (y0 + y1) / 2 < high - margin:
            continue
        if y1 - y0 < 3 and x1 - x0 > 10:
            ys.add(round((y0 + y1) / 4))
        elif x1 - x0 < 3 and y1 - y0 > 10:
            xs.add(round((x0 + x1) / 4))
    width, height = page.get_size()
    return _Layer(pieces, width, height, rotation != 0, len(xs), len(ys))


def _text_of(paragraphs: list[list[Line]]) -> tuple[str, list[_Line]]:
    """The page text (lines, blank lines between paragraphs) and one `_Line` per paragraph for the headings."""
    text = '\n\n'.join('\n'.join(line.text for line in para) for para in paragraphs)
    lines = [
        _Line(
            ' '.join(ln.text for ln in para),
            0.0 if para[0].table >= 0 else para[0].size,  # size 0: a table is never a heading
            all(ln.bold for ln in para),
            all(ln.italic for ln in para),
            len(para),
        )
        for para in paragraphs
    ]
    return text, lines


def _looks_tabular(pieces: list[Piece], per_row: int = 3, edges: int = 3) -> bool:
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


class _TableFinder:
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

    def tables(self, index: int, layer: _Layer) -> list[tuple[tuple[float, float, float, float], str, str]]:
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


def _with_tables(pieces: list[Piece], tables: list[tuple[tuple[float, float, float, float], str, str]]) -> list[Piece]:
    """The pieces outside every table, and one piece per table standing for it (its rendered text)."""
    if not tables:
        return pieces

    def inside(p: Piece, box: tuple[float, float, float, float]) -> bool:
        cx, cy = (p.x0 + p.x1) / 2, (p.bottom + p.top) / 2
        return box[0] - 1 <= cx <= box[2] + 1 and box[1] - 1 <= cy <= box[3] + 1

    kept = [p for p in pieces if not any(inside(p, t[0]) for t in tables)]
    for index, (box, text, _header) in enumerate(tables):
        kept.append(Piece(text, box[0], box[2], box[1], box[3], 0.0, False, False, index))
    return kept


def _render(page: Any) -> tuple[Any, float]:
    """The page as an 8-bit grey PIL image for OCR, and its resolution in dpi."""
    width, height = page.get_size()
    scale = min(OCR_DPI / 72, math.sqrt(MAX_OCR_PIXELS / max(width * height, 1.0)))
    bitmap = page.render(scale=scale, grayscale=True)
    try:
        return bitmap.to_pil().convert('L'), scale * 72
    finally:
        bitmap.close()


def _read_page(pdf: Any, index: int, mode: str, finder: _TableFinder) -> tuple[_Page, Any]:
    """One page's text layer, whether it needs OCR, and (when it does and OCR can run) its image."""
    with _PDFIUM:
        page = pdf[index]
        try:
            layer = _layer(page) if mode != 'always' else _Layer([], 0.0, 0.0, False, 0, 0)
            plain = ' '.join(p.text for p in layer.pieces)
            chars = sum(not c.isspace() for c in plain)
            needs = mode == 'always' or (
                mode == 'auto'
                and (text_is_garbage(plain) or (chars < LITTLE_TEXT and _image_coverage(page) >= IMAGE_COVERAGE))
            )
            image = _render(page) if needs and tesseract_path() is not None else None
        finally:
            page.close()
    if image is not None:
        return _Page('', [], needs_ocr=True), image
    tables = [] if needs else finder.tables(index, layer)  # pdfplumber: outside the pdfium lock
    text, lines = _text_of(page_paragraphs(_with_tables(layer.pieces, tables), layer.width))
    return _Page(_clean_page(text), lines, needs_ocr=needs, tables=[(t[1], t[2]) for t in tables]), None


def _extract_pages(data: bytes) -> tuple[list[_Page], list[tuple[int, int, str]], str | None]:
    """Open the PDF and take each page's text: its text layer in reading order, or OCR's.

    Returns the pages, the outline entries and the document title; a damaged or locked file
    is a `ReadError` with its reason.
    """
    mode = ocr_options().mode
    with _PDFIUM:
        pdf = _open(data)
    try:
        with _PDFIUM:
            count = len(pdf)
            entries = _outline_entries(pdf)
            doc_title = _document_title(pdf)
        pages: list[_Page] = []
        finder = _TableFinder(data)
        for index in range(count):
            check_time()  # a thread cannot be killed: a long PDF stops between pages at the time limit
            page, image = _read_page(pdf, index, mode, finder)
            if image is not None:
                text = _clean_page(ocr_image(image[0], image[1]))
                if text.strip() or mode == 'always':
                    page = _Page(text, [], ocr=True, needs_ocr=True)
            pages.append(page)
    finally:
        finder.close()
        with _PDFIUM:
            pdf.close()
    return pages, entries, doc_title


def _place_headings(
    source: str, pages: list[str], page_starts: list[int], entries: list[tuple[int, int, str]]
) -> list[tuple[int, int, int, str]]:
    """Find each heading in the text of its page, in order: (start, body start, level, title).

    A heading the text does not contain (an outline entry with other wording) is placed,
    empty, where the search stood, so its section still opens on the right page.
    """
    placed: list[tuple[int, int, int, str]] = []
    cursor = 0
    for page_no, level, title in entries:
        if page_no >= len(pages):
            continue
        page_start = page_starts[page_no]
        page_end = page_start + len(pages[page_no])
        lo = max(cursor, page_start)
        pattern = _pattern(title)
        m = pattern.search(source, lo, page_end) if pattern else None
        if m is not None:
            placed.append((m.start(), m.end(), level, title))
            cursor = m.end()
        else:
            at = max(cursor, page_start)
            placed.append((at, at, level, title))
            cursor = at
    return placed


def _outline(
    source: str,
    page_starts: list[int],
    placed: list[tuple[int, int, int, str]],
    tables: dict[tuple[int, int], int | None] | None = None,
) -> OutlineBuilder:
    """Sections from the placed headings; bodies split into paragraphs that never cross a page.

    ``tables``: ``(start, end) -> header end`` of the tables in ``source``: those paragraphs are table blocks.
    """
    tables = tables or {}
    outline = OutlineBuilder()
    outline.page_starts = page_starts
    boundaries = sorted({*page_starts, len(source)})

    def add_body(start: int, end: int) -> None:
        for b_lo, b_hi in itertools.pairwise(boundaries):
            lo, hi = max(start, b_lo), min(end, b_hi)
            if hi > lo:
                for s, e in paragraph_spans(source, lo, hi):
                    if (s, e) in tables:
                        outline.add_span(s, e, 'table', tables[s, e])
                    else:
                        outline.add_span(s, e)

    prev_end = 0
    for h_start, h_end, level, title in placed:
        add_body(prev_end, h_start)
        outline.open_section(title, level, h_start)
        prev_end = h_end
    add_body(prev_end, len(source))
    return outline


def _table_spans(pages: list[str], page_starts: list[int], info: list[_Page]) -> dict[tuple[int, int], int | None]:
    """Where each page's tables are in ``source``: ``(start, end) -> header end`` (``None``: no header)."""
    spans: dict[tuple[int, int], int | None] = {}
    for text, start, page in zip(pages, page_starts, info, strict=True):
        cursor = 0
        for table, header in page.tables:
            at = text.find(table, cursor)
            if at < 0:  # a row dropped as a running line: the rest reads as text
                continue
            cursor = at + len(table)
            spans[start + at, start + cursor] = start + at + len(header) if header else None
    return spans


def read_pdf(data: bytes, path: Path) -> ParsedDocument:
    page_info, entries, doc_title = _extract_pages(data)
    pages = [join_hyphenated(p) for p in _strip_running([p.text for p in page_info])]
    warnings: list[str] = []
    unread = [i + 1 for i, p in enumerate(page_info) if p.needs_ocr and not p.ocr]
    if unread and tesseract_path() is None:
        listed = ', '.join(map(str, unread))
        if not any(p.strip() for p in pages):
            raise ReadError(
                f'no extractable text: page(s) {listed} need OCR (no usable text layer); {INSTALL_TESSERACT}'
            )
        warnings.append(f'page(s) {listed} not read: they need OCR (no usable text layer); {INSTALL_TESSERACT}')
    if not any(p.strip() for p in pages):
        hint = 'OCR found none either' if any(p.ocr for p in page_info) else "ingest with ocr='auto' to OCR it"
        raise ReadError(
            f'no extractable text: the PDF has {len(pages)} page(s) but no text layer '
            f'(a scanned or image-only PDF); {hint}'
        )
    if not entries:
        entries = _font_headings([p.lines for p in page_info])

    source = '\n\n'.join(pages)
    page_starts: list[int] = []
    pos = 0
    for p in pages:
        page_starts.append(pos)
        pos += len(p) + 2
    placed = _place_headings(source, pages, page_starts, entries)
    outline = _outline(source, page_starts, placed, _table_spans(pages, page_starts, page_info))
    first_heading = placed[0][3] if placed and placed[0][0] < 300 else None
    return ParsedDocument(
        source=source,
        title=doc_title or first_heading or title_from_path(path),
        root=outline.root,
        format='pdf',
        metadata={'page_count': len(pages)},
        page_starts=page_starts,
        warnings=warnings,
        ocr_pages=[i + 1 for i, p in enumerate(page_info) if p.ocr],
    )
