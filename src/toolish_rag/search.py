"""What a search asks a store for, what it gets back, and what a caller's text may hold.

See docs/concepts.md#how-the-core-is-built.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .content import Chunk, Entity
from .errors import InvalidRequestError
from .filters import Filter

__all__ = [
    'ID_RULE',
    'PATTERN_RULE',
    'QUERY_RULE',
    'ArgumentRule',
    'ExpansionRequest',
    'RegexRequest',
    'SearchHit',
    'SearchRequest',
]


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """A ranked search: the ``top_k`` best records for ``query`` that satisfy ``filter``."""

    query: str
    top_k: int
    filter: Filter | None = None


@dataclass(frozen=True, slots=True)
class RegexRequest:
    """Records whose text matches ``pattern`` (RE2 syntax: linear time, no backreferences).

    A chunk is matched on its ``urtext`` (the source text the model quotes), an entity on
    its ``text``. Hits are ordered by how many matches they hold (the score), then by
    document and ``sequence_number``.
    """

    pattern: str
    top_k: int
    filter: Filter | None = None
    case_sensitive: bool = True


@dataclass(frozen=True, slots=True)
class ExpansionRequest:
    """Chunks of one document in sequence order: a range or section of it, or the window around an anchor.

    *Plain* (``around`` is ``None``): ``document_id`` keeps that document's chunks;
    ``first``/``last`` bound ``sequence_number`` (inclusive, either may be ``None``);
    ``section_id`` keeps chunks whose ``section_ids`` contain it. At least one of
    ``document_id`` and ``section_id`` is set (section ids are unique across documents).

    *Anchored* (``around`` names a record; build one with `around_chunk` or `enclosing`): the
    document, range or section come from the anchor as the store holds it, so the store must
    read the anchor and the window **from one version** of its data (one snapshot, one
    searcher, one table version). Reading them apart lets a concurrent upsert slip in between:
    neighbours of version 3 around an anchor of version 2. A store answers an anchored request
    by reading the anchor, turning the request into a plain one with `window`, and running that,
    all against the same version. The window never depends on ``filter``: the anchor is looked up
    whether or not it is in scope, and the filter then keeps the window's matching chunks (an
    out-of-scope anchor is simply not among them, which the caller reads as "not found").

    * ``around_chunk(id, before, after)``: the chunks of the anchor chunk's document whose
      ``sequence_number`` lies within ``before`` below and ``after`` above the anchor's;
    * ``enclosing(id)``: when ``id`` is a chunk's, the chunks of its innermost section (its
      whole document when it has no section); otherwise ``id`` names a section and the window
      is that section's parent (its whole document for a top-level section), located through
      any chunk inside the section (`section_probe`);
    * nothing when ``around`` names no chunk (an entity, an unknown id) and, for ``enclosing``,
      no section with a chunk in it either.

    Either way ``limit`` caps how many come back, in sequence order from the start of the range
    or window, and entities are never returned.
    """

    document_id: str | None = None
    first: int | None = None
    last: int | None = None
    section_id: str | None = None
    filter: Filter | None = None
    limit: int = 200
    around: str | None = None
    """The anchor: a chunk id (or, with ``enclosing``, a chunk or section id)."""
    before: int = 0
    after: int = 0
    enclosing_section: bool = False

    def __post_init__(self) -> None:
        if self.limit < 1:
            raise ValueError('limit must be at least 1')
        if self.around is None:
            if self.document_id is None and self.section_id is None:
                raise ValueError('an ExpansionRequest needs a document_id or a section_id (or an anchor: around)')
            if self.before or self.after or self.enclosing_section:
                raise ValueError('before, after and enclosing_section describe a window around an anchor: set around')
            return
        if (self.document_id, self.first, self.last, self.section_id) != (None, None, None, None):
            raise ValueError('an anchored request takes its document, range and section from the anchor')
        if self.before < 0 or self.after < 0:
            raise ValueError('before and after must not be negative')
        if self.enclosing_section and (self.before or self.after):
            raise ValueError('a request for the enclosing section has no sequence window (before, after)')

    @classmethod
    def around_chunk(
        cls, chunk_id: str, before: int, after: int, *, filter: Filter | None = None, limit: int = 200
    ) -> ExpansionRequest:
        """The chunks from ``before`` positions before chunk ``chunk_id`` to ``after`` positions after it."""
        return cls(around=chunk_id, before=before, after=after, filter=filter, limit=limit)

    @classmethod
    def enclosing(cls, record_id: str, *, filter: Filter | None = None, limit: int = 200) -> ExpansionRequest:
        """The section enclosing chunk ``record_id``, or the parent of section ``record_id``."""
        return cls(around=record_id, enclosing_section=True, filter=filter, limit=limit)

    def section_probe(self) -> ExpansionRequest | None:
        """For an ``enclosing`` request whose ``around`` names no chunk: the plain request whose
        first chunk locates section ``around`` (any chunk inside it has the same path to it, so
        no filter). ``None`` for requests that do not look for a section."""
        if self.around is None or not self.enclosing_section:
            return None
        return ExpansionRequest(section_id=self.around, limit=1)

    def holds(self, chunk: Chunk) -> bool:
        """Whether a plain request's document, range and section hold ``chunk`` (``filter`` aside)."""
        return (
            self.document_id in (None, chunk.document_id)
            and (self.first is None or chunk.sequence_number >= self.first)
            and (self.last is None or chunk.sequence_number <= self.last)
            and (self.section_id is None or self.section_id in chunk.section_ids)
        )

    def window(self, anchor: Chunk) -> ExpansionRequest:
        """The plain request this anchored one stands for, given its anchor as read.

        ``anchor`` is the chunk ``around`` names or, for an ``enclosing`` request naming a
        section, a chunk inside that section (the first `section_probe` returns). The result
        keeps this request's ``filter`` and ``limit``. Plain requests are returned unchanged.
        """
        if self.around is None:
            return self

        def plain(first: int | None = None, last: int | None = None, section_id: str | None = None) -> ExpansionRequest:
            return ExpansionRequest(
                document_id=anchor.document_id,
                first=first,
                last=last,
                section_id=section_id,
                filter=self.filter,
                limit=self.limit,
            )

        if anchor.id == self.around:
            if self.enclosing_section:
                return plain(section_id=anchor.section_id)
            return plain(max(0, anchor.sequence_number - self.before), anchor.sequence_number + self.after)
        if not self.enclosing_section or self.around not in anchor.section_ids:
            raise ValueError(f'chunk {anchor.id!r} is not the anchor {self.around!r} of this request')
        position = anchor.section_ids.index(self.around)
        return plain(section_id=anchor.section_ids[position - 1] if position > 0 else None)


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One result: a chunk or an entity, with the store's score (higher is better)."""

    record: Chunk | Entity
    score: float
    matches: tuple[str, ...] = field(default=())
    """For regex hits: the matched substrings (a few), so the model sees why it matched."""

    @property
    def id(self) -> str:
        return self.record.id


_SURROGATES = '\ud800-\udfff'


@dataclass(frozen=True, slots=True)
class ArgumentRule:
    """Which characters one kind of string argument may not hold, and what to say when it does.

    A Python ``str`` can hold a lone UTF-16 surrogate (``'\\ud800'``), which no UTF-8 encoder
    accepts, and any control character; callers (a model's tool call, an MCP client, a script)
    can send either. The message names the character by code point and position rather than
    echoing the argument, so it stays short whatever was sent.
    """

    noun: str
    """What the argument is, as the message names it (``'the query'``)."""
    forbidden: re.Pattern[str]
    """Matches one character the argument may not hold."""
    advice: str
    """What to send instead, ending the message."""

    def check(self, value: str) -> str:
        """``value`` unchanged, or `InvalidRequestError` naming the first forbidden character and where it is."""
        bad = self.forbidden.search(value)
        if bad is None:
            return value
        char = bad.group()
        kind = 'a lone UTF-16 surrogate' if '\ud800' <= char <= '\udfff' else 'a control character'
        raise InvalidRequestError(
            f'{self.noun} holds {kind} (U+{ord(char):04X}) at character {bad.start() + 1}: {self.advice}'
        )


QUERY_RULE = ArgumentRule(
    'the query',
    re.compile(f'[\x00-\x08\x0b\x0c\x0e-\x1f{_SURROGATES}]'),
    'send plain text (tabs and line breaks are fine, other control characters are not) in valid Unicode',
)
"""Search queries: text, so tab, newline and carriage return are fine; other C0 controls and surrogates are not."""

PATTERN_RULE = ArgumentRule(
    'the pattern',
    QUERY_RULE.forbidden,
    'spell a control character as an escape such as \\x00, and send the rest as valid Unicode',
)
"""Regex patterns: as queries; a pattern that must match a control character spells it as an RE2 escape."""

ID_RULE = ArgumentRule(
    'the id',
    re.compile(f'[\x00-\x1f\x7f-\x9f{_SURROGATES}]'),
    'pass the id exactly as it appears in a search result',
)
"""Record and section ids: printable identifiers, so no control character at all (C0, DEL, C1) and no surrogate."""
