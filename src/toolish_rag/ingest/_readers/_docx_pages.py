"""Where a DOCX file's pages start, as far as the file says: Word's rendered page breaks, else explicit ones.

A DOCX holds no pages: Word lays them out when it opens the file, and records where it broke
them (``w:lastRenderedPageBreak``) when it saves. Where those are present they are the pages
(they include explicit and section breaks); else the breaks the author put in are counted
(``w:br w:type="page"``, ``w:pageBreakBefore``, a section that starts on a new page). A file
with neither has no page numbers. See docs/grounded.md#where-a-quote-stands.
"""

from __future__ import annotations

from typing import Any

__all__ = ['has_rendered_breaks', 'page_breaks']

_W = '{http://schemas.openxmlformats.org/wordprocessingml/2006/main}'
_OFF = frozenset({'0', 'false', 'off'})


def has_rendered_breaks(body: Any) -> bool:
    """Whether Word (or another layout engine) recorded where it broke the pages of ``body`` (a ``w:body``)."""
    return next(body.iter(f'{_W}lastRenderedPageBreak'), None) is not None


def page_breaks(element: Any, rendered: bool) -> tuple[int, int]:
    """The page breaks a paragraph or table (``w:p``, ``w:tbl``) holds before its first text, and after it.

    ``rendered``: count Word's rendered breaks only (`has_rendered_breaks`); else the explicit
    ones, a paragraph's ``pageBreakBefore`` and a section ending with it that is not continuous.
    """
    before = after = 0
    if not rendered:
        ppr = element.find(f'{_W}pPr')
        flag = ppr.find(f'{_W}pageBreakBefore') if ppr is not None else None
        before += flag is not None and flag.get(f'{_W}val', 'true') not in _OFF
    written = False
    breaks = f'{_W}lastRenderedPageBreak' if rendered else f'{_W}br'
    for node in element.iter(f'{_W}t', breaks):
        if node.tag == f'{_W}t':
            written = written or bool(node.text)
        elif rendered or node.get(f'{_W}type') == 'page':
            if written:
                after += 1
            else:
                before += 1
    if not rendered:
        for section in element.iter(f'{_W}sectPr'):
            kind = section.find(f'{_W}type')
            after += (kind.get(f'{_W}val') if kind is not None else 'nextPage') != 'continuous'
    return before, after
