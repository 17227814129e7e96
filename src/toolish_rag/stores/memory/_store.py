"""`InMemoryStore`: the reference store, every capability exact, in process memory.

The store holds one immutable `Snapshot` and swaps in the next under a write lock, so readers
always see a whole version. See docs/stores/memory.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
from pydantic_ai.embeddings import Embedder, EmbeddingModel

from ...analysis import AUTO, TextAnalyzer, analyzer_for
from ...content import Chunk, Document, Entity, Record, Relation
from ...embedding import embedder_for_store, embedder_identity, resolve_embedder
from ...filters import Filter
from ...graph.model import GraphNode, NeighbourRequest, Neighbours, NodeRequest
from ...manifest import read_manifest, record_graph, recorded_graph, update_manifest
from ...protocols import DocumentInfo, PrecomputedVectors as Vectors, TermStatistics, TermStatisticsRequest
from ...regex import compile_request
from ...search import ExpansionRequest, RegexRequest, SearchHit, SearchRequest
from ...sections import (
    ChunkOutline,
    DocumentPage,
    DocumentPageRequest,
    OutlineRequest,
    SectionPage,
    SectionReadRequest,
)
from ...windows import DEFAULT_WINDOWS, EmbeddingWindows
from ...writes import graph_upsert_batch
from ..lock import write_turn
from ._caches import Lru
from ._graph import GraphState, entities_of, neighbours_of, nodes_of
from ._persistence import (
    SavedSegment,
    current_version,
    document_info,
    legacy_manifest,
    load,
    record_manifest,
    record_reembed,
    save,
)
from ._reembed import reembedded
from ._search import regex_hits, text_scores, top, vector_scores
from ._settings import STATISTICS, Statistics, save_setting, saved_analyzer, saved_statistics
from ._snapshot import Snapshot
from ._term_statistics import term_statistics
from ._vectors import embed_normalised
from ._windows import WindowVectors, aligned, plan_write, window_key

__all__ = ['InMemoryStore']

_logger = logging.getLogger('toolish_rag.stores.memory')

_QUERY_CACHE_SIZE = 256

_COMPACT_SHARE = 4
"""A version whose dead slots exceed 1/4 of its slots is compacted (see `_segments`)."""

_PLAIN_SYNTAX = (
    'Plain words. Every word counts toward the BM25 score. Quotes, boolean operators and field '
    'names have no special meaning: they are read as plain words.'
)
"""The query syntax of a store whose analyzer is not English (the analyzer's sentence follows it)."""


class InMemoryStore:
    """Every capability in process memory, the graph included; the reference every other store matches.

    Args:
        embedder: an embedding model string, ``EmbeddingModel`` or ``Embedder``; ``None``
            is the offline default (all-MiniLM-L6-v2).
        path: optional directory to persist to. Every write saves a new version and
            switches to it atomically, so a crash leaves the last complete version; a new
            process opening the same path sees the same records, vectors and metadata
            types. A write saves its own records as a new segment (merged with its recent
            neighbours from time to time, see docs/stores/memory.md), not
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
            ``'auto'`` detects each document's and chunk's language (`toolish_rag.languages`)
            and analyses each in its own; a query is analysed in the languages of the records in
            its scope (docs/text-analysis.md#automatic-language). ``None``: the language saved
            at ``path``, else ``'auto'`` for a new store, English for one saved before languages
            existed (bm25s's tokenisation, which it was built with). An explicit language is
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
        if statistics is not None and statistics not in STATISTICS:
            raise ValueError(f'unknown BM25 statistics {statistics!r}: choose one of {", ".join(STATISTICS)}')
        self._embedder_spec = embedder
        self._embedder: Embedder | None = None
        self._write_lock = asyncio.Lock()
        self._path = Path(path) if path is not None else None
        self._manifest = legacy_manifest(self._path) if self._path is not None else None
        if self._manifest is not None and self._manifest.embedder is not None:
            self._embedder = embedder_for_store(self._manifest, embedder, str(self._path))  # refused early
        self._graph_builders: tuple[str, ...] = ()  # a store without a path records its graph build here
        self._query_cache: Lru[str, npt.NDArray[np.float32]] = Lru(_QUERY_CACHE_SIZE)
        self._windows = windows
        self._window_key_value: tuple[str | None] | None = None
        saved = saved_statistics(self._path)
        self._statistics: Statistics = statistics or saved or 'scope'
        if self._path is not None and statistics is not None and statistics != saved:
            save_setting(self._path, 'statistics', statistics)
        self._analyzer = self._open_analyzer(language)
        self._version = current_version(self._path) if self._path is not None else None
        """The saved version ``_snapshot`` is (read before it: at worst one reload too many)."""
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
        """``language``'s analyzer, else the one saved at the path (settings, else its manifest), else
        ``'auto'`` for a new store and English for one saved before analyzers were (what it was built with).

        An explicit language other than the saved one is saved: the BM25 index lives in memory and
        is built from the records' texts on first search, so it is rebuilt with the new analyzer,
        and an index built with another analyzer is never queried.
        """
        saved = saved_analyzer(self._path)
        recorded = self._manifest.language if self._manifest is not None else None
        existing = self._path is not None and (self._path / 'CURRENT').exists()
        default = saved or analyzer_for(recorded or ('en' if existing else AUTO))
        analyzer = analyzer_for(language) if language is not None else default
        if self._path is not None and language is not None and analyzer != default:
            save_setting(self._path, 'analyzer', analyzer.identity)
            if existing:
                _logger.info(
                    '%s: text search re-analysed with %s (was %s)', self._path, analyzer.identity, default.identity
                )
            if self._manifest is not None and self._manifest.language != analyzer.language:
                chosen, before = analyzer.language, self._manifest
                self._manifest = update_manifest(
                    self._path, 'memory', lambda m: dataclasses.replace(m, language=chosen), legacy=lambda: before
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
    def windows(self) -> EmbeddingWindows | None:
        """How a chunk longer than the embedder reads is embedded as windows (``None``: its start only)."""
        return self._windows

    @property
    def path(self) -> Path | None:
        """Where the store persists itself (``None``: memory only)."""
        return self._path

    def _loaded(self) -> Snapshot:
        """The saved version at the path, its segments replayed in order (an empty store if none)."""
        saved = load(self._path) if self._path is not None else None
        if saved is None:
            return Snapshot()
        segments, graph = saved
        snapshot = Snapshot(graph=graph)
        for segment in segments:
            snapshot = snapshot.applied(segment, graph, self._analyzer, merge=False)
        return snapshot

    async def _commit(self, snapshot: Snapshot) -> None:
        """Compact if a quarter of the slots are dead, persist (when a path is set), then publish
        ``snapshot`` to readers. Saving writes the segments not saved yet (`_persistence`)."""
        if snapshot.dead * _COMPACT_SHARE > len(snapshot.records):
            snapshot = await asyncio.to_thread(snapshot.compacted, self._analyzer)
        if self._path is not None:
            dims = snapshot.vectors.shape[1] if len(snapshot) else None
            self._manifest = await asyncio.to_thread(
                record_manifest, self._path, embedder_identity(self.embedder, dims), self._analyzer.language
            )
            self._version = await asyncio.to_thread(
                save,
                self._path,
                snapshot.segments,
                snapshot.saved_segment,
                snapshot.graph,
                self.embedder.model,
                len(snapshot),
            )
        self._snapshot = snapshot

    @contextlib.asynccontextmanager
    async def _writing(self) -> AsyncIterator[None]:
        """One write's turn: this object's lock and, for a persisted store, the folder's writer lock
        (`toolish_rag.stores.lock.write_turn`: other objects and processes writing the folder wait),
        then the version another writer saved since this object's last read or write loaded, so a
        write builds on every saved write and loses none (docs/stores/memory.md)."""
        async with self._write_lock:
            if self._path is None:
                yield
                return
            async with write_turn(self._path, command=f'InMemoryStore (pid {os.getpid()})'):
                saved = await asyncio.to_thread(current_version, self._path)
                if saved != self._version:
                    self._snapshot = await asyncio.to_thread(self._loaded)
                    self._version = saved
                yield

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = embedder_for_store(self._manifest, self._embedder_spec, str(self._path))
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
        async with self._writing():
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
            extra = await embed_normalised(self.embedder, plan.texts, width=width)
            # Every record's windows change: one new segment, saved whole.
            snapshot = await asyncio.to_thread(old.compacted, self._analyzer, plan.assemble(extra, width))
            await self._commit(snapshot)
            return todo

    async def upgrade(self) -> list[str]:
        """Bring a store saved by an older toolish-rag to the current format, keeping every record and vector.

        Rewrites a version saved before segments in the segment layout, writes the manifest
        (docs/stores/manifest.md) and embeds the windows of records saved without them
        (`rebuild_windows`). Returns what was done (empty: already current). ``toolish-rag upgrade``.
        """
        path = self._path
        if path is None:
            return []
        done: list[str] = []
        async with self._writing():
            snapshot = self._snapshot
            old_layout = any(not (path / 'segments' / s.name).is_dir() for s in snapshot.segments)
            if old_layout or read_manifest(path) is None:
                await self._commit(snapshot)
                done.append('rewrote the store in the current format' if old_layout else 'wrote the manifest')
        windowed = await self.rebuild_windows()
        if windowed:
            done.append(f'embedded the windows of {windowed} records saved without them')
        return done

    async def reembed(self, embedder: Embedder | EmbeddingModel | str | None) -> int:
        """Embed every record (and its windows) again with ``embedder``, which the store uses from then on;
        returns how many records. ``toolish-rag ingest --reembed``.

        The new vectors are saved as one new version before the manifest records the new embedder, so a
        crash leaves the old store or the new one (docs/stores/manifest.md, Re-embedding).
        """
        new = resolve_embedder(embedder)
        async with self._writing():
            old = self._snapshot
            if old.dead:
                old = await asyncio.to_thread(old.compacted, self._analyzer)
            identity = embedder_identity(new)
            if self._path is not None:
                self._manifest = await asyncio.to_thread(record_reembed, self._path, identity, done=False)
            snapshot = await reembedded(old, new, self._windows, self._analyzer, lambda t: embed_normalised(new, t))
            if self._path is not None:
                dims = snapshot.vectors.shape[1] if len(snapshot) else None
                saved = (snapshot.segments, snapshot.saved_segment, snapshot.graph, new.model, len(snapshot))
                await asyncio.to_thread(save, self._path, *saved)
                identity = embedder_identity(new, dims)
                self._manifest = await asyncio.to_thread(record_reembed, self._path, identity, done=True)
            self._embedder, self._embedder_spec, self._window_key_value = new, embedder, None
            self._query_cache = Lru(_QUERY_CACHE_SIZE)
            self._snapshot = snapshot
            return len(snapshot)

    async def upsert(self, items: Iterable[Document | Entity | Relation]) -> None:
        """Insert or replace documents (whole), entities and relations; embeds only changed text.

        A document takes its relations and ledger keys with its old version (the batch's relations
        are written after that). A batch of relations alone touches no record: it embeds nothing
        and indexes no text, the next version shares them all with this one.
        """
        await self.upsert_with_vectors(items, {})

    async def upsert_with_vectors(self, items: Iterable[Document | Entity | Relation], vectors: Vectors) -> None:
        """`upsert`, a record or window whose text is in ``vectors`` taking that vector (`PrecomputedVectorsWriter`)."""
        documents, entities, relations = graph_upsert_batch(items)
        async with self._writing():
            old = self._snapshot
            if not documents and not entities:
                graph = old.graph.with_relations(relations)
                if graph is not old.graph:
                    await self._commit(old.with_graph(graph))
                return
            graph = old.graph.without_documents({d.id for d in documents}).with_relations(relations)
            await self._commit(await self._with_records(old, documents, entities, graph, vectors))

    async def _with_records(
        self, old: Snapshot, documents: list[Document], entities: list[Entity], graph: GraphState, known: Vectors
    ) -> Snapshot:
        """The next version with these documents and entities written: vectors of unchanged text reused.

        Costs what the batch holds (see `Snapshot.applied`): the records it replaces are marked
        dead, its own are appended.
        """
        new_records: list[Record] = [c for d in documents for c in d.chunks]
        new_records.extend(entities)
        old.check_owners(new_records, frozenset(d.id for d in documents), frozenset(e.id for e in entities))
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
        # The windows beyond each record's first vector (`_windows`), embedded in the same batches.
        base = aligned(old.windows, await self._window_key())
        plan = await plan_write(self.embedder, self._windows, base, [r.text for r in new_records], same)
        texts = [new_records[j].text for j in to_embed] + plan.texts
        embedded = await embed_normalised(self.embedder, texts, known) if texts else None
        fresh = embedded[: len(to_embed)] if embedded is not None and to_embed else None
        width = fresh.shape[1] if fresh is not None else old.rows.width
        new_vectors = np.zeros((len(new_records), width), dtype=np.float32)
        for j, v in reuse.items():
            new_vectors[j] = v
        if fresh is not None:
            new_vectors[to_embed] = fresh
        infos = [document_info(d) for d in documents]
        extra = embedded[len(to_embed) :] if embedded is not None else np.zeros((0, width), dtype=np.float32)
        write = SavedSegment(new_records, new_vectors, plan.assemble(extra, width), infos)
        if base is not old.windows:
            old = dataclasses.replace(old, windows=base)
        return await asyncio.to_thread(old.applied, write, graph, self._analyzer)

    async def _delete(self, doc_ids: set[str], entity_ids: set[str]) -> tuple[int, int]:
        async with self._writing():
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
    # structure with the last (`Snapshot.with_graph`), and one that changes nothing saves nothing.

    async def list_relations(
        self, *, document_ids: Sequence[str] | None = None, origin: str | None = None
    ) -> Sequence[Relation]:
        return self._snapshot.graph.listed(document_ids, origin)

    async def delete_relations(self, ids: Iterable[str]) -> int:
        async with self._writing():
            old = self._snapshot
            graph, removed = old.graph.without_relations(ids)
            if removed:
                await self._commit(old.with_graph(graph))
            return removed

    async def list_entities(self) -> Sequence[Entity]:
        return entities_of(self._snapshot.live_records())

    async def graph_marks(self, builder: str) -> dict[str, str]:
        return dict(self._snapshot.graph.marks.get(builder, {}))

    @property
    def graph_built(self) -> bool:
        """`GraphBuilt`: whether `build_graph` ran on this store (its manifest's record, or this object's)."""
        return bool(recorded_graph(self._path) if self._path is not None else self._graph_builders)

    async def record_graph_built(self, builders: Sequence[str]) -> None:
        """`GraphBuiltWriter`: recorded in the manifest at the path (docs/graph.md), else on this object."""
        self._graph_builders = tuple(sorted({*self._graph_builders, *builders}))
        if self._path is not None:
            path = self._path
            async with self._write_lock:  # one writer of the manifest at a time (an older store's: from its files)
                self._manifest = await asyncio.to_thread(
                    record_graph, path, 'memory', builders, legacy=lambda: legacy_manifest(path)
                )

    async def set_graph_marks(self, builder: str, marks: Mapping[str, str | None]) -> None:
        async with self._writing():
            old = self._snapshot
            graph = old.graph.with_marks(builder, marks)
            if graph is not old.graph:
                await self._commit(old.with_graph(graph))

    # -- searches and expansion ---------------------------------------------------------

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
        scores = await asyncio.to_thread(vector_scores, snap, q, request.filter, scoring)
        return [SearchHit(snap.records[i], float(scores[i])) for i in top(scores, request.top_k)]

    async def text_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        snap = self._snapshot
        if not snap.records:
            return []
        scores = await asyncio.to_thread(
            text_scores, snap, self._analyzer, self.statistics, request.query, request.filter
        )
        if scores is None:
            return []
        return [SearchHit(snap.records[i], float(scores[i])) for i in top(scores, request.top_k)]

    def text_ranking_in_scope(self, filter: Filter) -> bool:
        """Whether text search under ``filter`` ranks by the scope's statistics alone (`ScopedTextRanking`):
        with ``statistics='scope'``, whatever the filter."""
        return self._statistics == 'scope'

    async def term_statistics(self, request: TermStatisticsRequest) -> TermStatistics | None:
        """BM25's counts of the current records in ``request``'s scope, from this store's own index
        (`toolish_rag.protocols.TermStatisticsSource`); ``None`` under another analyzer than the store's."""
        if request.analyzer != self._analyzer.identity:
            return None
        snap = self._snapshot
        if snap.bm25_built() and (request.filter is None or snap.cached_mask(request.filter) is not None):
            return term_statistics(snap, request)  # index look-ups on a built index and a known mask: no thread hop
        return await asyncio.to_thread(term_statistics, snap, request)

    async def regex_search(self, request: RegexRequest) -> Sequence[SearchHit]:
        snap = self._snapshot
        pattern = compile_request(request)
        return await asyncio.to_thread(regex_hits, snap, pattern, request)

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
