"""HTML (and XHTML): ``h1``-``h6`` build the section tree; page chrome is dropped.

See docs/ingestion.md#formats.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from bs4 import BeautifulSoup
from bs4.element import Comment, Declaration, Doctype, NavigableString, ProcessingInstruction, Tag

from .._limits import check_time, current_limits
from .._model import OutlineBuilder, ParsedDocument, ReadError
from ._tables import SpanCell, add_span_table
from .text import decode_text, title_from_path

__all__ = ['check_shape', 'html_into_outline', 'read_html']

VERSION = 2
"""Bump when the same bytes read differently: its files are then read again (docs/ingestion.md#reader-versions)."""

_DROP_TAGS = (
    'script', 'style', 'noscript', 'nav', 'aside', 'form', 'iframe', 'svg', 'template', 'button',
    'select', 'input', 'textarea', 'canvas', 'object', 'embed', 'link', 'meta', 'head', 'math',
)  # fmt: skip
_DROP_ROLES = frozenset({'navigation', 'search', 'complementary', 'contentinfo'})
_DROP_TOKENS = frozenset(
    {
        'toc', 'navbox', 'vertical-navbox', 'sidebar', 'mw-editsection', 'catlinks', 'printfooter', 'mw-jump-link',
        'noprint', 'mw-navigation', 'mw-panel', 'mw-head', 'breadcrumb', 'breadcrumbs', 'cookie-banner',
        'skip-link', 'reference', 'mw-cite-backlink', 'headerlink', 'bookmark', 'anchor-link', 'sr-only',
        'visually-hidden', 'jump-to-nav', 'sitesub', 'contentsub', 'hatnote', 'mw-empty-elt',
    }
)  # fmt: skip
_HEADINGS = {'h1': 1, 'h2': 2, 'h3': 3, 'h4': 4, 'h5': 5, 'h6': 6}
_BLOCK_TAGS = frozenset(
    {
        'p', 'div', 'section', 'article', 'main', 'body', 'html', 'blockquote', 'dl', 'dt', 'dd', 'figure',
        'figcaption', 'header', 'footer', 'address', 'details', 'summary', 'center', 'hgroup', 'caption', 'li',
        'fieldset', 'legend', 'table', 'thead', 'tbody', 'tfoot', 'tr', 'td', 'th',
    }
)  # fmt: skip


def _is_boilerplate(tag: Tag) -> bool:
    if tag.get('role') in _DROP_ROLES or tag.get('aria-hidden') == 'true':
        return True
    tokens = {str(c).lower() for c in (tag.get('class') or [])}
    ident = tag.get('id')
    if isinstance(ident, str):
        tokens.add(ident.lower())
    return bool(tokens & _DROP_TOKENS)


def _clean(root: Tag) -> None:
    for tag in root.find_all(_DROP_TAGS):
        tag.decompose()
    for tag in root.find_all(['header', 'footer']):
        if tag.decomposed:
            continue
        if (tag.find_parent(['article', 'main']) is None and tag.find(list(_HEADINGS)) is None) or tag.name == 'footer':
            tag.decompose()
    for tag in root.find_all(True):
        if not tag.decomposed and _is_boilerplate(tag):
            tag.decompose()
    for heading in root.find_all(list(_HEADINGS)):
        for a in heading.find_all('a'):
            if a.get_text(strip=True) in ('#', '¶', '§', '🔗'):
                a.decompose()
    for node in root.find_all(string=lambda s: isinstance(s, Comment | ProcessingInstruction | Declaration | Doctype)):
        node.extract()


def _content_root(soup: BeautifulSoup) -> Tag:
    articles = soup.find_all('article')
    candidates = (
        soup.find('main'),
        soup.find(True, attrs={'role': 'main'}),
        articles[0] if len(articles) == 1 else None,
        soup.find(id='content'),
        soup.find('body'),
    )
    for found in candidates:
        if isinstance(found, Tag) and found.get_text(strip=True):
            return found
    return soup


def _raw_text(node: Tag) -> str:
    """Text of ``node`` with inline elements joined as written and block elements spaced apart."""
    parts: list[str] = []
    for child in node.children:
        if isinstance(child, NavigableString):
            parts.append(str(child))
        elif isinstance(child, Tag):
            if child.name == 'img':
                parts.append(str(child.get('alt') or ''))
            elif child.name in _BLOCK_TAGS or child.name in ('br', 'ul', 'ol', 'pre', *_HEADINGS):
                parts.extend((' ', _raw_text(child), ' '))
            else:
                parts.append(_raw_text(child))
    return ''.join(parts)


def _text(node: Tag) -> str:
    return ' '.join(_raw_text(node).split())


_MAX_SPAN = 1000
"""The largest colspan or rowspan taken as written (HTML allows 1000 and 65534); beyond that, clipped."""


def _span(cell: Tag, name: str) -> int:
    value = str(cell.get(name) or '1').strip()
    return max(1, min(int(value), _MAX_SPAN)) if value.isdigit() else 1


def _table(table: Tag) -> tuple[list[list[SpanCell]], int, str, list[Tag]]:
    """A table's cells by row (`span_grid` lays out the spans), its header rows, caption, nested tables.

    Header rows: the ``<thead>`` rows, else the leading rows made only of ``<th>`` cells.
    Nested tables read as text in their cell, and are returned to be written as tables after it.
    """
    trs = [tr for tr in table.find_all('tr') if tr.find_parent('table') is table]
    rows: list[list[SpanCell]] = []
    header_rows, in_header = 0, True
    for r, tr in enumerate(trs):
        cells = [c for c in tr.find_all(['th', 'td']) if c.find_parent('tr') is tr]
        rows.append([SpanCell(_text(c), _span(c, 'colspan'), min(_span(c, 'rowspan'), len(trs) - r)) for c in cells])
        parent = tr.find_parent(['thead', 'tbody', 'tfoot', 'table'])
        is_head = parent is not None and parent.name == 'thead'
        if in_header and (is_head or (cells and all(c.name == 'th' for c in cells) and not table.find('thead'))):
            header_rows = r + 1
        else:
            in_header = False
    caption = table.find('caption')
    title = _text(caption) if caption is not None and caption.find_parent('table') is table else ''
    nested = [t for t in table.find_all('table') if t.find_parent('table') is table]
    return rows, header_rows, title, nested


def _list(lst: Tag, depth: int = 0) -> list[str]:
    lines: list[str] = []
    ordered = lst.name == 'ol'
    for n, li in enumerate(lst.find_all('li', recursive=False), start=1):
        own: list[str] = []
        nested: list[str] = []
        for child in li.children:
            if isinstance(child, Tag) and child.name in ('ul', 'ol'):
                nested.extend(_list(child, depth + 1))
            elif isinstance(child, Tag):
                own.append(_raw_text(child))
            elif isinstance(child, NavigableString):
                own.append(str(child))
        marker = f'{n}.' if ordered else '-'
        text = ' '.join(' '.join(own).split())
        if text:
            lines.append(f'{"  " * depth}{marker} {text}')
        lines.extend(nested)
    return lines


_STRUCTURE = frozenset({'p', 'div', 'table', 'pre', 'ul', 'ol', *_HEADINGS})
"""Tags that make an inline-looking parent a block of its own when they are inside it."""


def check_shape(root: Tag, depth_limit: int | None = None, whose: str = '', what: str = 'HTML') -> None:
    """Refuse a page nested deeper than the ``depth`` limit (or ``depth_limit``, ``whose`` limit it is) or with
    more than ``elements`` tags, in one pass; ``what`` the messages call the page.

    The walk below recurses once per level, so a capped depth is also what keeps it off
    Python's recursion limit.
    """
    limits = current_limits()
    most = limits.depth if depth_limit is None else min(limits.depth, depth_limit)
    depth: dict[int, int] = {id(root): 0}
    count = 0
    for node in root.descendants:
        if not isinstance(node, Tag):
            continue
        count += 1
        level = depth[id(node.parent)] + 1
        if level > most:
            raise ReadError(f'{what} nested deeper than the {most:,}-level limit{whose if most < limits.depth else ""}')
        if count > limits.elements:
            raise ReadError(f'{what} with more than the {limits.elements:,}-element limit')
        depth[id(node)] = level


def _ancestors_of(root: Tag, names: frozenset[str] | tuple[str, ...]) -> set[int]:
    """Ids of the tags under ``root`` that have a descendant named in ``names``: one linear pass.

    Replaces a ``find`` per tag of the walk, which made a page of nested blocks quadratic.
    """
    marked: set[int] = set()
    for tag in root.find_all(list(names)):
        parent = tag.parent
        while parent is not None and id(parent) not in marked:
            marked.add(id(parent))
            if parent is root:
                break
            parent = parent.parent
    return marked


class _Walker:
    def __init__(self, outline: OutlineBuilder, level_offset: int, root: Tag) -> None:
        self.outline = outline
        self.level_offset = level_offset
        self.buffer: list[str] = []
        self.first_heading: str | None = None
        self.holds_structure = _ancestors_of(root, _STRUCTURE)
        self.holds_heading = _ancestors_of(root, tuple(_HEADINGS))
        self.visited = 0

    def flush(self) -> None:
        text = ' '.join(''.join(self.buffer).split())
        self.buffer.clear()
        if text:
            self.outline.block(text)

    def table(self, table: Tag) -> None:
        rows, header_rows, caption, nested = _table(table)
        add_span_table(self.outline, rows, header_rows or None, caption)  # no header markup: guessed
        for inner in nested:
            self.table(inner)

    def walk(self, node: Tag) -> None:
        for child in node.children:
            self.visited += 1
            if self.visited % 4096 == 0:
                check_time()
            if isinstance(child, NavigableString):
                self.buffer.append(str(child))
                continue
            if not isinstance(child, Tag):
                continue
            name = child.name
            if name in _HEADINGS:
                self.flush()
                title = _text(child)
                if title:
                    self.first_heading = self.first_heading or title
                    self.outline.heading(title, _HEADINGS[name] + self.level_offset)
            elif name == 'pre':
                self.flush()
                self.outline.block(child.get_text().strip('\n'), 'code')
            elif name == 'table' and id(child) not in self.holds_heading:
                self.flush()
                self.table(child)
            elif name in ('ul', 'ol'):
                self.flush()
                self.outline.block('\n'.join(_list(child)), 'list')
            elif name == 'br':
                self.buffer.append('\n')
            elif name in _BLOCK_TAGS or id(child) in self.holds_structure:
                self.flush()
                self.walk(child)
                self.flush()
            else:
                self.buffer.append(_raw_text(child) if name != 'img' else str(child.get('alt') or ''))


def html_into_outline(
    markup: str | bytes, outline: OutlineBuilder, *, level_offset: int = 0
) -> tuple[str | None, str | None]:
    """Append an HTML page's content to ``outline``; returns ``(<title>, first heading)``."""
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        soup = BeautifulSoup(markup, 'lxml')
    title_tag = soup.find('title')
    page_title = ' '.join(title_tag.get_text().split()) if isinstance(title_tag, Tag) else None
    check_shape(soup)
    root = _content_root(soup)
    _clean(root)
    walker = _Walker(outline, level_offset, root)
    walker.walk(root)
    walker.flush()
    return page_title or None, walker.first_heading


def read_html(data: bytes, path: Path) -> ParsedDocument:
    if b'\x00' in data[:4096] and not data.startswith((b'\xff\xfe', b'\xfe\xff')):
        raise ReadError('binary file (NUL bytes): not HTML')
    outline = OutlineBuilder()
    page_title, first_heading = html_into_outline(decode_text(data), outline)
    return ParsedDocument(
        source=outline.text(),
        title=first_heading or page_title or title_from_path(path),
        root=outline.root,
        format='html',
    )
