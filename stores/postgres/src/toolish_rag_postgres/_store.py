"""`PostgresStore`: a toolish-rag store on PostgreSQL with pgvector.

Vector (HNSW cosine, exact under selective scopes), BM25 text search over the scope's statistics,
regex (RE2), expansion, navigation, graph hops and term statistics, every filter compiled to
parameterised SQL, optionally enforced again by row-level security. See docs/stores/postgres.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from pydantic_ai.embeddings import Embedder, EmbeddingModel

from toolish_rag import Chunk, Document, Entity, ExpansionRequest, RegexRequest, Relation, SearchHit, SearchRequest
from toolish_rag.analysis import AUTO, TextAnalyzer
from toolish_rag.embedding import embedder_for_store, embedder_identity, resolve_embedder
from toolish_rag.filters import Filter
from toolish_rag.graph import GraphNode, NeighbourRequest, Neighbours, NodeRequest, WalkRequest
from toolish_rag.manifest import EmbedderIdentity, StoreManifest
from toolish_rag.protocols import DocumentInfo, PrecomputedVectors, TermStatistics, TermStatisticsRequest
from toolish_rag.regex import compile_request
from toolish_rag.sections import (
    ChunkOutline,
    DocumentPage,
    DocumentPageRequest,
    OutlineRequest,
    SectionPage,
    SectionReadRequest,
)
from toolish_rag.writes import check_storable, embed_documents, graph_upsert_batch

from ._database import Database, Tx, close_pool, redacted
from ._filters import compile_filter, scope_values, unstorable
from ._graph import (
    Neighbourhood,
    graph_nodes as hop_nodes,
    neighbourhood as read_neighbourhood,
    neighbours as hop_neighbours,
    parse_relation,
)
from ._open import Opened, open_database
from ._reads import (
    document_page as page_of_documents,
    expand as expand_in,
    outlines,
    parse,
    records_by_id,
    section_page,
)
from ._reembed import Switch, identity_json, recorded_or_refused, same_embedder, stored_texts
from ._schema import SCHEMA_VERSION
from ._search import UNSCOPED_PLAN, StaleEmbedder, hnsw_settings, regex_rows, vector_hits, vector_statement
from ._text import TextSearch, term_statistics_in
from ._upgrade import upgrade_schema
from ._writes import (
    Analysed,
    analyse,
    content_hash,
    delete_documents as forget_documents,
    insert_records,
    replacing,
    vector_literal,
    write_relations,
)

__all__ = ['PostgresStore']

_T = TypeVar('_T')

EmbedderLike = Embedder | EmbeddingModel | str | None

TEXT_QUERY_SYNTAX = (
    'Plain words: quotes, boolean operators and field names have no special meaning (they are read as plain '
    'words). A passage matches when it holds any of the words; BM25 ranks those holding more of the rarer words '
    'first.'
)
_EMBED_BATCH = 256
_REEMBED_ATTEMPTS = 3


def _pushable_value(value: object) -> bool:
    if isinstance(value, str):
        return unstorable(value) is None
    if isinstance(value, Mapping):
        return all(_pushable_value(k) and _pushable_value(v) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return all(_pushable_value(v) for v in value)
    return True


class PostgresStore:
    """Chunks, entities and relations in PostgreSQL tables, searched with SQL (docs/stores/postgres.md).

    Args:
        conninfo: a libpq connection string or URI (``postgresql://user@host/db``). Its password is
            never shown: `location` and every message use the string without it.
        schema: the PostgreSQL schema holding the store's tables (several stores share a database).
        embedder: model string, pydantic-ai ``EmbeddingModel`` or ``Embedder``; ``None``: the one the
            store's manifest records, else the default.
        language: the text analyzer's language (default ``'auto'``), fixed when the store is created.
        row_security: metadata keys enforced by row-level security as well as by the SQL filters:
            reads run as ``reader_role`` with the run's values of these keys in ``toolish.scope``.
        indexed_keys: metadata keys whose range filters (``gt``, ``gte``, ``lt``, ``lte``) an index serves
            (four btree indexes each, built when missing; other keys are tested row by row).
        exact_below: a vector query over at most this many in-scope records ranks them all exactly.
        ef_search: ``hnsw.ef_search`` for index queries (``None``: 400, 1,000 under a filter, at least ``4 * top_k``).
        regex_scan_limit: most records one regex search scans (``None``: no limit).
    """

    @property
    def text_query_syntax(self) -> str:
        """The query syntax and how text is analysed (the core analyzer's own description)."""
        return f'{TEXT_QUERY_SYNTAX} {self._analyzer.describe()}'

    def __init__(
        self,
        conninfo: str,
        *,
        schema: str = 'toolish_rag',
        embedder: EmbedderLike = None,
        language: str | None = None,
        row_security: Sequence[str] = (),
        reader_role: str | None = None,
        indexed_keys: Sequence[str] = (),
        exact_below: int = 10_000,
        ef_search: int | None = None,
        hnsw_m: int = 16,
        hnsw_ef_construction: int = 64,
        regex_scan_limit: int | None = 250_000,
        statement_timeout_ms: int = 30_000,
        server: object | None = None,
    ) -> None:
        opened: Opened = open_database(
            conninfo,
            schema,
            tuple(row_security),
            reader_role or f'{schema}_reader',
            statement_timeout_ms,
            tuple(indexed_keys),
        )
        self.location = f'postgres:{redacted(conninfo)} (schema {schema})'
        self.schema = schema
        self._db: Database = opened.database
        self._server = server  # an embedded server handle, kept alive as long as the store
        manifest = opened.manifest
        self.embedder = embedder_for_store(manifest, embedder, self.location)
        saved = manifest.language if manifest is not None else None
        if saved is not None and language is not None and saved != language:
            raise ValueError(f'{self.location} was analysed in {saved!r}, not {language!r}: open it without a language')
        self._analyzer = TextAnalyzer(saved or language or AUTO)
        self._text = TextSearch(self._analyzer)
        self._manifest = manifest
        self.schema_version = opened.schema_version
        """The tables' layout version (``None``: written before it was recorded: `upgrade` brings it current)."""
        self._graph_builders: tuple[str, ...] = self._db.run_sync(_read_graph_builders)
        self.exact_below = exact_below
        self.ef_search = ef_search
        self.hnsw_m, self.hnsw_ef_construction = hnsw_m, hnsw_ef_construction
        self.regex_scan_limit = regex_scan_limit
        self.walk_read_limit = 10_000
        """The most nodes and edges `walk_neighbourhood` reads at once (past it a walk reads hop by hop)."""
        self.last_vector_plan: str | None = None
        """How the latest vector query ran (``'exact'`` or ``'hnsw'``): for benchmarks and tests."""
        self._held: tuple[EmbedderIdentity, str] | None = None
        """The embedder queries are embedded by, and its JSON as the manifest is expected to record it."""

    # -- plumbing ------------------------------------------------------------------------------

    @property
    def manifest(self) -> StoreManifest | None:
        return self._manifest

    @property
    def text_analyzer(self) -> TextAnalyzer:
        return self._analyzer

    def _scope(self, f: Filter | None) -> dict[str, list[Any]] | None:
        return scope_values(f, self._db.scope_keys) if self._db.reader_role else None

    async def _read(self, work: Callable[[Tx], _T], f: Filter | None) -> _T:
        """``work`` in one read-only snapshot, as the reader role with ``f``'s scope in row-level-security mode."""
        return await self._db.run(work, scope=self._scope(f))

    async def _embed(
        self,
        texts: Sequence[str],
        *,
        query: bool,
        known: PrecomputedVectors | None = None,
        embedder: Embedder | None = None,
    ) -> list[str]:
        embedder = embedder or self.embedder
        vectors: list[str] = []
        for start in range(0, len(texts), _EMBED_BATCH):
            batch = list(texts[start : start + _EMBED_BATCH])
            if query:
                embedded = (await embedder.embed_query(batch)).embeddings
            else:
                embedded = await embed_documents(embedder, batch, known)
            vectors.extend(vector_literal(v) for v in embedded)
        return vectors

    # -- DocumentStore and GraphStore ----------------------------------------------------------

    def supports_filter(self, filter: Filter) -> bool:
        """Every filter, except one holding a string PostgreSQL cannot hold (NUL, lone surrogate): the core filters that."""
        return _pushable_value(filter.model_dump())

    async def upsert(self, items: Iterable[Document | Entity | Relation]) -> None:
        """Write documents (one transaction each), then entities, then relations (see `toolish_rag_postgres._writes`)."""
        await self.upsert_with_vectors(items, {})

    async def upsert_with_vectors(
        self, items: Iterable[Document | Entity | Relation], vectors: PrecomputedVectors
    ) -> None:
        """`upsert`, a record whose text is in ``vectors`` taking that vector (`PrecomputedVectorsWriter`)."""
        documents, entities, relations = graph_upsert_batch(items)
        check_storable(documents, entities, lambda key, value: unstorable(value) or _key_problem(key))
        digests = {d.id: content_hash(d) for d in documents}
        stored: dict[str, str] = await self._db.run(
            lambda tx: dict(
                tx.execute('SELECT id, content_hash FROM documents WHERE id = ANY(%s::text[])', (list(digests),))
            ),
            write=True,
        )
        changed = [d for d in documents if stored.get(d.id) != digests[d.id]]
        records: list[Chunk | Entity] = [c for d in changed for c in d.chunks] + list(entities)
        literals = await self._embed([r.text for r in records], query=False, known=vectors) if records else []
        analysed = analyse(self._analyzer, records, literals)
        if literals:
            await self._settle_vectors(len(literals[0].split(',')), analysed)
        by_document: dict[str, list[Analysed]] = {}
        for a in analysed:
            if isinstance(a.record, Chunk):
                by_document.setdefault(a.record.document_id, []).append(a)
        changed_ids = {d.id for d in changed}
        for d in documents:
            rows = by_document.get(d.id, []) if d.id in changed_ids else None
            await self._db.run(self._guarded(replacing(d, digests[d.id], rows)), write=True)
        entity_rows = [a for a in analysed if isinstance(a.record, Entity)]
        if entity_rows:
            await self._db.run(self._guarded(lambda tx: insert_records(tx, entity_rows)), write=True)
        if relations:
            await self._db.run(lambda tx: write_relations(tx, relations), write=True)

    def _guarded(self, work: Callable[[Tx], None]) -> Callable[[Tx], None]:
        """``work`` (a write of vectors), refused if another process re-embedded the store since it was opened."""
        expected = self._manifest.embedder if self._manifest is not None else None

        def guarded(tx: Tx) -> None:
            same_embedder(tx, self.schema, expected, self.location)
            work(tx)

        return guarded

    async def _settle_vectors(self, dims: int, analysed: Sequence[Analysed]) -> None:
        """Before the first vectors: fix the column's size, build the HNSW index, record the manifest."""
        if self._manifest is not None and self._manifest.embedder is not None:
            return
        languages = sorted({a.language for a in analysed if a.language and a.language != 'none'})
        manifest = StoreManifest(
            store='postgres',
            embedder=embedder_identity(self.embedder, dims),
            language=self._analyzer.language,
            languages=tuple(languages) if self._analyzer.auto else (),
        )

        def settle(tx: Tx) -> StoreManifest:
            tx.execute('SELECT pg_advisory_xact_lock(hashtext(%s))', (f'toolish_rag:{self.schema}',))
            row = tx.execute("SELECT value::text FROM meta WHERE key = 'manifest'").fetchone()
            if row is not None:
                return StoreManifest.from_json(json.loads(row[0]), self.location)
            from ._schema import index_vectors

            index_vectors(tx, dims, self.hnsw_m, self.hnsw_ef_construction)
            tx.execute(
                "INSERT INTO meta (key, value) VALUES ('manifest', %s::jsonb)", (json.dumps(manifest.to_json()),)
            )
            return manifest

        self._manifest = await self._db.run(settle, write=True)
        self._manifest.checked_embedder(embedder_identity(self.embedder, dims), self.location)

    async def reembed(self, embedder: EmbedderLike) -> int:
        """Embed every record (chunks and entities) again with ``embedder``, which the store uses from then on;
        returns how many records (`Reembeddable`, ``toolish-rag ingest --reembed``).

        The vectors are made first, then switched in one transaction with the column's size, the HNSW
        index and the manifest, so a crash leaves the old store or the new one (docs/stores/postgres.md,
        Re-embedding). Other processes holding the store open keep the old embedder; their writes and vector
        searches are refused (`EmbedderMismatch`) until they open the store again.
        """
        new = resolve_embedder(embedder)
        texts: set[str] = await self._db.run(stored_texts, write=True)
        vectors: dict[str, str] = {}
        for _ in range(_REEMBED_ATTEMPTS):  # a writer may add texts between the read and the switch
            fresh = sorted(texts - vectors.keys())
            vectors.update(zip(fresh, await self._embed(fresh, query=False, embedder=new), strict=True))
            if not vectors:  # an empty store: its vector size from one probe
                vectors[''] = (await self._embed([''], query=False, embedder=new))[0]
            dims = len(next(iter(vectors.values())).split(','))
            manifest = StoreManifest(
                store='postgres',
                embedder=embedder_identity(new, dims),
                language=self._analyzer.language,
                languages=self._manifest.languages if self._manifest is not None else (),
                graph=self._manifest.graph if self._manifest is not None else (),
                extra=self._manifest.extra if self._manifest is not None else {},
            )
            switch = Switch(self.schema, vectors, dims, manifest, self.hnsw_m, self.hnsw_ef_construction)
            done = await self._db.run(switch.apply, write=True)
            if isinstance(done, int):
                self.embedder, self._manifest = new, manifest
                return done
            texts = done
        raise RuntimeError(f'{self.location}: writers kept adding records during the re-embed; run it again')

    async def upgrade(self) -> list[str]:
        """Bring tables written by an older toolish-rag-postgres to the current layout, in one transaction;
        what was done, one phrase each (``[]``: already current). Records and vectors are kept (`Upgradable`,
        ``toolish-rag upgrade``; docs/stores/postgres.md, Upgrades and migrations)."""
        done = await self._db.run(lambda tx: upgrade_schema(tx, self.schema, self.location), write=True)
        self.schema_version = SCHEMA_VERSION
        return done

    async def delete_documents(self, document_ids: Iterable[str]) -> int:
        ids = [i for i in dict.fromkeys(document_ids) if '\x00' not in i]
        return await self._db.run(lambda tx: forget_documents(tx, ids), write=True) if ids else 0

    async def delete_entities(self, entity_ids: Iterable[str]) -> int:
        ids = [i for i in dict.fromkeys(entity_ids) if '\x00' not in i]
        sql = "DELETE FROM records WHERE kind = 'entity' AND id = ANY(%s::text[])"
        return await self._db.run(lambda tx: tx.execute(sql, (ids,)).rowcount, write=True) if ids else 0

    async def list_documents(self) -> Sequence[DocumentInfo]:
        rows = await self._db.run(
            lambda tx: tx.execute(
                'SELECT id, uri, title, fingerprint, chunk_count, metadata::text FROM documents ORDER BY id'
            ).fetchall(),
            write=True,  # unscoped, for ingestion and the builders: as the owner in RLS mode
        )
        return [DocumentInfo(i, uri, title, fp, n, json.loads(md)) for i, uri, title, fp, n, md in rows]

    async def list_relations(
        self, *, document_ids: Sequence[str] | None = None, origin: str | None = None
    ) -> Sequence[Relation]:
        sql = (
            'SELECT body FROM relations WHERE (%(docs)s::text[] IS NULL OR document_id = ANY(%(docs)s::text[])) '
            'AND (%(origin)s::text IS NULL OR origin = %(origin)s::text) ORDER BY id'
        )
        params = {'docs': None if document_ids is None else list(document_ids), 'origin': origin}
        rows = await self._db.run(lambda tx: tx.execute(sql, params).fetchall(), write=True)
        return [parse_relation(body) for (body,) in rows]

    async def delete_relations(self, ids: Iterable[str]) -> int:
        wanted = list(dict.fromkeys(ids))
        sql = 'DELETE FROM relations WHERE id = ANY(%s::text[])'
        return await self._db.run(lambda tx: tx.execute(sql, (wanted,)).rowcount, write=True) if wanted else 0

    async def list_entities(self) -> Sequence[Entity]:
        rows = await self._db.run(
            lambda tx: tx.execute("SELECT body FROM records WHERE kind = 'entity' ORDER BY id").fetchall(),
            write=True,  # unscoped, for ingestion and the builders: as the owner in RLS mode
        )
        return [Entity.model_validate_json(body) for (body,) in rows]

    @property
    def graph_built(self) -> bool:
        """`GraphBuilt`: whether `build_graph` ran on this store, as its ``meta`` table recorded it when the store
        was opened (or this object recorded since): an operator's act, never counted from records (docs/graph.md)."""
        return bool(self._graph_builders)

    async def record_graph_built(self, builders: Sequence[str]) -> None:
        """`GraphBuiltWriter`: the builders added to those the ``meta`` table records, in one transaction."""

        def write(tx: Tx) -> tuple[str, ...]:
            tx.execute('SELECT pg_advisory_xact_lock(hashtext(%s))', (f'toolish_rag:{self.schema}:graph',))
            names = tuple(sorted({*_read_graph_builders(tx), *builders}))
            tx.execute(
                "INSERT INTO meta (key, value) VALUES ('graph', %s::jsonb) "
                'ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value',
                (json.dumps(list(names)),),
            )
            return names

        self._graph_builders = await self._db.run(write, write=True)

    async def graph_marks(self, builder: str) -> dict[str, str]:
        sql = 'SELECT key, value FROM graph_marks WHERE builder = %s'
        return await self._db.run(lambda tx: dict(tx.execute(sql, (builder,)).fetchall()), write=True)

    async def set_graph_marks(self, builder: str, marks: Mapping[str, str | None]) -> None:
        def write(tx: Tx) -> None:
            gone = [k for k, v in marks.items() if v is None]
            kept = [(builder, k, v) for k, v in marks.items() if v is not None]
            tx.execute('DELETE FROM graph_marks WHERE builder = %s AND key = ANY(%s::text[])', (builder, gone))
            with tx.cursor() as cursor:
                cursor.executemany(
                    'INSERT INTO graph_marks (builder, key, value) VALUES (%s, %s, %s) '
                    'ON CONFLICT (builder, key) DO UPDATE SET value = EXCLUDED.value',
                    kept,
                )

        await self._db.run(write, write=True)

    # -- searches --------------------------------------------------------------------------------

    async def vector_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        """The ``top_k`` nearest in scope, in one statement that also checks the manifest still names this process's
        embedder (`EmbedderMismatch` after another process re-embedded the store; docs/stores/postgres.md)."""
        if request.top_k < 1:
            return []
        (vector,) = await self._embed([request.query], query=True)
        scope = compile_filter(request.filter)
        settings = hnsw_settings(request.top_k, self.ef_search, filtered=scope.sql != 'TRUE')
        if scope.sql == 'TRUE':
            settings.update(UNSCOPED_PLAN)
        identity = (self._manifest.embedder if self._manifest else None) or embedder_identity(
            self.embedder, len(vector.split(','))
        )
        if self._held is None or self._held[0] != identity:
            self._held = (identity, identity_json(identity))
        for _ in range(2):  # twice: once more after the manifest wrote the same embedder otherwise
            statement, params = vector_statement(
                scope, vector, request.top_k, exact_below=self.exact_below, embedder=self._held[1]
            )
            rows = await self._db.query(statement, params, scope=self._scope(request.filter), settings=settings)
            try:
                self.last_vector_plan, hits = vector_hits(rows)
            except StaleEmbedder as stale:
                self._held = (identity, recorded_or_refused(stale.recorded, identity, self.location))
                continue
            return [SearchHit(parse(body), score) for body, score in hits]
        raise RuntimeError(f'{self.location}: its manifest changed during the search; search again')

    async def text_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        if request.top_k < 1:
            return []
        scope = compile_filter(request.filter)
        rows = await self._text.rows(self._db, scope, request.query, request.top_k, self._scope(request.filter))
        return [SearchHit(parse(body), score) for body, score in rows]

    async def term_statistics(self, request: TermStatisticsRequest) -> TermStatistics | None:
        """BM25's counts in the request's scope, exact and current (`toolish_rag.protocols.TermStatisticsSource`)."""
        if request.analyzer != self._analyzer.identity:
            return None
        scope = compile_filter(request.filter)
        result: TermStatistics = await self._read(
            lambda tx: term_statistics_in(tx, scope, request, True), request.filter
        )
        return result

    async def regex_search(self, request: RegexRequest) -> Sequence[SearchHit]:
        pattern = compile_request(request)  # RE2 first: a pattern it refuses never reaches the server
        if request.top_k < 1:
            return []
        scope = compile_filter(request.filter)
        hits: list[SearchHit] = await self._read(
            lambda tx: regex_rows(tx, scope, pattern, request, self.regex_scan_limit), request.filter
        )
        return hits

    # -- expansion, navigation, graph --------------------------------------------------------------

    async def get_records(self, ids: Sequence[str], *, filter: Filter | None = None) -> Sequence[Chunk | Entity]:
        scope = compile_filter(filter)
        return await self._read(lambda tx: records_by_id(tx, ids, scope), filter)

    async def expand(self, request: ExpansionRequest) -> Sequence[Chunk]:
        return await self._read(lambda tx: expand_in(tx, request), request.filter)

    async def document_page(self, request: DocumentPageRequest) -> DocumentPage:
        scope = compile_filter(request.filter)
        return await self._read(lambda tx: page_of_documents(tx, request, scope), request.filter)

    async def chunk_outlines(self, request: OutlineRequest) -> Sequence[ChunkOutline]:
        return await self._read(lambda tx: outlines(tx, request), request.filter)

    async def read_section(self, request: SectionReadRequest) -> SectionPage:
        scope = compile_filter(request.filter)
        return await self._read(lambda tx: section_page(tx, request, scope), request.filter)

    async def graph_nodes(self, request: NodeRequest) -> Sequence[GraphNode]:
        return await self._read(lambda tx: hop_nodes(tx, request), request.filter)

    async def neighbours(self, request: NeighbourRequest) -> Neighbours:
        return await self._read(lambda tx: hop_neighbours(tx, request), request.filter)

    async def walk_neighbourhood(self, request: WalkRequest) -> Neighbourhood | None:
        """Everything ``request`` can reach (records and edges), read in one statement: a recursive CTE bounded
        by its hops and by `walk_read_limit` rows (``None`` past it: the walk then reads hop by hop). The core's
        walk runs on the answer, so it equals a hop-by-hop walk (docs/stores/postgres.md, Graph)."""
        if request.hops < 1 or not request.seeds:
            return None
        return await self._read(lambda tx: read_neighbourhood(tx, request, self.walk_read_limit), request.filter)

    def close(self) -> None:
        """Close this server's pooled connections and, for ``postgres:./folder``, release the embedded server.

        The server stops when no other process uses it (it would at exit anyway: call this when the
        folder may be gone by then, as a temporary directory is). See docs/stores/postgres.md (Starting).
        """
        close_pool(self._db.conninfo)
        server, self._server = self._server, None
        cleanup = getattr(server, 'cleanup', None)
        if cleanup is not None:
            cleanup()

    def __repr__(self) -> str:
        return f'PostgresStore({self.location})'


def _key_problem(key: str) -> str | None:
    return unstorable(key)


def _read_graph_builders(tx: Tx) -> tuple[str, ...]:
    """The graph builders the ``meta`` table records (empty: no graph built)."""
    row = tx.execute("SELECT value::text FROM meta WHERE key = 'graph'").fetchone()
    return tuple(str(name) for name in json.loads(row[0])) if row is not None else ()
