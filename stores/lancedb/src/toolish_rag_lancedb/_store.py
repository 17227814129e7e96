"""`LanceDBStore`: a toolish-rag store on LanceDB, embedded or on object storage.

The public face; the work is split by concern over the package's other modules (their map is in
docs/stores/lancedb.md, Modules). Everything goes through LanceDB's async API.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any

import numpy as np
from pydantic_ai.embeddings import Embedder, EmbeddingModel

import toolish_rag_lancedb._graph as graph
import toolish_rag_lancedb._queries as queries
import toolish_rag_lancedb._relations as relations
import toolish_rag_lancedb._sections as sections
import toolish_rag_lancedb._writes as writes
from toolish_rag.analysis import TextAnalyzer, analyzer_for
from toolish_rag.content import Chunk, Document, Entity, Record, Relation
from toolish_rag.embedding import embedder_for_store, embedder_identity, resolve_embedder
from toolish_rag.filters import Filter
from toolish_rag.graph import GraphNode, NeighbourRequest, Neighbours, NodeRequest
from toolish_rag.protocols import DocumentInfo, PrecomputedVectors
from toolish_rag.regex import compile_request
from toolish_rag.search import ExpansionRequest, RegexRequest, SearchHit, SearchRequest
from toolish_rag.sections import (
    ChunkOutline,
    DocumentPage,
    DocumentPageRequest,
    OutlineRequest,
    SectionPage,
    SectionReadRequest,
)
from toolish_rag.windows import DEFAULT_WINDOWS, EmbeddingWindows
from toolish_rag.writes import graph_upsert_batch

from ._filters import filter_to_where, sql_string
from ._graph_store import GraphStoreMethods
from ._maintenance import IndexPolicy, IndexUpkeep, describe_indexes
from ._manifest import check_dims, opening_manifest, record_manifest, record_reembed, upgrade_manifest
from ._metadata_indexes import ensure_metadata_indexes
from ._reembed import rewrite_records
from ._schema import (
    RECORDS_TABLE,
    RELATIONS_TABLE,
    check_storable,
    document_from_row,
    document_info,
)
from ._settling import DocumentLedger
from ._tables import ENGINE_LANGUAGE, Tables
from ._text_query import text_query_syntax
from ._windows import WINDOWS_COLUMN, WindowUse, embed_records

__all__ = ['LanceDBStore']

EmbedderLike = Embedder | EmbeddingModel | str | None


class LanceDBStore(GraphStoreMethods):
    """A toolish-rag store backed by LanceDB.

    ``uri`` is a local directory (``"./kb"``) or an object-store URL (``"s3://bucket/kb"``,
    ``"gs://..."``, ``"az://..."``) with credentials in ``storage_options`` or the usual
    environment variables. The store opens lazily on first use.

    Implements `VectorSearch`, `TextSearch`, `RegexSearch`, `ResultExpander`, `SectionReader`,
    `GraphSearch`, `FilterPushdown` (every filter whose values the store can hold),
    `DocumentStore` and `GraphStore`; hybrid search is left to the core's rank fusion of vector
    and text results.

    Writes are serialised by an ``asyncio.Lock`` per store object; readers never wait for
    writers (LanceDB readers see the last committed version). Run one writing process per
    location: LanceDB resolves concurrent commits, but this store's schema evolution and
    index maintenance assume a single writer.

    Args:
        uri: where the tables live.
        embedder: model string, pydantic-ai ``EmbeddingModel`` or ``Embedder``; ``None``
            means toolish-rag's offline default (all-MiniLM-L6-v2).
        storage_options: object-store options passed to LanceDB (keys like
            ``aws_endpoint``, ``aws_access_key_id``, ``allow_http``...).
        read_consistency_interval: how often a reader checks for versions written by other
            processes (``None``: never, i.e. a single-process store; ``timedelta(0)``: every
            read). Set it in reader processes when another process writes.
        ann_threshold: row count from which an ANN vector index is built (below it, vector
            search is exact). ``None`` disables the index.
        optimize_every: run LanceDB ``optimize`` (compaction + index refresh) after this many
            writes, or earlier when an index has ``max_unindexed_rows`` rows it does not cover.
        cleanup_older_than: versions older than this are pruned by ``optimize`` (LanceDB's
            default, 7 days, when ``None``). Keep it longer than your slowest reader's query.
        regex_scan_limit: at most this many candidate rows per regex search (those LanceDB's
            prefilter selects in scope, or every record in scope for a pattern it cannot
            pre-select for, ``\\C``); a search with more is refused with a retry message asking
            to narrow it, never answered from the first few.
        vector_index: the LanceDB index config used at ``ann_threshold`` (default: IVF-SQ,
            cosine, LanceDB's partition size; see `create_vector_index`).
        nprobes: IVF partitions probed per vector query (more: better recall, slower). LanceDB's
            partitions hold about 8-10k rows, so up to some 800k rows 90 probes every partition
            (a scan of every row's 8-bit code: recall@10 about 1); at 1M rows (94-119 partitions)
            it kept recall@10 at 0.98-1.0 on synthetic and real-embedding vectors, the vector
            tool's p50 under 30 ms on 2 shared cores (``benchmarks/lancedb_ann_bench.py``).
            Raise it with the table beyond that.
        refine_factor: candidates re-scored exactly per hit wanted (1 lost recall at 1M rows;
            20 gained nothing over 5).
        ann_rebuild_growth: re-train the default ANN index once the table has grown this many
            times over since the index was built (or since this object first saw it), so its
            partition count keeps up with the data. ``None``: never.
        metadata_index_threshold: from this many rows, every typed metadata column gets a
            scalar index (created by ``optimize()``, see `toolish_rag_lancedb._metadata_indexes`),
            so a filter costs an index lookup instead of a scan of the column over every row
            (at 1M chunks the scan cost a filtered text search about four times its BM25 search).
            ``None``: never.
        language: analyse text with the core's language-aware `toolish_rag.TextAnalyzer` for
            this language (``'auto'``, ``'zh'``, ``'de'``, ``'en'``...: any code
            `toolish_rag.analyzer_for` takes): a ``words`` column holds its tokens, full-text
            indexed split on whitespace only, so `InMemoryStore` and `TantivyStore` with the same
            language match the same records. ``'lancedb'``: LanceDB's own English analyzer on
            ``text`` (what a store built before ``'auto'`` became the default keeps). Fixed when the records table is
            created (saved in its schema metadata); ``None``: the saved analyzer, or ``'auto'``
            (each chunk in its detected language) for a new store. A store built with another
            analyzer is refused on first use: re-ingest into a new location to change it.
        windows: how a chunk longer than the embedder reads gets several vectors, vector search
            scoring it by its best one (MaxP; a multivector column, see
            `toolish_rag_lancedb._windows`). Applies to tables this store creates; ``None``: one
            vector per record. A table created without windows stays single-vector (the store
            logs once that re-ingesting into a new location adds them).
    """

    def __init__(
        self,
        uri: str | os.PathLike[str],
        *,
        embedder: EmbedderLike = None,
        storage_options: Mapping[str, str] | None = None,
        read_consistency_interval: timedelta | None = None,
        ann_threshold: int | None = 50_000,
        optimize_every: int = 20,
        max_unindexed_rows: int = 1_000,
        cleanup_older_than: timedelta | None = None,
        regex_scan_limit: int = 1_000,
        vector_index: Any = None,
        nprobes: int = 90,
        refine_factor: int = 5,
        ann_rebuild_growth: float | None = 4.0,
        language: str | None = None,
        windows: EmbeddingWindows | None = DEFAULT_WINDOWS,
        metadata_index_threshold: int | None = 10_000,
    ) -> None:
        engine = language == ENGINE_LANGUAGE
        requested = analyzer_for(language) if language is not None and not engine else None
        self._tables = Tables(os.fspath(uri), storage_options or {}, read_consistency_interval, requested, engine)
        self._local = '://' not in self._tables.uri
        self._manifest = opening_manifest(self._tables)
        self.embedder = embedder_for_store(self._manifest, embedder, self._tables.uri)
        self.ann_threshold = ann_threshold
        self.optimize_every = optimize_every
        self.max_unindexed_rows = max_unindexed_rows
        self.cleanup_older_than = cleanup_older_than
        self.regex_scan_limit = regex_scan_limit
        self.vector_index = vector_index
        self.nprobes = nprobes
        self.refine_factor = refine_factor
        self.ann_rebuild_growth = ann_rebuild_growth
        self.windows = windows
        self.metadata_index_threshold = metadata_index_threshold
        self._tables.windowed = windows is not None
        self._window_use = WindowUse(windows)
        self._ledger = DocumentLedger(self._tables)
        self._upkeep = IndexUpkeep(self._tables)
        self._record_pins = queries.Pins(RECORDS_TABLE)
        self._scope_shares = queries.ScopeShares()
        self._relation_pins = queries.Pins(RELATIONS_TABLE)

    @property
    def uri(self) -> str:
        return self._tables.uri

    @property
    def storage_options(self) -> dict[str, str]:
        return self._tables.storage_options

    @property
    def read_consistency_interval(self) -> timedelta | None:
        return self._tables.read_consistency_interval

    def __repr__(self) -> str:
        return f'LanceDBStore({self.uri!r})'

    # -- plumbing ---------------------------------------------------------------------------

    async def _embed(self, texts: Sequence[str], *, query: bool) -> np.ndarray[Any, np.dtype[np.float32]]:
        if query:
            result = await self.embedder.embed_query(list(texts))
        else:
            result = await self.embedder.embed_documents(list(texts))
        return np.asarray(result.embeddings, dtype=np.float32).reshape(len(texts), -1)

    async def _ensure_tables(self, dims: int | None) -> None:
        """Before a write: both tables exist (records once there is an embedding size), settled, indexed.

        The graph's tables are opened if they exist, even if another store object created them:
        a document's upsert must remove its relations wherever they were written from.
        """
        tables = self._tables
        await tables.connect()
        await tables.open_graph()
        await tables.create_documents()
        await self._ledger.settle()
        if dims is not None:
            model = self.embedder.model
            name = model if isinstance(model, str) else model.model_name
            await tables.create_records(dims, name, windows=await self._window_use.wanted(self.embedder))
        await self._upkeep.ensure_base_indexes()
        check_dims(tables, dims)
        if self._local and dims is not None:
            self._manifest = record_manifest(self._tables, embedder_identity(self.embedder, dims))

    async def reembed(self, embedder: EmbedderLike) -> int:
        """Embed every record (and its windows) again with ``embedder``, which the store uses from then on;
        returns how many records. The records table is rewritten in one commit before the manifest records
        the new embedder (docs/stores/manifest.md, Re-embedding). ``toolish-rag ingest --reembed``."""
        new = resolve_embedder(embedder)
        async with self._tables.write_lock:
            await self._tables.connect()
            await self._ledger.settle()
            if self._local:
                self._manifest = record_reembed(self._tables, embedder_identity(new), done=False)
            count = await rewrite_records(self._tables, new, self.windows)
            self.embedder, self._window_use, self._upkeep = new, WindowUse(self.windows), IndexUpkeep(self._tables)
            if self._local:
                self._manifest = record_reembed(self._tables, embedder_identity(new, self._tables.dims), done=True)
            await self._upkeep.ensure_base_indexes()
            await self._maintain()
        return count

    async def upgrade(self) -> list[str]:
        """Bring a store saved by an older version up to date (docs/stores/manifest.md): write its manifest, and
        give a records table written without window vectors its windows. ``[]``: nothing to do."""
        done: list[str] = []
        manifest = await upgrade_manifest(self._tables, self.embedder)
        if manifest is not None:
            self._manifest = manifest
            done.append('wrote the manifest')
        async with self._tables.write_lock:
            await self._tables.connect()
            unwindowed = self._tables.records is not None and WINDOWS_COLUMN not in self._tables.columns
            if unwindowed and await WindowUse(self.windows).wanted(self.embedder):
                await self._ledger.settle()
                count = await rewrite_records(self._tables, self.embedder, self.windows, add_windows=True)
                self._window_use, self._upkeep = WindowUse(self.windows), IndexUpkeep(self._tables)
                await self._upkeep.ensure_base_indexes()
                await self._maintain()
                done.append(f'embedded the window vectors of {count} records')
        return done

    # -- capabilities -----------------------------------------------------------------------

    def supports_filter(self, filter: Filter) -> bool:
        """Every filter node translates natively, unless a value in it is one no SQL literal carries.

        Those are a NUL character, a lone surrogate and an integer beyond 64 bits (which no
        stored value can equal either, as upserts refuse it): the core evaluates such a filter.
        """
        try:
            filter_to_where(filter, ())
        except (ValueError, TypeError):
            return False
        return True

    def filter_sql(self, filter: Filter) -> str:
        """The SQL ``WHERE`` clause a search with ``filter`` runs, given the columns known now.

        For looking at what a filter became, or running the same scope on the table directly
        (`records_table`). A typed metadata column that no written value created yet reads as
        absent, so ask after the store has opened (any search or write does that).
        """
        return filter_to_where(filter, self._tables.columns)

    @property
    def text_analyzer(self) -> TextAnalyzer | None:
        """The core analyzer text search uses (``language=``), or ``None`` for LanceDB's English one (``'lancedb'``).

        A store opened with ``language=None`` reports the saved one (reading the table's schema
        once if it has not connected yet).
        """
        return self._tables.known_text_analyzer()

    @property
    def text_query_syntax(self) -> str:
        return text_query_syntax(self.text_analyzer)

    async def vector_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        """Top ``top_k`` by cosine similarity (exact below ``ann_threshold`` rows, ANN above)."""
        table = await self._tables.records_for_read()
        if table is None or request.top_k <= 0:
            return []
        vector = (await self._embed([request.query], query=True))[0]
        check_dims(self._tables, len(vector))
        await self._window_use.note_unwindowed(self.embedder, self._tables.columns, self.uri)
        probe = queries.AnnProbe(nprobes=self.nprobes, refine_factor=self.refine_factor)
        scoring = self.windows.scoring if self.windows is not None else None
        return await queries.vector_search(self._tables, table, vector, request, probe, scoring)

    async def text_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        """BM25 over the indexed text, with a substring fallback when no word matches."""
        table = await self._tables.records_for_read()
        if table is None or request.top_k <= 0:
            return []
        return await queries.text_search(self._tables, table, request, self.regex_scan_limit, self._scope_shares)

    async def regex_search(self, request: RegexRequest) -> Sequence[SearchHit]:
        """Records whose exact text (a chunk's ``urtext``, an entity's text) matches ``pattern``, by RE2.

        LanceDB narrows the rows (``regexp_like`` with a rewrite of the pattern that selects
        every record RE2 matches, see `toolish_rag_lancedb._regex_prefilter`); RE2 decides and
        counts the matches, which are the scores. Ties keep document and sequence order. All
        candidates are ranked (a pattern LanceDB cannot narrow for makes every record in scope
        a candidate); more than ``regex_scan_limit`` of them is refused (`scan_limit_error`).
        """
        compiled = compile_request(request)
        table = await self._tables.records_for_read()
        if table is None or request.top_k <= 0:
            return []
        return await queries.regex_search(self._tables, table, request, compiled, self.regex_scan_limit)

    async def get_records(self, ids: Sequence[str], *, filter: Filter | None = None) -> Sequence[Record]:
        """Records with these ids (that satisfy ``filter``), in the order asked for."""
        table = await self._tables.records_for_read()
        if table is None or not ids:
            return []
        found = {r.id: r for r in await queries.fetch(self._tables, table, list(ids), filter)}
        return [found[i] for i in dict.fromkeys(ids) if i in found]

    async def expand(self, request: ExpansionRequest) -> Sequence[Chunk]:
        """A range or section (one query), or the window around an anchor (read at one table version)."""
        table = await self._tables.records_for_read()
        if table is None or request.limit <= 0:
            return []
        if request.around is None:
            return await queries.expand(self._tables, table, request)
        return await queries.expand_around(await self._pinned(int(await table.version())), request)

    async def document_page(self, request: DocumentPageRequest) -> DocumentPage:
        """One page of the documents with an in-scope chunk, from their rows and the chunks' ids (no text)."""
        documents = await self._tables.documents_for_read()
        if documents is None or await self._tables.records_for_read() is None:
            return DocumentPage(documents=(), total=0)
        version, rows = await sections.settled_documents(self._tables, self._ledger, documents, request.document_id)
        return await sections.document_page(await self._pinned(version), rows, request)

    async def chunk_outlines(self, request: OutlineRequest) -> Sequence[ChunkOutline]:
        """The in-scope chunks' skeletons, by ``(document_id, sequence_number)``, read at one table version."""
        table = await self._tables.records_for_read()
        if table is None:
            return []
        return await sections.chunk_outlines(await self._pinned(int(await table.version())), request)

    async def read_section(self, request: SectionReadRequest) -> SectionPage:
        """One page of a section's (or document's) in-scope chunks in reading order, and their total."""
        table = await self._tables.records_for_read()
        if table is None:
            return SectionPage(chunks=(), total=0)
        return await sections.read_section(await self._pinned(int(await table.version())), request)

    async def _pinned(self, version: int) -> queries.PinnedTable:
        """The records table checked out at ``version``, shared by the reads of that version (`queries.Pins`)."""
        return await self._record_pins.at(self._tables, version)

    # -- graph reads ----------------------------------------------------------------------

    async def graph_nodes(self, request: NodeRequest) -> Sequence[GraphNode]:
        """The in-scope nodes among ``request.ids``, by id, read at one records version."""
        table = await self._tables.records_for_read()
        if table is None or not request.ids:
            return []
        return await graph.graph_nodes(await self._pinned(int(await table.version())), request)

    async def neighbours(self, request: NeighbourRequest) -> Neighbours:
        """One hop of in-scope edges around ``request.ids`` (`toolish_rag_lancedb._graph.neighbours`)."""
        snapshot = await graph.pinned_snapshot(self._tables, self._record_pins, self._relation_pins)
        if snapshot is None or not request.ids:
            return Neighbours(edges=(), nodes=())
        return await graph.neighbours(snapshot, request)

    # -- writes -----------------------------------------------------------------------------

    async def upsert(self, items: Iterable[Document | Entity | Relation]) -> None:
        """Insert or replace documents (whole), entities and relations.

        A document's chunks change in one commit, its rows in the documents table are written
        pending before it and final after it, its relations are removed before and the batch's
        written after: see docs/stores/lancedb.md (Writes, consistency and concurrency).

        A batch holding a value the tables cannot hold (an integer beyond 64 bits, a lone
        surrogate: see `check_storable`) raises `UnsupportedValueError` before anything is
        embedded or written.
        """
        await self.upsert_with_vectors(items, {})

    async def upsert_with_vectors(
        self, items: Iterable[Document | Entity | Relation], vectors: PrecomputedVectors
    ) -> None:
        """`upsert`, a record or window whose text is in ``vectors`` taking that vector (`PrecomputedVectorsWriter`)."""
        documents, entities, new_relations = graph_upsert_batch(items)
        if not documents and not entities and not new_relations:
            return
        check_storable(documents, entities)  # before any embedding or write: a refused batch changes nothing
        relations.check_relations(new_relations)
        records = writes.records_to_write(documents, entities)
        embedded, rows = None, None
        if records:
            await self._tables.connect()
            config = await self._window_use.for_write(self.embedder, self._tables.records, self._tables.columns)
            embedded, rows = await embed_records(self.embedder, [r.text for r in records], config, vectors)
        async with self._tables.write_lock:
            # Another process's commit in between is retried a few times on the latest versions (bounded).
            await writes.retry_conflicts(
                self._tables, lambda: self._write(documents, entities, new_relations, embedded, rows)
            )
            await self._maintain()

    async def _write(
        self,
        documents: list[Document],
        entities: list[Entity],
        new_relations: list[Relation],
        vectors: np.ndarray[Any, Any] | None,
        rows: Any,
    ) -> None:
        """An upsert's commits, in order (under the write lock; see `upsert`)."""
        records = writes.records_to_write(documents, entities)
        await self._ensure_tables(vectors.shape[1] if vectors is not None else None)
        commit = None
        if self._tables.records is not None:
            commit = await writes.plan_records_commit(self._tables, records, vectors, documents, entities, rows)
        try:
            if documents and self._tables.has_graph:
                await self.before_commit('unlink-graph')
                await relations.unlink_documents(self._tables, [d.id for d in documents])
            if documents and commit is not None:
                await self.before_commit('pending-documents')
                await self._ledger.write_pending(documents)
            if commit is not None:
                await self.before_commit('records')
                await commit.run()
            if documents:
                await self.before_commit('final-documents')
                await self._ledger.write_final(documents)
            if new_relations:
                await self.before_commit('relations')
                await relations.write_relations(self._tables, new_relations)
                await self._upkeep.ensure_relation_indexes()
        except BaseException:
            self._ledger.settled = False  # pending rows may be left: settle before the next write
            raise

    async def before_commit(self, step: writes.CommitStep) -> None:
        """Called before each commit of an upsert, in order; does nothing: a public fault-injection point for
        tests (a subclass raising here leaves the tables as a kill at that instant would). The steps are in
        docs/stores/lancedb.md (Writes, consistency and concurrency).
        """

    async def delete_documents(self, document_ids: Iterable[str]) -> int:
        """Delete documents, their chunks, relations and ledger marks; returns how many documents were stored.

        The graph goes first, as in `upsert`: a crash part-way leaves a stored document without
        relations (rebuilt by the next build), never relations of a deleted one.
        """
        ids = list(dict.fromkeys(document_ids))
        if not ids:
            return 0
        async with self._tables.write_lock:
            await self._ledger.settle()
            await self._tables.open_graph()
            await relations.unlink_documents(self._tables, ids)
            if self._tables.documents is None and self._tables.records is None:
                return 0
            existed = await writes.delete_document_rows(self._tables, ids)
            await self._maintain()
            return existed

    async def delete_entities(self, entity_ids: Iterable[str]) -> int:
        ids = list(dict.fromkeys(entity_ids))
        if not ids:
            return 0
        async with self._tables.write_lock:
            await self._ledger.settle()
            if self._tables.records is None:
                return 0
            existed = await writes.delete_entity_rows(self._tables, ids)
            await self._maintain()
            return existed

    async def list_documents(self) -> Sequence[DocumentInfo]:
        table = await self._tables.documents_for_read()
        if table is None:
            return []
        columns = ['id', 'uri', 'title', 'fingerprint', 'metadata_json', 'chunk_count']
        rows = await self._ledger.read(table, columns=columns)
        return sorted((document_info(r) for r in rows), key=lambda i: i.id)

    async def get_document(self, document_id: str) -> Document | None:
        """The stored document, with its section tree and chunks, or ``None``."""
        await self._tables.connect()
        table = self._tables.documents
        if table is None:
            return None
        rows = await self._ledger.read(table, where=f'id = {sql_string(document_id)}')
        if not rows:
            return None
        chunks = await self.expand(ExpansionRequest(document_id=document_id, limit=2**31 - 1))
        return document_from_row(rows[0], chunks)

    # -- maintenance ------------------------------------------------------------------------

    async def _maintain(self) -> None:
        """After a write: build the ANN index once the table is large enough; optimize now and then."""
        policy = IndexPolicy(
            ann_threshold=self.ann_threshold,
            ann_rebuild_growth=self.ann_rebuild_growth,
            custom_vector_index=self.vector_index is not None,
            optimize_every=self.optimize_every,
            max_unindexed_rows=self.max_unindexed_rows,
        )
        step = await self._upkeep.after_write(policy)
        with writes.skipped_on_conflict(self.uri):  # the write is done; the next write's upkeep runs it again
            if step == 'build-vector-index':
                await self.create_vector_index()
            elif step == 'optimize':
                await self.optimize()

    async def create_vector_index(self, config: Any = None) -> None:
        """Build (or rebuild) the ANN index on the embeddings now.

        ``config`` is a LanceDB index config (``lancedb.index.IvfPq(distance_type='cosine')``,
        ``HnswSq``...); the default, ``vector_index`` or else `default_vector_index` (IVF-SQ,
        cosine, LanceDB's own partition size, which the ``optimize()`` that follows keeps).
        Queries re-rank ``refine_factor`` times ``top_k`` candidates with exact distances, so
        scores stay exact cosine similarities.
        """
        await self._ledger.settle()
        if self._tables.records is None:
            return
        await self._upkeep.build_vector_index(config if config is not None else self.vector_index)
        await self.optimize()

    async def optimize(self) -> None:
        """Compact files, fold new rows into every index and prune old versions.

        First, once the table has ``metadata_index_threshold`` rows, the typed metadata columns
        without a scalar index get one (`ensure_metadata_indexes`).
        """
        await self._ledger.settle()
        if self._tables.records is not None:
            await ensure_metadata_indexes(self._tables.records, self._tables.columns, self.metadata_index_threshold)
        await self._upkeep.optimize(self.cleanup_older_than)

    async def index_stats(self) -> dict[str, dict[str, Any]]:
        """Per index of the records table: its type, column and indexed/unindexed row counts."""
        table = await self._tables.records_for_read()
        return {} if table is None else await describe_indexes(table)

    async def count(self) -> int:
        """Number of stored records (chunks and entities)."""
        table = await self._tables.records_for_read()
        return 0 if table is None else int(await table.count_rows())

    async def records_table(self) -> Any:
        """The LanceDB table of records (``None`` while the store is empty).

        For raw LanceDB queries next to the store's (benchmarks, inspection); write through the
        store, which keeps the documents table, the typed columns and the indexes in step.
        """
        return await self._tables.records_for_read()

    async def aclose(self) -> None:
        self._record_pins.close()
        self._relation_pins.close()
        self._tables.close()

    async def __aenter__(self) -> LanceDBStore:
        await self._tables.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
