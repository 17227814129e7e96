"""A store over SQLite FTS5 (standard library only), written from docs/custom-store.md and passing the kit.

Run: python examples/sqlite_store.py [PATH]     (tests/test_example_sqlite_store.py runs the kit over it)

Text search ranks by FTS5's ``bm25()``; every filter is pushed down and evaluated inside the
query by the reference evaluator (`toolish_rag.filters.matches`, registered as an SQL function),
so ``LIMIT top_k`` is exact under any filter. Expansion and navigation read one transaction,
so an answer comes from one version. See docs/custom-store.md ("A store over SQLite FTS5").
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from toolish_rag import Chunk, Document, DocumentBuilder, Entity, ExpansionRequest, SearchHit, SearchRequest, ToolishRag
from toolish_rag.filters import Filter, matches
from toolish_rag.protocols import DocumentInfo
from toolish_rag.sections import (
    ChunkOutline,
    DocumentPage,
    DocumentPageRequest,
    OutlineRequest,
    SectionPage,
    SectionReadRequest,
    reference_document_page,
    reference_outline,
    reference_section_page,
)
from toolish_rag.writes import upsert_batch

_T = TypeVar('_T')
_WORD = re.compile(r'\w+')
_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    id TEXT PRIMARY KEY, uri TEXT, title TEXT, fingerprint TEXT, chunk_count INTEGER, metadata TEXT
);
CREATE TABLE IF NOT EXISTS sections (id TEXT PRIMARY KEY, document_id TEXT NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS records USING fts5(
    text, id UNINDEXED, kind UNINDEXED, document_id UNINDEXED, record UNINDEXED
);
"""
TEXT_QUERY_SYNTAX = (
    'Plain words, case-insensitive (accents ignored); punctuation separates words and operators are '
    'ordinary words. A record matches when it contains any of the words; BM25 ranks those with more '
    'of the rarer words first.'
)


def _record(kind: str, data: str) -> Chunk | Entity:
    return Chunk.model_validate_json(data) if kind == 'chunk' else Entity.model_validate_json(data)


def _fts_query(query: str) -> str | None:
    """Each word of ``query`` as a quoted FTS5 string, OR-ed: no operator reaches FTS5 (None: no word)."""
    words = _WORD.findall(query)
    return ' OR '.join('"' + w.replace('"', '""') + '"' for w in words) if words else None


class SQLiteStore:
    """TextSearch, FilterPushdown, ResultExpander, SectionReader and DocumentStore over one SQLite file."""

    text_query_syntax = TEXT_QUERY_SYNTAX

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        with self._connect() as db:
            db.executescript(_SCHEMA)

    # -- plumbing: a connection per call, in a thread (sqlite3 blocks) -------------------------

    @contextlib.contextmanager
    def _connect(self, f: Filter | None = None) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, isolation_level=None)  # autocommit: transactions are explicit
        try:
            db.execute('PRAGMA journal_mode=WAL')  # readers keep their snapshot while a writer commits
            db.execute('PRAGMA synchronous=NORMAL')
            if f is None:
                db.create_function('in_scope', 2, lambda kind, data: True, deterministic=True)
            else:
                db.create_function(
                    'in_scope', 2, lambda kind, data: matches(f, _record(kind, data)), deterministic=True
                )
            yield db
        finally:
            db.close()

    async def _run(self, work: Callable[[sqlite3.Connection], _T], f: Filter | None = None) -> _T:
        """``work`` on a new connection inside one transaction (so every read in it sees one version)."""

        def run() -> _T:
            with self._connect(f) as db:
                db.execute('BEGIN')
                try:
                    result = work(db)
                except BaseException:
                    db.execute('ROLLBACK')
                    raise
                db.execute('COMMIT')
                return result

        return await asyncio.to_thread(run)

    # -- DocumentStore ------------------------------------------------------------------------------

    async def upsert(self, items: Iterable[Document | Entity]) -> None:
        documents, entities = upsert_batch(items)

        def write(db: sqlite3.Connection) -> None:
            _delete_documents(db, [d.id for d in documents])
            _delete_entities(db, [e.id for e in entities])
            for d in documents:
                db.execute(
                    'INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?)',
                    (d.id, d.uri, d.title, d.fingerprint, len(d.chunks), json.dumps(d.metadata)),
                )
                db.executemany('INSERT INTO sections VALUES (?, ?)', [(s.id, d.id) for s in d.sections])
                db.executemany(
                    'INSERT INTO records VALUES (?, ?, ?, ?, ?)',
                    [(c.text, c.id, 'chunk', d.id, c.model_dump_json()) for c in d.chunks],
                )
            db.executemany(
                'INSERT INTO records VALUES (?, ?, ?, ?, ?)',
                [(e.text, e.id, 'entity', None, e.model_dump_json()) for e in entities],
            )

        await self._run(write)

    async def delete_documents(self, document_ids: Iterable[str]) -> int:
        ids = list(document_ids)
        return await self._run(lambda db: _delete_documents(db, ids))

    async def delete_entities(self, entity_ids: Iterable[str]) -> int:
        ids = list(entity_ids)
        return await self._run(lambda db: _delete_entities(db, ids))

    async def list_documents(self) -> Sequence[DocumentInfo]:
        rows = await self._run(lambda db: db.execute('SELECT * FROM documents').fetchall())
        return [DocumentInfo(i, uri, title, fp, n, json.loads(md)) for i, uri, title, fp, n, md in rows]

    # -- TextSearch and FilterPushdown -----------------------------------------------------------------

    def supports_filter(self, filter: Filter) -> bool:
        return True  # every filter: `in_scope` runs the reference evaluator inside the query

    async def text_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        query = _fts_query(request.query)
        if query is None or request.top_k < 1:
            return []
        sql = (
            'SELECT kind, record, bm25(records) FROM records WHERE records MATCH ? AND in_scope(kind, record) '
            'ORDER BY bm25(records), id LIMIT ?'
        )
        rows = await self._run(lambda db: db.execute(sql, (query, request.top_k)).fetchall(), request.filter)
        return [SearchHit(_record(kind, data), -rank) for kind, data, rank in rows]  # bm25(): lower is better

    # -- ResultExpander -------------------------------------------------------------------------------------

    async def get_records(self, ids: Sequence[str], *, filter: Filter | None = None) -> list[Chunk | Entity]:
        wanted = list(dict.fromkeys(ids))
        sql = f'SELECT kind, record FROM records WHERE id IN ({",".join("?" * len(wanted))}) AND in_scope(kind, record)'
        rows = await self._run(lambda db: db.execute(sql, wanted).fetchall() if wanted else [], filter)
        return [_record(kind, data) for kind, data in rows]

    async def expand(self, request: ExpansionRequest) -> list[Chunk]:
        return await self._run(lambda db: _expand(db, request))

    # -- SectionReader: the reference functions over the in-scope chunks (fine for a small store) --------

    async def document_page(self, request: DocumentPageRequest) -> DocumentPage:
        def page(db: sqlite3.Connection) -> DocumentPage:
            metadata = {i: json.loads(md) for i, md in db.execute('SELECT id, metadata FROM documents')}
            return reference_document_page(_chunks(db), replace(request, filter=None), metadata)

        return await self._run(page, request.filter)

    async def chunk_outlines(self, request: OutlineRequest) -> Sequence[ChunkOutline]:
        outline = replace(request, filter=None)
        return await self._run(lambda db: reference_outline(_chunks(db), outline), request.filter)

    async def read_section(self, request: SectionReadRequest) -> SectionPage:
        read = replace(request, filter=None)
        return await self._run(lambda db: reference_section_page(_chunks(db), read), request.filter)


# -- what runs inside a transaction ---------------------------------------------------------------------


def _delete_documents(db: sqlite3.Connection, ids: list[str]) -> int:
    marks = ','.join('?' * len(ids))
    if not ids:
        return 0
    db.execute(f'DELETE FROM records WHERE document_id IN ({marks})', ids)
    db.execute(f'DELETE FROM sections WHERE document_id IN ({marks})', ids)
    return db.execute(f'DELETE FROM documents WHERE id IN ({marks})', ids).rowcount


def _delete_entities(db: sqlite3.Connection, ids: list[str]) -> int:
    if not ids:
        return 0
    return db.execute(f"DELETE FROM records WHERE kind = 'entity' AND id IN ({','.join('?' * len(ids))})", ids).rowcount


def _chunks(db: sqlite3.Connection, where: str = '1', args: Sequence[Any] = ()) -> list[Chunk]:
    """The in-scope chunks (``in_scope`` holds the connection's filter) that ``where`` selects."""
    sql = f"SELECT record FROM records WHERE kind = 'chunk' AND {where} AND in_scope(kind, record)"
    return [Chunk.model_validate_json(data) for (data,) in db.execute(sql, args)]


def _plain(db: sqlite3.Connection, request: ExpansionRequest) -> list[Chunk]:
    """A plain request: the chunks of its document (or of its section's) it holds, filtered, in order."""
    document_id = request.document_id
    if document_id is None and request.section_id is not None:
        found = db.execute('SELECT document_id FROM sections WHERE id = ?', (request.section_id,)).fetchone()
        document_id = found[0] if found else None
    if document_id is None:
        return []
    rows = db.execute("SELECT record FROM records WHERE kind = 'chunk' AND document_id = ?", (document_id,))
    chunks = sorted((Chunk.model_validate_json(data) for (data,) in rows), key=lambda c: c.sequence_number)
    return [c for c in chunks if request.holds(c) and matches(request.filter, c)][: request.limit]


def _expand(db: sqlite3.Connection, request: ExpansionRequest) -> list[Chunk]:
    """docs/custom-store.md's three steps, in the caller's one transaction."""
    if request.around is None:
        return _plain(db, request)
    row = db.execute("SELECT record FROM records WHERE kind = 'chunk' AND id = ?", (request.around,)).fetchone()
    anchor = Chunk.model_validate_json(row[0]) if row else None
    probe = request.section_probe()
    if anchor is None and probe is not None:
        anchor = next(iter(_plain(db, probe)), None)
    return [] if anchor is None else _plain(db, request.window(anchor))


async def main(path: Path) -> None:
    store = SQLiteStore(path / 'notes.sqlite')
    b = DocumentBuilder('file:///notes.md', 'Notes', metadata={'team': 'ops'})
    deploys = b.section('Deploys')
    for day in ('Tuesdays', 'Thursdays', 'never on Fridays'):
        b.add_chunk(deploys, f'Deploys happen {day}.')
    await store.upsert([b.build()])
    rag = ToolishRag(store, name='notes')
    print('tools offered:', rag.tool_names)
    print((await rag.run_tool('text_search', {'query': 'when do deploys happen on fridays?'})).return_value)


if __name__ == '__main__':
    if len(sys.argv) > 1:
        asyncio.run(main(Path(sys.argv[1])))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            asyncio.run(main(Path(tmp)))
