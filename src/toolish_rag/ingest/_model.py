"""What a reader produces: the extracted source text and its section outline.

See docs/ingestion.md#how-the-pipeline-is-built.
"""

from __future__ import annotations

import bisect
import datetime as _dt
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from ..content import METADATA_KEY_PATTERN, MetadataValue, TextBox

__all__ = [
    'Block',
    'BlockKind',
    'CellRun',
    'OutlineBuilder',
    'ParsedDocument',
    'ParsedSection',
    'ReadError',
    'cell_range',
    'normalise_metadata',
]

BlockKind = Literal['text', 'code', 'list', 'table']


class ReadError(Exception):
    """A file that cannot be ingested; the message is the reason shown in the report."""


@dataclass(slots=True)
class Block:
    """A span of ``source``: a paragraph, a list, a code block or a table."""

    start: int
    end: int
    kind: BlockKind = 'text'
    header_end: int | None = None
    """Tables only: where the header rows end (the header is ``source[start:header_end]``)."""


@dataclass(slots=True)
class ParsedSection:
    """A heading and what it governs. The root section (``level == 0``) has no heading."""

    title: str
    level: int
    start: int
    """Offset of the heading in ``source`` (for the root: 0)."""
    blocks: list[Block] = field(default_factory=list)
    children: list[ParsedSection] = field(default_factory=list)
    anchor: str | None = None
    """The heading's own link target when the file names one (mkdocs ``## Title { #anchor }``): the
    ``anchor`` metadata of the section's chunks."""

    @property
    def end(self) -> int:
        """End of the last block of this section's subtree (``start`` when it is empty)."""
        last = self.start
        if self.blocks:
            last = max(last, self.blocks[-1].end)
        if self.children:
            last = max(last, self.children[-1].end)
        return last

    def walk(self) -> list[ParsedSection]:
        """This section and every descendant, in document order."""
        out = [self]
        for child in self.children:
            out.extend(child.walk())
        return out

    def has_text(self) -> bool:
        return bool(self.blocks) or any(c.has_text() for c in self.children)


class CellRun(NamedTuple):
    """A line of a spreadsheet's table in ``source`` (offsets) and the cells it was read from (1-based, inclusive)."""

    start: int
    end: int
    sheet: str
    row0: int
    col0: int
    row1: int
    col1: int


_PLAIN_SHEET = re.compile(r'[A-Za-z_][A-Za-z0-9_.]*')


def cell_range(sheet: str, row0: int, col0: int, row1: int, col1: int) -> str:
    """``Sheet1!A1:D20`` as Excel writes it (1-based rows and columns); a sheet name Excel would quote is quoted."""
    name = sheet if _PLAIN_SHEET.fullmatch(sheet) else "'" + sheet.replace("'", "''") + "'"
    first, last = f'{_letters(col0)}{row0}', f'{_letters(col1)}{row1}'
    return f'{name}!{first}' if first == last else f'{name}!{first}:{last}'


def _letters(column: int) -> str:
    out = ''
    while column > 0:
        column, rest = divmod(column - 1, 26)
        out = chr(65 + rest) + out
    return out


@dataclass(slots=True)
class ParsedDocument:
    """A reader's result: extracted text, title, metadata and section outline."""

    source: str
    title: str
    root: ParsedSection
    format: str
    metadata: dict[str, MetadataValue] = field(default_factory=dict)
    page_starts: list[int] | None = None
    """Paged formats: the offset in ``source`` where each page (or slide) begins."""
    warnings: list[str] = field(default_factory=list)
    ocr_pages: list[int] = field(default_factory=list)
    """1-based pages (image frames) whose text OCR read (docs/ingestion.md#ocr)."""
    boxes: list[TextBox] = field(default_factory=list)
    """Where the lines of paged text stand (PDF pages, OCR'd images), in ``source`` offsets, in order."""
    cells: list[CellRun] = field(default_factory=list)
    """Spreadsheets: the cells each line of a table was read from, in ``source`` order."""

    def page_at(self, offset: int) -> int | None:
        """1-based page holding ``offset``, or ``None`` for unpaged formats."""
        if not self.page_starts:
            return None
        return max(1, bisect.bisect_right(self.page_starts, offset))

    def boxes_in(self, start: int, end: int) -> tuple[TextBox, ...]:
        """The boxes of ``source[start:end]``, cut to it, in offsets of that span (a chunk's ``urtext``)."""
        if not self.boxes:
            return ()
        first = bisect.bisect_right(self.boxes, start, key=lambda b: b.end)  # boxes are in source order
        out: list[TextBox] = []
        for box in self.boxes[first:]:
            if box.start >= end:
                break
            part = box.within(start, end, self.source)
            if part is not None:
                out.append(part.shifted(-start))
        return tuple(out)

    def cells_in(self, start: int, end: int) -> str | None:
        """The cells ``source[start:end]`` was read from, one range a sheet (``Sheet1!A3:D9``), or ``None``."""
        spans: dict[str, list[int]] = {}
        first = bisect.bisect_right(self.cells, start, key=lambda c: c.end)
        for run in self.cells[first:]:
            if run.start >= end:
                break
            if run.end > start:
                span = spans.setdefault(run.sheet, [run.row0, run.col0, run.row1, run.col1])
                span[:] = [
                    min(span[0], run.row0),
                    min(span[1], run.col0),
                    max(span[2], run.row1),
                    max(span[3], run.col1),
                ]
        return ', '.join(cell_range(sheet, *span) for sheet, span in spans.items()) or None

    def headings(self) -> list[str]:
        """Titles of every section, in document order (the root excluded)."""
        return [s.title for s in self.root.walk()[1:]]


class OutlineBuilder:
    """Builds ``source`` and its section tree together, for readers that write their own text.

    Headings nest by level with a stack, so skipped levels (an ``h1`` followed by an
    ``h4``) still nest under the nearest shallower heading.
    """

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._length = 0
        self.root = ParsedSection(title='', level=0, start=0)
        self._stack: list[ParsedSection] = [self.root]
        self.page_starts: list[int] = []

    @property
    def length(self) -> int:
        return self._length

    def _write(self, text: str) -> tuple[int, int]:
        if self._length:
            self._parts.append('\n\n')
            self._length += 2
        start = self._length
        self._parts.append(text)
        self._length += len(text)
        return start, self._length

    def start_page(self) -> None:
        """Mark that the next text written begins a new page."""
        self.page_starts.append(self._length + (2 if self._length else 0))

    def heading(self, title: str, level: int) -> ParsedSection:
        title = ' '.join(title.split())
        start, _ = self._write(title)
        return self.open_section(title or '(untitled)', level, start)

    def open_section(self, title: str, level: int, start: int) -> ParsedSection:
        """Open a section at ``start`` (text already written or a position in a given source)."""
        while len(self._stack) > 1 and self._stack[-1].level >= level:
            self._stack.pop()
        section = ParsedSection(title=title, level=level, start=start)
        self._stack[-1].children.append(section)
        self._stack.append(section)
        return section

    def block(self, text: str, kind: BlockKind = 'text', *, header: str | None = None) -> Block | None:
        """Append a block; for tables ``header`` is the header row(s) that ``text`` starts with."""
        if not text.strip():
            return None
        start, end = self._write(text)
        header_end = start + len(header) if header is not None and text.startswith(header) else None
        block = Block(start, end, kind, header_end)
        self._stack[-1].blocks.append(block)
        return block

    def add_span(self, start: int, end: int, kind: BlockKind = 'text', header_end: int | None = None) -> None:
        """Record a block at a span of a source that is not written through this builder."""
        self._stack[-1].blocks.append(Block(start, end, kind, header_end))

    def text(self) -> str:
        return ''.join(self._parts)


_NON_IDENT = re.compile(r'[^A-Za-z0-9_]+')
_RESERVED = frozenset({'id', 'text', 'urtext', 'labels', 'kind', 'vector', 'score'})


def _normalise_key(key: str) -> str | None:
    norm = _NON_IDENT.sub('_', key.strip()).strip('_').lower()
    if not norm:
        return None
    if norm[0].isdigit():
        norm = '_' + norm
    return norm[:64]


def _scalar(value: Any) -> str | bool | int | float | None:
    if isinstance(value, str):
        try:
            value.encode('utf-8')
        except UnicodeEncodeError:  # a YAML escape such as "\ud800": no store can hold it
            raise TypeError('a string with a lone UTF-16 surrogate is not valid Unicode') from None
        return value
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):  # YAML's .inf / 1.0e+400: metadata numbers are finite
            raise TypeError(f'{value!r} is not a finite number')
        return value
    if isinstance(value, _dt.date | _dt.datetime | _dt.time):
        return value.isoformat()
    raise TypeError(f'unsupported value type {type(value).__name__}')


def normalise_metadata(raw: Mapping[Any, Any], warnings: list[str], *, prefix: str = '') -> dict[str, MetadataValue]:
    """Turn free-form metadata (YAML front matter, document properties) into valid metadata.

    Types are kept (an ``int`` stays an ``int``); dates become ISO strings; nested
    mappings are flattened with ``_`` (``toc: {enabled: true}`` -> ``toc_enabled``); keys
    that are not plain identifiers are normalised (``Last-Review Date`` ->
    ``last_review_date``) with a warning, or dropped with a warning when nothing is left,
    as are reserved keys and values that are not scalars or flat lists of scalars.
    """
    out: dict[str, MetadataValue] = {}
    for raw_key, value in raw.items():
        key_text = f'{prefix}{raw_key}'
        key: str | None = key_text if METADATA_KEY_PATTERN.match(key_text) else _normalise_key(key_text)
        if key is None:
            warnings.append(f'metadata key {key_text!r} dropped: not usable as a name')
            continue
        if key != key_text:
            warnings.append(f'metadata key {key_text!r} renamed to {key!r}')
        if key in _RESERVED:
            warnings.append(f'metadata key {key!r} dropped: reserved by the content model')
            continue
        if isinstance(value, Mapping):
            out.update(normalise_metadata(value, warnings, prefix=f'{key}_'))
            continue
        try:
            if isinstance(value, list | tuple | set):
                items = [_scalar(v) for v in value]
                out[key] = [v for v in items if v is not None]
            else:
                out[key] = _scalar(value)
        except TypeError as exc:
            warnings.append(f'metadata key {key!r} dropped: {exc}')
    return out
