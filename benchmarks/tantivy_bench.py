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
* filtered text search at 1%, 10% and 50% (metadata ``bucket < n``): the same query parse
  (``parse_query_lenient``, which builds the query the store builds), ANDed with the filter as
  the store's native query (a const-score range query on the same fast field), the same
  ``top_k``, no hit count (the store asks for none), and the hits' stored documents fetched;
  "exact" counts the calls that returned as many hits as the raw filtered query
  (``min(top_k, in-scope matches)``), all in scope. Each selectivity is printed with tool and
  raw p50/p99, their ratios and the load average, beside an unfiltered pair timed just before
  it in the same way (``--filtered-only`` runs just these, without the raw ingest).

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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pin_threads import set_thread_counts

THREAD_NOTE = set_thread_counts(2, torch=False)

import re2  # noqa: E402
import tantivy  # noqa: E402
from common import (  # noqa: E402
    Alternated,
    PseudoWords,
    alternate,
    data_dir,
    filtered_json,
    peak_rss_mib,
    speed_result,
    synthetic_name,
    tool_json,
    write_speed_result,
)
from tantivy import Occur, Query  # noqa: E402

from toolish_rag.builder import DocumentBuilder  # noqa: E402
from toolish_rag.content import Chunk, Document  # noqa: E402
from toolish_rag.filters import PropertyFilter as F  # noqa: E402
from toolish_rag.toolset import ToolishRag  # noqa: E402
from toolish_rag_tantivy import TantivyStore  # noqa: E402
from toolish_rag_tantivy._analyzers import build_analyzer, tokenizer_name  # noqa: E402

SCIFACT = data_dir() / 'scifact'
TOP_K = 10
BATCH_DOCS = 2000
REGEX = 'ERR-12[0-9]{2}'
ZOOM_LIMIT = 200


def percentile(samples: Sequence[float], q: float) -> float:
    """Nearest-rank percentile, ``q`` in 0-100.

    This script's statistic from the start (the memory and LanceDB scripts interpolate, `pct`
    in benchmarks/common.py); kept so that its figures stay comparable with earlier runs.
    """
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


# -- corpora -------------------------------------------------------------------------------


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
    words = PseudoWords.draw(rng)
    docs = []
    per_doc = 10
    for d in range(max(1, n_chunks // per_doc)):
        b = DocumentBuilder(f'synthetic:{d}', f'doc {d}', metadata={'bucket': d % 100, 'tenant': f't{d % 7}'})
        section = b.section('Body')
        for _ in range(per_doc):
            b.add_chunk(section, words.chunk(rng))
        docs.append(b.build())
    queries = [words.query(rng) for _ in range(200)]
    return docs, queries


# -- ingest --------------------------------------------------------------------------------


async def store_ingest(store: TantivyStore, docs: list[Document]) -> float:
    """Seconds for ``store.upsert`` of ``docs`` in batches of `BATCH_DOCS` (one commit each)."""
    start = time.perf_counter()
    for i in range(0, len(docs), BATCH_DOCS):
        await store.upsert(docs[i : i + BATCH_DOCS])
    return time.perf_counter() - start


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


# -- raw tantivy ---------------------------------------------------------------------------


class RawTantivy:
    """The tantivy calls each tool's work comes down to, on the very index the store holds."""

    def __init__(self, index: tantivy.Index) -> None:
        self.index = index
        self.pattern = re2.compile(REGEX)

    def text(self, q: str) -> list[Any]:
        """``parse_query_lenient`` + ``search`` + fetching the stored documents."""
        searcher = self.index.searcher()
        query, _ = self.index.parse_query_lenient(q, ['text'])
        return [searcher.doc(a).to_dict() for _, a in searcher.search(query, TOP_K).hits]

    def regex(self, query: Query) -> int:
        """Counts every match in each candidate's source text; returns how many records matched."""
        searcher = self.index.searcher()
        found = 0
        for _, a in searcher.search(query, max(1, searcher.num_docs)).hits:
            urtext = searcher.doc(a).get_first('urtext')  # None for document-head records
            if urtext is not None:
                found += sum(1 for _ in self.pattern.finditer(bytes(urtext).decode('utf-8'))) > 0
        return found

    def _lookup(self, searcher: tantivy.Searcher, chunk_id: str) -> Any:
        hits = searcher.search(Query.term_query(self.index.schema, 'id', chunk_id), 1).hits
        return searcher.doc(hits[0][1]).to_dict()

    def broaden(self, c: Chunk) -> list[Any]:
        """The chunk looked up, then its document's chunks two either side of it, in order."""
        searcher = self.index.searcher()
        self._lookup(searcher, c.id)
        schema = self.index.schema
        seq = Query.range_query(
            schema, 'seq', tantivy.FieldType.Integer, max(0, c.sequence_number - 2), c.sequence_number + 2
        )
        q = Query.boolean_query(
            [(Occur.Must, Query.term_query(schema, 'document_id', c.document_id)), (Occur.Must, seq)]
        )
        hits = searcher.search(q, 6, order_by_field='seq', order=tantivy.Order.Asc).hits
        return [searcher.doc(a).to_dict() for _, a in hits]

    def zoom(self, c: Chunk) -> list[Any]:
        """The chunk looked up, then every chunk of its section (its document without one), in order."""
        searcher = self.index.searcher()
        self._lookup(searcher, c.id)
        parts = [(Occur.Must, Query.term_query(self.index.schema, 'document_id', c.document_id))]
        if c.section_id is not None:
            parts.append((Occur.Must, Query.term_query(self.index.schema, 'section_ids', c.section_id)))
        hits = searcher.search(Query.boolean_query(parts), ZOOM_LIMIT, order_by_field='seq', order=tantivy.Order.Asc)
        return [searcher.doc(a).to_dict() for _, a in hits.hits]

    def bucket_below(self, percent: int) -> Query:
        """The metadata filter ``bucket < percent`` as a const-score range query on the same fast field."""
        return Query.const_score_query(self.index.parse_query(f'm_ord.bucket:<{percent}'), 0.0)

    def filtered_text(self, q: str, bucket_query: Query | None) -> int:
        """`text` ANDed with ``bucket_query`` (``None``: unfiltered), no hit count; how many hits it returned.

        The store's work, done directly: the same parse, the filter as the same native query, the
        same ``top_k``, and ``count=False`` as the store searches (counting would be raw-only work).
        """
        searcher = self.index.searcher()
        query, _ = self.index.parse_query_lenient(q, ['text'])
        if bucket_query is not None:
            query = Query.boolean_query([(Occur.Must, query), (Occur.Must, bucket_query)])
        return len([searcher.doc(a).to_dict() for _, a in searcher.search(query, TOP_K, count=False).hits])


# -- timing --------------------------------------------------------------------------------


async def hits_of(rag: ToolishRag[None], name: str, args: dict[str, Any]) -> list[Any]:
    """A tool call and the hits it returned (taken inside the timing, as the tool's own work)."""
    return list((await rag.run_tool(name, args)).metadata['hits'])


@dataclass(frozen=True)
class Timed:
    """A tool's JSON entry and the label of its row in the printed table."""

    label: str
    entry: dict[str, Any]

    @classmethod
    def of(cls, label: str, tool: str, got: Alternated, raw: str) -> Timed:
        return cls(label, tool_json(tool, got.tool_ms, got.raw_ms, raw, percentile=percentile))


async def time_tools(rag: ToolishRag[None], raw: RawTantivy, docs: list[Document], qs: list[str]) -> list[Timed]:
    """text_search, regex_search (a full scan), broaden_chunk and zoom_out against their raw calls."""
    n_chunks = sum(len(d.chunks) for d in docs)
    text = await alternate(lambda q: hits_of(rag, 'text_search', {'query': q, 'top_k': TOP_K}), raw.text, qs)
    regex = await alternate(
        lambda _: hits_of(rag, 'regex_search', {'pattern': REGEX, 'top_k': TOP_K}),
        lambda _: raw.regex(Query.all_query()),
        [None] * regex_runs(n_chunks),
    )
    rng = random.Random(3)
    targets: list[Chunk] = [rng.choice(rng.choice(docs).chunks) for _ in qs]  # as many lookups as queries
    broaden = await alternate(
        lambda c: rag.run_tool('broaden_chunk', {'chunk_id': c.id, 'chunks_to_add': 2}), raw.broaden, targets
    )
    zoom = await alternate(lambda c: rag.run_tool('zoom_out', {'id': c.id}), raw.zoom, targets)
    return [
        Timed.of('text_search', 'text_search', text, 'parse_query_lenient + search + fetch stored docs'),
        Timed.of('regex_search (full scan)', 'regex_search', regex, 'fetch every stored doc + RE2 finditer on urtext'),
        Timed.of(
            'broaden_chunk (2 either side)',
            'broaden_chunk',
            broaden,
            'id term query + fetch, then document_id term + seq range query ordered by seq + fetch',
        ),
        Timed.of(
            'zoom_out (enclosing section)',
            'zoom_out',
            zoom,
            'id term query + fetch, then document_id (+ section) term query ordered by seq + fetch',
        ),
    ]


def regex_runs(n_chunks: int) -> int:
    """Full scans per regex row: 20 on small corpora, down to 3 at a million chunks."""
    return max(3, min(20, 2_000_000 // n_chunks))


def load_average() -> float:
    """The 1-minute load average (above the core count: other processes shared the CPUs)."""
    return float(Path('/proc/loadavg').read_text().split()[0]) if Path('/proc/loadavg').exists() else float('nan')


async def time_filtered_text(
    rag: ToolishRag[None], raw: RawTantivy, qs: list[str], unfiltered: dict[str, float]
) -> list[dict[str, Any]]:
    """text_search at 1%, 10% and 50% of the chunks against the same filtered query run raw, alternated.

    Before each selectivity, the unfiltered tool and raw call are alternated the same way, so
    each filtered figure has an unfiltered one taken under the same load beside it.
    "exact" counts the calls that returned as many hits as the raw filtered query found
    (``min(top_k, in-scope matches)``), all in scope.
    """
    filtered: list[dict[str, Any]] = []
    for percent in (1, 10, 50):
        load_before = load_average()
        plain = await alternate(
            lambda q: hits_of(rag, 'text_search', {'query': q, 'top_k': TOP_K}),
            lambda q: raw.filtered_text(q, None),
            qs,
        )
        scoped = rag.with_metadata_filter(F.lt('bucket', percent))
        bucket_query = raw.bucket_below(percent)
        got = await alternate(
            lambda q, scoped=scoped: hits_of(scoped, 'text_search', {'query': q, 'top_k': TOP_K}),
            lambda q, bucket_query=bucket_query: raw.filtered_text(q, bucket_query),
            qs,
        )
        exact = sum(
            1
            for hs, n in zip(got.tool_out, got.raw_out, strict=True)
            if len(hs) == n and all(h.record.metadata['bucket'] < percent for h in hs)
        )
        entry = filtered_entry('text_search', percent, got.tool_ms, got.raw_ms, unfiltered, exact)
        entry.update(
            raw_p99_ms=round(percentile(got.raw_ms, 99), 4),
            raw='parse_query_lenient + (query AND const-score m_ord.bucket range) + search(top_k, count=False) + fetch',
            unfiltered_alongside={
                'p50_ms': round(percentile(plain.tool_ms, 50), 4),
                'p99_ms': round(percentile(plain.tool_ms, 99), 4),
                'raw_p50_ms': round(percentile(plain.raw_ms, 50), 4),
                'raw_p99_ms': round(percentile(plain.raw_ms, 99), 4),
            },
            load_average=[load_before, load_average()],
        )
        filtered.append(entry)
    return filtered


async def time_filtered(
    rag: ToolishRag[None], raw: RawTantivy, qs: list[str], n_chunks: int, unfiltered: dict[str, float]
) -> list[dict[str, Any]]:
    """text_search at 1%, 10% and 50% of the chunks (`time_filtered_text`), regex_search at 1%, against raw queries ANDed alike."""
    filtered = await time_filtered_text(rag, raw, qs, unfiltered)
    scoped = rag.with_metadata_filter(F.lt('bucket', 1))
    bucket_1 = raw.bucket_below(1)
    got = await alternate(
        lambda _: hits_of(scoped, 'regex_search', {'pattern': REGEX, 'top_k': TOP_K}),
        lambda _: raw.regex(bucket_1),
        [None] * regex_runs(n_chunks),
    )
    exact = sum(
        1
        for hs, n in zip(got.tool_out, got.raw_out, strict=True)
        if len(hs) == min(TOP_K, n) and all(h.record.metadata['bucket'] < 1 for h in hs)
    )
    filtered.append(filtered_entry('regex_search', 1, got.tool_ms, got.raw_ms, unfiltered, exact))
    return filtered


def filtered_entry(
    tool: str, percent: int, tool_ms: list[float], raw_ms: list[float], unfiltered: dict[str, float], exact: int
) -> dict[str, Any]:
    return filtered_json(
        tool,
        percent / 100,
        tool_ms,
        raw_ms,
        unfiltered_p50_ms=unfiltered[tool],
        exact_top_k=exact,
        top_k=TOP_K,
        percentile=percentile,
    )


# -- one corpus ----------------------------------------------------------------------------


def table_rows(
    key: str,
    n_chunks: int,
    tools: list[Timed],
    filtered: list[dict[str, Any]],
    build: float | None,
    raw_build: float | None,
) -> list[str]:
    """This corpus's rows of the printed table: tools, filtered searches, ingest."""
    lines = [
        f'| {key} | {n_chunks:,} | {t.label} | {t.entry["p50_ms"]:.2f} | {t.entry["p99_ms"]:.2f} '
        f'| {t.entry["raw_p50_ms"]:.2f} | {t.entry["p50_ms"] / t.entry["raw_p50_ms"]:.2f}x |'
        for t in tools
    ]
    for f in filtered:
        exact_note = f'; exact {f["exact_top_k"]}/{f["n"]}'
        lines.append(
            f'| {key} | {n_chunks:,} | {f["tool"]}, {f["selectivity"]:.0%} filter{exact_note} | {f["p50_ms"]:.2f} '
            f'| {f["p99_ms"]:.2f} | {f["raw_p50_ms"]:.2f} | {f["p50_ms"] / f["raw_p50_ms"]:.2f}x |'
        )
    if build is not None and raw_build is not None:
        lines.append(
            f'| {key} | {n_chunks:,} | ingest (chunks/s) | {n_chunks / build:,.0f} | - | {n_chunks / raw_build:,.0f} '
            f'| {build / raw_build:.2f}x (time) |'
        )
    return lines


def filtered_text_rows(key: str, n_chunks: int, filtered: list[dict[str, Any]]) -> list[str]:
    """The filtered text rows with raw p99, both ratios and the load (`FILTERED_HEADER`): each row is
    the unfiltered pair timed just before it, then the filtered pair."""
    lines = []
    for f in filtered:
        if 'unfiltered_alongside' not in f:
            continue
        u = f['unfiltered_alongside']
        load = ' to '.join(f'{x:.1f}' for x in f['load_average'])
        lines.append(
            f'| {key} | {f["selectivity"]:.0%} | {f["n"]} | {f["p50_ms"]:.2f} / {f["p99_ms"]:.2f} '
            f'| {f["raw_p50_ms"]:.2f} / {f["raw_p99_ms"]:.2f} | {f["p50_ms"] / f["raw_p50_ms"]:.2f}x '
            f'| {f["p99_ms"] / f["raw_p99_ms"]:.2f}x | {f["exact_top_k"]}/{f["n"]} '
            f'| {u["p50_ms"]:.2f} / {u["p99_ms"]:.2f} | {u["raw_p50_ms"]:.2f} / {u["raw_p99_ms"]:.2f} | {load} |'
        )
    return lines


FILTERED_HEADER = (
    '| corpus | filter `bucket < n` | calls | tool p50 / p99 ms | raw p50 / p99 ms | p50 ratio | p99 ratio | exact '
    '| unfiltered tool p50 / p99 | unfiltered raw p50 / p99 | load avg |\n'
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|'
)


async def bench(
    key: str, docs: list[Document], queries: list[str], repeats: int, *, filtered_only: bool = False
) -> tuple[list[str], dict[str, Any]]:
    """One corpus: ingest, every tool, the filtered searches (``filtered_only``: ingest and filtered text only)."""
    # A tantivy analyzer (not the default 'auto'): the raw-library baselines index and query with the same one.
    store = TantivyStore(
        analyzer='subword_stem', writer_threads=2, writer_heap_bytes=512_000_000, regex_scan_limit=None
    )
    build = await store_ingest(store, docs)
    raw = RawTantivy(store.index)
    n_chunks = sum(len(d.chunks) for d in docs)
    print(f'{key}: indexed {n_chunks} chunks in {build:.1f} s through the store', flush=True)
    raw_build = None
    if not filtered_only:
        raw_build = raw_ingest(docs, store.analyzer_name)
        gc.collect()
        print(f'{key}: raw tantivy indexed the same chunks in {raw_build:.1f} s', flush=True)
    rag: ToolishRag[None] = ToolishRag(store, name='bench', max_top_k=50)
    qs = (queries * (1 + repeats // max(1, len(queries))))[:repeats]
    await rag.run_tool('text_search', {'query': qs[0], 'top_k': TOP_K})  # warm up
    tools: list[Timed] = []
    if filtered_only:
        filtered = await time_filtered_text(rag, raw, qs, {'text_search': float('nan')})
        for f in filtered:
            f['unfiltered_p50_ms'] = f['unfiltered_alongside']['p50_ms']
    else:
        tools = await time_tools(rag, raw, docs, qs)
        unfiltered = {t.entry['tool']: t.entry['p50_ms'] for t in tools}
        filtered = await time_filtered(rag, raw, qs, n_chunks, unfiltered)
    store.close()
    entry: dict[str, Any] = {
        'name': key,
        'chunks': n_chunks,
        'embedder': 'none (tantivy has no vector search)',
        'ingest': {
            'seconds': round(build, 3),
            'chunks_per_s': round(n_chunks / build, 1),
            'raw_chunks_per_s': round(n_chunks / raw_build, 1) if raw_build is not None else None,
            'raw': f'raw tantivy IndexWriter (2 threads, same analyzer), minimal schema, commit per {BATCH_DOCS} docs',
        },
        'tools': [t.entry for t in tools],
        'filtered': filtered,
    }
    return table_rows(key, n_chunks, tools, filtered, build, raw_build), entry


def write_json(path: Path | None, corpora: list[dict[str, Any]]) -> None:
    """The speed-result JSON so far (rewritten after every corpus, so a long run leaves partial results)."""
    write_speed_result(path, speed_result('tantivy', THREAD_NOTE, corpora))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--sizes', type=int, nargs='*', default=[100_000], help='synthetic corpus sizes (chunks)')
    parser.add_argument('--no-scifact', action='store_true')
    parser.add_argument('--repeats', type=int, default=200, help='calls per operation (regex: fewer)')
    parser.add_argument('--quick', action='store_true', help='2,000 synthetic chunks only, 30 calls (seconds)')
    parser.add_argument('--json-out', type=Path, default=None, help='write the speed-result JSON here')
    parser.add_argument(
        '--filtered-only',
        action='store_true',
        help='only ingest and filtered text_search beside raw (no raw ingest, unfiltered tools or regex)',
    )
    args = parser.parse_args()
    sizes, repeats, scifact = args.sizes, args.repeats, not args.no_scifact
    if args.quick:
        sizes, repeats, scifact = [2000], 30, False
    rows: list[str] = []
    corpora: list[dict[str, Any]] = []
    if scifact and SCIFACT.exists():
        docs, queries = scifact_docs()
        lines, entry = await bench('scifact', docs, queries, repeats, filtered_only=args.filtered_only)
        rows += lines
        corpora.append(entry)
        write_json(args.json_out, corpora)
    elif scifact:
        print(f'SciFact not found under {SCIFACT}: skipped')
    for size in sizes:
        start = time.perf_counter()
        docs, queries = synthetic_docs(size)
        print(f'synthetic {size}: generated in {time.perf_counter() - start:.1f} s', flush=True)
        lines, entry = await bench(synthetic_name(size), docs, queries, repeats, filtered_only=args.filtered_only)
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
    print()
    print('Filtered text_search beside the same filtered query run raw (alternated call by call):')
    print()
    print(FILTERED_HEADER)
    print('\n'.join(line for c in corpora for line in filtered_text_rows(c['name'], c['chunks'], c['filtered'])))
    if args.json_out is not None:
        write_json(args.json_out, corpora)
        print(f'\nJSON written to {args.json_out}')


if __name__ == '__main__':
    asyncio.run(main())
