"""The runs of record slots `InMemoryStore`'s writes append: the unit of indexing and of saving.

Each `Segment` carries its BM25 postings and what its write removed; `merge_tail` merges neighbours
geometrically. See docs/stores/memory.md (Segments).
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ._bm25 import Bm25Segment

__all__ = ['Segment', 'merge_tail', 'new_name']

_MERGE_RATIO = 2
"""Merge the two newest segments once the older holds at most this many times the newer's slots."""

_names = itertools.count()


def new_name() -> str:
    """A segment name no other segment of any store in this process or an earlier one has."""
    return f's{time.time_ns():020d}-{os.getpid()}-{next(_names)}'


@dataclass(eq=False)
class _Postings:
    """A segment's BM25 postings, built once on demand; ``build`` is dropped once it ran."""

    build: Callable[[], Bm25Segment] | None
    value: Bm25Segment | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self) -> Bm25Segment:
        with self.lock:
            if self.value is None:
                assert self.build is not None
                self.value, self.build = self.build(), None  # a merge's parts can be freed now
            return self.value


@dataclass(frozen=True, eq=False)
class Segment:
    """Slots ``start`` to ``stop`` of the store, appended by one write (or several, merged)."""

    name: str
    """Its directory under a saved store's ``segments/`` (see `_persistence`)."""
    start: int
    stop: int
    documents: tuple[str, ...]
    """The documents this segment wrote, in order (a saved segment holds their `DocumentInfo`)."""
    removed_documents: frozenset[str] = frozenset()
    """Documents removed before this segment's records were appended (a delete, or a replacement)."""
    removed_entities: frozenset[str] = frozenset()
    _postings: _Postings = field(default_factory=lambda: _Postings(None))

    @classmethod
    def written(
        cls,
        start: int,
        stop: int,
        documents: tuple[str, ...],
        removed_documents: frozenset[str],
        removed_entities: frozenset[str],
        postings: Callable[[], Bm25Segment],
        name: str | None = None,
    ) -> Segment:
        """The segment of one write, whose postings ``postings`` builds (from its records' texts)."""
        return cls(name or new_name(), start, stop, documents, removed_documents, removed_entities, _Postings(postings))

    @property
    def slots(self) -> int:
        return self.stop - self.start

    def written_documents(self) -> list[str]:
        """`documents` once each, where each was written last (the store's document order)."""
        return list(reversed(dict.fromkeys(reversed(self.documents))))

    def postings(self) -> Bm25Segment:
        """The BM25 postings of this segment's slots (dead ones included: searches mask them)."""
        return self._postings.get()

    def built(self) -> bool:
        return self._postings.value is not None


def _merged(parts: Sequence[Segment]) -> Segment:
    """One segment for consecutive ``parts``: their slots, documents and removals together.

    Replaying the merged segment equals replaying the parts: its removals happen before any of
    its records are appended, and a record a part removed that an earlier part appended is no
    longer live, so it is not among the records saved for the merged segment.
    """
    return Segment.written(
        parts[0].start,
        parts[-1].stop,
        tuple(d for p in parts for d in p.documents),
        frozenset().union(*(p.removed_documents for p in parts)),
        frozenset().union(*(p.removed_entities for p in parts)),
        lambda: Bm25Segment.merge([p.postings() for p in parts]),
    )


def merge_tail(segments: tuple[Segment, ...]) -> tuple[Segment, ...]:
    """``segments`` with the newest merged while the one before holds at most twice their slots.

    A write of no records (a delete) counts as one slot, so a run of deletes merges too.
    """
    out = list(segments)
    while len(out) >= 2 and max(out[-2].slots, 1) <= _MERGE_RATIO * max(out[-1].slots, 1):
        out[-2:] = [_merged(out[-2:])]
    return tuple(out)
