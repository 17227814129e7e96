"""The runs of record slots `InMemoryStore`'s writes append: the unit of indexing and of saving.

The store keeps its records in slots that only grow: a write appends its records after the last
slot and marks the slots of the records it replaces or deletes dead, so it costs what it writes,
not what the store holds (at a million chunks, replacing one document rebuilt everything: about
a minute). Each write's slots are a `Segment`, which carries:

* the BM25 postings of its records, built on the first text search that needs them (every
  segment's postings together score exactly as one index over all live records would:
  `toolish_rag.stores.bm25`);
* what the write did besides appending (the documents it wrote, those it removed), which is
  what a saved store replays on loading (`toolish_rag.stores.memory_persistence`): a save
  writes the new segment's records alone, not the whole store.

Many small segments would make every text search gather postings from each, and a reopened store
replay each, so the newest segments are merged as they come (`merge_tail`): two neighbours merge
once the older holds at most twice the newer's slots, which keeps the count logarithmic in the
store's size and costs each record O(log n) merge work over its life. Merging concatenates posting
arrays; it never re-tokenises. Dead slots stay (masked out of every search) until they are a
quarter of the store, when the store compacts into one segment (`InMemoryStore` does that).
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .bm25 import Bm25Segment

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
    """Its directory under a saved store's ``segments/`` (see `toolish_rag.stores.memory_persistence`)."""
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
