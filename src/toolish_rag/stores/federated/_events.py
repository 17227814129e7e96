"""What a federation reports when a member cannot answer: the event, and the hit that names its source.

See docs/federation.md#sources-and-failures.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeAlias

from ...search import SearchHit

__all__ = ['MemberListener', 'MemberUnavailable', 'SourcedHit']


@dataclass(frozen=True, slots=True)
class SourcedHit(SearchHit):
    """A federated search hit: the record, its fused score, and ``source``, the member that holds it.

    ``source`` is set by the federation from where the hit came from, never read from the
    record, so no record metadata can claim another member.
    """

    source: str = ''


@dataclass(frozen=True, slots=True)
class MemberUnavailable:
    """A member failed or timed out during ``operation``; the others answered without it."""

    member: str
    operation: str
    """The federation's method (``'text_search'``, ``'get_records'``...)."""
    reason: Literal['error', 'timeout']
    error_type: str
    """The exception's class name (its message is not kept: it may hold another member's data)."""


MemberListener: TypeAlias = Callable[[MemberUnavailable], None]
"""Called (synchronously, in the event loop) once per member that could not answer."""
