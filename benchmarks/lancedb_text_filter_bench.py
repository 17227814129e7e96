"""LanceDB filtered text search: the text_search tool scoped to 1/10/50% against its unfiltered call.

    .venv/bin/python benchmarks/lancedb_text_filter_bench.py --quick          # 20k chunks, seconds
    nice .venv/bin/python benchmarks/lancedb_text_filter_bench.py             # 1M chunks (~25 min on 2 cores)
    nice .venv/bin/python benchmarks/lancedb_text_filter_bench.py --store-dir /tmp/tf-1m   # keep / reuse

Ingests the synthetic corpus of ``benchmarks/lancedb_bench.py`` (ten chunks per document, each
document's ``bucket`` metadata = its number mod 100) through `LanceDBStore.upsert` in 20 batches,
then ``optimize()``. Text search embeds nothing, so the documents get one precomputed cheap vector
(`FixedVector`) and the store is opened with ``ann_threshold=None``: the ingest pays for the
tables and the text and scalar indexes, not for an embedder or an ANN index no call here reads.

Then, for each selectivity (``bucket < 1``, ``< 10``, ``< 50``), three calls per query, in an order
that rotates query by query (so none always runs on a warmer cache, and load from other processes
hits all alike):

* the text_search TOOL scoped by the filter (`ToolishRag.with_metadata_filter` + `ToolishRag.run_tool`:
  validation, scope, the store call and the rendering an agent's call goes through);
* the same tool unscoped;
* raw LanceDB: ``nearest_to_text(query).where(store.filter_sql(scope))`` on the store's own table
  (LanceDB's default prefilter), the query a user of LanceDB would write.

Printed per selectivity: p50/p99 of each, filtered/unfiltered and filtered/raw p50 ratios, and how
many tool calls returned exactly min(top_k, in-scope matches) hits, all in scope (the in-scope
match count is the raw prefiltered query's row count at ``limit(top_k)``), with the load average.
That the scoped hits equal the prefiltered query's (ids, order, scores) is asserted by the store's
tests (``stores/lancedb/tests/test_lancedb_metadata_indexes.py``), not here.

The store prunes versions older than a minute at each ``optimize()`` (``cleanup_older_than``): with
LanceDB's default of 7 days the 1M ingest leaves about 21 GB of superseded versions on disk.
"""

from __future__ import annotations

import argparse
import asyncio
import pathlib
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from pin_threads import set_thread_counts

THREAD_NOTE = set_thread_counts(2, torch=False)

import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402
from common import BagOfRandomVectors, pct, peak_rss_mib  # noqa: E402
from lancedb_bench import CHUNKS_PER_DOC, machine, synthetic_corpus, synthetic_document  # noqa: E402

from toolish_rag.filters import PropertyFilter as F  # noqa: E402
from toolish_rag.toolset import ToolishRag  # noqa: E402
from toolish_rag_lancedb import LanceDBStore  # noqa: E402

TOP_K = 10
DIMS = 384
SELECTIVITIES = (0.01, 0.1, 0.5)
BATCHES = 20


class FixedVector(BagOfRandomVectors):
    """One precomputed unit vector for every text: text search reads no vector, so none is computed."""

    def __init__(self, dims: int = DIMS) -> None:
        super().__init__(dims)
        vector = np.random.default_rng(5).standard_normal(dims).astype(np.float32)
        self._vector = vector / np.linalg.norm(vector)

    @property
    def model_name(self) -> str:
        return f'fixed-vector-{self._vector.shape[0]}'

    def vectors(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.tile(self._vector, (len(texts), 1))


def open_store(path: pathlib.Path) -> LanceDBStore:
    """The store as benchmarked: no ANN index (text search reads none), old versions pruned."""
    return LanceDBStore(path, embedder=FixedVector(), ann_threshold=None, cleanup_older_than=timedelta(minutes=1))


async def ingest(store: LanceDBStore, chunks: int) -> tuple[float, int]:
    """Upsert the synthetic corpus in `BATCHES` batches, then ``optimize()``: (seconds, rows)."""
    n_docs = chunks // CHUNKS_PER_DOC
    step = max(1, -(-n_docs // BATCHES))
    t0 = time.perf_counter()
    for first in range(0, n_docs, step):
        await store.upsert([synthetic_document(d) for d in range(first, min(n_docs, first + step))])
        print(
            f'  upserted {min(n_docs, first + step) * CHUNKS_PER_DOC:,} chunks, {time.perf_counter() - t0:.0f} s, '
            f'load {load_average()}',
            flush=True,
        )
    await store.optimize()
    seconds = time.perf_counter() - t0
    return seconds, int(await (await store.records_table()).count_rows())


def load_average() -> str:
    return ' '.join(pathlib.Path('/proc/loadavg').read_text().split()[:3])


async def prepared_store(path: pathlib.Path, chunks: int) -> tuple[LanceDBStore, str]:
    """The store at ``path`` holding the corpus: reused when it holds ``chunks`` rows, else built."""
    store = open_store(path)
    table = await store.records_table() if (path / 'records.lance').exists() else None
    if table is not None and int(await table.count_rows()) == chunks:
        await store.optimize()  # brings the indexes the current store code keeps up to date
        return store, f'reused {path} ({chunks:,} chunks)'
    await store.aclose()
    shutil.rmtree(path, ignore_errors=True)
    store = open_store(path)
    seconds, rows = await ingest(store, chunks)
    return store, f'ingested {rows:,} chunks in {seconds:.0f} s ({rows / seconds:,.0f} chunks/s)'


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--chunks', type=int, default=1_000_000, help='synthetic corpus size (default 1M)')
    parser.add_argument('--quick', action='store_true', help='20k chunks, 30 queries: a smoke run')
    parser.add_argument('-n', type=int, default=100, help='queries per selectivity')
    parser.add_argument('--store-dir', type=pathlib.Path, default=None, help='keep the store here and reuse it')
    parser.add_argument('--ingest-only', action='store_true', help='build the store and stop')
    args = parser.parse_args()
    chunks, n = (20_000, min(args.n, 30)) if args.quick else (args.chunks, args.n)
    tmp = None
    path = args.store_dir
    if path is None:
        tmp = pathlib.Path(tempfile.mkdtemp(prefix='lancedb-text-filter-'))
        path = tmp / 'store'
    print(f'machine: {machine()}; {THREAD_NOTE}; load {load_average()}', flush=True)
    try:
        store, how = await prepared_store(path, chunks)
        print(how, flush=True)
        if not args.ingest_only:
            await bench(store, chunks, n)
        await store.aclose()
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f'peak RSS {peak_rss_mib():,.0f} MiB; load {load_average()}')


Call = Callable[[str], Awaitable[Any]]


async def rotate(calls: Sequence[Call], queries: Sequence[str]) -> list[tuple[list[float], list[Any]]]:
    """Each call on every query, the order rotating query by query: per call, its ms and results."""
    out: list[tuple[list[float], list[Any]]] = [([], []) for _ in calls]
    for i, query in enumerate(queries):
        for j in range(len(calls)):
            which = (i + j) % len(calls)
            t0 = time.perf_counter()
            result = await calls[which](query)
            out[which][0].append((time.perf_counter() - t0) * 1000)
            out[which][1].append(result)
    return out


async def bench(store: LanceDBStore, chunks: int, n: int) -> list[dict[str, Any]]:
    """Time the scoped and unscoped tool and the raw scoped query at each selectivity; print a table."""
    queries = synthetic_corpus(chunks, n).queries
    rag: ToolishRag[None] = ToolishRag(store, name='bench', max_top_k=100)
    table = await store.records_table()

    async def tool(scoped: ToolishRag[None], query: str) -> list[Any]:
        result = await scoped.run_tool('text_search', {'query': query, 'top_k': TOP_K})
        return list(result.metadata['hits'])

    async def raw(where: str, query: str) -> Any:
        q = table.query().nearest_to_text(query).select(['id', 'metadata_json', '_score']).where(where)
        return await q.limit(TOP_K).to_arrow()

    for query in queries[:5]:  # warm the caches: the first calls pay for opening the indexes
        await tool(rag, query)
    rows: list[dict[str, Any]] = []
    for selectivity in SELECTIVITIES:
        limit = round(selectivity * 100)
        scope = F.lt('bucket', limit)
        where = store.filter_sql(scope)
        scoped = rag.with_metadata_filter(scope)
        calls: list[Call] = [
            lambda q, s=scoped: tool(s, q),
            lambda q: tool(rag, q),
            lambda q, w=where: raw(w, q),
        ]
        for call in calls:  # untimed, once each
            await call(queries[0])
        (f_ms, f_out), (u_ms, _), (r_ms, r_out) = await rotate(calls, queries)
        exact = sum(
            len(hits) == min(TOP_K, got.num_rows) and all(h.record.metadata['bucket'] < limit for h in hits)
            for hits, got in zip(f_out, r_out, strict=True)
        )
        row = {
            'selectivity': selectivity,
            'n': len(queries),
            'filtered': (pct(f_ms, 50), pct(f_ms, 99)),
            'unfiltered': (pct(u_ms, 50), pct(u_ms, 99)),
            'raw': (pct(r_ms, 50), pct(r_ms, 99)),
            'exact': exact,
            'load': load_average(),
        }
        rows.append(row)
        print_row(row)
    return rows


HEADER = (
    '| filter | tool filtered p50 / p99 ms | tool unfiltered p50 / p99 | raw filtered p50 / p99 | '
    'filtered / unfiltered | filtered / raw | exactly min(top_k, matches) | load avg |\n'
    '|---|---:|---:|---:|---:|---:|---:|---|'
)


def print_row(row: dict[str, Any]) -> None:
    if row['selectivity'] == SELECTIVITIES[0]:
        print(HEADER)
    (fp50, fp99), (up50, up99), (rp50, rp99) = row['filtered'], row['unfiltered'], row['raw']
    print(
        f'| bucket < {round(row["selectivity"] * 100)} ({row["selectivity"]:.0%}) | {fp50:.1f} / {fp99:.1f} | '
        f'{up50:.1f} / {up99:.1f} | {rp50:.1f} / {rp99:.1f} | {fp50 / up50:.2f}x | {fp50 / rp50:.2f}x | '
        f'{row["exact"]}/{row["n"]} | {row["load"]} |',
        flush=True,
    )


if __name__ == '__main__':
    asyncio.run(main())
