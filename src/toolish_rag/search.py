"""What a search asks a store for and what it gets back.

Requests are small frozen dataclasses. ``filter`` is the *effective* scope filter
(every ``with_*`` filter and every per-run filter ANDed): a store that pushes filters
down (see `toolish_rag.protocols.FilterPushdown`) must return only matching records;
one that does not receives ``filter=None`` and the facade filters for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .content import Chunk, Entity
from .filters import Filter

__all__ = ['ExpansionRequest', 'RegexRequest', 'SearchHit', 'SearchRequest']


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
