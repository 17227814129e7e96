"""Headings of a PDF without an outline, from its fonts; and where each heading stands in the text.

See docs/ingestion.md#pdf-layout.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

__all__ = ['HeadingLine', 'font_headings', 'place_headings']


@dataclass(slots=True)
class HeadingLine:
    """A paragraph of a page as heading detection sees it: its text and style."""

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


def _adjacent(page_lines: list[list[HeadingLine]], a: tuple[int, HeadingLine], b: tuple[int, HeadingLine]) -> bool:
    if a[0] != b[0]:
        return False
    lines = page_lines[a[0]]
    ia = next(i for i, ln in enumerate(lines) if ln is a[1])
    return ia + 1 < len(lines) and lines[ia + 1] is b[1]


def font_headings(page_lines: list[list[HeadingLine]]) -> list[tuple[int, int, str]]:
    sizes: Counter[float] = Counter()
    for lines in page_lines:
        for line in lines:
            sizes[line.size] += len(line.text)
    if not sizes:
        return []
    body = sizes.most_common(1)[0][0]
    candidates: list[tuple[int, HeadingLine]] = []
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
    kept: list[tuple[int, HeadingLine]] = []
    run: list[tuple[int, HeadingLine]] = []
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


def place_headings(
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
