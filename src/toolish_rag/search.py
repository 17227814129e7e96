"""What a search asks a store for and what it gets back.

Requests are small frozen dataclasses. ``filter`` is the *effective* scope filter
(every ``with_*`` filter and every per-run filter ANDed): a store that pushes filters
down (see `toolish_rag.protocols.FilterPushdown`) must return only matching records;
one that does not receives ``filter=None`` and the facade filters for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from .content import Chunk, Entity
from .filters import Filter

__all__ = ['ExpansionRequest', 'RegexRequest', 'SearchHit', 'SearchRequest', 'SearchMode']

SearchMode: TypeAlias = Literal['vector', 'text', 'hybrid', 'regex']


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """A ranked search: the ``top_k`` best records for ``query`` that satisfy ``filter``."""

    query: str
    top_k: int
    filter: Filter | None = None


@dataclass(frozen=True, slots=True)
class RegexRequest:
    """Records whose text matches ``pattern`` (RE2 syntax: linear time, no backreferences)."""

    pattern: str
    top_k: int
    filter: Filter | None = None
    case_sensitive: bool = True


@dataclass(frozen=True, slots=True)
class ExpansionRequest:
    """Chunks of one document, in sequence order, narrowed by a range or a section.

    ``first``/``last`` bound ``sequence_number`` (inclusive, either may be ``None``);
    ``section_id`` keeps chunks whose ``section_ids`` contain it. ``limit`` caps how many
    come back (in sequence order, from the start of the range).
    """

    document_id: str
    first: int | None = None
    last: int | None = None
    section_id: str | None = None
    filter: Filter | None = None
    limit: int = 200


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
