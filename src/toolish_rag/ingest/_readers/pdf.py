"""PDF via pypdf (BSD): text per page, pages recorded, sections from the outline or the fonts.

See docs/ingestion.md#formats.
"""

from __future__ import annotations

import io
import itertools
import logging
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._limits import check_time
from .._model import OutlineBuilder, ParsedDocument, ReadError
from .text import paragraph_spans, title_from_path

__all__ = ['read_pdf']

VERSION = 0
"""Bump when the same bytes read differently: its files are then read again (docs/ingestion.md#reader-versions)."""


@dataclass(slots=True)
class _Line:
    text: str
    size: float
    bold: bool


def _pattern(title: str) -> re.Pattern[str] | None:
    chars = [re.escape(c) for c in title if not c.isspace()]
    if len(chars) < 2:
        return None
    return re.compile(r'\s*'.join(chars), re.IGNORECASE)


def _page_lines(page: Any) -> tuple[str, list[_Line]]:
    runs: list[tuple[str, float, bool, float]] = []

    def visit(text: str, cm: Any, tm: Any, font: Any, size: float) -> None:
        if not text:
            return
        scale = abs(tm[3] or tm[0] or 1.0) * abs(cm[3] or cm[0] or 1.0)
        name = str(font.get('/BaseFont', '')) if font else ''
        bold = 'bold' in name.lower() or 'black' in name.lower() or 'heavy' in name.lower()
        runs.append((text, round(float(size) * scale, 1), bold, float(tm[5]) * abs(cm[3] or 1.0) + float(cm[5])))

    text = page.extract_text(visitor_text=visit) or ''
    lines: list[_Line] = []
    current: list[tuple[str, float, bool, float]] = []

    def close() -> None:
        content = ''.join(r[0] for r in current)
        visible = [r for r in current if r[0].strip()]
        if visible and content.strip():
            size = max(r[1] for r in visible)
            bold = all(r[2] for r in visible)
            lines.append(_Line(' '.join(content.split()), size, bold))
        current.clear()

    last_y: float | None = None
    for run in runs:
        if current and last_y is not None and abs(run[3] - last_y) > max(2.0, run[1] * 0.5):
            close()
        current.append(run)
        last_y = run[3]
        if run[0].endswith('\n'):
            close()
            last_y = None
    close()
    return text, lines


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
    running = {k for k, n in edge_keys.items() if n >= max(3, int(len(pages) * 0.6)) and k.strip('# ')}
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


def _outline_entries(reader: Any) -> list[tuple[int, int, str]]:
    entries: list[tuple[int, int, str]] = []

    def walk(items: Any, depth: int) -> None:
        for item in items:
            if isinstance(item, list):
                walk(item, depth + 1)
                continue
            try:
                page = reader.get_destination_page_number(item)
            except Exception:
                continue
            title = ' '.join(str(getattr(item, 'title', '') or '').split())
            if title and page is not None and page >= 0:
                entries.append((page, depth + 1, title))

    try:
        walk(reader.outline, 0)
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
            if line.size >= body * 1.15 or (line.bold and line.size >= body * 0.95):
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
    styles = sorted({(c.size, c.bold) for _, c in candidates}, reverse=True)
    level = {style: i + 1 for i, style in enumerate(styles[:6])}
    return [(p, level.get((c.size, c.bold), 6), c.text) for p, c in candidates]


def _document_title(reader: Any) -> str | None:
    try:
        meta = reader.metadata
        title = str(meta.title).strip() if meta is not None and meta.title else ''
    except Exception:
        return None
    if not title or title.lower().startswith(('microsoft word', 'untitled')) or re.fullmatch(r'\S+\.\w{2,4}', title):
        return None
    return title


def _extract_pages(data: bytes) -> tuple[list[str], list[list[_Line]], list[tuple[int, int, str]], str | None]:
    """Open the PDF and take each page's text (and line layout when there is no outline).

    Returns the cleaned page texts, their lines, the outline entries and the document title;
    every way pypdf fails on a damaged or locked file becomes a `ReadError` with its reason.
    """
    import pypdf
    from pypdf.errors import PdfReadError

    logging.getLogger('pypdf').setLevel(logging.ERROR)
    if not data.lstrip()[:1024].startswith(b'%PDF') and b'%PDF' not in data[:1024]:
        raise ReadError('not a PDF (no %PDF header)')
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            try:
                opened = reader.decrypt('')
            except Exception as exc:
                raise ReadError(f'encrypted PDF that cannot be opened: {exc}') from None
            if not opened:
                raise ReadError('encrypted PDF: a password is required to open it')
        entries = _outline_entries(reader)
        pages_raw: list[str] = []
        page_lines: list[list[_Line]] = []
        for page in reader.pages:
            check_time()  # a thread cannot be killed: a long PDF stops between pages at the time limit
            lines: list[_Line]
            if entries:  # the outline gives the sections: no need for font analysis
                text, lines = page.extract_text() or '', []
            else:
                text, lines = _page_lines(page)
            pages_raw.append(_clean_page(text))
            page_lines.append(lines)
        doc_title = _document_title(reader)
    except ReadError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise ReadError(f'malformed PDF: {exc}') from None
    return pages_raw, page_lines, entries, doc_title


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


def _outline(source: str, page_starts: list[int], placed: list[tuple[int, int, int, str]]) -> OutlineBuilder:
    """Sections from the placed headings; bodies split into paragraphs that never cross a page."""
    outline = OutlineBuilder()
    outline.page_starts = page_starts
    boundaries = sorted({*page_starts, len(source)})

    def add_body(start: int, end: int) -> None:
        for b_lo, b_hi in itertools.pairwise(boundaries):
            lo, hi = max(start, b_lo), min(end, b_hi)
            if hi > lo:
                for s, e in paragraph_spans(source, lo, hi):
                    outline.add_span(s, e)

    prev_end = 0
    for h_start, h_end, level, title in placed:
        add_body(prev_end, h_start)
        outline.open_section(title, level, h_start)
        prev_end = h_end
    add_body(prev_end, len(source))
    return outline


def read_pdf(data: bytes, path: Path) -> ParsedDocument:
    pages_raw, page_lines, entries, doc_title = _extract_pages(data)
    pages = _strip_running(pages_raw)
    if not any(p.strip() for p in pages):
        raise ReadError(
            f'no extractable text: the PDF has {len(pages)} page(s) but no text layer '
            '(a scanned or image-only PDF); run OCR on it first (e.g. ocrmypdf)'
        )
    if not entries:
        entries = _font_headings(page_lines)

    source = '\n\n'.join(pages)
    page_starts: list[int] = []
    pos = 0
    for p in pages:
        page_starts.append(pos)
        pos += len(p) + 2
    placed = _place_headings(source, pages, page_starts, entries)
    outline = _outline(source, page_starts, placed)
    first_heading = placed[0][3] if placed and placed[0][0] < 300 else None
    return ParsedDocument(
        source=source,
        title=doc_title or first_heading or title_from_path(path),
        root=outline.root,
        format='pdf',
        metadata={'page_count': len(pages)},
        page_starts=page_starts,
    )
