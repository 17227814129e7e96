"""What a search asks a store for, what it gets back, and what a caller's text may hold.

Requests are small frozen dataclasses. ``filter`` is the *effective* scope filter
(every ``with_*`` filter and every per-run filter ANDed): a store that pushes filters
down (see `toolish_rag.protocols.FilterPushdown`) must return only matching records;
one that does not receives ``filter=None`` and the facade filters for it.

An `ArgumentRule` says which characters a caller's query, pattern or record id may not hold.
The `Retriever` applies them before any store sees the text: a NUL or a lone UTF-16 surrogate
crashes some stores' native code (LanceDB filters, Tantivy, UTF-8 encoders) instead of being
rejected, and what no store should be handed is decided once, here, not by each adapter.
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
    """Chunks of one document, in sequence order, narrowed by a range or a section.

    ``document_id`` keeps that document's chunks; ``first``/``last`` bound
    ``sequence_number`` (inclusive, either may be ``None``); ``section_id`` keeps chunks
    whose ``section_ids`` contain it. At least one of ``document_id`` and ``section_id``
    is set (section ids are unique across documents). ``limit`` caps how many come back,
    in sequence order from the start of the range. Entities are never returned.
    """

    document_id: str | None = None
    first: int | None = None
    last: int | None = None
    section_id: str | None = None
    filter: Filter | None = None
    limit: int = 200

    def __post_init__(self) -> None:
        if self.document_id is None and self.section_id is None:
            raise ValueError('an ExpansionRequest needs a document_id or a section_id')
        if self.limit < 1:
            raise ValueError('limit must be at least 1')


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
