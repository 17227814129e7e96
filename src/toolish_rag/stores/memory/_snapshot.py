"""One version of `InMemoryStore`: its records in slots that only grow, and the caches derived from them.

A snapshot is immutable once published; a write builds the next one (`Snapshot.applied`), sharing
what it keeps. See docs/stores/memory.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from ...analysis import TextAnalyzer
from ...content import Chunk, Entity, Metadata, Record
from ...filters import Filter, matches
from ...protocols import DocumentInfo
from ...search import ExpansionRequest
from ...sections import (
    ChunkOutline,
    DocumentPage,
    DocumentPageRequest,
    DocumentSummary,
    OutlineRequest,
    SectionPage,
    SectionReadRequest,
)
from ._bm25 import Bm25Index, Bm25Segment, ScopeStatistics
from ._caches import Lru, Once
from ._graph import GraphState
from ._navigation import NavigationIndex, NavigationScope, positions_of
from ._persistence import SavedSegment
from ._rows import GrowingList, GrowingMatrix, LayeredMap
from ._segments import Segment, merge_tail
from ._windows import WindowVectors, aligned

__all__ = ['Snapshot', 'build_bm25']

_SCOPE_CACHE_SIZE = 64


def build_bm25(
    texts: list[str],
    analyzer: TextAnalyzer,
    documents: list[str] | None = None,
    languages: Sequence[str] | None = None,
) -> Bm25Index:
    """The BM25 index of ``texts``, tokenised by ``analyzer`` (``documents``: each text's document id).

    ``languages``: each text's language as a saved ``'auto'`` store detected it (nothing detected
    again); ignored by an analyzer of a fixed language.
    """
    vocabulary: dict[str, int] = {}
    analysis = analyzer.analyse(texts, documents, languages=languages if analyzer.auto else None)
    ids = [[vocabulary.setdefault(t, len(vocabulary)) for t in tokens] for tokens in analysis.tokens]
    return Bm25Index.build(ids, vocabulary, analysis.languages, detected=analyzer.auto)


def _document_ids(records: Iterable[Record]) -> list[str]:
    """Each record's document (a chunk's document, an entity itself): `TextAnalyzer.analyse` groups by it."""
    return [r.document_id if isinstance(r, Chunk) else r.id for r in records]


@dataclass
class Snapshot:
    """One version of the store. Everything but ``graph`` derives from the records, as do the caches below.

    Records live in slots that only grow (`_segments`): ``records``, the vector matrix and
    the windows hold every slot, ``live`` says which still hold a record of this version (``None``:
    all of them), and ``index``/``by_document``/``documents`` name live records only. Every
    search masks dead slots out before ranking, so they change no score, count or statistic.

    The caches (BM25, navigation, filter masks and scope statistics) are pure functions of the
    records, so `with_graph` shares them with the next version when a write changes only the graph,
    and a write passes its filter masks on, extended by its own records (`applied`).
    """

    records: GrowingList[Record] = field(default_factory=lambda: GrowingList.of(()))
    rows: GrowingMatrix = field(default_factory=lambda: GrowingMatrix.of(np.zeros((0, 0), dtype=np.float32)))
    documents: LayeredMap[str, DocumentInfo] = field(default_factory=lambda: LayeredMap({}))
    index: LayeredMap[str, int] = field(default_factory=lambda: LayeredMap({}))
    by_document: LayeredMap[str, list[int]] = field(default_factory=lambda: LayeredMap({}))
    """Each document's chunk slots in reading order (lists never changed once published)."""
    graph: GraphState = field(default_factory=GraphState)
    windows: WindowVectors = field(default_factory=WindowVectors)
    live: npt.NDArray[np.bool_] | None = None
    segments: tuple[Segment, ...] = ()
    _bm25: Once[Bm25Index] = field(default_factory=Once)
    _masks: Lru[Filter, npt.NDArray[np.bool_]] = field(default_factory=lambda: Lru(_SCOPE_CACHE_SIZE))
    _scopes: Lru[Filter | None, ScopeStatistics] = field(default_factory=lambda: Lru(_SCOPE_CACHE_SIZE))
    _navigation: Once[NavigationIndex] = field(default_factory=Once)

    @property
    def vectors(self) -> npt.NDArray[np.float32]:
        """Every slot's first vector (read-only)."""
        return self.rows.view

    @property
    def dead(self) -> int:
        """Slots whose record this version no longer holds."""
        return 0 if self.live is None else len(self.records) - int(np.count_nonzero(self.live))

    def __len__(self) -> int:
        """The records this version holds."""
        return len(self.index)

    @property
    def unwindowed(self) -> int:
        """The records this version holds that were never windowed (see `_windows`)."""
        unknown = self.windows.counts < 0
        return int(np.count_nonzero(unknown if self.live is None else unknown & self.live))

    def live_records(self) -> list[Record]:
        """The records this version holds, in slot order."""
        if self.live is None:
            return list(self.records)
        return [self.records[i] for i in np.flatnonzero(self.live).tolist()]

    @classmethod
    def build(
        cls,
        records: list[Record],
        vectors: npt.NDArray[np.float32],
        documents: Mapping[str, DocumentInfo],
        graph: GraphState,
        windows: WindowVectors,
        analyzer: TextAnalyzer,
        postings: Callable[[], Bm25Segment] | None = None,
    ) -> Snapshot:
        """A version holding ``records`` in one segment, every slot live.

        ``postings`` builds the segment's BM25 postings when it is first needed (by default:
        tokenising the records' texts with ``analyzer``, the store's own: an English default here
        would index a German store's text in English).
        """
        index = {r.id: i for i, r in enumerate(records)}
        by_document: dict[str, list[int]] = {}
        for i, r in enumerate(records):
            if isinstance(r, Chunk):
                by_document.setdefault(r.document_id, []).append(i)
        for positions in by_document.values():
            positions.sort(key=lambda i: records[i].sequence_number)  # type: ignore[union-attr]
        texts = [r.text for r in records]
        owners = _document_ids(records)
        segment = Segment.written(
            0,
            len(records),
            tuple(documents),
            frozenset(),
            frozenset(),
            postings or (lambda: build_bm25(texts, analyzer, owners).segments[0]),
        )
        return cls(
            GrowingList.of(records),
            GrowingMatrix.of(vectors),
            LayeredMap(dict(documents)),
            LayeredMap(index),
            LayeredMap(by_document),
            graph,
            windows,
            None,
            (segment,) if records or documents else (),
        )

    def applied(self, write: SavedSegment, graph: GraphState, analyzer: TextAnalyzer, merge: bool = True) -> Snapshot:
        """The next version: ``write``'s removals, then its records appended (see the class).

        A write replaces the documents and entities it holds, so those are removed too. Costs
        what the write holds plus copies of the per-slot bookkeeping (a pointer per slot), never
        the vectors or posting lists of the records it keeps. ``merge=False`` keeps the segments as
        they are (replaying a saved store, whose segments are merged already).
        """
        start, added = len(self.records), len(write.records)
        removed_documents = write.removed_documents | {d.id for d in write.documents}
        removed_entities = write.removed_entities | {r.id for r in write.records if isinstance(r, Entity)}
        killed = [i for d in removed_documents for i in self.by_document.get(d, ())]
        for entity_id in removed_entities:
            i = self.index.get(entity_id)
            if i is not None and isinstance(self.records[i], Entity):
                killed.append(i)
        live = np.ones(start + added, dtype=np.bool_)
        if self.live is not None:
            live[:start] = self.live
        live[killed] = False
        records = self.records.append(write.records)
        chunks: dict[str, list[int]] = {}
        for j, r in enumerate(write.records):
            if isinstance(r, Chunk):
                chunks.setdefault(r.document_id, []).append(start + j)
        for positions in chunks.values():
            positions.sort(key=lambda i: records[i].sequence_number)  # type: ignore[union-attr]
        index = self.index.changed(
            [self.records[i].id for i in killed], ((r.id, start + j) for j, r in enumerate(write.records))
        )
        by_document = self.by_document.changed(removed_documents, chunks.items())
        documents = self.documents.changed(removed_documents, ((d.id, d) for d in write.documents))
        width = write.vectors.shape[1] if added else self.rows.width
        if self.rows.rows and added and width != self.rows.width:
            raise ValueError('the embedder changed dimensions: use a new store for a new model')
        rows = self.rows.append(write.vectors) if self.rows.rows else GrowingMatrix.of(write.vectors)
        texts = [r.text for r in write.records]
        owners = _document_ids(write.records)
        known = write.languages if write.languages is not None and len(write.languages) == added else None
        segment = Segment.written(
            start,
            start + added,
            tuple(d.id for d in write.documents),
            write.removed_documents,
            write.removed_entities,
            lambda: build_bm25(texts, analyzer, owners, known).segments[0],
            write.name,
        )
        windows = self.windows
        if write.windows.key is not None and windows.key != write.windows.key:
            windows = aligned(windows, write.windows.key)  # windows of another config are forgotten
        segments = (*self.segments, segment)
        nxt = Snapshot(
            records,
            rows if added else self.rows,
            documents,
            index,
            by_document,
            graph,
            windows.concat(write.windows),
            None if bool(live.all()) else live,
            merge_tail(segments) if merge else segments,
        )
        for f, mask in self._masks.items():  # the scopes searched so far stay a lookup
            extended = np.concatenate([mask, np.fromiter((matches(f, r) for r in write.records), np.bool_, added)])
            extended[killed] = False
            nxt._masks.put(f, extended)
        return nxt

    def compacted(self, analyzer: TextAnalyzer, windows: WindowVectors | None = None) -> Snapshot:
        """This version without its dead slots, in one segment (``windows``: replace the records').

        Posting lists already built are merged and renumbered (no text is tokenised again).
        """
        keep = np.flatnonzero(self.live) if self.live is not None else np.arange(len(self.records))
        segments, live = self.segments, self.live

        def postings() -> Bm25Segment:
            merged = Bm25Segment.merge([s.postings() for s in segments])
            return merged if live is None else merged.select(live)

        nxt = Snapshot.build(
            [self.records[i] for i in keep.tolist()],
            self.vectors[keep],
            self.documents,
            self.graph,
            windows if windows is not None else self.windows.select(keep.tolist()),
            analyzer,
            postings if segments and all(s.built() for s in segments) else None,
        )
        for f, mask in self._masks.items():
            nxt._masks.put(f, mask[keep])
        return nxt

    def saved_segment(self, segment: Segment) -> SavedSegment:
        """What a saved store keeps of ``segment``: its live records, what it removed and, for
        ``language='auto'``, the language each record was analysed in (see `_persistence`)."""
        slots = np.arange(segment.start, segment.stop)
        if self.live is not None:
            slots = slots[self.live[segment.start : segment.stop]]
        positions = slots.tolist()
        # Built now if not yet (an 'auto' store detects its languages here, once, to save them).
        postings = segment.postings()
        languages = (
            tuple(postings.languages[i - segment.start] for i in positions)
            if postings.detected and len(postings.languages) == segment.slots
            else None
        )
        return SavedSegment(
            name=segment.name,
            records=[self.records[i] for i in positions],
            vectors=self.vectors[slots],
            windows=self.windows.select(positions),
            documents=[self.documents[d] for d in segment.written_documents() if d in self.documents],
            removed_documents=segment.removed_documents,
            removed_entities=segment.removed_entities,
            languages=languages,
        )

    def with_graph(self, graph: GraphState) -> Snapshot:
        """The next version when only the graph changed: the same records, vectors and caches, shared."""
        return dataclasses.replace(self, graph=graph)

    def check_owners(self, records: Sequence[Record], documents: frozenset[str], entities: frozenset[str]) -> None:
        """``ValueError`` when one of ``records`` takes the id of a record another document or entity holds
        (one these ``documents`` and ``entities`` replace is theirs to take)."""
        for r in records:
            i = self.index.get(r.id)
            if i is None:
                continue
            held = self.records[i]
            if isinstance(held, Chunk) and held.document_id in documents:
                continue
            if isinstance(held, Entity) and held.id in entities:
                continue
            raise ValueError(f'record id {r.id!r} already belongs to another document or entity')

    def mask(self, f: Filter | None) -> npt.NDArray[np.bool_] | None:
        """Which slots hold a live record that satisfies ``f`` (cached for the few filters a deployment
        repeats); ``f`` ``None``: the live slots, ``None`` when every slot is live."""
        if f is None:
            return self.live
        cached = self._masks.get(f)
        if cached is not None:
            return cached
        result = np.fromiter((matches(f, r) for r in self.records), dtype=np.bool_, count=len(self.records))
        if self.live is not None:
            result &= self.live
        return self._masks.put(f, result)

    def cached_mask(self, f: Filter) -> npt.NDArray[np.bool_] | None:
        """``f``'s mask if a search or navigation already computed it, else ``None`` (computes nothing)."""
        return self._masks.get(f)

    def navigation(self) -> NavigationIndex:
        """The chunks indexed for navigation, built on first use (one build per version, like BM25)."""
        return self._navigation.get(lambda: NavigationIndex.build(self.records, self.live))

    def document_page(self, request: DocumentPageRequest) -> DocumentPage:
        """One page of the documents in scope (`toolish_rag.sections.reference_document_page`)."""
        nav = self.navigation()
        documents = nav.listing
        if request.document_id is not None:
            d = nav.slot.get(request.document_id)
            documents = positions_of([] if d is None else [d])
        if request.title_contains is not None:
            folded = request.title_contains.casefold()
            titled = (folded in nav.folded[d] for d in documents.tolist())
            documents = documents[np.fromiter(titled, dtype=np.bool_, count=len(documents))]
        sizes = nav.starts[documents + 1] - nav.starts[documents]
        scope = NavigationScope.of(self, request.filter, int(sizes.sum()))
        counts = scope.chunks_in_scope(documents)
        listed, listed_counts = documents[counts > 0], counts[counts > 0]
        window = slice(request.offset, request.offset + request.limit)
        summaries = tuple(
            DocumentSummary(
                id=nav.documents[d],
                title=nav.titles[d],
                uri=nav.uris[d],
                chunk_count=count,
                section_count=scope.sections_in_scope(d),
                metadata=self.document_metadata(nav.documents[d]),
            )
            for d, count in zip(listed[window].tolist(), listed_counts[window].tolist(), strict=True)
        )
        return DocumentPage(documents=summaries, total=len(listed))

    def outlines(self, request: OutlineRequest) -> list[ChunkOutline]:
        """The skeletons of the in-scope chunks a request names (`toolish_rag.sections.reference_outline`)."""
        nav = self.navigation()
        candidates = nav.candidates(request.document_id, request.section_id, request.section_title)
        positions = self.in_scope(candidates, request.filter)[: request.limit]
        return [ChunkOutline.of(nav.chunks[p]) for p in positions.tolist()]

    def section_page(self, request: SectionReadRequest) -> SectionPage:
        """A page of in-scope chunks in reading order (`toolish_rag.sections.reference_section_page`)."""
        nav = self.navigation()
        positions = self.in_scope(nav.candidates(request.document_id, request.section_id, None), request.filter)
        page = positions[request.offset : request.offset + request.limit].tolist()
        return SectionPage(chunks=tuple(nav.chunks[p] for p in page), total=len(positions))

    def in_scope(self, positions: npt.NDArray[np.intp], f: Filter | None) -> npt.NDArray[np.intp]:
        """The ``positions`` (see `NavigationIndex`) whose chunks ``f`` admits, still in reading order."""
        if f is None:
            return positions
        return positions[NavigationScope.of(self, f, len(positions)).admits(positions)]

    def document_metadata(self, document_id: str) -> Metadata:
        """A document's own metadata as stored with it (a copy: the snapshot's stays unchanged)."""
        info = self.documents.get(document_id)
        return dict(info.metadata) if info is not None else {}

    def lookup(self, ids: Sequence[str], f: Filter | None) -> list[Record]:
        """The records with these ids that satisfy ``f``."""
        out: list[Record] = []
        for record_id in ids:
            i = self.index.get(record_id)
            if i is not None and matches(f, self.records[i]):
                out.append(self.records[i])
        return out

    def chunks(self, request: ExpansionRequest) -> list[Chunk]:
        """A plain expansion request's chunks, in sequence order."""
        if request.document_id is not None:
            positions: Iterable[int] = self.by_document.get(request.document_id, [])
        else:
            positions = (i for ps in self.by_document.values() for i in ps)
        out: list[Chunk] = []
        for i in positions:
            c = self.records[i]
            assert isinstance(c, Chunk)
            if request.holds(c) and matches(request.filter, c):
                out.append(c)
        out.sort(key=lambda c: c.sequence_number)
        return out[: request.limit]

    def anchor(self, request: ExpansionRequest) -> Chunk | None:
        """The chunk an anchored request's window is taken from (see `ExpansionRequest.window`)."""
        assert request.around is not None
        i = self.index.get(request.around)
        record = self.records[i] if i is not None else None
        if isinstance(record, Chunk):
            return record
        probe = request.section_probe()
        inside = self.chunks(probe) if probe is not None else []
        return inside[0] if inside else None

    def bm25(self) -> Bm25Index:
        """The BM25 index of this version: its segments' postings, each built on first use and shared
        with later versions (a write tokenises only its own records)."""
        return self._bm25.get(lambda: Bm25Index.of([s.postings() for s in self.segments]))

    def bm25_built(self) -> bool:
        """Whether `bm25` would answer at once (its index was built by an earlier search)."""
        return self._bm25.built

    def scope_statistics(self, index: Bm25Index, f: Filter | None) -> ScopeStatistics:
        """BM25's record count and mean length over the live records ``f`` admits (cached like masks)."""
        if f is None and self.live is None:
            return index.whole
        cached = self._scopes.get(f)
        if cached is not None:
            return cached
        return self._scopes.put(f, ScopeStatistics.of(index.lengths, self.mask(f)))
