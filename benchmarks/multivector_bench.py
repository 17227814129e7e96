"""Multi-vector chunks (MaxP windows): vector-tool latency and SciFact quality, single vs multi-vector.

    .venv/bin/python benchmarks/multivector_bench.py --cache-dir /tmp/emb             # latency, 5k + 100k
    .venv/bin/python benchmarks/multivector_bench.py --cache-dir /tmp/emb --quality   # + SciFact train nDCG@10
    .venv/bin/python benchmarks/multivector_bench.py --sizes 20000 --no-scifact        # quick

Latency: the vector tool (`ToolishRag.run_tool('vector_search', ...)`, top 10, end to end) of
`InMemoryStore` and `LanceDBStore`, each single-vector (``windows=None``) and multi-vector, beside
the raw library on the same data in the same run, alternating call by call (`common.alternate`):

* memory: numpy ``matrix @ q`` and top-k; multi-vector adds ``windows @ q``, a segment
  maximum (``np.maximum.reduceat``) and its mean with the whole text's score (the default
  ``scoring``), so both sides rank alike;
* LanceDB: ``nearest_to(q).column('vector' | 'windows').distance_type('cosine')`` on the store's
  own table (with the store's ``nprobes``/``refine_factor`` once an ANN index exists). On the
  ``windows`` column that is LanceDB's native MaxP (best window); the store ranks by the default
  mean, fetching MaxP candidates and their ``vector`` (a few more rows than ``k``), so the ratio
  includes that second stage and "top-10 agree" is below 1 where the two scorings differ.

Both sides embed the query with the same embedder (from the cache after the first round), so the
ratio isolates the store layer. Corpora: SciFact (5,183 abstracts as one chunk each, real
all-MiniLM-L6-v2 vectors through `common.CachedEmbeddingModel`; windows as the embedder reads,
the default) and a synthetic corpus of ``--sizes`` chunks (`common.BagOfRandomVectors`, Zipf
pseudo-words; 30% of the chunks 150 words long, the rest 60, windows of 96 words with 16 of
overlap, so about as many window rows per chunk as SciFact has).

``--quality``: SciFact train nDCG@10 of the vector and hybrid tools of `InMemoryStore` without
windows and with each window config of ``QUALITY_CONFIGS``, through
`toolish_rag.evaluation.evaluate_dataset` (what ``toolish-rag eval`` runs), then LanceDB's vector
tool with the default windows (``--configs`` picks some of them).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pin_threads import set_thread_counts

THREADS = 2
THREAD_NOTE = set_thread_counts(THREADS, torch=True)

import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402
from common import BagOfRandomVectors, CachedEmbeddingModel, PseudoWords, alternate, pct  # noqa: E402
from pydantic_ai.embeddings import Embedder, EmbeddingModel  # noqa: E402

from toolish_rag import DocumentBuilder, EmbeddingWindows  # noqa: E402
from toolish_rag.content import Document  # noqa: E402
from toolish_rag.embedding import resolve_embedder  # noqa: E402
from toolish_rag.evaluation import beir_documents, evaluate_dataset, load_beir  # noqa: E402
from toolish_rag.stores import InMemoryStore  # noqa: E402
from toolish_rag.toolset import ToolishRag  # noqa: E402
from toolish_rag_lancedb import LanceDBStore  # noqa: E402

TOP_K = 10
QUERIES = 100
QUALITY_CONFIGS: dict[str, tuple[str, EmbeddingWindows | None]] = {
    'none': ('single vector (windows=None)', None),
    '254': (
        'texts over 254 word pieces: windows of 254, overlap 32, best window',
        EmbeddingWindows(window_tokens=None, scoring='best'),
    ),
    '128-all': (
        'texts over 128 word pieces: windows of 128, overlap 32, best window',
        EmbeddingWindows(max_tokens=128, scoring='best'),
    ),
    'default-best': (
        'texts over 254 word pieces: windows of 128, overlap 32, best window',
        EmbeddingWindows(scoring='best'),
    ),
    'default': (
        'texts over 254 word pieces: windows of 128, overlap 32, mean of whole text and best window (default)',
        EmbeddingWindows(),
    ),
}
SYNTHETIC_WINDOWS = EmbeddingWindows(max_tokens=96, overlap=16)


def minilm(cache_dir: Path) -> Embedder:
    base = resolve_embedder(None)
    assert isinstance(base.model, EmbeddingModel)
    return Embedder(CachedEmbeddingModel(base.model, cache_dir), settings=base._settings)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Corpus:
    name: str
    documents: list[Document]
    queries: list[str]
    embedder: Embedder
    windows: EmbeddingWindows


def scifact(cache_dir: Path, data: Path) -> Corpus:
    dataset = load_beir(data / 'scifact', 'train')
    queries = [q for _, q in dataset.judged_queries][:QUERIES]
    return Corpus('SciFact 5k', beir_documents(dataset), queries, minilm(cache_dir), EmbeddingWindows())


def synthetic(size: int, seed: int = 1) -> Corpus:
    rng = random.Random(seed)
    words = PseudoWords.draw(rng)
    documents = []
    for d in range((size + 9) // 10):
        b = DocumentBuilder(f'synthetic://{d}', f'Manual {d}', metadata={'bucket': d % 100}, indexed_text=None)
        for _ in range(10):
            b.add_chunk(None, words.chunk(rng, 150 if rng.random() < 0.3 else 60))
        documents.append(b.build())
    queries = [words.query(rng) for _ in range(QUERIES)]
    label = f'synthetic {size // 1000}k' if size >= 1000 else f'synthetic {size}'
    return Corpus(label, documents, queries, Embedder(BagOfRandomVectors()), SYNTHETIC_WINDOWS)


@dataclass(frozen=True)
class Row:
    corpus: str
    store: str
    mode: str
    rows_per_chunk: float
    tool_ms: list[float]
    raw_ms: list[float]
    raw: str
    agree: float

    def cells(self) -> str:
        t50, t99 = pct(self.tool_ms, 50), pct(self.tool_ms, 99)
        r50, r99 = pct(self.raw_ms, 50), pct(self.raw_ms, 99)
        return (
            f'| {self.corpus} | {self.store} | {self.mode} | {self.rows_per_chunk:.2f} | {t50:.2f} / {t99:.2f} | '
            f'{r50:.2f} / {r99:.2f} | {t50 / r50:.2f}x | {self.agree:.0%} | {self.raw} |'
        )


def _top(scores: npt.NDArray[np.float32], k: int) -> list[int]:
    part = np.argpartition(-scores, k - 1)[:k]
    return [int(i) for i in part[np.argsort(-scores[part], kind='stable')]]


async def _query_vector(embedder: Embedder, query: str) -> npt.NDArray[np.float32]:
    q = np.asarray((await embedder.embed_query(query)).embeddings[0], dtype=np.float32)
    return q / (np.linalg.norm(q) or 1.0)


def memory_raw(store: InMemoryStore, embedder: Embedder, multi: bool) -> Callable[[dict[str, Any]], Awaitable[Any]]:
    snap = store._snapshot
    matrix = snap.vectors
    ids = [r.id for r in snap.records]
    windows = snap.windows
    owners = np.flatnonzero(windows.counts > 0)
    starts = np.concatenate([[0], np.cumsum(np.maximum(windows.counts, 0))])[owners].astype(np.intp)

    async def call(a: dict[str, Any]) -> list[str]:
        q = await _query_vector(embedder, a['query'])
        scores = matrix @ q
        if multi and windows.extra:
            best = np.maximum(scores[owners], np.maximum.reduceat(windows.vectors @ q, starts))
            scores[owners] = (scores[owners] + best) / 2  # the default scoring: whole text and best window
        return [ids[i] for i in _top(scores, a['top_k'])]

    return call


def lance_raw(
    store: LanceDBStore, table: Any, embedder: Embedder, column: str
) -> Callable[[dict[str, Any]], Awaitable[Any]]:
    ann = store._tables.has_ann

    async def call(a: dict[str, Any]) -> list[str]:
        q = await _query_vector(embedder, a['query'])
        query = table.query().nearest_to(q).column(column).distance_type('cosine').limit(a['top_k'])
        if ann:
            query = query.nprobes(store.nprobes).refine_factor(store.refine_factor)
        rows = await query.select(['id', '_distance']).to_arrow()
        return [str(i) for i in rows.column('id').to_pylist()]

    return call


async def _ingest(store: Any, documents: list[Document]) -> float:
    start = time.perf_counter()
    for i in range(0, len(documents), 2000):
        await store.upsert(documents[i : i + 2000])
    if isinstance(store, LanceDBStore):
        await store.optimize()
    return time.perf_counter() - start


async def bench(corpus: Corpus, workdir: Path, rounds: int) -> list[Row]:
    rows: list[Row] = []
    args = [{'query': q, 'top_k': TOP_K} for q in corpus.queries]
    chunks = sum(len(d.chunks) for d in corpus.documents)
    for store_name in ('memory', 'lancedb'):
        for mode, config in (('single', None), ('multi', corpus.windows)):
            if store_name == 'memory':
                store: Any = InMemoryStore(corpus.embedder, windows=config)
            else:
                store = LanceDBStore(workdir / f'{corpus.name}-{mode}', embedder=corpus.embedder, windows=config)
            took = await _ingest(store, corpus.documents)
            if store_name == 'memory':
                rows_per_chunk = (chunks + store._snapshot.windows.extra) / chunks
                raw = memory_raw(store, corpus.embedder, multi=config is not None)
                raw_note = 'numpy matmul + top-k' + (' + windows matmul + reduceat max, mean' if config else '')
            else:
                table = await store.records_table()
                column = store._tables.vector_column
                counts = (await table.query().select([column]).to_arrow()).column(column)
                rows_per_chunk = 1.0 if column == 'vector' else float(np.mean([len(c) for c in counts.to_pylist()]))
                raw = lance_raw(store, table, corpus.embedder, column)
                raw_note = f'nearest_to(q).column({column!r}) cosine' + (' ANN' if store._tables.has_ann else ' flat')
            rag: ToolishRag[None] = ToolishRag(store)

            async def tool(a: dict[str, Any], rag: ToolishRag[None] = rag) -> list[str]:
                result = await rag.run_tool('vector_search', a)
                return [h.record.id for h in result.metadata['hits']]

            await alternate(tool, raw, args[:5])  # warm up: model, caches, table handles
            got = await alternate(tool, raw, args, rounds)
            agree = float(
                np.mean([len(set(t) & set(r)) / max(1, len(r)) for t, r in zip(got.tool_out, got.raw_out, strict=True)])
            )
            print(f'  {corpus.name} {store_name} {mode}: ingest {took:.1f} s', file=sys.stderr)
            rows.append(Row(corpus.name, store_name, mode, rows_per_chunk, got.tool_ms, got.raw_ms, raw_note, agree))
            if isinstance(store, LanceDBStore):
                await store.aclose()
    return rows


async def quality(cache_dir: Path, data: Path, configs: list[str], lance_too: bool) -> list[str]:
    dataset = load_beir(data / 'scifact', 'train')
    documents = beir_documents(dataset)
    embedder = minilm(cache_dir)
    lines = ['| store | config | rows/chunk | vector nDCG@10 | hybrid nDCG@10 |', '|---|---|---|---|---|']
    for label, config in (QUALITY_CONFIGS[c] for c in configs):
        store = InMemoryStore(embedder, windows=config)
        start = time.perf_counter()
        await store.upsert(documents)
        print(f'  quality {label}: ingest {time.perf_counter() - start:.0f} s', file=sys.stderr)
        chunks = len(store)
        rag: ToolishRag[None] = ToolishRag(store, max_top_k=100)
        figures = await evaluate_dataset(rag, dataset, ['vector', 'hybrid'])
        per = (chunks + store._snapshot.windows.extra) / chunks
        lines.append(
            f'| memory | {label} | {per:.2f} | {figures["vector"]["ndcg@10"]:.4f} | {figures["hybrid"]["ndcg@10"]:.4f} |'
        )
        print(lines[-1], file=sys.stderr)
    if not lance_too:
        return lines
    with tempfile.TemporaryDirectory() as tmp:
        lance = LanceDBStore(Path(tmp) / 'kb', embedder=embedder)
        await _ingest(lance, documents)
        rag = ToolishRag(lance, max_top_k=100)
        figures = await evaluate_dataset(rag, dataset, ['vector'])
        lines.append(f'| lancedb | default windows | — | {figures["vector"]["ndcg@10"]:.4f} | — |')
        await lance.aclose()
    return lines


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--cache-dir', type=Path, default=Path(tempfile.gettempdir()) / 'toolish-rag-emb')
    parser.add_argument('--data', type=Path, default=Path(__file__).resolve().parents[2] / 'shared' / 'data')
    parser.add_argument('--sizes', type=int, nargs='*', default=[100_000])
    parser.add_argument('--rounds', type=int, default=2)
    parser.add_argument('--no-scifact', action='store_true')
    parser.add_argument('--no-latency', action='store_true')
    parser.add_argument('--quality', action='store_true')
    parser.add_argument('--configs', nargs='*', default=list(QUALITY_CONFIGS), choices=list(QUALITY_CONFIGS))
    parser.add_argument('--no-lancedb-quality', action='store_true')
    args = parser.parse_args()
    print(THREAD_NOTE)
    if not args.no_latency:
        corpora: list[Callable[[], Corpus]] = []
        if not args.no_scifact:
            corpora.append(lambda: scifact(args.cache_dir, args.data))
        corpora.extend((lambda s=s: synthetic(s)) for s in args.sizes)  # type: ignore[misc]
        print(f'\nvector tool, top {TOP_K}, {QUERIES} queries x {args.rounds} rounds; p50 / p99 ms\n')
        header = '| corpus | store | vectors | rows/chunk | tool p50 / p99 | raw p50 / p99 | tool/raw | top-10 agree | raw call |'
        print(header)
        print('|---|---|---|---|---|---|---|---|---|')
        with tempfile.TemporaryDirectory() as tmp:
            for make in corpora:
                for row in await bench(make(), Path(tmp), args.rounds):
                    print(row.cells(), flush=True)
    if args.quality:
        print('\nSciFact train (809 judged queries), nDCG@10 through the tools\n')
        for line in await quality(args.cache_dir, args.data, args.configs, not args.no_lancedb_quality):
            print(line, flush=True)


if __name__ == '__main__':
    asyncio.run(main())
