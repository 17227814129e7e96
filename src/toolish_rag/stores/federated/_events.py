"""What a federation reports when a member cannot answer: the event, and the hit that names its source.

See docs/federation.md#sources-and-failures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
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


_NOTED: ContextVar[list[MemberUnavailable] | None] = ContextVar('toolish_rag_federation_unavailable', default=None)


@contextmanager
def noting_unavailable() -> Iterator[list[MemberUnavailable]]:
    """Collect the `MemberUnavailable` events of the federated calls made inside the block (a tool call).

    Internal: the toolset uses it to tell the model which source did not answer. The list is
    shared by the tasks a fan-out starts (they copy the context, not the list).
    """
    noted: list[MemberUnavailable] = []
    token = _NOTED.set(noted)
    try:
        yield noted
    finally:
        _NOTED.reset(token)


def note_unavailable(event: MemberUnavailable) -> None:
    """Add ``event`` to the list of the enclosing `noting_unavailable` block, if any."""
    noted = _NOTED.get()
    if noted is not None:
        noted.append(event)
