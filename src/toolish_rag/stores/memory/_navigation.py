"""The in-memory store's navigation index: chunks in reading order, and which of them a scope admits.

Built once per snapshot, so navigation is array arithmetic over positions. See docs/stores/memory.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from ...content import Chunk, Record
from ...filters import Filter, matches
from ...sections import document_order

__all__ = ['MaskSource', 'NavigationIndex', 'NavigationScope', 'positions_of']


class MaskSource(Protocol):
    """What a scope needs of a snapshot: its records, its navigation index and its filter masks."""

    @property
    def records(self) -> Sequence[Record]: ...

    def navigation(self) -> NavigationIndex: ...

    def cached_mask(self, f: Filter) -> npt.NDArray[np.bool_] | None: ...

    def mask(self, f: Filter | None) -> npt.NDArray[np.bool_] | None: ...


_NO_POSITIONS: npt.NDArray[np.intp] = np.zeros(0, dtype=np.intp)
_DIRECT_SHARE = 8
"""A filter without a cached mask is evaluated on the candidates alone when they are fewer than
1/8 of the records (one document's chunks, say); else the whole mask is built and cached, since
the searches and the next navigation calls of that scope reuse it."""


def positions_of(values: list[int]) -> npt.NDArray[np.intp]:
    return np.asarray(values, dtype=np.intp)


@dataclass(frozen=True)
class NavigationIndex:
    """A snapshot's chunks in reading order, indexed for `SectionReader` requests.

    A chunk's *position* is its place in ``rows``: chunks sorted by ``(document_id,
    sequence_number)`` (stably, so ties keep store order, as the reference's sort does). Every
    index below holds positions in ascending order, so a subset of positions is already in
    reading order, and a scope is applied to one as ``mask[rows[positions]]``: no ``matches``
    call per chunk once the scope's mask exists.
    """

    chunks: tuple[Chunk, ...]
    """The chunk at each position."""
    rows: npt.NDArray[np.intp]
    """Its index in the snapshot's records (and so in a filter's mask)."""
    documents: tuple[str, ...]
    """Document ids in id order; document ``d`` holds positions ``starts[d]`` to ``starts[d + 1]``."""
    starts: npt.NDArray[np.intp]
    slot: dict[str, int]
    """Document id -> its index in ``documents``."""
    titles: tuple[str, ...]
    folded: tuple[str, ...]
    uris: tuple[str, ...]
    listing: npt.NDArray[np.intp]
    """Document indices in `document_order`."""
    by_section: dict[str, npt.NDArray[np.intp]]
    """Section id -> positions of the chunks inside it (at any depth)."""
    by_section_title: dict[str, npt.NDArray[np.intp]]
    """Section title -> positions of the chunks with that title on their section path."""
    member_positions: npt.NDArray[np.intp]
    """One entry per (chunk, enclosing section), by position: which chunk..."""
    member_sections: npt.NDArray[np.intp]
    """... and which section (a number per distinct section id), to count a document's sections in scope."""
    member_starts: npt.NDArray[np.intp]
    """Document ``d``'s entries are ``member_starts[d]`` to ``member_starts[d + 1]``."""

    @classmethod
    def build(cls, records: Sequence[Record], live: npt.NDArray[np.bool_] | None = None) -> NavigationIndex:
        """The index of the chunks among ``records`` (those ``live`` admits: a version's dead slots hold none)."""
        slots = range(len(records)) if live is None else np.flatnonzero(live).tolist()
        indexed = [(i, r) for i in slots if isinstance(r := records[i], Chunk)]
        indexed.sort(key=lambda item: (item[1].document_id, item[1].sequence_number))  # stable: ties keep store order
        rows = [i for i, _ in indexed]
        chunks = tuple(chunk for _, chunk in indexed)
        documents: list[str] = []
        starts: list[int] = []
        titles: list[str] = []
        uris: list[str] = []
        by_section: dict[str, list[int]] = {}
        by_title: dict[str, list[int]] = {}
        section_numbers: dict[str, int] = {}
        member_positions: list[int] = []
        member_sections: list[int] = []
        for position, chunk in enumerate(chunks):
            if not documents or documents[-1] != chunk.document_id:
                documents.append(chunk.document_id)
                starts.append(position)
                titles.append(chunk.document_title)
                uris.append(chunk.document_uri)
            for section_id in dict.fromkeys(chunk.section_ids):
                by_section.setdefault(section_id, []).append(position)
                member_positions.append(position)
                member_sections.append(section_numbers.setdefault(section_id, len(section_numbers)))
            for title in dict.fromkeys(chunk.section_path):
                by_title.setdefault(title, []).append(position)
        starts.append(len(chunks))
        folded = tuple(t.casefold() for t in titles)
        listing = sorted(range(len(documents)), key=lambda d: document_order(titles[d], documents[d]))
        members = positions_of(member_positions)
        return cls(
            chunks=chunks,
            rows=positions_of(rows),
            documents=tuple(documents),
            starts=positions_of(starts),
            slot={d: n for n, d in enumerate(documents)},
            titles=tuple(titles),
            folded=folded,
            uris=tuple(uris),
            listing=positions_of(listing),
            by_section={k: positions_of(v) for k, v in by_section.items()},
            by_section_title={k: positions_of(v) for k, v in by_title.items()},
            member_positions=members,
            member_sections=positions_of(member_sections),
            member_starts=np.searchsorted(members, starts).astype(np.intp),
        )

    def document_positions(self, document_id: str) -> npt.NDArray[np.intp]:
        d = self.slot.get(document_id)
        return _NO_POSITIONS if d is None else np.arange(self.starts[d], self.starts[d + 1], dtype=np.intp)

    def candidates(
        self, document_id: str | None, section_id: str | None, section_title: str | None
    ) -> npt.NDArray[np.intp]:
        """Positions of the chunks a request names (``None`` for a criterion it leaves open), in reading order."""
        narrowed = [
            self.document_positions(document_id) if document_id is not None else None,
            self.by_section.get(section_id, _NO_POSITIONS) if section_id is not None else None,
            self.by_section_title.get(section_title, _NO_POSITIONS) if section_title is not None else None,
        ]
        out: npt.NDArray[np.intp] | None = None
        for positions in narrowed:
            if positions is not None:
                out = positions if out is None else np.intersect1d(out, positions, assume_unique=True)
        assert out is not None, 'the request types require at least one criterion'
        return out


@dataclass(frozen=True)
class NavigationScope:
    """Which chunk positions one filter admits, in one snapshot, computed the cheapest way.

    With the filter's mask cached (a search or an earlier call of the same scope built it), a
    lookup; with few candidates, ``matches`` on those alone; else the mask is built (and cached).
    """

    navigation: NavigationIndex
    filter: Filter | None
    mask: npt.NDArray[np.bool_] | None
    _documents: dict[int, npt.NDArray[np.bool_]] = field(default_factory=dict)

    @classmethod
    def of(cls, snap: MaskSource, f: Filter | None, candidates: int) -> NavigationScope:
        """The scope of ``f`` for a request about ``candidates`` chunks (see `_DIRECT_SHARE`)."""
        mask = None
        if f is not None:
            mask = snap.cached_mask(f)
            if mask is None and candidates * _DIRECT_SHARE >= len(snap.records):
                mask = snap.mask(f)
        return cls(snap.navigation(), f, mask)

    def admits(self, positions: npt.NDArray[np.intp]) -> npt.NDArray[np.bool_]:
        if self.filter is None:
            return np.ones(len(positions), dtype=np.bool_)
        if self.mask is not None:
            admitted: npt.NDArray[np.bool_] = self.mask[self.navigation.rows[positions]]
            return admitted
        chunks, f = self.navigation.chunks, self.filter
        return np.fromiter((matches(f, chunks[p]) for p in positions.tolist()), dtype=np.bool_, count=len(positions))

    def document_admits(self, document: int) -> npt.NDArray[np.bool_]:
        """Which chunks of ``document`` (an index into ``navigation.documents``) are in scope, by position.

        Remembered, so a document's count and its section count evaluate the filter once.
        """
        admitted = self._documents.get(document)
        if admitted is None:
            nav = self.navigation
            admitted = self._documents[document] = self.admits(
                np.arange(nav.starts[document], nav.starts[document + 1], dtype=np.intp)
            )
        return admitted

    def chunks_in_scope(self, documents: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
        """How many in-scope chunks each of ``documents`` (indices into ``navigation.documents``) has."""
        nav = self.navigation
        if self.filter is None:
            counts: npt.NDArray[np.intp] = nav.starts[documents + 1] - nav.starts[documents]
            return counts
        if self.mask is not None:
            cumulative = np.concatenate([[0], np.cumsum(self.mask[nav.rows], dtype=np.intp)])
            in_scope: npt.NDArray[np.intp] = cumulative[nav.starts[documents + 1]] - cumulative[nav.starts[documents]]
            return in_scope
        return positions_of([int(self.document_admits(d).sum()) for d in documents.tolist()])

    def sections_in_scope(self, document: int) -> int:
        """How many distinct sections hold an in-scope chunk of ``document``."""
        nav = self.navigation
        first, last = nav.member_starts[document], nav.member_starts[document + 1]
        admitted = self.document_admits(document)[nav.member_positions[first:last] - nav.starts[document]]
        return int(np.unique(nav.member_sections[first:last][admitted]).size)
