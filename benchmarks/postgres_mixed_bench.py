"""PostgresStore at a million chunks of real text: filtered and unfiltered recall@10, and what raises it.

    .venv/bin/python benchmarks/postgres_mixed_bench.py --size 1000000 --folder DIR

``../shared/data`` holds about 120,000 distinct real sentences (`postgres_bench`'s ``--real-sizes`` corpus):
too few for a million chunks. This corpus draws each chunk as 2 or 3 of them at random (`_mixed_documents`):
real word statistics, every chunk distinct. Hashing vectors of 256 dimensions (as the 100,000-sentence run),
loaded with `postgres_bench.copy_load` (COPY, then one HNSW build; ``--folder`` keeps the server's folder and a
second run reuses the loaded corpus). Then, on one embedded PostgreSQL server:

* **filtered recall@10** against the exact answer at 1%, 10% and 50% selectivity for ``bucket < n`` (``lt``) and
  ``tenant = t1/t10/t50`` (``eq``), default plan and HNSW forced;
* **unfiltered recall@10** of the HNSW index at ``ef_search`` 40, 400 and 1,000;
* **what raises it**: the store's own statement on the HNSW plan run through raw psycopg with other ``hnsw.*``
  settings (``iterative_scan`` strict or relaxed order, ``max_scan_tuples``) and more rows read from the index than
  the 10 returned (the statement's ``top_k``: the iterative scan keeps walking the graph until that many pass);
* last, the tool against raw psycopg p50 for ``vector_search`` and ``text_search`` (`postgres_bench.latency`; real
  queries of common words make a BM25 call over a million chunks take seconds: ``--latency-queries``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from postgres_bench import (  # first: it pins the thread counts before numpy is imported
    TENANT_OF_SHARE,
    _HashingVectors,
    _metadata,
    _real_sentences,
    _recall_rows,
    copy_load,
    latency,
    store_size,
)

# isort: split
import psycopg
from common import pct

from toolish_rag import DocumentBuilder, PropertyFilter as F, SearchRequest
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag_postgres import PostgresStore
from toolish_rag_postgres._filters import compile_filter
from toolish_rag_postgres._search import vector_statement
from toolish_rag_postgres._spec import embedded_server
from toolish_rag_postgres._writes import vector_literal

Truths = dict[int, list[list[str]]]
"""Per selectivity (1, 10, 50), each query's exact top 10 ids."""


def _mixed_documents(size: int, sentences: list[str]) -> Iterator[Any]:
    """``size`` distinct chunks of 2 or 3 real sentences drawn at random (``random.Random(38)``, without
    replacement within a chunk, in the drawn order) from all of ``sentences``: real word statistics at sizes past
    the real sentences held. One document per 1,000 chunks, metadata as `postgres_bench._metadata`."""
    rng, seen = random.Random(38), set[tuple[int, ...]]()

    def draw() -> tuple[int, ...]:
        while (picked := tuple(rng.sample(range(len(sentences)), rng.choice((2, 3))))) in seen:
            pass
        seen.add(picked)
        return picked

    for d in range(0, size, 1000):
        b = DocumentBuilder(f'mixed://{d}', f'Mixed sentences {d}', id=f'm{d}', indexed_text=None)
        for j in range(min(1000, size - d)):
            b.add_chunk(None, ' '.join(sentences[i] for i in draw()), metadata=_metadata(f'm{d}-{j}'))
        yield b.build()


async def mixed_store(uri: str, size: int) -> tuple[PostgresStore, list[str]]:
    """A store of ``size`` chunks of real sentences (`_mixed_documents`) with hashing vectors of 256 dimensions,
    loaded with COPY, and the collections' real queries."""
    sentences, queries = _real_sentences(None)
    print(f'{len(sentences):,} distinct real sentences drawn from', flush=True)
    store = PostgresStore(uri, schema=f'mixed_hashing_{size}', embedder=HashingEmbeddingModel(256), language='en')
    await copy_load(uri, store, _mixed_documents(size, sentences), _HashingVectors(256), size)
    return store, queries


async def _exact(store: PostgresStore, queries: list[str], f: Any) -> list[list[str]]:
    """Each query's exact top 10 under ``f`` (every in-scope vector ranked)."""
    store.exact_below = 10**9
    try:
        return [[h.id for h in await store.vector_search(SearchRequest(q, 10, f))] for q in queries]
    finally:
        store.exact_below = 10_000


async def filtered_recall(store: PostgresStore, queries: list[str], size: int) -> Truths:
    """`postgres_bench`'s recall rows for ``lt`` and the tenant's ``eq``; returns the ``eq`` truths."""
    shares = (1, 10, 50)
    tenants = {share: F.eq('tenant', TENANT_OF_SHARE[share]) for share in shares}
    truths = {share: await _exact(store, queries, F.lt('bucket', share)) for share in shares}
    tenant_truths = {share: await _exact(store, queries, tenants[share]) for share in shares}
    await _recall_rows(store, queries, size, truths, 'lt', lambda share: F.lt('bucket', share))
    await _recall_rows(store, queries, size, tenant_truths, 'eq (tenant)', lambda share: tenants[share])
    return tenant_truths


def _recall(got: list[list[str]], truth: list[list[str]]) -> float:
    return sum(len(set(g) & set(t)) / max(len(t), 1) for g, t in zip(got, truth, strict=True)) / len(truth)


async def unfiltered_recall(store: PostgresStore, queries: list[str], size: int) -> None:
    """Recall@10 and p50 of the unscoped HNSW plan at ``ef_search`` 40, 400 (the default) and 1,000."""
    truth = await _exact(store, queries, None)
    for ef in (40, 400, 1000):
        store.ef_search, got, ms = ef, [], []
        for q in queries:
            start = time.perf_counter()
            got.append([h.id for h in await store.vector_search(SearchRequest(q, 10))])
            ms.append((time.perf_counter() - start) * 1000)
        print(
            f'| {size:,} | unfiltered | ef_search {ef} ({store.last_vector_plan}) | {_recall(got, truth):.3f} | '
            f'{pct(ms, 50):.1f} ms |',
            flush=True,
        )
    store.ef_search = None


_TUNINGS: tuple[tuple[str, int, dict[str, str]], ...] = (
    ('relaxed_order, ef_search 1000 (the store)', 10, {}),
    ('strict_order', 10, {'hnsw.iterative_scan': 'strict_order'}),
    ('ef_search 1000, 40 rows read', 40, {}),
    ('ef_search 1000, 100 rows read', 100, {}),
    ('ef_search 1000, 300 rows read', 300, {}),
    ('300 rows read, max_scan_tuples 100000', 300, {'hnsw.max_scan_tuples': '100000'}),
    ('1000 rows read, max_scan_tuples 100000', 1000, {'hnsw.max_scan_tuples': '100000'}),
)


async def hnsw_tuning(uri: str, store: PostgresStore, queries: list[str], size: int, truths: Truths) -> None:
    """The store's statement on the HNSW plan (``exact_below=0``) under the tenant's ``eq`` at 10% and 50%, run
    through raw psycopg with the settings of `_TUNINGS` (over the store's ``ef_search`` 1,000 and
    ``relaxed_order``), reading ``top_k`` rows from the index and keeping the first 10 (rows come sorted)."""
    vectors = [vector_literal((await store.embedder.embed_query(q)).embeddings[0]) for q in queries]
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("SELECT set_config('search_path', %s, false)", (store._db.search_path,))
        for share in (10, 50):
            scope = compile_filter(F.eq('tenant', TENANT_OF_SHARE[share]))
            for label, top_k, settings in _TUNINGS:
                every = {
                    'hnsw.ef_search': '1000',
                    'hnsw.iterative_scan': 'relaxed_order',
                    'hnsw.max_scan_tuples': '20000',
                }
                for name, value in (every | settings).items():
                    conn.execute('SELECT set_config(%s, %s, false)', (name, value))
                got, ms = [], []
                for vector in vectors:
                    statement, params = vector_statement(scope, vector, top_k, exact_below=0)
                    start = time.perf_counter()
                    rows = conn.execute(statement, params).fetchall()
                    ms.append((time.perf_counter() - start) * 1000)
                    got.append([json.loads(r[1])['id'] for r in rows[:10]])
                print(
                    f'| {size:,} | {share}% | eq (tenant) | {label} | {_recall(got, truths[share]):.3f} | '
                    f'{pct(ms, 50):.1f} ms |',
                    flush=True,
                )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--size', type=int, default=1_000_000)
    parser.add_argument('--queries', type=int, default=40, help='queries of the latency and recall rows')
    parser.add_argument('--folder', type=Path, help="the server's folder, kept (a loaded corpus is reused)")
    parser.add_argument('--latency-queries', type=int, default=40, help='(the first; a BM25 call takes seconds)')
    parser.add_argument('--tuning-queries', type=int, default=20, help='queries of the settings rows (the first)')
    parser.add_argument('--load-only', action='store_true', help='load (or reuse) the corpus and stop')
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix='postgres-mixed-') as folder:
        server, uri = embedded_server(options.folder or Path(folder) / 'server')
        print(f'server: embedded PostgreSQL in {options.folder or "a temporary folder"}', flush=True)
        size = options.size
        print(f'\n## {size:,} chunks of 2-3 real sentences, hashing vectors (256 dimensions)\n', flush=True)
        store, queries = await mixed_store(uri, size)
        store_size(uri, store)
        if not options.load_only:
            queries = random.Random(38).sample(queries, 60)[: options.queries]
            print('\n| chunks | selectivity | filter | plan | recall@10 vs exact | p50 |\n|---|---|---|---|---|---|')
            truths = await filtered_recall(store, queries, size)
            await unfiltered_recall(store, queries, size)
            n = options.tuning_queries
            await hnsw_tuning(uri, store, queries[:n], size, {share: t[:n] for share, t in truths.items()})
            print('\n| chunks | tool (plan) | tool p50 | raw p50 | tool / raw | same rows |\n|---|---|---|---|---|---|')
            await latency(uri, store, queries[: options.latency_queries], size)
        del server


if __name__ == '__main__':
    asyncio.run(main())
