"""What one write costs an `InMemoryStore` of a million chunks, beside what rebuilding costs raw.

    .venv/bin/python benchmarks/memory_write_bench.py                 # 1,000,000 synthetic chunks (~15 min)
    .venv/bin/python benchmarks/memory_write_bench.py --size 100000   # 100k chunks
    .venv/bin/python benchmarks/memory_write_bench.py --quick         # 20,000 chunks, seconds

The store is filled with the synthetic corpus of benchmarks/core_bench.py (Zipf pseudo-words,
10 chunks a document, metadata ``bucket`` 0-99) in batches of 50,000 chunks, embedded with
`BagOfRandomVectors` (benchmarks/common.py: microseconds a text, so the timings are the store's
own work), persisted to a temporary directory (``--no-persist``: memory only). Then, ``--writes``
times over, one document (10 chunks) is replaced with new text, and timed:

* **write**: ``store.upsert([document])``, embedding and saving included;
* **text / filtered text / vector, first call after the write**: the first searches of the new
  version (a text search tokenises the written segment; the filter's mask is extended, not
  rebuilt), then the same calls again on the unchanged version;
* then ``--deletes`` documents are deleted one call each.

Beside them, timed in the same run on the same texts, what a rebuild costs with the raw
libraries: ``bm25s`` tokenising and indexing every chunk (the text index a store rebuilding its
snapshot needs; the store built the same index from scratch before this change, in 57 s at 1M)
and ``np.vstack`` of the vector matrix. Last, the saved store is reopened (replaying its
segments) and its answers compared with the live store's.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pin_threads import set_thread_counts

THREAD_NOTE = set_thread_counts(2, torch=False)

import numpy as np  # noqa: E402
from common import BagOfRandomVectors, PseudoWords, pct, peak_rss_mib  # noqa: E402

from toolish_rag.builder import DocumentBuilder  # noqa: E402
from toolish_rag.content import Document  # noqa: E402
from toolish_rag.filters import PropertyFilter as F  # noqa: E402
from toolish_rag.search import SearchRequest  # noqa: E402
from toolish_rag.stores import InMemoryStore  # noqa: E402

BATCH_DOCS = 5_000
"""Documents per ingest batch (50,000 chunks)."""


def document(d: int, words: PseudoWords, rng: random.Random, version: int = 0) -> Document:
    """Document ``d`` as core_bench.py's synthetic corpus builds it (``version`` > 0: rewritten text)."""
    b = DocumentBuilder(f'synthetic://{d}', f'Manual {d}', metadata={'bucket': d % 100, 'version': version})
    for s in range(2):
        section = b.section(f'Part {s} {rng.choice(words.vocab[:200])}')
        for _ in range(5):
            b.add_chunk(section, words.chunk(rng))
    return b.build()


def ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


def summary(name: str, values: list[float]) -> str:
    return f'| {name} | {len(values)} | {pct(values, 50):,.1f} | {pct(values, 99):,.1f} | {max(values):,.1f} |'


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--size', type=int, default=1_000_000, help='chunks in the store')
    parser.add_argument('--writes', type=int, default=40, help='single-document replacements timed')
    parser.add_argument('--deletes', type=int, default=20, help='single-document deletes timed')
    parser.add_argument('--no-persist', action='store_true', help='keep the store in memory only')
    parser.add_argument('--quick', action='store_true', help='20,000 chunks, 10 writes (seconds)')
    args = parser.parse_args()
    if args.quick:
        args.size, args.writes, args.deletes = 20_000, 10, 5
    n_docs = args.size // 10
    rng = random.Random(1)
    words = PseudoWords.draw(rng)
    print(f'# InMemoryStore writes at {args.size:,} chunks ({n_docs:,} documents of 10)')
    print(f'- {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; {THREAD_NOTE}')
    print(f'- load average at start: {os.getloadavg()[0]:.2f}')

    docs = [document(d, words, rng) for d in range(n_docs)]
    texts = [c.text for d in docs for c in d.chunks]
    path = None if args.no_persist else Path(tempfile.mkdtemp(prefix='memory-write-bench-'))
    model = BagOfRandomVectors()
    store = InMemoryStore(model, path=path)
    start = time.perf_counter()
    for b in range(0, n_docs, BATCH_DOCS):
        await store.upsert(docs[b : b + BATCH_DOCS])
    ingest_s = ms(start) / 1000
    start = time.perf_counter()
    await store.text_search(SearchRequest(query=words.query(rng), top_k=10))
    first_text_ms = ms(start)
    scope = F.lt('bucket', 10)
    start = time.perf_counter()
    await store.text_search(SearchRequest(query=words.query(rng), top_k=10, filter=scope))
    first_mask_ms = ms(start)
    print(f'- ingest ({n_docs // BATCH_DOCS or 1} batches, persisted: {path is not None}): {ingest_s:,.1f} s')
    print(
        f"- first text search (builds every segment's postings): {first_text_ms:,.0f} ms;"
        f' first filtered search (evaluates the filter): {first_mask_ms:,.0f} ms'
    )

    # The raw rebuild: bm25s over every text, and the vector matrix stacked again.
    import bm25s
    import Stemmer

    start = time.perf_counter()
    tokens = bm25s.tokenize(texts, stopwords='en', stemmer=Stemmer.Stemmer('english'), show_progress=False)
    raw_tokenize_s = ms(start) / 1000
    start = time.perf_counter()
    bm25s.BM25().index(tokens, show_progress=False)
    raw_index_s = ms(start) / 1000
    del tokens
    matrix = store._snapshot.vectors
    start = time.perf_counter()
    np.vstack([matrix[:-10], matrix[-10:]])
    raw_vstack_ms = ms(start)

    writes: list[float] = []
    after: dict[str, list[float]] = {'text': [], 'filtered text': [], 'vector': []}
    again: dict[str, list[float]] = {'text': [], 'filtered text': [], 'vector': []}
    for w in range(args.writes):
        d = rng.randrange(n_docs)
        new = document(d, words, rng, version=w + 1)
        start = time.perf_counter()
        await store.upsert([new])
        writes.append(ms(start))
        query = words.query(rng)
        for timings in (after, again):
            for name, request in (
                ('text', SearchRequest(query=query, top_k=10)),
                ('filtered text', SearchRequest(query=query, top_k=10, filter=scope)),
            ):
                start = time.perf_counter()
                await store.text_search(request)
                timings[name].append(ms(start))
            start = time.perf_counter()
            await store.vector_search(SearchRequest(query=query, top_k=10))
            timings['vector'].append(ms(start))
    deletes: list[float] = []
    victims = [info.id for info in rng.sample(list(await store.list_documents()), args.deletes)]
    for doc_id in victims:
        start = time.perf_counter()
        await store.delete_documents([doc_id])
        deletes.append(ms(start))

    print(f'- load average after the writes: {os.getloadavg()[0]:.2f}\n')
    print('| operation | calls | p50 ms | p99 ms | max ms |')
    print('|---|---:|---:|---:|---:|')
    print(summary('replace one document (10 chunks)', writes))
    print(summary('delete one document', deletes))
    for name in after:
        print(summary(f'{name} search, first after a write', after[name]))
        print(summary(f'{name} search, same version again', again[name]))
    print()
    print(
        f'Raw rebuild at this size (same run): bm25s tokenize {raw_tokenize_s:,.1f} s + index {raw_index_s:,.1f} s;'
        f' np.vstack of the vector matrix {raw_vstack_ms:,.0f} ms.'
    )
    print(f'Replace p50 / raw bm25s rebuild: {pct(writes, 50) / 1000 / (raw_tokenize_s + raw_index_s):.4f}x')

    if path is not None:
        segments = len(list((path / 'segments').iterdir()))
        size_mb = sum(f.stat().st_size for f in path.rglob('*') if f.is_file()) / 2**20
        start = time.perf_counter()
        reopened = InMemoryStore(BagOfRandomVectors(), path=path)
        reopen_s = ms(start) / 1000
        query = words.query(rng)
        for request in (SearchRequest(query=query, top_k=10), SearchRequest(query=query, top_k=10, filter=scope)):
            live = [(h.record.id, h.score) for h in await store.text_search(request)]
            back = [(h.record.id, h.score) for h in await reopened.text_search(request)]
            assert live == back, 'the reopened store ranks differently'
        assert len(reopened) == len(store)
        print(
            f'Saved: {segments} segments, {size_mb:,.0f} MiB; reopened (replaying them) in {reopen_s:,.1f} s,'
            ' same records and text rankings.'
        )
        shutil.rmtree(path, ignore_errors=True)
    print(f'Peak RSS {peak_rss_mib():,.0f} MiB; load average at end {os.getloadavg()[0]:.2f}')


if __name__ == '__main__':
    asyncio.run(main())
