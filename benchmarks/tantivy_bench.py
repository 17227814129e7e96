"""Latency of `TantivyStore` against raw tantivy calls on the same index, in the same run.

    .venv/bin/python benchmarks/tantivy_bench.py                  # SciFact (5k) + 100k synthetic
    .venv/bin/python benchmarks/tantivy_bench.py --sizes 100000 1000000

For each corpus: p50/p99 of text search, regex search and expansion through the store, the
same operation done with raw tantivy (parse + search + stored-document fetch, or a plain
scan + RE2 for regex) and the ratio store/raw; then filtered text search at 1%, 10% and
50% selectivity with the number of hits returned (must equal top_k). Prints markdown.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import re2
import tantivy
from tantivy import Occur, Query

from toolish_rag.builder import DocumentBuilder
from toolish_rag.content import Document
from toolish_rag.filters import PropertyFilter as F
from toolish_rag.search import ExpansionRequest, RegexRequest, SearchRequest
from toolish_rag_tantivy import TantivyStore

SCIFACT = Path(__file__).resolve().parents[2] / 'shared' / 'data' / 'scifact'
TOP_K = 10


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def timed_async(fn: Callable[[Any], Awaitable[Any]], args: list[Any]) -> list[float]:
    out = []
    for a in args:
        start = time.perf_counter()
        await fn(a)
        out.append((time.perf_counter() - start) * 1000)
    return out


def timed(fn: Callable[[Any], Any], args: list[Any]) -> list[float]:
    out = []
    for a in args:
        start = time.perf_counter()
        fn(a)
        out.append((time.perf_counter() - start) * 1000)
    return out


def scifact_docs() -> tuple[list[Document], list[str]]:
    docs = []
    for i, line in enumerate((SCIFACT / 'corpus.jsonl').open()):
        d = json.loads(line)
        b = DocumentBuilder(f'beir:{d["_id"]}', d.get('title') or '', id=d['_id'], metadata={'bucket': i % 100})
        b.add_chunk(None, d['text'])
        docs.append(b.build())
    queries = [json.loads(line)['text'] for line in (SCIFACT / 'queries.jsonl').open()]
    return docs, queries


def synthetic_docs(n_chunks: int, seed: int = 1) -> tuple[list[Document], list[str]]:
    rng = random.Random(seed)
    vocab = [
        f'{rng.choice("bcdfghklmnprstvz")}{rng.choice("aeiou")}{rng.choice("bcdfghklmnprstvz")}{i}'
        for i in range(20_000)
    ]
    weights = [1 / (r + 1) for r in range(len(vocab))]
    cum = list(__import__('itertools').accumulate(weights))
    docs = []
    per_doc = 10
    for d in range(n_chunks // per_doc):
        b = DocumentBuilder(f'synthetic:{d}', f'doc {d}', metadata={'bucket': d % 100, 'tenant': f't{d % 7}'})
        section = b.section('Body')
        for _ in range(per_doc):
            words = rng.choices(vocab, cum_weights=cum, k=60)
            words[rng.randrange(60)] = f'ERR-{rng.randrange(10_000):04d}'
            b.add_chunk(section, ' '.join(words))
        docs.append(b.build())
    queries = [' '.join(rng.choices(vocab[50:5000], k=4)) for _ in range(200)]
    return docs, queries


async def bench(label: str, docs: list[Document], queries: list[str], repeats: int) -> list[str]:
    rows = []
    store = TantivyStore(writer_threads=2, writer_heap_bytes=512_000_000, regex_scan_limit=None)
    start = time.perf_counter()
    for i in range(0, len(docs), 2000):
        await store.upsert(docs[i : i + 2000])
    build = time.perf_counter() - start
    index = store.index
    n_chunks = sum(len(d.chunks) for d in docs)
    print(f'{label}: indexed {n_chunks} chunks in {build:.1f} s through the store', flush=True)
    qs = (queries * (1 + repeats // max(1, len(queries))))[:repeats]

    def raw_text(q: str) -> list[Any]:
        searcher = index.searcher()
        query, _ = index.parse_query_lenient(q, ['text'])
        return [searcher.doc(a).to_dict() for _, a in searcher.search(query, TOP_K).hits]

    store_t = await timed_async(lambda q: store.text_search(SearchRequest(q, TOP_K)), qs)
    raw_t = timed(raw_text, qs)
    rows.append(row(label, n_chunks, 'text_search', store_t, raw_t))

    # Regex over every chunk's source text: the store vs a raw scan with RE2.
    pattern = re2.compile('ERR-12[0-9]{2}')
    regex_runs = max(3, min(20, 2_000_000 // n_chunks))

    def raw_regex(_: Any) -> int:
        searcher = index.searcher()
        hits = searcher.search(Query.all_query(), searcher.num_docs).hits
        found = 0
        for _, a in hits:
            doc = searcher.doc(a)
            if pattern.search(bytes(doc['urtext'][0]).decode('utf-8')):
                found += 1
        return found

    store_r = await timed_async(
        lambda _: store.regex_search(RegexRequest('ERR-12[0-9]{2}', TOP_K)), [None] * regex_runs
    )
    raw_r = timed(raw_regex, [None] * regex_runs)
    rows.append(row(label, n_chunks, 'regex_search (full scan)', store_r, raw_r))

    store_rf = await timed_async(
        lambda _: store.regex_search(RegexRequest('ERR-12[0-9]{2}', TOP_K, F.lt('bucket', 1))), [None] * regex_runs
    )
    rows.append(row(label, n_chunks, 'regex_search, 1% filter', store_rf, None))

    rng = random.Random(3)
    targets = [rng.choice(docs) for _ in range(repeats)]

    def raw_expand(doc: Document) -> list[Any]:
        searcher = index.searcher()
        q = Query.boolean_query(
            [
                (Occur.Must, Query.term_query(index.schema, 'document_id', doc.id)),
                (Occur.Must, Query.range_query(index.schema, 'seq', tantivy.FieldType.Integer, 2, 6)),
            ]
        )
        hits = searcher.search(q, 50, order_by_field='seq', order=tantivy.Order.Asc).hits
        return [searcher.doc(a).to_dict() for _, a in hits]

    store_e = await timed_async(lambda d: store.expand(ExpansionRequest(document_id=d.id, first=2, last=6)), targets)
    raw_e = timed(raw_expand, targets)
    rows.append(row(label, n_chunks, 'expand (5 chunks)', store_e, raw_e))

    for pct in (1, 10, 50):
        f = F.lt('bucket', pct)
        counts: list[int] = []

        async def filtered(q: str, f: Any = f, counts: list[int] = counts) -> None:
            counts.append(len(await store.text_search(SearchRequest(q, TOP_K, f))))

        raw_counts: list[int] = []

        def raw_filtered(q: str, pct: int = pct, raw_counts: list[int] = raw_counts) -> list[Any]:
            searcher = index.searcher()
            query, _ = index.parse_query_lenient(q, ['text'])
            scoped = Query.boolean_query(
                [
                    (Occur.Must, query),
                    (Occur.Must, Query.const_score_query(index.parse_query(f'm_ord.bucket:<{pct}'), 0.0)),
                ]
            )
            docs = [searcher.doc(a).to_dict() for _, a in searcher.search(scoped, TOP_K).hits]
            raw_counts.append(len(docs))
            return docs

        store_f = await timed_async(filtered, qs)
        raw_f = timed(raw_filtered, qs)
        full = sum(1 for c in counts if c == TOP_K)
        same = sum(1 for c, r in zip(counts, raw_counts, strict=True) if c == r)
        op = f'text_search, {pct}% filter (hits==top_k {full}/{len(counts)}; ==raw {same}/{len(counts)})'
        rows.append(row(label, n_chunks, op, store_f, raw_f))
    store.close()
    return rows


def row(label: str, n: int, op: str, store_ms: list[float], raw_ms: list[float] | None) -> str:
    s50, s99 = percentile(store_ms, 0.5), percentile(store_ms, 0.99)
    if raw_ms is None:
        return f'| {label} | {n} | {op} | {s50:.2f} | {s99:.2f} | - | - | - |'
    r50, r99 = percentile(raw_ms, 0.5), percentile(raw_ms, 0.99)
    ratio = statistics.median(store_ms) / statistics.median(raw_ms)
    return f'| {label} | {n} | {op} | {s50:.2f} | {s99:.2f} | {r50:.2f} | {r99:.2f} | {ratio:.2f} |'


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--sizes', type=int, nargs='*', default=[100_000], help='synthetic corpus sizes (chunks)')
    parser.add_argument('--no-scifact', action='store_true')
    parser.add_argument('--repeats', type=int, default=200)
    args = parser.parse_args()
    rows: list[str] = []
    if not args.no_scifact and SCIFACT.exists():
        docs, queries = scifact_docs()
        rows += await bench('SciFact', docs, queries, args.repeats)
    for size in args.sizes:
        start = time.perf_counter()
        docs, queries = synthetic_docs(size)
        print(f'synthetic {size}: generated in {time.perf_counter() - start:.1f} s', flush=True)
        rows += await bench(f'synthetic {size // 1000}k', docs, queries, args.repeats)
        del docs
    print()
    print('| corpus | chunks | operation | store p50 ms | store p99 ms | raw p50 ms | raw p99 ms | store/raw (p50) |')
    print('|---|---|---|---|---|---|---|---|')
    print('\n'.join(rows))


if __name__ == '__main__':
    asyncio.run(main())
