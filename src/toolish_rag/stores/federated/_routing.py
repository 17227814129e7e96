"""Where a write goes: the rule that names, for each document or entity, the one member holding it.

See docs/federation.md#writes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ...content import Document, Entity

__all__ = ['ByHash', 'ByMetadata', 'Route']


class Route(Protocol):
    """Names the member (among ``members``, the writable ones in declared order) that holds ``item``."""

    def __call__(self, item: Document | Entity, members: Sequence[str]) -> str: ...


@dataclass(frozen=True, slots=True)
class ByHash:
    """Spread items over the writable members by a hash of their id (SHA-256, stable across processes).

    Adding or removing a member moves about ``1/n`` of the ids; the federation's upsert moves
    each one it writes (the other members drop it), so re-ingesting after a change is enough.
    """

    def __call__(self, item: Document | Entity, members: Sequence[str]) -> str:
        digest = hashlib.sha256(item.id.encode('utf-8')).digest()
        return members[int.from_bytes(digest[:8], 'big') % len(members)]


@dataclass(frozen=True, slots=True)
class ByMetadata:
    """The member named by the item's metadata value under ``key`` (``default`` when it has none).

    A value naming no writable member is refused (``ValueError``) before anything is written.
    """

    key: str
    default: str | None = None

    def __call__(self, item: Document | Entity, members: Sequence[str]) -> str:
        value = item.metadata.get(self.key, self.default)
        if isinstance(value, str) and value in members:
            return value
        if value is None:
            raise ValueError(f'{item.id!r} has no metadata {self.key!r} naming its member, and no default is set')
        raise ValueError(f'{item.id!r} names member {value!r} in metadata {self.key!r}: not a writable member')
