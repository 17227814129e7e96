"""Markdown via markdown-it-py (CommonMark + GFM tables): the parser, not regexes, finds headings.

So a ``# comment`` inside a fenced or indented code block is code, never a heading. YAML
front matter becomes document metadata (``title:`` the document title); text before the
first heading is kept as the document's preamble.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]
from markdown_it import MarkdownIt
from markdown_it.token import Token

from .._model import BlockKind, OutlineBuilder, ParsedDocument, normalise_metadata
from .text import decode_text, title_from_path

__all__ = ['parse_markdown', 'read_markdown', 'split_front_matter']

VERSION = 0
"""Bump when the same bytes read differently: its files are then read again (docs/ingestion.md#reader-versions)."""

_BLOCK_KINDS: dict[str, BlockKind] = {
    'table_open': 'table',
    'fence': 'code',
    'code_block': 'code',
    'bullet_list_open': 'list',
    'ordered_list_open': 'list',
}


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


def parse_markdown(text: str, *, default_title: str) -> ParsedDocument:
    """Parse decoded Markdown text into a `ParsedDocument` whose ``source`` is ``text``."""
    warnings: list[str] = []
    metadata: dict[str, Any] = {}
    title: str | None = None
    fm_text, body_offset = split_front_matter(text)
    if fm_text is not None:
        try:
            loaded = yaml.safe_load(fm_text)
        except yaml.YAMLError as exc:
            warnings.append(f'front matter ignored: invalid YAML ({str(exc).splitlines()[0]})')
            loaded = None
        if isinstance(loaded, dict):
            fm_title = loaded.pop('title', None)
            if isinstance(fm_title, str) and fm_title.strip():
                title = fm_title.strip()
            metadata = normalise_metadata(loaded, warnings)
        elif loaded is not None:
            warnings.append('front matter ignored: not a mapping')
    body = text[body_offset:]
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
    tokens = _parser().parse(body)
    first_h1: str | None = None
    for i, tok in enumerate(tokens):
        if tok.level != 0 or tok.map is None or tok.nesting == -1:
            continue
        if tok.type == 'heading_open':
            heading = _inline_text(tokens[i + 1]) if i + 1 < len(tokens) else ''
            level = int(tok.tag[1:])
            if level == 1 and first_h1 is None and heading:
                first_h1 = heading
            outline.open_section(heading or '(untitled)', level, span(tok)[0])
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


def read_markdown(data: bytes, path: Path) -> ParsedDocument:
    return parse_markdown(decode_text(data), default_title=title_from_path(path))
