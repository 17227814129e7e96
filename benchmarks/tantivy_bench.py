"""Latency of the tools over a `TantivyStore` against raw tantivy calls on the same index, in the same run.

    .venv/bin/python benchmarks/tantivy_bench.py                  # SciFact (5k) + 100k synthetic
    .venv/bin/python benchmarks/tantivy_bench.py --sizes 100000 1000000 --json-out r.json
    .venv/bin/python benchmarks/tantivy_bench.py --quick          # 2,000 synthetic chunks, seconds

For each corpus, every tool is called through `ToolishRag.run_tool` (argument validation,
the `Retriever`, the store call and the rendering the model reads) and timed against the
same work done with raw tantivy on the very index the store holds, alternating call by call:

* text_search: ``parse_query_lenient`` + ``search`` + fetching the stored documents;
* regex_search: every stored document fetched and its source text scanned with RE2;
* broaden_chunk: the id looked up, then a document-id term + sequence-range query, ordered;
* zoom_out: the id looked up, then a document-id + section term query, ordered;
* filtered text search at 1%, 10% and 50% (metadata ``bucket < n``): the raw query ANDed
  with a const-score range query on the same fast field; "exact" counts the calls that
  returned as many hits as the raw filtered query (``min(top_k, in-scope matches)``), all in scope.

Ingest is timed through ``store.upsert`` (batches of 2,000 documents, one commit each) and
against raw tantivy indexing the same chunk texts with the same analyzer and batches into a
minimal schema (id, document id, sequence, text, source text).
Prints markdown; ``--json-out`` writes the benchmark suite's speed-result JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from itertools import accumulate
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import peak_rss_mib, set_thread_counts

THREAD_NOTE = set_thread_counts(2, torch=False)

import re2  # noqa: E402
import tantivy  # noqa: E402
from tantivy import Occur, Query  # noqa: E402

from toolish_rag.builder import DocumentBuilder  # noqa: E402
from toolish_rag.content import Chunk, Document  # noqa: E402
from toolish_rag.filters import PropertyFilter as F  # noqa: E402
from toolish_rag.toolset import ToolishRag  # noqa: E402
from toolish_rag_tantivy import TantivyStore  # noqa: E402
from toolish_rag_tantivy.analyzers import build_analyzer, tokenizer_name  # noqa: E402

SCIFACT = Path(__file__).resolve().parents[2] / 'shared' / 'data' / 'scifact'
TOP_K = 10
BATCH_DOCS = 2000
REGEX = 'ERR-12[0-9]{2}'
ZOOM_LIMIT = 200


def percentile(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


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
    """Zipf-distributed pseudo-words, one ``ERR-nnnn`` code per chunk, 10 chunks per document."""
    rng = random.Random(seed)
    vocab = [
        f'{rng.choice("bcdfghklmnprstvz")}{rng.choice("aeiou")}{rng.choice("bcdfghklmnprstvz")}{i}'
        for i in range(20_000)
    ]
    cum = list(accumulate(1 / (r + 1) for r in range(len(vocab))))
    docs = []
    per_doc = 10
    for d in range(max(1, n_chunks // per_doc)):
        b = DocumentBuilder(f'synthetic:{d}', f'doc {d}', metadata={'bucket': d % 100, 'tenant': f't{d % 7}'})
        section = b.section('Body')
        for _ in range(per_doc):
            words = rng.choices(vocab, cum_weights=cum, k=60)
            words[rng.randrange(60)] = f'ERR-{rng.randrange(10_000):04d}'
            b.add_chunk(section, ' '.join(words))
        docs.append(b.build())
    queries = [' '.join(rng.choices(vocab[50:5000], k=4)) for _ in range(200)]
    return docs, queries


async def alternate(
    tool: Callable[[Any], Awaitable[Any]], raw: Callable[[Any], Any] | None, args: Sequence[Any]
) -> tuple[list[float], list[float], list[Any], list[Any]]:
    """Time ``tool`` and ``raw`` on each argument, alternating which goes first."""
    tool_ms: list[float] = []
    raw_ms: list[float] = []
    tool_out: list[Any] = []
    raw_out: list[Any] = []

    def run_raw(a: Any) -> None:
        assert raw is not None
        start = time.perf_counter()
        raw_out.append(raw(a))
        raw_ms.append((time.perf_counter() - start) * 1000)

    for i, a in enumerate(args):
        if raw is not None and i % 2 == 0:
            run_raw(a)
        start = time.perf_counter()
        tool_out.append(await tool(a))
        tool_ms.append((time.perf_counter() - start) * 1000)
        if raw is not None and i % 2 == 1:
            run_raw(a)
    return tool_ms, raw_ms, tool_out, raw_out


def tool_entry(tool: str, label: str, t_ms: list[float], r_ms: list[float], raw: str) -> dict[str, Any]:
    return {
        'tool': tool,
        'label': label,
        'n': len(t_ms),
        'p50_ms': round(percentile(t_ms, 0.5), 4),
        'p99_ms': round(percentile(t_ms, 0.99), 4),
        'raw_p50_ms': round(percentile(r_ms, 0.5), 4) if r_ms else None,
        'raw_p99_ms': round(percentile(r_ms, 0.99), 4) if r_ms else None,
        'raw': raw,
    }


def raw_ingest(docs: list[Document], analyzer: str) -> float:
    """Seconds for raw tantivy to index the same chunk texts (same analyzer, same batches)."""
    b = tantivy.SchemaBuilder()
    b.add_text_field('id', stored=False, tokenizer_name='raw', index_option='basic')
    b.add_text_field('document_id', stored=False, tokenizer_name='raw', index_option='basic')
    b.add_integer_field('seq', stored=True, indexed=True, fast=True)
    b.add_text_field('text', stored=True, tokenizer_name=tokenizer_name(analyzer), index_option='position')  # type: ignore[arg-type]
    b.add_bytes_field('urtext', stored=True, indexed=False)
    index = tantivy.Index(b.build())
    index.register_tokenizer(tokenizer_name(analyzer), build_analyzer(analyzer))  # type: ignore[arg-type]
    start = time.perf_counter()
    writer = index.writer(heap_size=512_000_000, num_threads=2)
    for i in range(0, len(docs), BATCH_DOCS):
        for d in docs[i : i + BATCH_DOCS]:
            for c in d.chunks:
                doc = tantivy.Document()
                doc.add_text('id', c.id)
                doc.add_text('document_id', c.document_id)
                doc.add_integer('seq', c.sequence_number)
                doc.add_text('text', c.text)
                doc.add_bytes('urtext', c.urtext.encode('utf-8'))
                writer.add_document(doc)
        writer.commit()
    writer.wait_merging_threads()
    return time.perf_counter() - start


async def bench(key: str, docs: list[Document], queries: list[str], repeats: int) -> tuple[list[str], dict[str, Any]]:
    store = TantivyStore(writer_threads=2, writer_heap_bytes=512_000_000, regex_scan_limit=None)
    start = time.perf_counter()
    for i in range(0, len(docs), BATCH_DOCS):
        await store.upsert(docs[i : i + BATCH_DOCS])
    build = time.perf_counter() - start
    index = store.index
    n_chunks = sum(len(d.chunks) for d in docs)
    print(f'{key}: indexed {n_chunks} chunks in {build:.1f} s through the store', flush=True)
    raw_build = raw_ingest(docs, store.analyzer_name)
    gc.collect()
    print(f'{key}: raw tantivy indexed the same chunks in {raw_build:.1f} s', flush=True)
    rag: ToolishRag[None] = ToolishRag(store, name='bench', max_top_k=50)
    qs = (queries * (1 + repeats // max(1, len(queries))))[:repeats]
    await rag.run_tool('text_search', {'query': qs[0], 'top_k': TOP_K})  # warm up
    tools: list[dict[str, Any]] = []

    async def tool_call(rag: ToolishRag[None], name: str, args: dict[str, Any]) -> list[Any]:
        return list((await rag.run_tool(name, args)).metadata['hits'])

    def raw_text(q: str) -> list[Any]:
        searcher = index.searcher()
        query, _ = index.parse_query_lenient(q, ['text'])
        return [searcher.doc(a).to_dict() for _, a in searcher.search(query, TOP_K).hits]

    t_ms, r_ms, _, _ = await alternate(
        lambda q: tool_call(rag, 'text_search', {'query': q, 'top_k': TOP_K}), raw_text, qs
    )
    tools.append(
        tool_entry('text_search', 'text_search', t_ms, r_ms, 'parse_query_lenient + search + fetch stored docs')
    )
    text_p50 = percentile(t_ms, 0.5)

    # Regex over every chunk's source text: the tool vs a raw scan with RE2.
    pattern = re2.compile(REGEX)
    regex_runs = max(3, min(20, 2_000_000 // n_chunks))

    def raw_regex(query: Query) -> int:
        """Counts every match in each candidate's source text; returns how many records matched."""
        searcher = index.searcher()
        found = 0
        for _, a in searcher.search(query, max(1, searcher.num_docs)).hits:
            urtext = searcher.doc(a).get_first('urtext')  # None for document-head records
            if urtext is not None:
                found += sum(1 for _ in pattern.finditer(bytes(urtext).decode('utf-8'))) > 0
        return found

    t_ms, r_ms, _, _ = await alternate(
        lambda _: tool_call(rag, 'regex_search', {'pattern': REGEX, 'top_k': TOP_K}),
        lambda _: raw_regex(Query.all_query()),
        [None] * regex_runs,
    )
    tools.append(
        tool_entry(
            'regex_search', 'regex_search (full scan)', t_ms, r_ms, 'fetch every stored doc + RE2 finditer on urtext'
        )
    )
    regex_p50 = percentile(t_ms, 0.5)

    rng = random.Random(3)
    targets: list[Chunk] = [rng.choice(rng.choice(docs).chunks) for _ in range(repeats)]

    def lookup(searcher: tantivy.Searcher, chunk_id: str) -> Any:
        hits = searcher.search(Query.term_query(index.schema, 'id', chunk_id), 1).hits
        return searcher.doc(hits[0][1]).to_dict()

    def raw_broaden(c: Chunk) -> list[Any]:
        searcher = index.searcher()
        lookup(searcher, c.id)
        q = Query.boolean_query(
            [
                (Occur.Must, Query.term_query(index.schema, 'document_id', c.document_id)),
                (
                    Occur.Must,
                    Query.range_query(
                        index.schema,
                        'seq',
                        tantivy.FieldType.Integer,
                        max(0, c.sequence_number - 2),
                        c.sequence_number + 2,
                    ),
                ),
            ]
        )
        hits = searcher.search(q, 6, order_by_field='seq', order=tantivy.Order.Asc).hits
        return [searcher.doc(a).to_dict() for _, a in hits]

    t_ms, r_ms, _, _ = await alternate(
        lambda c: rag.run_tool('broaden_chunk', {'chunk_id': c.id, 'chunks_to_add': 2}), raw_broaden, targets
    )
    tools.append(
        tool_entry(
            'broaden_chunk',
            'broaden_chunk (2 either side)',
            t_ms,
            r_ms,
            'id term query + fetch, then document_id term + seq range query ordered by seq + fetch',
        )
    )

    def raw_zoom(c: Chunk) -> list[Any]:
        searcher = index.searcher()
        lookup(searcher, c.id)
        parts = [(Occur.Must, Query.term_query(index.schema, 'document_id', c.document_id))]
        if c.section_id is not None:
            parts.append((Occur.Must, Query.term_query(index.schema, 'section_ids', c.section_id)))
        hits = searcher.search(Query.boolean_query(parts), ZOOM_LIMIT, order_by_field='seq', order=tantivy.Order.Asc)
        return [searcher.doc(a).to_dict() for _, a in hits.hits]

    t_ms, r_ms, _, _ = await alternate(lambda c: rag.run_tool('zoom_out', {'id': c.id}), raw_zoom, targets)
    tools.append(
        tool_entry(
            'zoom_out',
            'zoom_out (enclosing section)',
            t_ms,
            r_ms,
            'id term query + fetch, then document_id (+ section) term query ordered by seq + fetch',
        )
    )

    filtered: list[dict[str, Any]] = []
    for pct in (1, 10, 50):
        scoped = rag.with_metadata_filter(F.lt('bucket', pct))
        bucket_query = Query.const_score_query(index.parse_query(f'm_ord.bucket:<{pct}'), 0.0)

        def raw_filtered(q: str, bucket_query: Query = bucket_query) -> int:
            searcher = index.searcher()
            query, _ = index.parse_query_lenient(q, ['text'])
            scoped_q = Query.boolean_query([(Occur.Must, query), (Occur.Must, bucket_query)])
            return len([searcher.doc(a).to_dict() for _, a in searcher.search(scoped_q, TOP_K).hits])

        async def filtered_call(q: str, scoped: ToolishRag[None] = scoped) -> list[Any]:
            return await tool_call(scoped, 'text_search', {'query': q, 'top_k': TOP_K})

        t_ms, r_ms, hits, counts = await alternate(filtered_call, raw_filtered, qs)
        exact = sum(
            1
            for hs, n in zip(hits, counts, strict=True)
            if len(hs) == n and all(h.record.metadata['bucket'] < pct for h in hs)
        )
        filtered.append(
            {
                'tool': 'text_search',
                'selectivity': pct / 100,
                'n': len(t_ms),
                'p50_ms': round(percentile(t_ms, 0.5), 4),
                'p99_ms': round(percentile(t_ms, 0.99), 4),
                'unfiltered_p50_ms': round(text_p50, 4),
                'raw_p50_ms': round(percentile(r_ms, 0.5), 4),
                'exact_top_k': exact,
                'top_k': TOP_K,
            }
        )

    scoped = rag.with_metadata_filter(F.lt('bucket', 1))
    bucket_1 = Query.const_score_query(index.parse_query('m_ord.bucket:<1'), 0.0)
    t_ms, r_ms, hits, counts = await alternate(
        lambda _: tool_call(scoped, 'regex_search', {'pattern': REGEX, 'top_k': TOP_K}),
        lambda _: raw_regex(bucket_1),
        [None] * regex_runs,
    )
    exact = sum(
        1
        for hs, n in zip(hits, counts, strict=True)
        if len(hs) == min(TOP_K, n) and all(h.record.metadata['bucket'] < 1 for h in hs)
    )
    filtered.append(
        {
            'tool': 'regex_search',
            'selectivity': 0.01,
            'n': len(t_ms),
            'p50_ms': round(percentile(t_ms, 0.5), 4),
            'p99_ms': round(percentile(t_ms, 0.99), 4),
            'unfiltered_p50_ms': round(regex_p50, 4),
            'raw_p50_ms': round(percentile(r_ms, 0.5), 4),
            'exact_top_k': exact,
            'top_k': TOP_K,
        }
    )
    store.close()

    entry: dict[str, Any] = {
        'name': key,
        'chunks': n_chunks,
        'embedder': 'none (tantivy has no vector search)',
        'ingest': {
            'seconds': round(build, 3),
            'chunks_per_s': round(n_chunks / build, 1),
            'raw_chunks_per_s': round(n_chunks / raw_build, 1),
            'raw': f'raw tantivy IndexWriter (2 threads, same analyzer), minimal schema, commit per {BATCH_DOCS} docs',
        },
        'tools': tools,
        'filtered': filtered,
    }
    lines = [
        f'| {key} | {n_chunks:,} | {t["label"]} | {t["p50_ms"]:.2f} | {t["p99_ms"]:.2f} | {t["raw_p50_ms"]:.2f} '
        f'| {t["p50_ms"] / t["raw_p50_ms"]:.2f}x |'
        for t in tools
    ]
    for f in filtered:
        exact_note = f'; exact {f["exact_top_k"]}/{f["n"]}'
        lines.append(
            f'| {key} | {n_chunks:,} | {f["tool"]}, {f["selectivity"]:.0%} filter{exact_note} | {f["p50_ms"]:.2f} '
            f'| {f["p99_ms"]:.2f} | {f["raw_p50_ms"]:.2f} | {f["p50_ms"] / f["raw_p50_ms"]:.2f}x |'
        )
    lines.append(
        f'| {key} | {n_chunks:,} | ingest (chunks/s) | {n_chunks / build:,.0f} | - | {n_chunks / raw_build:,.0f} '
        f'| {build / raw_build:.2f}x (time) |'
    )
    # JSON has no 'label'
    for t in tools:
        t.pop('label')
    return lines, entry


def write_json(path: Path | None, corpora: list[dict[str, Any]]) -> None:
    """The speed-result JSON so far (rewritten after every corpus, so a long run leaves partial results)."""
    if path is not None:
        result = {
            'store': 'tantivy',
            'threads': THREAD_NOTE,
            'peak_rss_mib': round(peak_rss_mib(), 1),
            'corpora': corpora,
        }
        path.write_text(json.dumps(result, indent=2) + '\n', encoding='utf-8')


def synthetic_name(size: int) -> str:
    if size >= 1_000_000 and size % 1_000_000 == 0:
        return f'synthetic-{size // 1_000_000}m'
    return f'synthetic-{size // 1000}k' if size >= 1000 else f'synthetic-{size}'


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--sizes', type=int, nargs='*', default=[100_000], help='synthetic corpus sizes (chunks)')
    parser.add_argument('--no-scifact', action='store_true')
    parser.add_argument('--repeats', type=int, default=200, help='calls per operation (regex: fewer)')
    parser.add_argument('--quick', action='store_true', help='2,000 synthetic chunks only, 30 calls (seconds)')
    parser.add_argument('--json-out', type=Path, default=None, help='write the speed-result JSON here')
    args = parser.parse_args()
    sizes, repeats, scifact = args.sizes, args.repeats, not args.no_scifact
    if args.quick:
        sizes, repeats, scifact = [2000], 30, False
    rows: list[str] = []
    corpora: list[dict[str, Any]] = []
    if scifact and SCIFACT.exists():
        docs, queries = scifact_docs()
        lines, entry = await bench('scifact', docs, queries, repeats)
        rows += lines
        corpora.append(entry)
        write_json(args.json_out, corpora)
    elif scifact:
        print(f'SciFact not found under {SCIFACT}: skipped')
    for size in sizes:
        start = time.perf_counter()
        docs, queries = synthetic_docs(size)
        print(f'synthetic {size}: generated in {time.perf_counter() - start:.1f} s', flush=True)
        lines, entry = await bench(synthetic_name(size), docs, queries, repeats)
        rows += lines
        corpora.append(entry)
        write_json(args.json_out, corpora)
        del docs
        gc.collect()
    peak = peak_rss_mib()
    print()
    print(f'- {THREAD_NOTE}; TantivyStore(writer_threads=2); peak RSS {peak:.0f} MiB')
    print()
    print('| corpus | chunks | operation | tool p50 ms | tool p99 ms | raw p50 ms | tool/raw (p50) |')
    print('|---|---:|---|---:|---:|---:|---:|')
    print('\n'.join(rows))
    if args.json_out is not None:
        write_json(args.json_out, corpora)
        print(f'\nJSON written to {args.json_out}')


if __name__ == '__main__':
    asyncio.run(main())
