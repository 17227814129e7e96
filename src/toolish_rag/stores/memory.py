"""`InMemoryStore`: the reference store, implementing every capability exactly.

* vector search: exact cosine over a numpy matrix of normalised embeddings;
* text search: BM25 over the tokens of a `TextAnalyzer` (by default English: bm25s's tokenizer,
  English stop words, Snowball stemming; ``language=`` picks another) whose corpus
  statistics are, by default, those of the records in scope (`toolish_rag.stores.bm25`), so what
  a scoped search scores never depends on records outside its scope (``statistics='store'``:
  the whole store's, bm25s's own ranking restricted to the scope);
* regex search: RE2 (``google-re2``), linear time, so no pattern can hang a search;
* expansion by sequence range and by section, and around an anchor (read from one snapshot);
* filters evaluated with the reference evaluator *before* ranking, so every search
  returns exactly ``top_k`` hits whenever that many in-scope records exist;
* a graph (`GraphSearch`, `GraphStore`): relations and the builders' ledger kept in the snapshot
  beside the records (`toolish_rag.stores.memory_graph`).

Concurrency: the store's state is an immutable snapshot. A writer (one at a time, under
an ``asyncio.Lock``) builds the next snapshot and swaps it in with one assignment, so
readers always see a whole version: the old one or the new one, never half a document.

Writes cost what they write (`toolish_rag.stores.memory_segments`): the next snapshot appends
the written records to slots that only grow, sharing the vector buffer and the BM25 segments of
the records it keeps, and marks replaced or deleted slots dead; a quarter dead, it compacts.
Saving appends a segment too (`toolish_rag.stores.memory_persistence`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from pydantic_ai.embeddings import Embedder, EmbeddingModel

from ..analysis import TextAnalyzer, analyzer_for
from ..content import Chunk, Document, Entity, Metadata, Record, Relation
from ..embedding import resolve_embedder
from ..filters import Filter, matches
from ..graph.model import GraphNode, NeighbourRequest, Neighbours, NodeRequest
from ..protocols import DocumentInfo
from ..regex import compile_request, count_matches, regex_rank_key, regex_text
from ..search import ExpansionRequest, RegexRequest, SearchHit, SearchRequest
from ..sections import (
    ChunkOutline,
    DocumentPage,
    DocumentPageRequest,
    DocumentSummary,
    OutlineRequest,
    SectionPage,
    SectionReadRequest,
)
from ..windows import DEFAULT_WINDOWS, EmbeddingWindows
from ..writes import graph_upsert_batch
from .bm25 import Bm25Index, Bm25Segment, ScopeStatistics
from .caches import Lru, Once
from .memory_graph import GraphState, entities_of, neighbours_of, nodes_of
from .memory_navigation import NavigationIndex, NavigationScope, positions_of
from .memory_persistence import SavedSegment, load, save
from .memory_rows import GrowingList, GrowingMatrix, LayeredMap
from .memory_segments import Segment, merge_tail
from .memory_windows import WindowVectors, aligned, plan_write, window_key

__all__ = ['InMemoryStore']

_logger = logging.getLogger(__name__)

_EMBED_BATCH = 256
_QUERY_CACHE_SIZE = 256
_SCOPE_CACHE_SIZE = 64


def tokenize(texts: list[str], analyzer: TextAnalyzer | Any) -> list[list[str]]:
    """The BM25 tokenisation: ``analyzer``'s tokens (`toolish_rag.analysis`).

    ``analyzer`` may also be a PyStemmer stemmer, as before analyzers existed: then bm25s's own
    tokenisation with English stop words and that stemmer (what ``TextAnalyzer('en')`` equals).
    """
    if isinstance(analyzer, TextAnalyzer):
        return analyzer.tokenize(texts)
    import bm25s

    tokens: list[list[str]] = bm25s.tokenize(
        texts, stopwords='en', stemmer=analyzer, return_ids=False, show_progress=False
    )
    return tokens


def build_bm25(texts: list[str], analyzer: TextAnalyzer | Any) -> Bm25Index:
    """The BM25 index of ``texts``, tokenised as `tokenize` does."""
    vocabulary: dict[str, int] = {}
    ids = [[vocabulary.setdefault(t, len(vocabulary)) for t in tokens] for tokens in tokenize(texts, analyzer)]
    return Bm25Index.build(ids, vocabulary)


_PLAIN_SYNTAX = (
    'Plain words. Every word counts toward the BM25 score. Quotes, boolean operators and field '
    'names have no special meaning: they are read as plain words.'
)
"""The query syntax of a store whose analyzer is not English (the analyzer's sentence follows it)."""

Statistics = Literal['scope', 'store']
"""Whose corpus statistics BM25 uses: the search's scope (the default) or the whole store."""
_STATISTICS: tuple[Statistics, ...] = ('scope', 'store')


_COMPACT_SHARE = 4
"""A version whose dead slots exceed 1/4 of its slots is compacted (see `memory_segments`)."""


@dataclass
class _Snapshot:
    """One version of the store. Everything but ``graph`` derives from the records, as do the caches below.

    Records live in slots that only grow (`memory_segments`): ``records``, the vector matrix and
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
        """The records this version holds that were never windowed (see `memory_windows`)."""
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
    ) -> _Snapshot:
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
        segment = Segment.written(
            0,
            len(records),
            tuple(documents),
            frozenset(),
            frozenset(),
            postings or (lambda: build_bm25(texts, analyzer).segments[0]),
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

    def applied(self, write: SavedSegment, graph: GraphState, analyzer: TextAnalyzer, merge: bool = True) -> _Snapshot:
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
        segment = Segment.written(
            start,
            start + added,
            tuple(d.id for d in write.documents),
            write.removed_documents,
            write.removed_entities,
            lambda: build_bm25(texts, analyzer).segments[0],
            write.name,
        )
        windows = self.windows
        if write.windows.key is not None and windows.key != write.windows.key:
            windows = aligned(windows, write.windows.key)  # windows of another config are forgotten
        segments = (*self.segments, segment)
        nxt = _Snapshot(
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

    def compacted(self, analyzer: TextAnalyzer, windows: WindowVectors | None = None) -> _Snapshot:
        """This version without its dead slots, in one segment (``windows``: replace the records').

        Posting lists already built are merged and renumbered (no text is tokenised again).
        """
        keep = np.flatnonzero(self.live) if self.live is not None else np.arange(len(self.records))
        segments, live = self.segments, self.live

        def postings() -> Bm25Segment:
            merged = Bm25Segment.merge([s.postings() for s in segments])
            return merged if live is None else merged.select(live)

        nxt = _Snapshot.build(
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
        """What a saved store keeps of ``segment``: its live records and what it removed (see
        `toolish_rag.stores.memory_persistence`)."""
        slots = np.arange(segment.start, segment.stop)
        if self.live is not None:
            slots = slots[self.live[segment.start : segment.stop]]
        positions = slots.tolist()
        return SavedSegment(
            name=segment.name,
            records=[self.records[i] for i in positions],
            vectors=self.vectors[slots],
            windows=self.windows.select(positions),
            documents=[self.documents[d] for d in segment.written_documents() if d in self.documents],
            removed_documents=segment.removed_documents,
            removed_entities=segment.removed_entities,
        )

    def with_graph(self, graph: GraphState) -> _Snapshot:
        """The next version when only the graph changed: the same records, vectors and caches, shared."""
        return dataclasses.replace(self, graph=graph)

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

    def scope_statistics(self, index: Bm25Index, f: Filter | None) -> ScopeStatistics:
        """BM25's record count and mean length over the live records ``f`` admits (cached like masks)."""
        if f is None and self.live is None:
            return index.whole
        cached = self._scopes.get(f)
        if cached is not None:
            return cached
        return self._scopes.put(f, ScopeStatistics.of(index.lengths, self.mask(f)))


def _top(scores: npt.NDArray[Any], k: int) -> npt.NDArray[np.intp]:
    """Indices of the ``k`` largest finite scores, best first; ties in store order.

    Ties at the cut go to the earliest records too, so a smaller ``top_k`` is always a prefix
    of a larger one (``argpartition`` alone keeps an arbitrary subset of the tied records).
    """
    finite = np.flatnonzero(np.isfinite(scores))
    if finite.size == 0:
        return finite
    if finite.size > k:
        values = scores[finite]
        kth = -np.partition(-values, k - 1)[k - 1]
        above = finite[values > kth]
        finite = np.concatenate([above, finite[values == kth][: k - above.size]])
    order = np.lexsort((finite, -scores[finite]))
    return finite[order]


_SETTINGS = 'settings.json'
"""Choices that change no stored data (the BM25 statistics), kept beside the versions."""


def _saved_settings(path: Path | None) -> dict[str, Any]:
    settings = path / _SETTINGS if path is not None else None
    if settings is None or not settings.exists():
        return {}
    saved: dict[str, Any] = json.loads(settings.read_text(encoding='utf-8'))
    return saved


def _saved_statistics(path: Path | None) -> Statistics | None:
    saved = _saved_settings(path).get('statistics')
    if saved is None:
        return None
    if saved not in _STATISTICS:
        raise ValueError(f'{path} names unknown BM25 statistics {saved!r} in {_SETTINGS}')
    chosen: Statistics = saved
    return chosen


def _saved_analyzer(path: Path | None) -> TextAnalyzer | None:
    """The text analyzer saved at ``path``; ``None`` when none is (a store from before analyzers: English)."""
    saved = _saved_settings(path).get('analyzer')
    return None if saved is None else TextAnalyzer.from_identity(saved)


def _save_setting(path: Path, key: str, value: str) -> None:
    """Record one choice in the settings file, keeping the others (atomically: write, then rename)."""
    path.mkdir(parents=True, exist_ok=True)
    settings = {**_saved_settings(path), key: value}
    tmp = path / f'{_SETTINGS}.tmp'
    tmp.write_text(json.dumps(settings), encoding='utf-8')
    os.replace(tmp, path / _SETTINGS)


class InMemoryStore:
    """Every capability in process memory, the graph included; the reference every other store matches.

    Args:
        embedder: an embedding model string, ``EmbeddingModel`` or ``Embedder``; ``None``
            is the offline default (all-MiniLM-L6-v2).
        path: optional directory to persist to. Every write saves a new version and
            switches to it atomically, so a crash leaves the last complete version; a new
            process opening the same path sees the same records, vectors and metadata
            types. A write saves its own records as a new segment (merged with its recent
            neighbours from time to time, see `toolish_rag.stores.memory_persistence`), not
            the whole store; opening reads every record into memory, so a million chunks take
            some GB of RAM and a minute to open. (A write of relations or ledger marks alone
            saves no records.)
        statistics: whose corpus statistics (record count, mean length, word frequencies)
            BM25 ranks with. ``'scope'``: those of the records the search's filter admits, so
            a tenant's scores never reveal what other tenants hold. ``'store'``: the whole
            store's, as bm25s alone would score (scores of different scopes are then on one
            scale, but a scoped search's scores move when records outside its scope change).
            ``None``: the choice saved at ``path``, else ``'scope'``. An explicit choice is
            saved at ``path`` (it changes no data, so it may differ from the saved one).
        windows: how a chunk longer than the embedder reads is embedded as several windows,
            vector search scoring it by its best window (MaxP, see `toolish_rag.windows`);
            ``None``: one vector per record (what the embedder reads of its beginning). A store
            saved without windows loads and scores by one vector per record until
            `rebuild_windows` (it logs so once).
        language: the text analyzer's language (`toolish_rag.analysis`): an ISO 639-1 code such
            as ``'de'`` or ``'zh'`` picks its stop words and stemmer; scripts without spaces
            (Chinese, Japanese, Thai...) are cut into character bigrams in every language.
            ``None``: the language saved at ``path``, else English (bm25s's tokenisation, which
            every store saved before languages existed was built with). An explicit language is
            saved at ``path``; a different one than saved simply re-analyses the texts (the BM25
            index is built in memory from them).
    """

    text_query_syntax = (
        'Plain words. Every word counts toward the BM25 score (English stemming: "refunds" '
        'matches "refund"; very common words such as "the" are ignored). Quotes, boolean '
        'operators and field names have no special meaning: they are read as plain words.'
    )
    """For the English analyzer (the default); other languages' stores say `_PLAIN_SYNTAX`."""

    def __init__(
        self,
        embedder: Embedder | EmbeddingModel | str | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
        statistics: Statistics | None = None,
        windows: EmbeddingWindows | None = DEFAULT_WINDOWS,
        language: str | None = None,
    ) -> None:
        if statistics is not None and statistics not in _STATISTICS:
            raise ValueError(f'unknown BM25 statistics {statistics!r}: choose one of {", ".join(_STATISTICS)}')
        self._embedder_spec = embedder
        self._embedder: Embedder | None = None
        self._write_lock = asyncio.Lock()
        self._path = Path(path) if path is not None else None
        self._query_cache: Lru[str, npt.NDArray[np.float32]] = Lru(_QUERY_CACHE_SIZE)
        self._windows = windows
        self._window_key_value: tuple[str | None] | None = None
        saved = _saved_statistics(self._path)
        self._statistics: Statistics = statistics or saved or 'scope'
        if self._path is not None and statistics is not None and statistics != saved:
            _save_setting(self._path, 'statistics', statistics)
        self._analyzer = self._open_analyzer(language)
        self._snapshot = self._loaded()
        unwindowed = self._snapshot.unwindowed
        if windows is not None and unwindowed:
            _logger.warning(
                '%s holds %d records saved without embedding windows: they are scored by their first '
                'vector (what the embedder reads of their beginning) until `await store.rebuild_windows()`',
                self._path,
                unwindowed,
            )

    @property
    def statistics(self) -> Statistics:
        """Whose corpus statistics BM25 uses: ``'scope'`` (isolated) or ``'store'`` (see the class)."""
        return self._statistics

    def _open_analyzer(self, language: str | None) -> TextAnalyzer:
        """``language``'s analyzer, else the one saved at the path, else English (what older stores used).

        An explicit language other than the saved one is saved: the BM25 index lives in memory and
        is built from the records' texts on first search, so it is rebuilt with the new analyzer,
        and an index built with another analyzer is never queried.
        """
        saved = _saved_analyzer(self._path)
        analyzer = analyzer_for(language) if language is not None else saved or analyzer_for(None)
        if self._path is not None and language is not None and analyzer != (saved or analyzer_for(None)):
            _save_setting(self._path, 'analyzer', analyzer.identity)
            if (self._path / 'CURRENT').exists():
                _logger.info(
                    '%s: text search re-analysed with %s (was %s)',
                    self._path,
                    analyzer.identity,
                    (saved or analyzer_for(None)).identity,
                )
        if analyzer.language != 'en':
            # The class's syntax promises English stemming; the toolset adds `describe()` instead.
            self.text_query_syntax = _PLAIN_SYNTAX
        return analyzer

    @property
    def text_analyzer(self) -> TextAnalyzer:
        """How text is cut into BM25 tokens (the records' and the query's): see `toolish_rag.analysis`."""
        return self._analyzer

    @property
    def language(self) -> str:
        """The text analyzer's language code (``'en'``, ``'de'``, ``'zh'``... or ``'none'``)."""
        return self._analyzer.language

    @property
    def path(self) -> Path | None:
        """Where the store persists itself (``None``: memory only)."""
        return self._path

    def _loaded(self) -> _Snapshot:
        """The saved version at the path, its segments replayed in order (an empty store if none)."""
        saved = load(self._path) if self._path is not None else None
        if saved is None:
            return _Snapshot()
        segments, graph = saved
        snapshot = _Snapshot(graph=graph)
        for segment in segments:
            snapshot = snapshot.applied(segment, graph, self._analyzer, merge=False)
        return snapshot

    async def _commit(self, snapshot: _Snapshot) -> None:
        """Compact if a quarter of the slots are dead, persist (when a path is set), then publish
        ``snapshot`` to readers. Saving writes the segments not saved yet (`memory_persistence`)."""
        if snapshot.dead * _COMPACT_SHARE > len(snapshot.records):
            snapshot = await asyncio.to_thread(snapshot.compacted, self._analyzer)
        if self._path is not None:
            await asyncio.to_thread(
                save,
                self._path,
                snapshot.segments,
                snapshot.saved_segment,
                snapshot.graph,
                self.embedder.model,
                len(snapshot),
            )
        self._snapshot = snapshot

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = resolve_embedder(self._embedder_spec)
        return self._embedder

    def __len__(self) -> int:
        return len(self._snapshot)

    def __repr__(self) -> str:
        snap = self._snapshot
        language = '' if self._analyzer.language == 'en' else f', language={self._analyzer.language!r}'
        return (
            f'InMemoryStore(documents={len(snap.documents)}, records={len(snap)}, '
            f'statistics={self._statistics!r}{language})'
        )

    # -- writes -----------------------------------------------------------------------

    async def _window_key(self) -> str | None:
        """The key of the windows this store makes (``None``: windows off), asked of the embedder once."""
        if self._window_key_value is None:
            self._window_key_value = (await window_key(self.embedder, self._windows),)
        return self._window_key_value[0]

    async def rebuild_windows(self) -> int:
        """Embed the windows of every record stored without them; returns how many records were windowed.

        For a store saved before windows existed, written with ``windows=None`` or with another
        window config: its records keep their first vectors (no record is embedded again) and
        gain their windows, in one new version. Re-ingesting unchanged documents would not do it,
        since ingestion skips them.
        """
        if self._windows is None:
            return 0
        async with self._write_lock:
            old = self._snapshot
            if old.dead:  # window only the records this version holds
                old = await asyncio.to_thread(old.compacted, self._analyzer)
            base = aligned(old.windows, await self._window_key())
            todo = base.unknown
            if not todo:
                return 0
            texts = [r.text for r in old.records]
            plan = await plan_write(self.embedder, self._windows, base, texts, list(range(len(texts))))
            width = old.vectors.shape[1]
            extra = await self._embed(plan.texts) if plan.texts else np.zeros((0, width), dtype=np.float32)
            # Every record's windows change: one new segment, saved whole.
            snapshot = await asyncio.to_thread(old.compacted, self._analyzer, plan.assemble(extra, width))
            await self._commit(snapshot)
            return todo

    async def _embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        parts: list[npt.NDArray[np.float32]] = []
        for start in range(0, len(texts), _EMBED_BATCH):
            result = await self.embedder.embed_documents(texts[start : start + _EMBED_BATCH])
            parts.append(np.asarray(result.embeddings, dtype=np.float32))
        matrix = np.vstack(parts)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        normalised: npt.NDArray[np.float32] = (matrix / norms).astype(np.float32)
        return normalised

    async def upsert(self, items: Iterable[Document | Entity | Relation]) -> None:
        """Insert or replace documents (whole), entities and relations; embeds only changed text.

        A document takes its relations and ledger keys with its old version (the batch's relations
        are written after that). A batch of relations alone touches no record: it embeds nothing
        and indexes no text, the next version shares them all with this one.
        """
        documents, entities, relations = graph_upsert_batch(items)
        async with self._write_lock:
            old = self._snapshot
            if not documents and not entities:
                graph = old.graph.with_relations(relations)
                if graph is not old.graph:
                    await self._commit(old.with_graph(graph))
                return
            graph = old.graph.without_documents({d.id for d in documents}).with_relations(relations)
            await self._commit(await self._with_records(old, documents, entities, graph))

    async def _with_records(
        self, old: _Snapshot, documents: list[Document], entities: list[Entity], graph: GraphState
    ) -> _Snapshot:
        """The next version with these documents and entities written: vectors of unchanged text reused.

        Costs what the batch holds (see `_Snapshot.applied`): the records it replaces are marked
        dead, its own are appended.
        """
        replaced_docs = frozenset(d.id for d in documents)
        replaced_entities = frozenset(e.id for e in entities)
        new_records: list[Record] = [c for d in documents for c in d.chunks]
        new_records.extend(entities)
        for r in new_records:
            i = old.index.get(r.id)
            if i is None:
                continue
            held = old.records[i]
            if isinstance(held, Chunk) and held.document_id in replaced_docs:
                continue
            if isinstance(held, Entity) and held.id in replaced_entities:
                continue
            raise ValueError(f'record id {r.id!r} already belongs to another document or entity')
        # Reuse vectors of records whose indexed text did not change.
        reuse: dict[int, npt.NDArray[np.float32]] = {}
        to_embed: list[int] = []
        same: list[int | None] = []
        for j, r in enumerate(new_records):
            i = old.index.get(r.id)
            if i is not None and old.records[i].text == r.text:
                reuse[j] = old.vectors[i]
                same.append(i)
            else:
                to_embed.append(j)
                same.append(None)
        # The windows beyond each record's first vector (`memory_windows`), embedded in the same batches.
        base = aligned(old.windows, await self._window_key())
        plan = await plan_write(self.embedder, self._windows, base, [r.text for r in new_records], same)
        texts = [new_records[j].text for j in to_embed] + plan.texts
        embedded = await self._embed(texts) if texts else None
        fresh = embedded[: len(to_embed)] if embedded is not None and to_embed else None
        width = fresh.shape[1] if fresh is not None else old.rows.width
        new_vectors = np.zeros((len(new_records), width), dtype=np.float32)
        for j, v in reuse.items():
            new_vectors[j] = v
        if fresh is not None:
            new_vectors[to_embed] = fresh
        infos = [
            DocumentInfo(
                id=d.id,
                uri=d.uri,
                title=d.title,
                fingerprint=d.fingerprint,
                chunk_count=len(d.chunks),
                metadata=dict(d.metadata),
            )
            for d in documents
        ]
        extra = embedded[len(to_embed) :] if embedded is not None else np.zeros((0, width), dtype=np.float32)
        write = SavedSegment(new_records, new_vectors, plan.assemble(extra, width), infos)
        if base is not old.windows:
            old = dataclasses.replace(old, windows=base)
        return await asyncio.to_thread(old.applied, write, graph, self._analyzer)

    async def _delete(self, doc_ids: set[str], entity_ids: set[str]) -> tuple[int, int]:
        async with self._write_lock:
            old = self._snapshot
            removed_docs = sum(1 for d in doc_ids if d in old.documents)
            entities = frozenset(
                e for e in entity_ids if (i := old.index.get(e)) is not None and isinstance(old.records[i], Entity)
            )
            graph = old.graph.without_documents(doc_ids)
            if not removed_docs and not entities:
                if graph is not old.graph:
                    await self._commit(old.with_graph(graph))
                return 0, 0
            empty = np.zeros((0, old.rows.width), dtype=np.float32)
            nothing = WindowVectors.of(np.zeros(0, np.int32), empty, None)
            write = SavedSegment([], empty, nothing, [], frozenset(doc_ids), entities)
            await self._commit(await asyncio.to_thread(old.applied, write, graph, self._analyzer))
            return removed_docs, len(entities)

    async def delete_documents(self, document_ids: Iterable[str]) -> int:
        return (await self._delete(set(document_ids), set()))[0]

    async def delete_entities(self, entity_ids: Iterable[str]) -> int:
        return (await self._delete(set(), set(entity_ids)))[1]

    async def list_documents(self) -> Sequence[DocumentInfo]:
        return list(self._snapshot.documents.values())

    # -- the graph's write side (GraphStore) ----------------------------------------------
    # Relations and ledger marks only: each write below makes a version sharing every record
    # structure with the last (`_Snapshot.with_graph`), and one that changes nothing saves nothing.

    async def list_relations(
        self, *, document_ids: Sequence[str] | None = None, origin: str | None = None
    ) -> Sequence[Relation]:
        return self._snapshot.graph.listed(document_ids, origin)

    async def delete_relations(self, ids: Iterable[str]) -> int:
        async with self._write_lock:
            old = self._snapshot
            graph, removed = old.graph.without_relations(ids)
            if removed:
                await self._commit(old.with_graph(graph))
            return removed

    async def list_entities(self) -> Sequence[Entity]:
        return entities_of(self._snapshot.live_records())

    async def graph_marks(self, builder: str) -> dict[str, str]:
        return dict(self._snapshot.graph.marks.get(builder, {}))

    async def set_graph_marks(self, builder: str, marks: Mapping[str, str | None]) -> None:
        async with self._write_lock:
            old = self._snapshot
            graph = old.graph.with_marks(builder, marks)
            if graph is not old.graph:
                await self._commit(old.with_graph(graph))

    # -- capabilities -------------------------------------------------------------------

    def supports_filter(self, filter: Filter) -> bool:
        return True

    async def _embed_query(self, query: str) -> npt.NDArray[np.float32]:
        """The unit query vector, from a small cache: agents repeat queries (and hybrid search
        runs the vector leg of a query its vector search just ran). The cache is thread-safe: one
        store may serve event loops in several threads."""
        cached = self._query_cache.get(query)
        if cached is not None:
            return cached
        result = await self.embedder.embed_query(query)
        q = np.asarray(result.embeddings[0], dtype=np.float32)
        norm = float(np.linalg.norm(q))
        if norm:
            q = q / norm
        return self._query_cache.put(query, q)

    async def vector_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        snap = self._snapshot
        if not snap.records:
            return []
        q = await self._embed_query(request.query)
        if snap.vectors.shape[1] != q.shape[0]:
            raise ValueError(
                f'the store holds {snap.vectors.shape[1]}-dimensional vectors but the embedder makes '
                f'{q.shape[0]}-dimensional ones: open it with the embedder it was built with'
            )
        scoring = self._windows.scoring if self._windows is not None else None
        scores = await asyncio.to_thread(self._vector_scores, snap, q, request.filter, scoring)
        return [SearchHit(snap.records[i], float(scores[i])) for i in _top(scores, request.top_k)]

    @staticmethod
    def _vector_scores(
        snap: _Snapshot, q: npt.NDArray[np.float32], f: Filter | None, scoring: str | None = None
    ) -> npt.NDArray[np.float32]:
        scores: npt.NDArray[np.float32] = np.asarray(snap.vectors @ q, dtype=np.float32)
        if scoring is not None:
            scores = snap.windows.best(scores, q, scoring)  # a record scores by its windows too
        mask = snap.mask(f)
        if mask is not None:
            scores = np.where(mask, scores, np.float32(-np.inf)).astype(np.float32)
        return scores

    async def text_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        snap = self._snapshot
        if not snap.records:
            return []
        scores = await asyncio.to_thread(self._text_scores, snap, request.query, request.filter)
        if scores is None:
            return []
        return [SearchHit(snap.records[i], float(scores[i])) for i in _top(scores, request.top_k)]

    def _text_scores(self, snap: _Snapshot, query: str, f: Filter | None) -> npt.NDArray[np.float64] | None:
        index = snap.bm25()
        tokens = [t for t in self._analyzer.tokens(query) if t in index]
        if not tokens:
            return None
        mask = snap.mask(f)
        if self.statistics == 'store':
            # bm25s's ranking of the whole store (its count, mean length and document frequencies);
            # the scope only selects which of those scores are returned.
            whole = snap.mask(None)  # the live slots (``None``: all)
            scores = index.scores(tokens, snap.scope_statistics(index, None), whole).astype(np.float64)
            hit = scores > 0 if mask is None else (scores > 0) & mask
        else:
            scores = index.scores(tokens, snap.scope_statistics(index, f), mask).astype(np.float64)
            hit = scores > 0
        return np.where(hit, scores, -np.inf)

    async def regex_search(self, request: RegexRequest) -> Sequence[SearchHit]:
        snap = self._snapshot
        pattern = compile_request(request)
        return await asyncio.to_thread(self._regex, snap, pattern, request)

    @staticmethod
    def _regex(snap: _Snapshot, pattern: Any, request: RegexRequest) -> list[SearchHit]:
        mask = snap.mask(request.filter)
        found: list[tuple[tuple[int, str, int], int, int, tuple[str, ...]]] = []
        for i, r in enumerate(snap.records):
            if mask is not None and not mask[i]:
                continue
            count, samples = count_matches(pattern, regex_text(r))
            if count:
                if isinstance(r, Chunk):
                    key = regex_rank_key(count, r.id, r.document_id, r.sequence_number)
                else:
                    key = regex_rank_key(count, r.id)
                found.append((key, i, count, samples))
        found.sort(key=lambda item: item[0])
        return [SearchHit(snap.records[i], float(c), matches=s) for _, i, c, s in found[: request.top_k]]

    async def get_records(self, ids: Sequence[str], *, filter: Filter | None = None) -> Sequence[Record]:
        return self._snapshot.lookup(ids, filter)

    async def expand(self, request: ExpansionRequest) -> Sequence[Chunk]:
        """A range or section, or the window around an anchor: every part read from one snapshot."""
        snap = self._snapshot
        if request.around is not None:
            anchor = snap.anchor(request)
            if anchor is None:
                return []
            request = request.window(anchor)
        return snap.chunks(request)

    # -- navigation (SectionReader) ---------------------------------------------------------

    async def document_page(self, request: DocumentPageRequest) -> DocumentPage:
        """One page of the documents in scope (see `toolish_rag.sections.reference_document_page`)."""
        return await asyncio.to_thread(self._snapshot.document_page, request)

    async def chunk_outlines(self, request: OutlineRequest) -> Sequence[ChunkOutline]:
        return await asyncio.to_thread(self._snapshot.outlines, request)

    async def read_section(self, request: SectionReadRequest) -> SectionPage:
        return await asyncio.to_thread(self._snapshot.section_page, request)

    # -- graph (GraphSearch) -------------------------------------------------------------------

    async def graph_nodes(self, request: NodeRequest) -> Sequence[GraphNode]:
        """The in-scope nodes among ``request.ids`` (see `toolish_rag.graph.model`), read from one snapshot."""
        return await asyncio.to_thread(nodes_of, self._snapshot, request)

    async def neighbours(self, request: NeighbourRequest) -> Neighbours:
        """One hop of in-scope edges around ``request.ids``, read from one snapshot."""
        return await asyncio.to_thread(neighbours_of, self._snapshot, request)
