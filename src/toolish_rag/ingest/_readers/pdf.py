"""PDF via pdfium (pypdfium2): text per page in reading order, OCR where a page has no usable text layer.

Pages recorded; sections from the outline or the fonts; running headers, footers and page numbers
dropped; words hyphenated at line ends joined. See docs/ingestion.md#pdf-layout and #ocr.
"""

from __future__ import annotations

import itertools
import math
import re
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._limits import check_time
from .._model import OutlineBuilder, ParsedDocument, ReadError
from ._boxes import Box, LineBox, WordedLine, fractions, locate_lines, ocr_lines
from ._ocr import (
    DEFAULT_OCR,
    INSTALL_TESSERACT,
    OcrOptions,
    join_hyphenated,
    ocr_page,
    tesseract_path,
    text_is_garbage,
)
from ._pdf_headings import HeadingLine, font_headings, place_headings
from ._pdf_layout import Line, Piece, page_paragraphs, page_pieces, turned
from ._pdf_table_pages import FoundTable, TableFinder, looks_tabular, pieces_in, table_row_boxes, with_tables
from .text import paragraph_spans, title_from_path

__all__ = ['read_pdf']

VERSION = 5
"""Bump when the same bytes read differently: its files are then read again (docs/ingestion.md#reader-versions)."""


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
    lines: list[HeadingLine]
    ocr: bool = False
    needs_ocr: bool = False
    tables: list[tuple[str, str]] = field(default_factory=list)
    """Each table's rendered text and header, as written into ``text``."""
    boxes: Sequence[LineBox | WordedLine] = field(default_factory=list)
    """Each line's text and box on the page as displayed (an OCR'd line's words' too), in the order ``text`` has them."""


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
    frame: tuple[float, float, float, float] = (0.0, 0.0, 1.0, 1.0)
    """The page as displayed (its CropBox, turned like the pieces): ``(left, bottom, right, top)``."""

    def fractions(self, piece: Piece) -> Box:
        """``piece``'s box (its em box where it has one) as fractions of the page as displayed, origin top-left."""
        return self.box_fractions(piece.em or (piece.x0, piece.bottom, piece.x1, piece.top))

    def box_fractions(self, box: tuple[float, float, float, float]) -> Box:
        """A box ``(left, bottom, right, top)`` in PDF points as fractions of the page as displayed, origin top-left."""
        left, bottom, right, top = self.frame
        width, height = max(right - left, 1e-6), max(top - bottom, 1e-6)
        x0, low, x1, high = box
        return fractions((x0 - left, top - high, x1 - left, top - low), width, height)

    def may_hold_table(self) -> bool:
        """Rules making a grid of two or more columns, or some rules and cells lined up, or cells lined up well."""
        if self.verticals >= 3 and self.horizontals >= 3:
            return True
        if self.horizontals >= 3 and looks_tabular(self.pieces, per_row=2, edges=2):
            return True  # rules under the header only (or a box around two columns)
        return looks_tabular(self.pieces)


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
    frame = turned(tuple(page.get_cropbox()), rotation, right - left, top - bottom)
    return _Layer(pieces, width, height, rotation != 0, len(xs), len(ys), (frame[0], frame[1], frame[2], frame[3]))


def _text_of(paragraphs: list[list[Line]]) -> tuple[str, list[HeadingLine]]:
    """The page text (lines, blank lines between paragraphs) and one `HeadingLine` per paragraph for the headings."""
    text = '\n\n'.join('\n'.join(line.text for line in para) for para in paragraphs)
    lines = [
        HeadingLine(
            ' '.join(ln.text for ln in para),
            0.0 if para[0].table >= 0 else para[0].size,  # size 0: a table is never a heading
            all(ln.bold for ln in para),
            all(ln.italic for ln in para),
            len(para),
        )
        for para in paragraphs
    ]
    return text, lines


def _render(page: Any) -> tuple[Any, float]:
    """The page as an 8-bit grey PIL image for OCR, and its resolution in dpi."""
    width, height = page.get_size()
    scale = min(OCR_DPI / 72, math.sqrt(MAX_OCR_PIXELS / max(width * height, 1.0)))
    bitmap = page.render(scale=scale, grayscale=True)
    try:
        return bitmap.to_pil().convert('L'), scale * 72
    finally:
        bitmap.close()


def _read_page(pdf: Any, index: int, mode: str, finder: TableFinder) -> tuple[_Page, Any]:
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
    paragraphs = page_paragraphs(with_tables(layer.pieces, tables), layer.width)
    text, lines = _text_of(paragraphs)
    boxes = _line_boxes(layer, paragraphs, tables)
    return _Page(_clean_page(text), lines, needs_ocr=needs, tables=[(t[1], t[2]) for t in tables], boxes=boxes), None


def _line_boxes(layer: _Layer, paragraphs: list[list[Line]], tables: list[FoundTable]) -> list[LineBox]:
    """Each piece's text and box in reading order; a table's, row by row where its rows can be told apart."""
    out: list[LineBox] = []
    for piece in (piece for para in paragraphs for line in para for piece in line.pieces):
        rows = table_row_boxes(piece.text, pieces_in(layer.pieces, tables[piece.table][0])) if piece.table >= 0 else []
        out.extend((text, layer.box_fractions(box)) for text, box in rows)
        if not rows:
            out.append((piece.text, layer.fractions(piece)))
    return out


def _extract_pages(data: bytes, ocr: OcrOptions) -> tuple[list[_Page], list[tuple[int, int, str]], str | None]:
    """Open the PDF and take each page's text: its text layer in reading order, or OCR's.

    Returns the pages, the outline entries and the document title; a damaged or locked file
    is a `ReadError` with its reason.
    """
    mode = ocr.mode
    with _PDFIUM:
        pdf = _open(data)
    try:
        with _PDFIUM:
            count = len(pdf)
            entries = _outline_entries(pdf)
            doc_title = _document_title(pdf)
        pages: list[_Page] = []
        finder = TableFinder(data)
        for index in range(count):
            check_time()  # a thread cannot be killed: a long PDF stops between pages at the time limit
            page, image = _read_page(pdf, index, mode, finder)
            if image is not None:
                read = ocr_page(image[0], image[1], languages=ocr.languages)
                text = _clean_page(read.text)
                if text.strip() or mode == 'always':
                    page = _Page(text, [], ocr=True, needs_ocr=True, tables=read.tables(), boxes=ocr_lines(read))
            pages.append(page)
    finally:
        finder.close()
        with _PDFIUM:
            pdf.close()
    return pages, entries, doc_title


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


def _no_text_hint(pages: list[_Page], mode: str) -> str:
    """What to do about a PDF without text: advice that fits the OCR mode it was read with."""
    if any(p.ocr or p.needs_ocr for p in pages):  # Tesseract read the pages (its absence is reported before)
        return 'OCR found none either'
    if mode == 'never':
        return "ingest with ocr='auto' to OCR it"
    return "no page looked scanned to ocr='auto' (blank, or a text layer without text): ocr='always' OCRs every page"


def read_pdf(data: bytes, path: Path, *, ocr: OcrOptions = DEFAULT_OCR) -> ParsedDocument:
    """A PDF's text, pages and outline; pages without a usable text layer OCR'd as ``ocr`` says (docs/ingestion.md#ocr)."""
    page_info, entries, doc_title = _extract_pages(data, ocr)
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
        hint = _no_text_hint(page_info, ocr.mode)
        raise ReadError(
            f'no extractable text: the PDF has {len(pages)} page(s) but no text layer '
            f'(a scanned or image-only PDF); {hint}'
        )
    if not entries:
        entries = font_headings([p.lines for p in page_info])

    source = '\n\n'.join(pages)
    page_starts: list[int] = []
    pos = 0
    for p in pages:
        page_starts.append(pos)
        pos += len(p) + 2
    boxes = [b for i, p in enumerate(page_info) for b in locate_lines(pages[i], p.boxes, i + 1, page_starts[i])]
    placed = place_headings(source, pages, page_starts, entries)
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
        boxes=boxes,
    )
