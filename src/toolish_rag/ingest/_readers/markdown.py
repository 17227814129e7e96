"""Markdown via markdown-it-py (CommonMark + GFM tables): the parser, not regexes, finds headings.

So a ``# comment`` inside a fenced or indented code block is code, never a heading. YAML
front matter becomes document metadata (``title:`` the document title); text before the
first heading is kept as the document's preamble. Documentation sites' syntax is read as the
site renders it (`expand`): includes in place, admonitions and tabs as text, and an mkdocs
``attr_list`` anchor (``## Title { #anchor }``) out of the heading, kept as the ``anchor``
metadata of its section's chunks (docs/ingestion.md#markdown).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]
from markdown_it import MarkdownIt
from markdown_it.token import Token

from .._model import BlockKind, OutlineBuilder, ParsedDocument, normalise_metadata
from ._mkdocs import expand
from .text import decode_text, title_from_path

__all__ = ['parse_markdown', 'read_markdown', 'split_front_matter']

VERSION = 1
"""Bump when the same bytes read differently: its files are then read again (docs/ingestion.md#reader-versions)."""

_BLOCK_KINDS: dict[str, BlockKind] = {
    'table_open': 'table',
    'fence': 'code',
    'code_block': 'code',
    'bullet_list_open': 'list',
    'ordered_list_open': 'list',
}


_ATTR_LIST = re.compile(
    r'\s*\{:?\s*((?:[#.][\w:-]+|[\w-]+=(?:"[^"]*"|\'[^\']*\'|[^\s}]+))(?:\s+(?:[#.][\w:-]+|[\w-]+=(?:"[^"]*"|\'[^\']*\'|[^\s}]+)))*)\s*\}\s*$'
)
"""A trailing mkdocs/Python-Markdown ``attr_list``: ``{ #id .class key=value }`` (``{: ...}`` too)."""


def heading_anchor(heading: str) -> tuple[str, str | None]:
    """``'Query Parameters { #query-parameters }'`` -> ``('Query Parameters', 'query-parameters')``.

    A heading without a trailing attribute list comes back as it is, with no anchor.
    """
    m = _ATTR_LIST.search(heading)
    if m is None or m.start() == 0:
        return heading, None
    anchor = next((token[1:] for token in m.group(1).split() if token.startswith('#')), None)
    return heading[: m.start()].rstrip(), anchor


def _parser() -> MarkdownIt:
    return MarkdownIt('commonmark').enable('table')


def split_front_matter(text: str) -> tuple[str | None, int]:
    """``(yaml_text, body_offset)``: the front matter between ``---`` lines at the very top, if any."""
    if not text.startswith('---\n'):
        return None, 0
    pos = 4
    while True:
        nl = text.find('\n', pos)
        line = text[pos:] if nl < 0 else text[pos:nl]
        if line.rstrip() in ('---', '...'):
            return text[4:pos], (len(text) if nl < 0 else nl + 1)
        if nl < 0:
            return None, 0
        pos = nl + 1


def _inline_text(token: Token) -> str:
    parts: list[str] = []
    for child in token.children or []:
        if child.type in ('text', 'code_inline', 'html_inline'):
            parts.append(child.content)
        elif child.type in ('softbreak', 'hardbreak'):
            parts.append(' ')
        elif child.type == 'image':
            parts.append(_inline_text(child))
    return ' '.join(''.join(parts).split())


def parse_markdown(text: str, *, default_title: str, path: Path | None = None) -> ParsedDocument:
    """Parse decoded Markdown text into a `ParsedDocument` whose ``source`` is ``text`` as its site renders it.

    ``path``: the file ``text`` came from, where its includes are looked for (`expand`); without
    it, includes are left as they are. Headings lose their ``attr_list`` (kept as anchors).
    """
    warnings: list[str] = []
    fm_text, body_offset = split_front_matter(text)
    title, metadata = _front_matter(fm_text, warnings)
    tokens, body, headings = _headings(expand(text[body_offset:], path, warnings))
    text = text[:body_offset] + body
    line_starts = [0]
    for i, ch in enumerate(body):
        if ch == '\n':
            line_starts.append(i + 1)

    def offset(line: int) -> int:
        return body_offset + (line_starts[line] if line < len(line_starts) else len(body))

    def span(token: Token) -> tuple[int, int]:
        assert token.map is not None
        start, end = offset(token.map[0]), offset(token.map[1])
        while end > start and text[end - 1].isspace():
            end -= 1
        return start, end

    outline = OutlineBuilder()
    first_h1: str | None = None
    for tok in tokens:
        if tok.level != 0 or tok.map is None or tok.nesting == -1:
            continue
        if tok.type == 'heading_open':
            heading, anchor = headings[tok.map[0]]
            level = int(tok.tag[1:])
            if level == 1 and first_h1 is None and heading:
                first_h1 = heading
            outline.open_section(heading or '(untitled)', level, span(tok)[0]).anchor = anchor
        elif tok.type != 'hr':
            kind = _BLOCK_KINDS.get(tok.type, 'text')
            start, end = span(tok)
            header_end = None
            if kind == 'table':
                header_end = min(end, offset(tok.map[0] + 2) - 1)
            if end > start:
                outline.add_span(start, end, kind, header_end)
    return ParsedDocument(
        source=text,
        title=title or first_h1 or default_title,
        root=outline.root,
        format='markdown',
        metadata=metadata,
        warnings=warnings,
    )


def _front_matter(fm_text: str | None, warnings: list[str]) -> tuple[str | None, dict[str, Any]]:
    """``(title, metadata)`` from the YAML front matter (``title:`` apart); what is wrong with it, warned."""
    if fm_text is None:
        return None, {}
    try:
        loaded = yaml.safe_load(fm_text)
    except yaml.YAMLError as exc:
        warnings.append(f'front matter ignored: invalid YAML ({str(exc).splitlines()[0]})')
        return None, {}
    if not isinstance(loaded, dict):
        if loaded is not None:
            warnings.append('front matter ignored: not a mapping')
        return None, {}
    fm_title = loaded.pop('title', None)
    title = fm_title.strip() if isinstance(fm_title, str) and fm_title.strip() else None
    return title, normalise_metadata(loaded, warnings)


def _headings(body: str) -> tuple[list[Token], str, dict[int, tuple[str, str | None]]]:
    """``body`` parsed; the body with each heading's ``attr_list`` cut from its line; each heading's line ->
    ``(title, anchor)``. Only the end of heading lines changes, so the tokens' line numbers still hold."""
    tokens = _parser().parse(body)
    lines: list[str] | None = None
    headings: dict[int, tuple[str, str | None]] = {}
    for i, tok in enumerate(tokens):
        if tok.type != 'heading_open' or tok.level != 0 or tok.map is None:
            continue
        raw = _inline_text(tokens[i + 1]) if i + 1 < len(tokens) else ''
        headings[tok.map[0]] = heading_anchor(raw)
        if headings[tok.map[0]][0] != raw:
            lines = lines if lines is not None else body.split('\n')
            line = lines[tok.map[0]]
            m = _ATTR_LIST.search(line.rstrip().rstrip('#').rstrip())
            if m is not None and m.start() > 0:
                lines[tok.map[0]] = line[: m.start()]
    return tokens, ('\n'.join(lines) if lines is not None else body), headings


def read_markdown(data: bytes, path: Path) -> ParsedDocument:
    return parse_markdown(decode_text(data), default_title=title_from_path(path), path=path.absolute())
