"""The store's LanceDB connection and its tables, opened lazily and shared by every part.

One object owns the handles, so the queries, the writes, the settling of crashed writes and
index maintenance all see the same tables, and the rules for tables another process writes
live in one place: a reader opened before the writer created a table looks for it again, and a
reader of a table another process writes re-reads its schema (schema evolution adds columns).
Both apply only with a ``read_consistency_interval``; a single-process store never re-checks.

The graph's two tables (``relations``, ``graph_marks``) are optional: a store written before
them, or never given a relation, has neither, and they are created by the first write that
needs one (`create_relations`, `create_marks`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import lancedb

from toolish_rag.analysis import AUTO, TextAnalyzer, analyzer_for
from toolish_rag.filters import Filter
from toolish_rag.manifest import read_manifest

from ._filters import filter_to_where
from ._schema import (
    DOCUMENTS_SCHEMA,
    DOCUMENTS_TABLE,
    MARKS_SCHEMA,
    MARKS_TABLE,
    META_DIMS,
    RECORDS_TABLE,
    RELATIONS_SCHEMA,
    RELATIONS_TABLE,
    records_schema,
    saved_text_analyzer,
    with_words,
)
from ._windows import WINDOWS_COLUMN, windows_field
from ._writer_lock import WriteTurn

__all__ = ['ENGINE_LANGUAGE', 'NEW_STORE_ANALYZER', 'Tables']

ENGINE_LANGUAGE = 'lancedb'
"""``LanceDBStore(language='lancedb')``: LanceDB's own English FTS analyzer on ``text`` (no ``words`` column)."""

NEW_STORE_ANALYZER = analyzer_for(AUTO)
"""What a new records table is analysed with when the store was opened with ``language=None``: each chunk
in its detected language (docs/stores/lancedb.md#text-analysis). A table saved before keeps its own."""

_NO_TABLE = TextAnalyzer('none')
"""`Tables._peek_analyzer`'s answer when no records table exists (compared by identity)."""


class Tables:
    """Connection, table handles and what is known of the records table's schema.

    ``records``, ``documents``, ``relations`` and ``marks`` are ``None`` until the table exists
    (a new store creates the first two on its first write, the graph's on its first relation or
    ledger entry). ``columns`` and ``dims`` describe the records table as last read;
    ``has_ann`` says whether it has a vector index; ``text_analyzer`` is the core analyzer whose
    tokens its ``words`` column holds (``None``: LanceDB's own FTS analyzer on ``text``).
    ``requested_analyzer`` is the one the store was opened with (``language=``): a new records
    table is built with it, and an existing one built otherwise is refused (`refresh_schema`).
    """

    def __init__(
        self,
        uri: str,
        storage_options: Mapping[str, str],
        read_consistency_interval: timedelta | None,
        requested_analyzer: TextAnalyzer | None = None,
        engine_analyzer: bool = False,
    ) -> None:
        self.requested_analyzer = requested_analyzer
        self.engine_analyzer = engine_analyzer
        """Whether the store was opened with ``language='lancedb'``: LanceDB's own English analyzer."""
        self.text_analyzer: TextAnalyzer | None = None
        self._peeked: tuple[TextAnalyzer | None] | None = None
        self.uri = uri
        self.storage_options = dict(storage_options)
        self.read_consistency_interval = read_consistency_interval
        self.db: Any = None
        self.records: Any = None
        self.documents: Any = None
        self.relations: Any = None
        self.marks: Any = None
        self.columns: frozenset[str] = frozenset()
        self.dims: int | None = None
        self.model_name: str | None = None
        """The embedding model the records table's metadata names (what stores before manifests recorded)."""
        self.has_ann = False
        self.windowed = False
        """Whether vector search scores by the ``windows`` column when the table has it (the store's choice)."""
        self._locks: dict[int, tuple[asyncio.Lock, asyncio.Lock]] = {}
        self.text_languages: frozenset[str] = frozenset()
        """The languages this object's writes analysed records in (``language='auto'``)."""

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
    def open_lock(self) -> asyncio.Lock:
        """Held while connecting or opening a table (so two readers open it once)."""
        return self._lock(0)

    @property
    def write_lock(self) -> WriteTurn:
        """Held by every write of this store object: writes are serialised (across processes too, for a
        local location: `WriteTurn`), reads never wait."""
        return WriteTurn(self, self._lock(1))

    async def connect(self) -> None:
        if self.db is not None:
            return
        async with self.open_lock:
            if self.db is not None:
                return
            db = await lancedb.connect_async(
                self.uri,
                storage_options=self.storage_options or None,
                read_consistency_interval=self.read_consistency_interval,
            )
            names = set((await db.list_tables()).tables)
            if RECORDS_TABLE in names:
                self.records = await db.open_table(RECORDS_TABLE)
                await self.refresh_schema()
            if DOCUMENTS_TABLE in names:
                self.documents = await db.open_table(DOCUMENTS_TABLE)
            if RELATIONS_TABLE in names:
                self.relations = await db.open_table(RELATIONS_TABLE)
            if MARKS_TABLE in names:
                self.marks = await db.open_table(MARKS_TABLE)
            self.db = db

    async def refresh_schema(self) -> None:
        """Re-read the records table's columns, embedding size and vector index."""
        schema = await self.records.schema()
        self.columns = frozenset(schema.names)
        meta = schema.metadata or {}
        self.dims = int(meta[META_DIMS]) if META_DIMS in meta else schema.field('vector').type.list_size
        self.model_name = meta.get(b'toolish_rag.embedding_model', b'').decode('utf-8', 'replace') or None
        self.has_ann = any(ix.columns == [self.vector_column] for ix in await self.records.list_indices())
        self.text_analyzer = self._checked_analyzer(saved_text_analyzer(schema))

    def _checked_analyzer(self, saved: TextAnalyzer | None) -> TextAnalyzer | None:
        """``saved``, unless the store was opened with another analyzer: never search with a different one."""
        wanted = self.requested_analyzer
        if (wanted is not None and wanted != saved) or (self.engine_analyzer and saved is not None):
            built = (
                f'language={saved.language!r}'
                if saved is not None
                else "LanceDB's English analyzer (language=None or 'lancedb')"
            )
            asked = repr(wanted.language) if wanted is not None else "'lancedb'"
            raise ValueError(
                f'{self.uri} was indexed with {built}; open it with that (language=None uses the saved one), or '
                f'ingest the documents again into a new location to index them with language={asked}: '
                'an index is never searched with another analyzer than it was built with'
            )
        return saved

    def known_text_languages(self) -> frozenset[str]:
        """The languages the records were analysed in: this object's writes' and, for a local store, its
        manifest's (other processes' writes; read each time, a small file). Store-wide, not per scope."""
        if '://' in self.uri:
            return self.text_languages
        manifest = read_manifest(self.uri)
        return self.text_languages | frozenset(manifest.languages if manifest is not None else ())

    def known_text_analyzer(self) -> TextAnalyzer | None:
        """The analyzer text search uses, also before the store has connected (for tool descriptions).

        Known from the records table once it is open, else from ``requested_analyzer``; a store
        opened with ``language=None`` before connecting reads the table's schema once, with
        LanceDB's blocking API (tool descriptions are built synchronously, and must not claim
        English stemming for a Chinese index).
        """
        if self.records is not None:
            return self.text_analyzer
        if self.requested_analyzer is not None or self.engine_analyzer:
            return self.requested_analyzer
        if self._peeked is None:
            self._peeked = (self._peek_analyzer(),)
        return self._peeked[0] if self._peeked[0] is not _NO_TABLE else NEW_STORE_ANALYZER

    def peek_model(self) -> tuple[str, int | None] | None:
        """The embedding model and size a local records table's metadata names, read without connecting
        the async API (``None``: no table, or a remote location)."""
        if '://' in self.uri or not os.path.isdir(self.uri):
            return None
        db = lancedb.connect(self.uri)
        if RECORDS_TABLE not in db.list_tables().tables:
            return None
        meta = db.open_table(RECORDS_TABLE).schema.metadata or {}
        model = meta.get(b'toolish_rag.embedding_model', b'').decode('utf-8', 'replace')
        dims = int(meta[META_DIMS]) if META_DIMS in meta else None
        return (model, dims) if model else None

    def _peek_analyzer(self) -> TextAnalyzer | None:
        """The saved analyzer, ``None`` for LanceDB's own, `_NO_TABLE` when no records table exists yet."""
        if '://' not in self.uri and not os.path.isdir(self.uri):
            return _NO_TABLE  # nothing written yet (and connecting would create the directory)
        db = lancedb.connect(self.uri, storage_options=self.storage_options or None)
        if RECORDS_TABLE not in db.list_tables().tables:
            return _NO_TABLE
        return saved_text_analyzer(db.open_table(RECORDS_TABLE).schema)

    @property
    def vector_column(self) -> str:
        """The column vector search reads and the ANN index covers: ``windows`` (MaxP) or ``vector``."""
        return WINDOWS_COLUMN if self.windowed and WINDOWS_COLUMN in self.columns else 'vector'

    async def records_for_read(self) -> Any:
        """The records table for a read, or ``None`` while the store is empty."""
        await self.connect()
        if self.records is None and self.read_consistency_interval is not None:
            names = set((await self.db.list_tables()).tables)
            if RECORDS_TABLE in names:
                async with self.open_lock:
                    if self.records is None:
                        with contextlib.suppress(ValueError):  # listed while another process still creates it
                            self.records = await self.db.open_table(RECORDS_TABLE)
        if self.records is not None and self.read_consistency_interval is not None:
            await self.refresh_schema()  # another process may have added columns
        return self.records

    async def documents_for_read(self) -> Any:
        """The documents table for a listing, or ``None`` while no document was written."""
        await self.connect()
        if self.documents is None:
            if self.read_consistency_interval is None or DOCUMENTS_TABLE not in (await self.db.list_tables()).tables:
                return None
            try:
                self.documents = await self.db.open_table(DOCUMENTS_TABLE)
            except ValueError:  # listed while another process is still creating it: not there yet
                return None
        return self.documents

    async def relations_for_read(self) -> Any:
        """The relations table for a read, or ``None`` while no relation was ever written."""
        await self.connect()
        if self.relations is None and self.read_consistency_interval is not None:
            await self.open_graph()
        return self.relations

    async def marks_for_read(self) -> Any:
        """The builders' ledger table for a read, or ``None`` while no mark was ever set."""
        await self.connect()
        if self.marks is None and self.read_consistency_interval is not None:
            await self.open_graph()
        return self.marks

    async def open_graph(self) -> None:
        """Open the graph's tables that exist now and are not open yet.

        A writer calls it before a write that must see them (removing a replaced document's
        relations): another store object on this location may have created them since this one
        connected.
        """
        await self.connect()
        if self.relations is not None and self.marks is not None:
            return
        names = set((await self.db.list_tables()).tables)
        async with self.open_lock:
            if self.relations is None and RELATIONS_TABLE in names:
                self.relations = await self.db.open_table(RELATIONS_TABLE)
            if self.marks is None and MARKS_TABLE in names:
                self.marks = await self.db.open_table(MARKS_TABLE)

    @property
    def has_graph(self) -> bool:
        """Whether a graph table is open (a write then has relations or marks to keep in step)."""
        return self.relations is not None or self.marks is not None

    async def read_version(self) -> int:
        """The records table's version as a reader sees it (``-1``: no table)."""
        table = await self.records_for_read()
        return -1 if table is None else int(await table.version())

    async def records_version(self) -> int:
        """The records table's version through this object's handle (``-1``: no table)."""
        return -1 if self.records is None else int(await self.records.version())

    async def create_documents(self) -> None:
        """Create the documents table unless it exists (a writer's first step)."""
        if self.documents is None:
            self.documents = await self.db.create_table(DOCUMENTS_TABLE, schema=DOCUMENTS_SCHEMA, exist_ok=True)

    async def create_records(self, dims: int, model_name: str, windows: bool = False) -> None:
        """Create the records table for ``dims``-dimensional embeddings unless it exists (``windows``: with
        the multivector column, `toolish_rag_lancedb._windows`)."""
        if self.records is None:
            schema = records_schema(dims, model_name)
            if windows:
                schema = schema.append(windows_field(dims))
            if not self.engine_analyzer:
                schema = with_words(schema, self.requested_analyzer or NEW_STORE_ANALYZER)
            self.records = await self.db.create_table(RECORDS_TABLE, schema=schema, exist_ok=True)
            await self.refresh_schema()

    async def create_relations(self) -> None:
        """Create the relations table unless it exists."""
        if self.relations is None:
            self.relations = await self.db.create_table(RELATIONS_TABLE, schema=RELATIONS_SCHEMA, exist_ok=True)

    async def create_marks(self) -> None:
        """Create the builders' ledger table unless it exists."""
        if self.marks is None:
            self.marks = await self.db.create_table(MARKS_TABLE, schema=MARKS_SCHEMA, exist_ok=True)

    async def checkout_latest(self) -> None:
        """Move every open table to its latest version and open those another process created since (a create
        with this store's schema would clash with their evolved one), re-reading the schema."""
        for table in (self.records, self.documents, self.relations, self.marks):
            if table is not None:
                await table.checkout_latest()
        if self.records is None or self.documents is None:
            names = set((await self.db.list_tables()).tables)
            async with self.open_lock:
                if self.records is None and RECORDS_TABLE in names:
                    self.records = await self.db.open_table(RECORDS_TABLE)
                if self.documents is None and DOCUMENTS_TABLE in names:
                    self.documents = await self.db.open_table(DOCUMENTS_TABLE)
        await self.open_graph()
        if self.records is not None:
            await self.refresh_schema()

    def where(self, f: Filter | None, *extra: str) -> str | None:
        """The SQL ``WHERE`` for ``f`` and the non-empty ``extra`` clauses, all required."""
        parts = [p for p in extra if p]
        if f is not None:
            parts.append(filter_to_where(f, self.columns))
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else ' AND '.join(f'({p})' for p in parts)

    def close(self) -> None:
        if self.db is not None:
            for t in (self.records, self.documents, self.relations, self.marks):
                if t is not None:
                    t.close()
            self.db.close()
        self.db = self.records = self.documents = self.relations = self.marks = None
