"""`LanceDBStore`: a toolish-rag store on LanceDB, embedded or on object storage.

Two LanceDB tables live under the store's location:

* ``records`` — one row per chunk or entity (``kind``), with its embedding, the indexed
  ``text`` (full-text index), ``urtext``, ``document_id``/``sequence_number``/``section_ids``
  for expansion, ``labels`` (label-list index), ``metadata_json`` (exact metadata), a
  JSON ``payload`` with the remaining fields, and typed ``md__*`` metadata columns added by
  schema evolution (see `toolish_rag_lancedb.filters`).
* ``documents`` — one row per document: id, uri, title, fingerprint, metadata, labels,
  section tree and chunk count (what `list_documents` reads), plus ``pending_version`` and
  ``previous_json`` while an upsert is between its documents and records commits.

Everything goes through LanceDB's async API, so no call blocks the event loop.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any

import lancedb
import numpy as np
import pyarrow as pa
from lancedb.index import FTS, BTree, IvfSq, LabelList
from lancedb.query import ColumnOrdering
from pydantic_ai.embeddings import Embedder, EmbeddingModel

from toolish_rag.content import Chunk, Document, Entity, Section, dedupe_last, split_items
from toolish_rag.embedding import resolve_embedder
from toolish_rag.errors import QuerySyntaxError
from toolish_rag.filters import Filter
from toolish_rag.protocols import DocumentInfo
from toolish_rag.regex import compile_pattern, count_matches
from toolish_rag.search import ExpansionRequest, RegexRequest, SearchHit, SearchRequest

from .filters import column_type, filter_to_where, metadata_columns, sql_string
from .text_query import TEXT_QUERY_SYNTAX, parse_text_query

__all__ = ['LanceDBStore', 'open_store']

RECORDS_TABLE = 'records'
DOCUMENTS_TABLE = 'documents'
FORMAT_VERSION = '1'
_META_DIMS = b'toolish_rag.embedding_dims'
_META_MODEL = b'toolish_rag.embedding_model'
_META_FORMAT = b'toolish_rag.format'

_RESULT_COLUMNS = ['id', 'kind', 'text', 'urtext', 'payload', 'metadata_json', 'labels']
_PAYLOAD_EXCLUDE = {'id', 'text', 'urtext', 'metadata', 'labels'}

EmbedderLike = Embedder | EmbeddingModel | str | None


def _records_schema(dims: int, model_name: str) -> pa.Schema:
    return pa.schema(
        [
            pa.field('id', pa.string(), nullable=False),
            pa.field('kind', pa.string(), nullable=False),
            pa.field('document_id', pa.string()),
            pa.field('text', pa.string()),
            pa.field('urtext', pa.string()),
            pa.field('sequence_number', pa.int64()),
            pa.field('section_ids', pa.list_(pa.string())),
            pa.field('labels', pa.list_(pa.string())),
            pa.field('metadata_json', pa.string()),
            pa.field('payload', pa.string()),
            pa.field('vector', pa.list_(pa.float32(), dims)),
        ],
        metadata={
            _META_DIMS: str(dims).encode(),
            _META_MODEL: model_name.encode(),
            _META_FORMAT: FORMAT_VERSION.encode(),
        },
    )


_PENDING_FIELDS = ('pending_version', 'previous_json')
"""A documents row written before its chunks carries the records-table version it was written
at and the row it replaces (JSON, ``NULL`` for a new document); see `LanceDBStore.upsert`."""

_DOCUMENTS_SCHEMA = pa.schema(
    [
        pa.field('id', pa.string(), nullable=False),
        pa.field('uri', pa.string()),
        pa.field('title', pa.string()),
        pa.field('fingerprint', pa.string()),
        pa.field('metadata_json', pa.string()),
        pa.field('labels', pa.list_(pa.string())),
        pa.field('sections_json', pa.string()),
        pa.field('chunk_count', pa.int64()),
        pa.field('pending_version', pa.int64()),
        pa.field('previous_json', pa.string()),
    ],
    metadata={_META_FORMAT: FORMAT_VERSION.encode()},
)


def _in_list(values: Iterable[str]) -> str:
    return '(' + ', '.join(sql_string(v) for v in values) + ')'


def _record_text(record: Chunk | Entity) -> str:
    return record.text


def _record_from_row(row: Mapping[str, Any]) -> Chunk | Entity:
    data: dict[str, Any] = json.loads(row['payload'])
    data['id'] = row['id']
    data['metadata'] = json.loads(row['metadata_json'] or '{}')
    data['labels'] = row['labels'] or []
    if row['kind'] == 'entity':
        return Entity.model_validate(data)
    data['text'] = row['text']
    data['urtext'] = row['urtext']
    return Chunk.model_validate(data)


def _settled(row: Mapping[str, Any], records_version: int) -> dict[str, Any] | None:
    """What a documents row stands for: itself once its chunks were committed (the records
    table moved past the version it was written at), else the row it replaced (``None``: none)."""
    pending = row.get('pending_version')
    if pending is None or records_version > pending:
        return {**row, 'pending_version': None, 'previous_json': None}
    previous = row.get('previous_json')
    if previous is None:
        return None
    restored: dict[str, Any] = json.loads(previous)
    return {**restored, 'pending_version': None, 'previous_json': None}


class LanceDBStore:
    """A toolish-rag store backed by LanceDB.

    ``uri`` is a local directory (``"./kb"``) or an object-store URL (``"s3://bucket/kb"``,
    ``"gs://..."``, ``"az://..."``) with credentials in ``storage_options`` or the usual
    environment variables. The store opens lazily on first use.

    Implements `VectorSearch`, `TextSearch`, `RegexSearch`, `ResultExpander`,
    `FilterPushdown` (every filter) and `DocumentStore`; hybrid search is left to the
    core's rank fusion of vector and text results.

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
        regex_scan_limit: at most this many matching rows (in table order) are ranked by match
            count per regex search; more matches than that are not looked at.
        vector_index: the LanceDB index config used at ``ann_threshold`` (default: IVF-SQ,
            cosine; see `create_vector_index`).
        nprobes: IVF partitions probed per vector query (more: better recall, slower).
        refine_factor: candidates re-scored exactly per hit wanted.
        ann_rebuild_growth: re-train the default ANN index once the table has grown this many
            times over since the index was built (or since this object first saw it), so its
            partition count keeps up with the data. ``None``: never.
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
        nprobes: int = 40,
        refine_factor: int = 5,
        ann_rebuild_growth: float | None = 4.0,
    ) -> None:
        self.uri = os.fspath(uri)
        self.embedder = resolve_embedder(embedder)
        self.storage_options = dict(storage_options or {})
        self.read_consistency_interval = read_consistency_interval
        self.ann_threshold = ann_threshold
        self.optimize_every = optimize_every
        self.max_unindexed_rows = max_unindexed_rows
        self.cleanup_older_than = cleanup_older_than
        self.regex_scan_limit = regex_scan_limit
        self.vector_index = vector_index
        self.nprobes = nprobes
        self.refine_factor = refine_factor
        self.ann_rebuild_growth = ann_rebuild_growth
        self._ann_rows: int | None = None
        self._documents_settled = False
        self._db: Any = None
        self._records: Any = None
        self._documents: Any = None
        self._columns: frozenset[str] = frozenset()
        self._dims: int | None = None
        self._has_ann = False
        self._writes_since_optimize = 0
        self._indexes_checked = False
        self._locks: dict[int, tuple[asyncio.Lock, asyncio.Lock]] = {}

    def __repr__(self) -> str:
        return f'LanceDBStore({self.uri!r})'

    # -- plumbing ---------------------------------------------------------------------------

    def _lock(self, which: int) -> asyncio.Lock:
        # asyncio locks bind to the loop they are first used on; keep one pair per loop so a
        # store object survives being used from several event loops (tests, notebooks).
        loop = asyncio.get_running_loop()
        pair = self._locks.get(id(loop))
        if pair is None:
            pair = (asyncio.Lock(), asyncio.Lock())
            self._locks = {id(loop): pair}
        return pair[which]

    @property
    def _write_lock(self) -> asyncio.Lock:
        return self._lock(1)

    async def _connect(self) -> None:
        if self._db is not None:
            return
        async with self._lock(0):
            if self._db is not None:
                return
            db = await lancedb.connect_async(
                self.uri,
                storage_options=self.storage_options or None,
                read_consistency_interval=self.read_consistency_interval,
            )
            names = set((await db.list_tables()).tables)
            if RECORDS_TABLE in names:
                self._records = await db.open_table(RECORDS_TABLE)
                await self._refresh_schema()
            if DOCUMENTS_TABLE in names:
                self._documents = await db.open_table(DOCUMENTS_TABLE)
            self._db = db

    async def _refresh_schema(self) -> None:
        schema = await self._records.schema()
        self._columns = frozenset(schema.names)
        meta = schema.metadata or {}
        self._dims = int(meta[_META_DIMS]) if _META_DIMS in meta else schema.field('vector').type.list_size
        self._has_ann = any(ix.columns == ['vector'] for ix in await self._records.list_indices())

    async def _table(self) -> Any:
        """The records table for a read, or ``None`` while the store is empty."""
        await self._connect()
        if self._records is None and self.read_consistency_interval is not None:
            names = set((await self._db.list_tables()).tables)
            if RECORDS_TABLE in names:
                async with self._lock(0):
                    if self._records is None:
                        self._records = await self._db.open_table(RECORDS_TABLE)
        if self._records is not None and self.read_consistency_interval is not None:
            await self._refresh_schema()  # another process may have added columns
        return self._records

    async def _ensure_tables(self, dims: int | None) -> None:
        await self._connect()
        if self._documents is None:
            self._documents = await self._db.create_table(DOCUMENTS_TABLE, schema=_DOCUMENTS_SCHEMA, exist_ok=True)
        await self._settle()
        if self._records is None and dims is not None:
            model = self.embedder.model
            name = model if isinstance(model, str) else model.model_name
            table = await self._db.create_table(RECORDS_TABLE, schema=_records_schema(dims, name), exist_ok=True)
            self._records = table
            await self._refresh_schema()
        if self._records is not None and not self._indexes_checked:
            # Also repairs a table whose creation was interrupted before its indexes existed.
            existing = {ix.name for ix in await self._records.list_indices()}
            for column, config in (
                ('id', BTree()),
                ('document_id', BTree()),
                ('labels', LabelList()),
                ('text', FTS(with_position=True, remove_stop_words=False)),
            ):
                if f'{column}_idx' not in existing:
                    await self._records.create_index(column, config=config, replace=True)
            self._indexes_checked = True
        if dims is not None and self._dims is not None and dims != self._dims:
            raise ValueError(
                f'this store holds {self._dims}-dimensional embeddings but the embedder returns {dims}: '
                'open it with the embedding model it was built with'
            )

    async def _embed(self, texts: Sequence[str], *, query: bool) -> np.ndarray[Any, np.dtype[np.float32]]:
        if query:
            result = await self.embedder.embed_query(list(texts))
        else:
            result = await self.embedder.embed_documents(list(texts))
        return np.asarray(result.embeddings, dtype=np.float32).reshape(len(texts), -1)

    def _where(self, f: Filter | None, *extra: str) -> str | None:
        parts = [p for p in extra if p]
        if f is not None:
            parts.append(filter_to_where(f, self._columns))
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else ' AND '.join(f'({p})' for p in parts)

    @staticmethod
    def _hits(table: pa.Table, score_column: str, transform: Any = None) -> list[SearchHit]:
        hits: list[SearchHit] = []
        for row in table.to_pylist():
            raw = float(row[score_column])
            hits.append(SearchHit(record=_record_from_row(row), score=transform(raw) if transform else raw))
        return hits

    # -- capabilities -----------------------------------------------------------------------

    def supports_filter(self, filter: Filter) -> bool:
        """Every filter node translates natively (values with NUL characters excepted)."""
        try:
            filter_to_where(filter, ())
        except (ValueError, TypeError):
            return False
        return True

    @property
    def text_query_syntax(self) -> str:
        return TEXT_QUERY_SYNTAX

    async def vector_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        """Top ``top_k`` by cosine similarity (exact below ``ann_threshold`` rows, ANN above)."""
        table = await self._table()
        if table is None or request.top_k <= 0:
            return []
        vector = (await self._embed([request.query], query=True))[0]
        where = self._where(request.filter)
        if not np.any(vector):
            # No direction to compare with (e.g. a query without words for a lexical embedder):
            # every record is equally (un)similar, as in the reference store: score 0, table order.
            q = table.query().select(_RESULT_COLUMNS).limit(request.top_k)
            rows = await (q if where is None else q.where(where)).to_arrow()
            return [SearchHit(record=_record_from_row(row), score=0.0) for row in rows.to_pylist()]

        def build(exact: bool) -> Any:
            q = table.query().nearest_to(vector).column('vector').distance_type('cosine').limit(request.top_k)
            q = q.select(_RESULT_COLUMNS)
            if where is not None:
                q = q.where(where)
            if exact:
                q = q.bypass_vector_index()
            elif self._has_ann:
                q = q.nprobes(self.nprobes).refine_factor(self.refine_factor)
            return q

        result = await build(exact=False).to_arrow()
        # An ANN probe can come back short under a selective filter: then answer exactly.
        if self._has_ann and result.num_rows < request.top_k and await table.count_rows(where) > result.num_rows:
            result = await build(exact=True).to_arrow()
        return self._hits(result, '_distance', lambda d: 1.0 - d)

    async def text_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        """BM25 over the indexed text, with a substring fallback when no word matches."""
        table = await self._table()
        if table is None or request.top_k <= 0:
            return []
        parsed = parse_text_query(request.query)
        where = self._where(request.filter)
        if parsed.fts is not None:
            q = table.query().nearest_to_text(parsed.fts).select(_RESULT_COLUMNS).limit(request.top_k)
            if where is not None:
                q = q.where(where)
            try:
                result = await q.to_arrow()
            except ValueError as exc:
                if 'INVERTED index' not in str(exc):
                    raise
                # A writer died between creating the table and its text index (the next write
                # adds it): scan for the words instead.
                words = tuple(w for w in request.query.split() if w)
                return await self._substring_search(table, (request.query, *words), request.top_k, where)
            if result.num_rows:
                return self._hits(result, '_score')
        return await self._substring_search(table, parsed.substrings, request.top_k, where)

    async def _substring_search(
        self, table: Any, substrings: Sequence[str], top_k: int, where: str | None
    ) -> list[SearchHit]:
        needles = [s.lower() for s in substrings if s and '\x00' not in s]
        if not needles:
            return []
        tests = ' OR '.join(f'strpos(lower(text), {sql_string(n)}) > 0' for n in needles)
        clause = self._where(None, f'({tests})', where or '')
        rows = (
            await table.query().where(clause).select(_RESULT_COLUMNS).limit(self.regex_scan_limit).to_arrow()
        ).to_pylist()
        scored: list[tuple[float, int, dict[str, Any]]] = []
        for position, row in enumerate(rows):
            text = (row['text'] or '').lower()
            # The whole query counts most, then each piece by its number of occurrences.
            score = sum(text.count(n) * (len(needles) if i == 0 else 1) for i, n in enumerate(needles))
            scored.append((float(score), position, row))
        scored.sort(key=lambda t: (-t[0], t[1]))
        return [SearchHit(record=_record_from_row(row), score=score) for score, _, row in scored[:top_k]]

    async def regex_search(self, request: RegexRequest) -> Sequence[SearchHit]:
        """Records whose exact text (a chunk's ``urtext``, an entity's text) matches ``pattern``.

        LanceDB selects the rows (``regexp_like``, a linear-time engine); RE2 then counts the
        matches, which are the scores. Ties keep document and sequence order. At most
        ``regex_scan_limit`` matching rows are ranked.
        """
        try:
            compiled = compile_pattern(request.pattern, case_sensitive=request.case_sensitive)
        except ValueError as exc:
            raise QuerySyntaxError(str(exc)) from None
        if '\x00' in request.pattern:
            raise QuerySyntaxError('the pattern contains a NUL character; write \\x00 to match one')
        table = await self._table()
        if table is None or request.top_k <= 0:
            return []
        pattern = request.pattern if request.case_sensitive else f'(?i){request.pattern}'
        where = self._where(request.filter, f'regexp_like(urtext, {sql_string(pattern)})')
        try:
            found = await (
                table.query()
                .where(where)
                .select(['id', 'kind', 'urtext', 'document_id', 'sequence_number'])
                .limit(self.regex_scan_limit)
                .to_arrow()
            )
        except Exception as exc:  # LanceDB's regex engine rejected what RE2 accepted
            if 'regex' in str(exc).lower():
                raise QuerySyntaxError(f'cannot run the regular expression {request.pattern!r}: {exc}') from None
            raise
        ranked: list[tuple[int, str, int, str, tuple[str, ...]]] = []
        for row in found.to_pylist():
            count, samples = count_matches(compiled, row['urtext'] or '')
            if not count:  # the engines differ slightly (e.g. Unicode \\d); RE2 decides
                continue
            if row['kind'] == 'chunk':
                ranked.append((-count, row['document_id'] or '', row['sequence_number'] or 0, row['id'], samples))
            else:
                ranked.append((-count, row['id'], 0, row['id'], samples))
        ranked.sort()
        top = ranked[: request.top_k]
        if not top:
            return []
        by_id = {r.id: r for r in await self._fetch([t[3] for t in top], None)}
        return [SearchHit(record=by_id[t[3]], score=float(-t[0]), matches=t[4]) for t in top if t[3] in by_id]

    async def _fetch(self, ids: Sequence[str], f: Filter | None) -> list[Chunk | Entity]:
        table = await self._table()
        if table is None or not ids:
            return []
        out: list[Chunk | Entity] = []
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), 1000):
            where = self._where(f, f'id IN {_in_list(unique[start : start + 1000])}')
            rows = await table.query().where(where).select(_RESULT_COLUMNS).to_arrow()
            out.extend(_record_from_row(r) for r in rows.to_pylist())
        return out

    async def get_records(self, ids: Sequence[str], *, filter: Filter | None = None) -> Sequence[Chunk | Entity]:
        """Records with these ids (that satisfy ``filter``), in the order asked for."""
        found = {r.id: r for r in await self._fetch(list(ids), filter)}
        return [found[i] for i in dict.fromkeys(ids) if i in found]

    async def expand(self, request: ExpansionRequest) -> Sequence[Chunk]:
        table = await self._table()
        if table is None or request.limit <= 0:
            return []
        parts = ["kind = 'chunk'"]
        if request.document_id is not None:
            parts.append(f'document_id = {sql_string(request.document_id)}')
        if request.first is not None:
            parts.append(f'sequence_number >= {int(request.first)}')
        if request.last is not None:
            parts.append(f'sequence_number <= {int(request.last)}')
        if request.section_id is not None:
            parts.append(f'array_has(section_ids, {sql_string(request.section_id)})')
        where = self._where(request.filter, ' AND '.join(parts))
        rows = await (
            table.query()
            .where(where)
            .select([*_RESULT_COLUMNS, 'sequence_number'])
            .order_by([ColumnOrdering(column_name='sequence_number', ascending=True)])
            .limit(request.limit)
            .to_arrow()
        )
        chunks = [r for r in (_record_from_row(row) for row in rows.to_pylist()) if isinstance(r, Chunk)]
        chunks.sort(key=lambda c: c.sequence_number)
        return chunks

    # -- writes -----------------------------------------------------------------------------

    def _rows(self, records: Sequence[Chunk | Entity], vectors: np.ndarray[Any, Any], schema: pa.Schema) -> pa.Table:
        n = len(records)
        columns: dict[str, list[Any]] = {name: [None] * n for name in schema.names if name != 'vector'}
        for i, record in enumerate(records):
            payload = record.model_dump(mode='json', exclude=_PAYLOAD_EXCLUDE)
            columns['id'][i] = record.id
            columns['kind'][i] = record.kind
            columns['text'][i] = _record_text(record)
            columns['labels'][i] = sorted(record.labels)
            columns['metadata_json'][i] = json.dumps(record.metadata, ensure_ascii=False)
            columns['payload'][i] = json.dumps(payload, ensure_ascii=False)
            if isinstance(record, Chunk):
                columns['document_id'][i] = record.document_id
                columns['urtext'][i] = record.urtext
                columns['sequence_number'][i] = record.sequence_number
                columns['section_ids'][i] = list(record.section_ids)
            else:
                columns['urtext'][i] = record.text  # what regex search reads
                columns['section_ids'][i] = []
            for name, value in metadata_columns(record.metadata).items():
                columns[name][i] = value
        arrays = [
            pa.array(columns[f.name], type=f.type)
            if f.name != 'vector'
            else pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), type=pa.float32()), f.type.list_size)
            for f in schema
        ]
        return pa.Table.from_arrays(arrays, schema=schema)

    async def _evolve(self, records: Sequence[Chunk | Entity]) -> None:
        wanted: set[str] = set()
        for record in records:
            wanted.update(metadata_columns(record.metadata))
        missing = sorted(wanted - self._columns)
        if missing:
            fields = [pa.field(name, column_type(name.rsplit('__', 1)[1])) for name in missing]
            await self._records.add_columns(pa.schema(fields))
            await self._refresh_schema()

    async def upsert(self, items: Iterable[Document | Entity]) -> None:
        """Insert or replace documents (whole) and entities.

        A document's new chunks and the deletion of its stale ones are one LanceDB commit
        (``merge_insert`` with ``when_not_matched_by_source_delete`` scoped to the batch's
        document ids), so readers see the old or the new version, never a mix. The documents'
        rows are written before that commit, marked pending with the records version they
        precede, and made final after it: a reader (or, after a crash, the next writer) tells by
        the records version which row stands, so ``list_documents`` always agrees with the records.
        """
        documents, entities = split_items(dedupe_last(list(items)))
        if not documents and not entities:
            return
        by_id: dict[str, Chunk | Entity] = {}
        for doc in documents:
            for chunk in doc.chunks:
                by_id.pop(chunk.id, None)
                by_id[chunk.id] = chunk
        for entity in entities:
            by_id.pop(entity.id, None)
            by_id[entity.id] = entity
        records = list(by_id.values())
        vectors = await self._embed([_record_text(r) for r in records], query=False) if records else None
        async with self._write_lock:
            await self._ensure_tables(vectors.shape[1] if vectors is not None else None)
            merge: Any = None
            data: pa.Table | None = None
            if self._records is not None:
                await self._evolve(records)
                await self._check_clashes(records, documents)
                schema = await self._records.schema()
                data = self._rows(records, vectors if vectors is not None else np.zeros((0, 1)), schema)
                stored = await self._stored_chunk_ids(documents) if documents else set()
                stale = stored - {r.id for r in records}
                if not stored and not entities:
                    # Only new documents and no id clashes (checked above): a plain append.
                    if data.num_rows:
                        merge = self._records
                elif data.num_rows or stale:
                    merge = self._records.merge_insert('id').when_matched_update_all().when_not_matched_insert_all()
                    if stale:
                        # The stale chunks go in the same commit as the new ones: a reader sees
                        # the old version or the new one, never a mix.
                        scope = ' OR '.join(
                            f'id IN {_in_list(sorted(stale)[i : i + 1000])}' for i in range(0, len(stale), 1000)
                        )
                        merge = merge.when_not_matched_by_source_delete(f"kind = 'chunk' AND ({scope})")
            try:
                if documents and merge is not None:
                    # Documents rows first, marked pending with the records version they precede
                    # and the rows they replace: whatever instant a crash hits, readers (and the
                    # next writer, which settles them) can tell whether the chunks were committed.
                    version = int(await self._records.version())
                    previous = await self._current_document_rows([d.id for d in documents])
                    await self._merge_documents(self._document_rows(documents, pending=(version, previous)))
                if merge is not None:
                    assert data is not None
                    await (merge.add(data) if merge is self._records else merge.execute(data))
                if documents:
                    await self._merge_documents(self._document_rows(documents))
            except BaseException:
                self._documents_settled = False  # pending rows may be left: settle before the next write
                raise
            await self._maintain()

    async def _stored_chunk_ids(self, documents: Sequence[Document]) -> set[str]:
        """Ids of the chunks now stored for these documents (an indexed lookup)."""
        ids = [d.id for d in documents]
        found: set[str] = set()
        for start in range(0, len(ids), 1000):
            where = f"kind = 'chunk' AND document_id IN {_in_list(ids[start : start + 1000])}"
            rows = await self._records.query().where(where).select(['id']).to_arrow()
            found.update(rows.column('id').to_pylist())
        return found

    async def _check_clashes(self, records: Sequence[Chunk | Entity], documents: Sequence[Document]) -> None:
        """Refuse a record id that already belongs to another document (or kind of record)."""
        scope = _in_list(d.id for d in documents) if documents else None
        chunk_ids = [r.id for r in records if isinstance(r, Chunk)]
        entity_ids = [r.id for r in records if isinstance(r, Entity)]
        checks: list[str] = []
        for start in range(0, len(chunk_ids), 1000):
            owned = f" AND NOT (kind = 'chunk' AND document_id IN {scope})" if scope else ''
            checks.append(f'id IN {_in_list(chunk_ids[start : start + 1000])}{owned}')
        for start in range(0, len(entity_ids), 1000):
            checks.append(f"id IN {_in_list(entity_ids[start : start + 1000])} AND kind = 'chunk'")
        for where in checks:
            clash = await self._records.query().where(where).select(['id', 'kind', 'document_id']).limit(1).to_arrow()
            if clash.num_rows:
                row = clash.to_pylist()[0]
                owner = f'document {row["document_id"]!r}' if row['kind'] == 'chunk' else 'an entity'
                raise ValueError(f'record id {row["id"]!r} already belongs to {owner}')

    def _document_rows(
        self, documents: Sequence[Document], *, pending: tuple[int, Mapping[str, str]] | None = None
    ) -> pa.Table:
        rows: list[dict[str, Any]] = [
            {
                'id': d.id,
                'uri': d.uri,
                'title': d.title,
                'fingerprint': d.fingerprint,
                'metadata_json': json.dumps(d.metadata, ensure_ascii=False),
                'labels': sorted(d.labels),
                'sections_json': json.dumps([s.model_dump(mode='json') for s in d.sections], ensure_ascii=False),
                'chunk_count': len(d.chunks),
            }
            for d in documents
        ]
        if pending is not None:
            version, previous = pending
            for row in rows:
                row['pending_version'] = version
                row['previous_json'] = previous.get(row['id'])
        return pa.Table.from_pylist(rows, schema=_DOCUMENTS_SCHEMA)

    async def _merge_documents(self, rows: pa.Table) -> None:
        await self._documents.merge_insert('id').when_matched_update_all().when_not_matched_insert_all().execute(rows)

    async def _current_document_rows(self, ids: Sequence[str]) -> dict[str, str]:
        """The settled rows of these documents now stored, as JSON (what a revert restores)."""
        out: dict[str, str] = {}
        records_version = await self._records_version()
        for start in range(0, len(ids), 1000):
            where = f'id IN {_in_list(ids[start : start + 1000])}'
            for row in (await self._documents.query().where(where).to_arrow()).to_pylist():
                settled = _settled(row, records_version)
                if settled is not None:
                    out[settled['id']] = json.dumps(settled, ensure_ascii=False)
        return out

    async def _settle(self) -> None:
        """Before this object's first change to either table: resolve a crashed write."""
        await self._connect()
        if not self._documents_settled and self._documents is not None:
            await self._settle_documents()

    async def _records_version(self) -> int:
        return -1 if self._records is None else int(await self._records.version())

    async def _settle_documents(self) -> None:
        """Resolve the pending rows a crashed writer left (once per store object, before writing).

        A pending row whose records version has since moved on was followed by its chunk commit:
        it becomes final. Otherwise the chunks never landed: the previous row comes back (or
        the row goes, for a document that did not exist before).
        """
        names = set((await self._documents.schema()).names)
        missing = [name for name in _PENDING_FIELDS if name not in names]
        if missing:  # a store written before the pending columns existed
            await self._documents.add_columns(pa.schema([_DOCUMENTS_SCHEMA.field(name) for name in missing]))
        rows = (await self._documents.query().where('pending_version IS NOT NULL').to_arrow()).to_pylist()
        if rows:
            records_version = await self._records_version()
            keep: list[dict[str, Any]] = []
            drop: list[str] = []
            for row in rows:
                settled = _settled(row, records_version)
                if settled is None:
                    drop.append(row['id'])
                else:
                    keep.append(settled)
            if keep:
                await self._merge_documents(pa.Table.from_pylist(keep, schema=_DOCUMENTS_SCHEMA))
            for start in range(0, len(drop), 1000):
                await self._documents.delete(f'id IN {_in_list(drop[start : start + 1000])}')
        self._documents_settled = True

    async def delete_documents(self, document_ids: Iterable[str]) -> int:
        """Delete documents and their chunks; returns how many of them were stored."""
        ids = list(dict.fromkeys(document_ids))
        if not ids:
            return 0
        async with self._write_lock:
            await self._settle()
            if self._documents is None and self._records is None:
                return 0
            existed = 0
            for start in range(0, len(ids), 1000):
                batch = _in_list(ids[start : start + 1000])
                # Chunks first: a crash in between leaves a listed document with no chunks,
                # which a re-run deletes, never chunks that no listing can reach.
                if self._records is not None:
                    await self._records.delete(f"kind = 'chunk' AND document_id IN {batch}")
                if self._documents is not None:
                    existed += await self._documents.count_rows(f'id IN {batch}')
                    await self._documents.delete(f'id IN {batch}')
            await self._maintain()
            return existed

    async def delete_entities(self, entity_ids: Iterable[str]) -> int:
        ids = list(dict.fromkeys(entity_ids))
        if not ids:
            return 0
        async with self._write_lock:
            await self._settle()
            if self._records is None:
                return 0
            existed = 0
            for start in range(0, len(ids), 1000):
                where = f"kind = 'entity' AND id IN {_in_list(ids[start : start + 1000])}"
                count = await self._records.count_rows(where)
                if count:
                    existed += count
                    await self._records.delete(where)
            await self._maintain()
            return existed

    async def list_documents(self) -> Sequence[DocumentInfo]:
        await self._connect()
        if self._documents is None:
            if self.read_consistency_interval is None or DOCUMENTS_TABLE not in (await self._db.list_tables()).tables:
                return []
            self._documents = await self._db.open_table(DOCUMENTS_TABLE)
        columns = ['id', 'uri', 'title', 'fingerprint', 'metadata_json', 'chunk_count']
        names = set((await self._documents.schema()).names)
        columns += [name for name in _PENDING_FIELDS if name in names]
        table = await self._table()
        records_version = -1 if table is None else int(await table.version())
        found = (await self._documents.query().select(columns).to_arrow()).to_pylist()
        rows = [s for s in (_settled(r, records_version) for r in found) if s is not None]
        infos = [
            DocumentInfo(
                id=r['id'],
                uri=r['uri'],
                title=r['title'],
                fingerprint=r['fingerprint'],
                chunk_count=int(r['chunk_count'] or 0),
                metadata=json.loads(r['metadata_json'] or '{}'),
            )
            for r in rows
        ]
        return sorted(infos, key=lambda i: i.id)

    async def get_document(self, document_id: str) -> Document | None:
        """The stored document, with its section tree and chunks, or ``None``."""
        await self._connect()
        if self._documents is None:
            return None
        table = await self._table()
        records_version = -1 if table is None else int(await table.version())
        found = (await self._documents.query().where(f'id = {sql_string(document_id)}').to_arrow()).to_pylist()
        rows = [s for s in (_settled(r, records_version) for r in found) if s is not None]
        if not rows:
            return None
        row = rows[0]
        chunks = await self.expand(ExpansionRequest(document_id=document_id, limit=2**31 - 1))
        return Document(
            id=row['id'],
            uri=row['uri'],
            title=row['title'],
            fingerprint=row['fingerprint'],
            metadata=json.loads(row['metadata_json'] or '{}'),
            labels=frozenset(row['labels'] or []),
            sections=tuple(Section.model_validate(s) for s in json.loads(row['sections_json'] or '[]')),
            chunks=tuple(chunks),
        )

    # -- maintenance ------------------------------------------------------------------------

    async def _maintain(self) -> None:
        """Build the ANN index once the table is large enough; optimize now and then."""
        table = self._records
        if table is None:
            return
        self._writes_since_optimize += 1
        rows = int(await table.count_rows())
        if self.ann_threshold is not None and not self._has_ann and rows >= self.ann_threshold:
            await self.create_vector_index()
            return
        if self._has_ann and self.vector_index is None and self.ann_rebuild_growth is not None:
            # Partitions trained on 50k rows are too coarse for 1M: re-train as the table grows.
            if self._ann_rows is None:
                self._ann_rows = rows
            elif rows >= self.ann_rebuild_growth * self._ann_rows:
                await self.create_vector_index()
                return
        unindexed = max((getattr(ix, 'num_unindexed_rows', 0) or 0 for ix in await table.list_indices()), default=0)
        if self._writes_since_optimize >= self.optimize_every or unindexed >= self.max_unindexed_rows:
            await self.optimize()

    async def create_vector_index(self, config: Any = None) -> None:
        """Build (or rebuild) the ANN index on the embeddings now.

        ``config`` is a LanceDB index config (``lancedb.index.IvfPq(distance_type='cosine')``,
        ``HnswSq``...); the default, ``vector_index`` or else IVF-SQ with cosine distance and
        about sqrt(rows) partitions, builds ten times faster than IVF-PQ at equal recall.
        Queries re-rank ``refine_factor`` times ``top_k`` candidates with exact distances, so
        scores stay exact cosine similarities.
        """
        await self._settle()
        table = self._records
        if table is None:
            return
        if config is None:
            config = self.vector_index
        if config is None:
            rows = await table.count_rows()
            config = IvfSq(distance_type='cosine', num_partitions=max(1, min(4096, round(rows**0.5))))
        await table.create_index('vector', config=config, replace=True)
        self._has_ann = True
        self._ann_rows = int(await table.count_rows())
        await self.optimize()

    async def optimize(self) -> None:
        """Compact files, fold new rows into every index and prune old versions."""
        await self._settle()
        for table in (self._records, self._documents):
            if table is not None:
                await table.optimize(cleanup_older_than=self.cleanup_older_than)
        self._writes_since_optimize = 0

    async def index_stats(self) -> dict[str, dict[str, Any]]:
        """Per index of the records table: its type, column and indexed/unindexed row counts."""
        table = await self._table()
        if table is None:
            return {}
        out: dict[str, dict[str, Any]] = {}
        for ix in await table.list_indices():
            stats = await table.index_stats(ix.name)
            out[ix.name] = {
                'index_type': str(ix.index_type),
                'columns': list(ix.columns),
                'indexed_rows': stats.num_indexed_rows if stats else 0,
                'unindexed_rows': stats.num_unindexed_rows if stats else 0,
            }
        return out

    async def count(self) -> int:
        """Number of stored records (chunks and entities)."""
        table = await self._table()
        return 0 if table is None else int(await table.count_rows())

    async def aclose(self) -> None:
        if self._db is not None:
            for t in (self._records, self._documents):
                if t is not None:
                    t.close()
            self._db.close()
        self._db = self._records = self._documents = None

    async def __aenter__(self) -> LanceDBStore:
        await self._connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def open_store(location: str, *, embedder: EmbedderLike = None, **options: Any) -> LanceDBStore:
    """Entry point for the ``toolish_rag.stores`` registry: ``lancedb`` → `LanceDBStore`."""
    return LanceDBStore(location, embedder=embedder, **options)
