"""What isolating BM25's corpus statistics costs: the text tool, default vs strict, memory and tantivy.

    .venv/bin/python benchmarks/isolation_bench.py                      # 5,000 and 100,000 chunks
    .venv/bin/python benchmarks/isolation_bench.py --sizes 5000 --queries 100

Issue 12 item 7: with statistics over the whole index, a scoped tenant's text-search scores
move when another tenant writes. The issue's rule: isolate by default where that costs at most
1.5x today's text-search p50 at 100k chunks, else offer a strict mode. This script measures
both stores on the same synthetic corpus (benchmarks/common.py: `PseudoWords`, 60 words per
chunk, 10 chunks per document, ``tenant`` = document number mod ``--tenants``):

* memory: ``InMemoryStore(statistics='store')`` (whole-store statistics: today's scores)
  against ``statistics='scope'`` (the records in scope: isolated, now the default); raw:
  bm25s on the same texts (``get_scores`` with its whole-index statistics, masked, top 10:
  the engine the store used before);
* tantivy: ``TantivyStore`` (one index) against ``PartitionedTantivyStore(partition_key='tenant')``
  (one index per tenant); raw: the same parsed query on the one index with a const-score tenant
  term, and on the tenant's own index without a filter, documents fetched.

Each search is ``ToolishRag.run_tool('text_search', ...)`` (validation, Retriever, store,
rendering), scoped to one tenant (what isolation is for) and unscoped (for tantivy strict mode,
one search per partition, merged). Default and strict calls alternate query by query
(`tool_latency` with the other mode as its counterpart), so load from other processes hits
both alike; raw calls alternate with the default mode's. Prints markdown.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pin_threads import set_thread_counts

THREAD_NOTE = set_thread_counts(2, torch=False)

import numpy as np  # noqa: E402
from common import BagOfRandomVectors, PseudoWords, cpu_model, pct, synthetic_name, tool_latency  # noqa: E402
from pydantic_ai.embeddings import Embedder  # noqa: E402

from toolish_rag import DocumentBuilder, PropertyFilter as F  # noqa: E402
from toolish_rag.content import Document  # noqa: E402
from toolish_rag.search import SearchRequest  # noqa: E402
from toolish_rag.stores import InMemoryStore  # noqa: E402
from toolish_rag.toolset import ToolishRag  # noqa: E402

TOP_K = 10
TENANT = 't3'
BATCH_DOCS = 2000

Call = Callable[[dict[str, Any]], Any]


@dataclass(frozen=True)
class Corpus:
    documents: list[Document]
    texts: list[str]
    tenants: np.ndarray[Any, np.dtype[np.str_]]
    args: list[dict[str, Any]]
    rounds: int
    """Times each query is asked per row (the timing loops alternate round by round too)."""


def synthetic(n_chunks: int, tenants: int, n_queries: int, rounds: int = 1, seed: int = 1) -> Corpus:
    """``n_chunks`` chunks of Zipf pseudo-words, 10 per document, tenant = document number mod ``tenants``."""
    rng = random.Random(seed)
    words = PseudoWords.draw(rng)
    documents = []
    for d in range((n_chunks + 9) // 10):
        b = DocumentBuilder(f'synthetic://{d}', f'Manual {d}', metadata={'tenant': f't{d % tenants}'})
        section = b.section('Body')
        for _ in range(10):
            b.add_chunk(section, words.chunk(rng))
        documents.append(b.build())
    texts = [c.text for d in documents for c in d.chunks]
    tenant_of = np.array([c.metadata['tenant'] for d in documents for c in d.chunks])
    args = [{'query': words.query(rng), 'top_k': TOP_K} for _ in range(n_queries)]
    return Corpus(documents, texts, tenant_of, args, rounds)


@dataclass(frozen=True)
class Row:
    store: str
    search: str
    default_ms: list[float]
    strict_ms: list[float]
    raw_ms: list[float]
    raw: str

    def line(self, corpus: str) -> str:
        d50, s50 = pct(self.default_ms, 50), pct(self.strict_ms, 50)
        raw = f'{pct(self.raw_ms, 50):.3f} ({self.raw})' if self.raw_ms else '-'
        return (
            f'| {corpus} | {self.store} | {self.search} | {d50:.3f} / {pct(self.default_ms, 99):.3f} | '
            f'{s50:.3f} / {pct(self.strict_ms, 99):.3f} | {s50 / d50:.2f}x | {raw} |'
        )


async def compare(
    store: str,
    search: str,
    default: ToolishRag[None],
    strict: ToolishRag[None],
    raw: Call | None,
    raw_name: str,
    corpus: Corpus,
) -> Row:
    """Strict against default alternating call by call; then default against the raw call, likewise."""
    args, rounds = corpus.args, corpus.rounds
    for rag in (default, strict):  # warm: index built, the scope's mask and statistics cached
        await rag.run_tool('text_search', args[0])
    paired = await tool_latency(strict, 'text_search', args, lambda a: default.run_tool('text_search', a), rounds)
    raw_ms = (await tool_latency(default, 'text_search', args, raw, rounds)).raw_ms if raw is not None else []
    return Row(store, search, paired.raw_ms, paired.tool_ms, raw_ms, raw_name)


async def upsert(store: Any, documents: list[Document]) -> float:
    start = time.perf_counter()
    for i in range(0, len(documents), BATCH_DOCS):
        await store.upsert(documents[i : i + BATCH_DOCS])
    return time.perf_counter() - start


# -- memory -------------------------------------------------------------------------------------


class RawBm25:
    """bm25s alone on the same texts: whole-index statistics, the tenant as a boolean mask."""

    def __init__(self, corpus: Corpus) -> None:
        import bm25s
        import Stemmer

        self._stemmer = Stemmer.Stemmer('english')
        self._bm25 = bm25s.BM25()
        self._bm25.index(
            bm25s.tokenize(corpus.texts, stopwords='en', stemmer=self._stemmer, show_progress=False),
            show_progress=False,
        )
        self._n = len(corpus.texts)
        self.mask = corpus.tenants == TENANT

    def top(self, query: str, mask: np.ndarray[Any, np.dtype[np.bool_]] | None) -> Any:
        import bm25s

        tokens = bm25s.tokenize([query], stopwords='en', stemmer=self._stemmer, return_ids=False, show_progress=False)[
            0
        ]
        tokens = [t for t in tokens if t in self._bm25.vocab_dict]
        scores = np.asarray(self._bm25.get_scores(tokens), dtype=np.float64) if tokens else np.zeros(self._n)
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        part = np.argpartition(-scores, TOP_K - 1)[:TOP_K]
        return part[np.argsort(-scores[part], kind='stable')]


async def bench_memory(corpus: Corpus) -> tuple[list[Row], list[str]]:
    stores = {mode: InMemoryStore(Embedder(BagOfRandomVectors(64)), statistics=mode) for mode in ('store', 'scope')}
    notes = []
    for mode, store in stores.items():
        seconds = await upsert(store, corpus.documents)
        start = time.perf_counter()
        await store.text_search(
            SearchRequest('warm up', 1)
        )  # builds the BM25 index, as every first search after a write
        built = time.perf_counter() - start
        notes.append(
            f'memory statistics={mode!r}: upsert {seconds:.1f} s, BM25 index (first text search) {built:.1f} s'
        )
    start = time.perf_counter()
    raw = RawBm25(corpus)
    notes.append(f'raw bm25s tokenize + index: {time.perf_counter() - start:.1f} s (the store built this before)')
    default = ToolishRag(stores['store'], name='bench', max_top_k=50)
    strict = ToolishRag(stores['scope'], name='bench', max_top_k=50)
    scope = F.eq('tenant', TENANT)
    rows = [
        await compare(
            'memory',
            f'scoped tenant={TENANT!r}',
            default.with_metadata_filter(scope),
            strict.with_metadata_filter(scope),
            lambda a: raw.top(a['query'], raw.mask),
            'bm25s masked',
            corpus,
        ),
        await compare('memory', 'unscoped', default, strict, lambda a: raw.top(a['query'], None), 'bm25s', corpus),
    ]
    return rows, notes


# -- tantivy ------------------------------------------------------------------------------------


class RawTantivy:
    """The same parsed query on the one index (const-score tenant term) and on the tenant's own index."""

    def __init__(self, one: Any, partitioned: Any) -> None:
        self._one = one.index
        self._own = partitioned.index_of(TENANT)

    def _search(self, index: Any, text: str, scope: Any) -> list[Any]:
        from tantivy import Occur, Query

        searcher = index.searcher()
        query = index.parse_query_lenient(text, ['text'])[0]
        if scope is not None:
            query = Query.boolean_query([(Occur.Must, query), (Occur.Must, Query.const_score_query(scope, 0.0))])
        return [searcher.doc(address) for _, address in searcher.search(query, TOP_K).hits]

    def scoped(self, text: str) -> list[Any]:
        from tantivy import Query

        from toolish_rag_tantivy._schema import scalar_terms

        field, term = scalar_terms('tenant', TENANT)
        return self._search(self._one, text, Query.term_query(self._one.schema, field, term))

    def own(self, text: str) -> list[Any]:
        return self._search(self._own, text, None)

    def unscoped(self, text: str) -> list[Any]:
        return self._search(self._one, text, None)


async def bench_tantivy(corpus: Corpus) -> tuple[list[Row], list[str]]:
    from toolish_rag_tantivy import PartitionedTantivyStore, TantivyStore

    one, partitioned = TantivyStore(), PartitionedTantivyStore(partition_key='tenant')
    notes = [
        f'tantivy one index: upsert {await upsert(one, corpus.documents):.1f} s',
        f'tantivy partitioned ({len(set(corpus.tenants.tolist()))} partitions): '
        f'upsert {await upsert(partitioned, corpus.documents):.1f} s',
    ]
    raw = RawTantivy(one, partitioned)
    default, strict = ToolishRag(one, name='bench', max_top_k=50), ToolishRag(partitioned, name='bench', max_top_k=50)
    scope = F.eq('tenant', TENANT)
    scoped_default, scoped_strict = default.with_metadata_filter(scope), strict.with_metadata_filter(scope)
    rows = [
        await compare('tantivy', f'scoped tenant={TENANT!r}', scoped_default, scoped_strict,
                      lambda a: raw.scoped(a['query']), 'one index + tenant term', corpus),
        await compare('tantivy', f'scoped tenant={TENANT!r}', scoped_default, scoped_strict,
                      lambda a: raw.own(a['query']), "tenant's own index", corpus),
        await compare('tantivy', 'unscoped', default, strict, lambda a: raw.unscoped(a['query']), 'one index', corpus),
    ]  # fmt: skip
    return rows, notes


# -- main ---------------------------------------------------------------------------------------


async def run(sizes: list[int], tenants: int, n_queries: int, rounds: int, stores: list[str]) -> None:
    print(
        f'# isolation_bench: text_search p50 / p99 in ms, top_k={TOP_K}, {tenants} tenants, '
        f'{n_queries} queries x {rounds} rounds per row'
    )
    print(f'{cpu_model("unknown CPU")}; {THREAD_NOTE}\n')
    lines = [
        '| corpus | store | search | default p50 / p99 | strict p50 / p99 | strict/default p50 | raw p50 |',
        '|---|---|---|---|---|---|---|',
    ]
    notes: list[str] = []
    for size in sizes:
        start = time.perf_counter()
        corpus = synthetic(size, tenants, n_queries, rounds)
        name = synthetic_name(size)
        notes.append(f'{name}: generated in {time.perf_counter() - start:.1f} s')
        print(f'{name}: {len(corpus.texts)} chunks', flush=True)
        for store in stores:
            rows, store_notes = await (bench_memory(corpus) if store == 'memory' else bench_tantivy(corpus))
            lines += [r.line(name) for r in rows]
            notes += [f'{name}: {n}' for n in store_notes]
            print('\n'.join(r.line(name) for r in rows), flush=True)
    print('\n' + '\n'.join(lines) + '\n')
    print('\n'.join(f'* {n}' for n in notes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--sizes', type=int, nargs='+', default=[5000, 100_000], help='chunks per corpus')
    parser.add_argument('--tenants', type=int, default=10, help='tenant values (tantivy strict: partitions)')
    parser.add_argument('--queries', type=int, default=200, help='text searches per row')
    parser.add_argument('--rounds', type=int, default=3, help='times each query is asked per row')
    parser.add_argument('--stores', nargs='+', choices=['memory', 'tantivy'], default=['memory', 'tantivy'])
    a = parser.parse_args()
    asyncio.run(run(a.sizes, a.tenants, a.queries, a.rounds, a.stores))


if __name__ == '__main__':
    main()
