"""Writes: one transaction per document (kill -9 leaves no half-written one), concurrent writers lose
nothing, a re-ingest of unchanged content writes nothing, and the store opens from its spec."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pydantic_ai.embeddings import EmbeddingResult

from toolish_rag import Document, DocumentBuilder, PropertyFilter as F, RegexRequest, SearchRequest
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.errors import InvalidRequestError
from toolish_rag.protocols import PrecomputedVectorsWriter
from toolish_rag.stores import open_store
from toolish_rag_postgres import PostgresStore
from toolish_rag_postgres._database import _BUSY, _IDLE


class CountingEmbedder(HashingEmbeddingModel):
    """The hashing embedder, counting the texts it embeds for documents."""

    def __init__(self) -> None:
        super().__init__(32)
        self.embedded = 0

    async def embed(self, inputs: str | Sequence[str], *, input_type: Any, settings: Any = None) -> EmbeddingResult:
        if input_type == 'document':
            self.embedded += 1 if isinstance(inputs, str) else len(inputs)
        return await super().embed(inputs, input_type=input_type, settings=settings)


def _doc(uri: str, version: int, chunks: int) -> Document:
    b = DocumentBuilder(uri, f'{uri} v{version}', metadata={'tenant': 'acme' if version % 2 else 'globex'})
    for j in range(chunks):
        b.add_chunk(None, f'version {version} chunk {j} words')
    return b.build()


def _schema() -> str:
    return f'w_{uuid.uuid4().hex[:12]}'


async def _consistent(store: PostgresStore) -> dict[str, int]:
    """Every document's chunk rows, checked against its stored chunk count (no half-written document)."""
    rows = await store._db.run(
        lambda tx: tx.execute(
            'SELECT d.id, d.chunk_count, count(r.id) FROM documents AS d '
            'LEFT JOIN records AS r ON r.document_id = d.id GROUP BY d.id, d.chunk_count'
        ).fetchall()
    )
    assert all(n == found for _, n, found in rows), rows
    orphans = await store._db.run(
        lambda tx: tx.execute("SELECT count(*) FROM records WHERE kind = 'chunk' AND document_id IS NULL").fetchone()
    )
    assert orphans == (0,)
    return {str(i): int(n) for i, n, _ in rows}


async def test_two_concurrent_writers_lose_nothing(postgres_uri: str) -> None:
    schema = _schema()
    one = PostgresStore(postgres_uri, schema=schema, embedder=HashingEmbeddingModel(32))
    two = PostgresStore(postgres_uri, schema=schema, embedder=HashingEmbeddingModel(32))

    async def writer(store: PostgresStore, name: str, version: int) -> None:
        for i in range(6):
            await store.upsert([_doc(f'file:///{name}/{i}.md', version, 5 + i)])
            await store.upsert([_doc('file:///shared.md', version * 10 + i, 3 + version + i)])

    await asyncio.gather(writer(one, 'one', 1), writer(two, 'two', 2))
    counts = await _consistent(one)
    assert len(counts) == 13  # 6 + 6 + the shared one
    shared = await one.expand(_expansion(_doc('file:///shared.md', 0, 1).id))
    assert len({c.text.split()[1] for c in shared}) == 1  # one version whole, never a mix


def _expansion(document_id: str) -> Any:
    from toolish_rag import ExpansionRequest

    return ExpansionRequest(document_id=document_id, limit=1000)


async def test_reingest_of_unchanged_content_writes_nothing(postgres_uri: str) -> None:
    embedder = CountingEmbedder()
    store = PostgresStore(postgres_uri, schema=_schema(), embedder=embedder)
    docs = [_doc(f'file:///{i}.md', 1, 4) for i in range(3)]
    await store.upsert(docs)
    assert embedder.embedded == 12
    await store.upsert(docs)
    assert embedder.embedded == 12
    await store.upsert([_doc('file:///0.md', 2, 2)])
    assert embedder.embedded == 14
    assert await _consistent(store) == {docs[0].id: 2, docs[1].id: 4, docs[2].id: 4}


async def test_kill_9_during_ingest_leaves_a_consistent_store(postgres_uri: str) -> None:
    schema = _schema()
    PostgresStore(postgres_uri, schema=schema, embedder=HashingEmbeddingModel(32))  # create it before the race
    worker = Path(__file__).with_name('postgres_ingest_worker.py')
    process = subprocess.Popen(
        [sys.executable, str(worker), postgres_uri, schema],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        for _ in range(4):  # a few documents committed, the next one mid-write
            assert process.stdout.readline(), 'the writer died on its own'
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    store = PostgresStore(postgres_uri, schema=schema, embedder=HashingEmbeddingModel(32))
    counts = await _consistent(store)
    assert len(counts) >= 4
    await store.upsert([_doc('file:///killed/0.md', 99, 2)])  # the killed writer's locks are gone
    await _consistent(store)


async def test_unscoped_search_of_a_small_table_is_exact_without_counting(postgres_uri: str) -> None:
    """Unscoped, the statistics put the table under ``exact_below``: ranked exactly in one pass, the same rows as the
    counted exact plan of a filter admitting every row; past ``exact_below`` by the statistics, the index."""
    schema = _schema()
    store = PostgresStore(postgres_uri, schema=schema, embedder=HashingEmbeddingModel(32))
    await store.upsert([_doc(f'file:///{i}.md', i, 10) for i in range(30)])
    with psycopg.connect(postgres_uri, autocommit=True) as conn:
        conn.execute(f'ANALYZE {schema}.records')  # reltuples: 300
    unscoped = await store.vector_search(SearchRequest('chunk 3 words', 25))
    assert store.last_vector_plan == 'exact'
    counted = await store.vector_search(SearchRequest('chunk 3 words', 25, F.in_('tenant', ['acme', 'globex'])))
    assert store.last_vector_plan == 'exact'
    assert [(h.record.id, h.score) for h in unscoped] == [(h.record.id, h.score) for h in counted]
    store.exact_below = 299
    assert len(await store.vector_search(SearchRequest('chunk 3 words', 25))) == 25
    assert store.last_vector_plan == 'hnsw'


async def test_searches_past_the_connection_bound_wait_on_the_pool_and_all_answer(postgres_uri: str) -> None:
    """Searches run on asynchronous connections, at most ``max_connections`` at once per server; more at once run
    on the pool's thread. Twelve at once answer as one at a time, and at most two connections are kept idle."""
    bounded = f'{postgres_uri} application_name=bounded'  # a server of its own for the connection counts
    store = PostgresStore(bounded, schema=_schema(), embedder=HashingEmbeddingModel(32))
    store._db = dataclasses.replace(store._db, max_connections=2)
    await store.upsert([_doc(f'file:///{i}.md', i, 5) for i in range(8)])
    requests = [
        SearchRequest(f'version {i} chunk {i % 5}', 4, F.eq('tenant', 'acme') if i % 3 else None) for i in range(12)
    ]
    alone = [[h.id for h in await store.vector_search(r)] for r in requests]
    together = await asyncio.gather(*(store.vector_search(r) for r in requests))
    assert [[h.id for h in hits] for hits in together] == alone
    assert 1 <= len(_IDLE[bounded]) <= 2 and _BUSY[bounded] == 0
    store.close()
    assert bounded not in _IDLE


async def test_filtered_index_search_keeps_top_k_and_regex_is_bounded(postgres_uri: str) -> None:
    store = PostgresStore(postgres_uri, schema=_schema(), embedder=HashingEmbeddingModel(32), exact_below=0)
    await store.upsert([_doc(f'file:///{i}.md', i, 10) for i in range(30)])  # 150 'acme' chunks of 300
    hits = await store.vector_search(SearchRequest('chunk words', 20, F.eq('tenant', 'acme')))
    assert store.last_vector_plan == 'hnsw'
    assert len(hits) == 20 and all(h.record.metadata['tenant'] == 'acme' for h in hits)
    store.exact_below = 10_000
    exact = await store.vector_search(SearchRequest('chunk words', 20, F.eq('tenant', 'acme')))
    assert store.last_vector_plan == 'exact' and len(exact) == 20
    store.regex_scan_limit = 100
    with pytest.raises(InvalidRequestError, match='more than 100 records'):
        await store.regex_search(RegexRequest('chunk [0-9]+', 5))
    store.regex_scan_limit = 200
    found = await store.regex_search(RegexRequest('version 7 chunk [0-9]+', 3, F.eq('tenant', 'acme')))
    assert [h.record.urtext for h in found] == [f'version 7 chunk {j} words' for j in range(3)]


async def test_specs_open_the_store_and_never_show_a_password(postgres_uri: str, tmp_path: Path) -> None:
    store = open_store(f'postgres:{postgres_uri}', embedder=HashingEmbeddingModel(32))
    assert isinstance(store, PostgresStore) and await store.list_documents() == []
    with pytest.raises(ConnectionError) as failed:
        open_store('postgres:postgresql://someone:s3cret-pw@/nowhere?host=/nonexistent-socket-dir')
    assert 's3cret-pw' not in str(failed.value) and 'someone' in str(failed.value)
    params = psycopg.conninfo.conninfo_to_dict(postgres_uri)
    folder = Path(str(params['host'])).parent  # the session's embedded server: postgres:FOLDER joins it
    joined = open_store(f'postgres:{folder}', embedder=HashingEmbeddingModel(32))
    assert isinstance(joined, PostgresStore)
    with pytest.raises(ValueError, match='needs a location'):
        open_store('postgres:')


async def test_missing_pgvector_names_create_extension(postgres_uri: str) -> None:
    name = f'nov_{uuid.uuid4().hex[:8]}'
    with psycopg.connect(postgres_uri, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE {name} LOGIN')
        conn.execute(f'CREATE DATABASE {name} OWNER {name}')
    params = psycopg.conninfo.conninfo_to_dict(postgres_uri)
    params.update(dbname=name, user=name)
    try:
        with pytest.raises(RuntimeError) as failed:
            PostgresStore(psycopg.conninfo.make_conninfo('', **params))
        message = str(failed.value)
        assert 'CREATE EXTENSION vector' in message and 'superuser' in message and '\n' not in message
    finally:
        with psycopg.connect(postgres_uri, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS {name} WITH (FORCE)')
            conn.execute(f'DROP ROLE IF EXISTS {name}')


def test_a_killed_command_does_not_keep_the_embedded_server_running(tmp_path: Path) -> None:
    from toolish_rag_postgres._spec import _forget_dead_handles

    dead = subprocess.Popen([sys.executable, '-c', 'pass'])
    dead.wait()  # its pid names no process now, as a command killed with -9 leaves it on the wheel's list
    handles = tmp_path / '.handle_pids.json'
    handles.write_text(f'[{os.getpid()}, {dead.pid}]')
    _forget_dead_handles(tmp_path)
    assert handles.read_text() == f'[{os.getpid()}]'  # the last live process now stops the server


async def test_upsert_with_vectors_stores_the_given_vectors_and_embeds_only_the_rest(postgres_uri: str) -> None:
    """`PrecomputedVectorsWriter`: the texts given a vector are not embedded; the ranking is the plain upsert's."""
    model, reference = CountingEmbedder(), HashingEmbeddingModel(32)
    given = PostgresStore(postgres_uri, embedder=model, schema=_schema())
    plain = PostgresStore(postgres_uri, embedder=reference, schema=_schema())
    documents = [_doc(f'file:///v/{n}.md', n, 4) for n in range(3)]
    texts = [c.text for d in documents[:2] for c in d.chunks]  # the third document's come without vectors
    known = dict(zip(texts, (await reference.embed(texts, input_type='document')).embeddings, strict=True))
    assert isinstance(given, PrecomputedVectorsWriter)

    await given.upsert_with_vectors(documents, known)
    await plain.upsert(documents)

    assert model.embedded == 4
    for query in ('version 1 chunk 2', 'chunk 3 words'):
        ranked = [
            [(h.record.id, round(h.score, 5)) for h in await s.vector_search(SearchRequest(query=query, top_k=6))]
            for s in (given, plain)
        ]
        assert ranked[0] == ranked[1] and ranked[0]
