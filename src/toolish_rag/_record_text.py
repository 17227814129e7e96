"""How one record looks to a model, and the one rule every capped output follows.

Shared by the toolset's tool results and `toolish_rag.grounded.ask`'s evidence prompt, so a
passage reads the same wherever the model meets it; below both, so neither imports the other to
use it. See docs/design.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TypeVar

from .content import Chunk, Entity
from .search import SearchHit

__all__ = ['chunk_body', 'field_text', 'fitting', 'indent', 'render_record', 'where']

T = TypeVar('T')

_BREAKS = re.compile('[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]+')
"""Every character `str.splitlines` ends a line at."""
_LINE_LIKE = re.compile(r'\s*(?:\[\s*\d|#|(?:chunk|entity)\s+\S)', re.IGNORECASE)
"""How a result line (``[1] chunk ...``, ``chunk <id> (section: ...)``) or a Markdown header starts."""


def field_text(value: object) -> str:
    """A record field (title, section name, uri, id, metadata value, label) as a model sees it.

    On one line (every line or paragraph separator folded to a space), and never starting like a
    result line or a header (a leading backslash then), so no record can forge a line of the
    output it is shown in. Ordinary values come back unchanged. See docs/security.md.
    """
    text = value if isinstance(value, str) else str(value)
    if _BREAKS.search(text):
        text = _BREAKS.sub(' ', text)
    return '\\' + text if _LINE_LIKE.match(text) else text


def where(chunk: Chunk) -> str:
    """Where a chunk comes from: its document title, section path (the title said once) and uri."""
    sections = chunk.section_path
    if sections and sections[0] == chunk.document_title:
        sections = sections[1:]  # a document whose first heading is its title: say it once
    path = ' > '.join(field_text(s) for s in sections)
    title = field_text(chunk.document_title)
    place = f'{title} > {path}' if path else title
    return f'{place} ({field_text(chunk.document_uri)})'


_TABLE_ROW = re.compile(r'\|[^\n]*\|')
_TABLE_RULE = re.compile(r'\| ---(?: \| ---)* \|')


def chunk_body(chunk: Chunk) -> str:
    """A chunk's text as shown: its ``urtext``, with the table header it continues put back on top.

    Ingestion indexes a piece of a split table with the table's header rows before its rows
    (docs/ingestion.md#tables); shown without them, the rows would be columns of nobody knows
    what. The header is taken from the indexed text only when it is a pipe-table header (an
    optional caption line, pipe rows, the ``| --- |`` line) right before ``urtext``.
    """
    urtext, text = chunk.urtext, chunk.text
    if not urtext.startswith('|') or not text.endswith('\n' + urtext) or len(text) == len(urtext) + 1:
        return urtext
    header = text[: -len(urtext) - 1].rsplit('\n\n', 1)[-1]
    lines = header.split('\n')
    if len(lines) > 1 and not lines[0].startswith('|'):
        lines = lines[1:]  # the caption line
    rows_ok = all(_TABLE_ROW.fullmatch(line) for line in lines)
    if len(lines) < 2 or not rows_ok or not _TABLE_RULE.fullmatch(lines[-1]) or urtext.startswith(header):
        return urtext
    return f'{header}\n{urtext}'


def indent(text: str) -> str:
    """``text`` indented four spaces (blank lines left empty): a record's body under its header line."""
    return '\n'.join('    ' + line if line else '' for line in text.strip('\n').splitlines())


def render_record(hit_or_record: SearchHit | Chunk | Entity, n: int | None = None) -> str:
    """One record as a model sees it: ``[n] chunk <id> | score ...``, where it is from, its exact text."""
    hit = hit_or_record if isinstance(hit_or_record, SearchHit) else None
    record = hit.record if hit else hit_or_record
    assert isinstance(record, (Chunk, Entity))
    prefix = f'[{n}] ' if n is not None else ''
    score = f' | score {hit.score:.3f}' if hit else ''
    matched = f' | matched: {", ".join(repr(m) for m in hit.matches)}' if hit and hit.matches else ''
    source = getattr(hit, 'source', None)  # a federated hit names its member (toolish_rag.stores.federated)
    matched += f' | source: {field_text(source)}' if isinstance(source, str) and source else ''
    if isinstance(record, Chunk):
        head = f'{prefix}chunk {field_text(record.id)}{score}{matched}\n    from: {where(record)}'
        if record.cells:
            head += f', cells {field_text(record.cells)}'  # a spreadsheet's: its sheet is its page
        elif record.page is not None:
            head += f', page {record.page}'
        return f'{head}\n{indent(chunk_body(record))}'
    labels = f' | labels: {", ".join(field_text(x) for x in sorted(record.labels))}' if record.labels else ''
    return f'{prefix}entity {field_text(record.id)}{score}{labels}\n{indent(record.text)}'


def fitting(items: Sequence[T], budget: int, size: Callable[[T], int]) -> int:
    """How many leading ``items`` fit in ``budget`` when each costs ``size(item)``: at least one, if any.

    The one rule every capped output follows (expansions, section pages, ``ask``'s evidence): whole
    items in order, never one cut to fit, and never nothing when there is something to show.
    """
    used = 0
    for n, item in enumerate(items):
        cost = size(item)
        if n and used + cost > budget:
            return n
        used += cost
    return len(items)
