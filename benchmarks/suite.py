"""The benchmark suite: quality and speed of every store and tool, beside the raw libraries and a peer.

    benchmarks/run                         # everything; rewrites docs/benchmarks.md
    benchmarks/run --quick --out /tmp/b.md # the smoke version: tiny synthetic data, about a minute

One run measures, on the same machine and data:

* **quality** -- every store x tool (`InMemoryStore`, `LanceDBStore`, `TantivyStore`; text,
  vector, hybrid where offered) on SciFact (train), Cranfield, CISI and
  anthropic-codebase-rag through `toolish_rag.evaluation.evaluate_dataset` (the code path of
  ``toolish-rag eval``: `ToolishRag.run_tool`, the agent's tool call), and beside it the raw
  libraries computing the same thing from the same texts and vectors: bm25s (same stop words
  and stemmer), raw tantivy BM25 (same analyzer), raw LanceDB full-text and vector queries,
  exact numpy cosine, plain RRF (k=60) of the raw legs and our default fusion computed by hand;
* **the peer** -- LlamaIndex's BM25 and vector retrievers and its QueryFusionRetriever, each
  wrapped as an agent tool, in its own virtual environment (``benchmarks/peer``);
* **speed** -- each store's benchmark script as a subprocess (its own peak memory): p50/p99 per
  tool at 5k (SciFact) and synthetic 100k / 1M chunks with the raw call timed alternately in
  the same process, filtered search at 1/10/50% selectivity, ingest throughput beside the raw
  embedder, and the import time of ``toolish_rag``.

Document vectors are cached in ``--cache-dir`` (outside the repository) so a second run does
not re-embed; query vectors of the quality runs are cached too (latency is measured by the
speed scripts, which never use the cache for queries).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from pin_threads import set_thread_counts  # noqa: E402

THREADS = set_thread_counts(2)

import numpy as np  # noqa: E402
from common import CachedEmbeddingModel, cpu_model, data_dir, memory_gib  # noqa: E402
from pydantic_ai.embeddings import Embedder  # noqa: E402
from render import render  # noqa: E402
from synthetic_beir import write_synthetic_beir  # noqa: E402

from toolish_rag import ToolishRag  # noqa: E402
from toolish_rag.embedding import HashingEmbeddingModel, resolve_embedder  # noqa: E402
from toolish_rag.evaluation import BeirDataset, beir_documents, evaluate_dataset, load_beir, score_run  # noqa: E402
from toolish_rag.fusion import FusionConfig  # noqa: E402
from toolish_rag.ingest import ingest  # noqa: E402
from toolish_rag.stores import InMemoryStore  # noqa: E402

DATASETS = {
    'scifact': 'train',
    'cranfield': 'test',
    'cisi': 'test',
    'anthropic-codebase-rag': 'test',
    'hotpotqa': 'test',
    'xquad-en': 'test',
    'xquad-de': 'test',
    'xquad-zh': 'test',
}
LANGUAGES = {'xquad-de': 'de', 'xquad-zh': 'zh'}
"""The text analyzer language of a collection (``language=`` of every store); English when not listed."""
TOP_K = 100
PEER_PYTHON = HERE / '.venv-peer' / 'bin' / 'python'
Run = dict[str, dict[str, float]]


def log(message: str) -> None:
    print(f'[{time.strftime("%H:%M:%S")}] {message}', file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- machine


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    from importlib.metadata import PackageNotFoundError, version

    cpu = cpu_model(platform.processor() or platform.machine())
    gib = memory_gib()
    memory = 'unknown' if gib is None else f'{gib:.0f} GiB'
    packages = {}
    for name in (
        'toolish-rag',
        'toolish-rag-lancedb',
        'toolish-rag-tantivy',
        'pydantic-ai-slim',
        'lancedb',
        'tantivy',
        'bm25s',
        'numpy',
        'torch',
        'sentence-transformers',
    ):
        try:
            packages[name] = version(name)
        except PackageNotFoundError:
            packages[name] = 'not installed'
    return {
        'date': datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC'),
        'cpu': cpu,
        'cores': os.cpu_count(),
        'memory': memory,
        'os': platform.platform(),
        'python': platform.python_version(),
        'threads': THREADS,
        'load_average_at_start': ' '.join(f'{x:.2f}' for x in os.getloadavg()),
        'packages': packages,
    }


def import_time(module: str, repeats: int = 5) -> float | None:
    """Median wall time of ``import module`` in a fresh interpreter, in ms."""
    code = f'import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)'
    times = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=False)
        if out.returncode != 0:
            return None
        times.append(float(out.stdout.strip()) * 1000)
    return statistics.median(times)


# --------------------------------------------------------------------------- quality: raw libraries


def texts_of(dataset: BeirDataset) -> tuple[list[str], list[str]]:
    """Corpus ids and the texts every side indexes (title, blank line, text)."""
    ids, texts = [], []
    for entry in dataset.corpus:
        title, body = str(entry.get('title') or ''), str(entry.get('text') or '')
        ids.append(str(entry['_id']))
        texts.append(f'{title}\n\n{body}' if title else body)
    return ids, texts


def top(ids: Sequence[str], scores: np.ndarray[Any, Any], k: int) -> list[tuple[str, float]]:
    k = min(k, len(ids))
    idx = np.argpartition(-scores, k - 1)[:k]
    idx = idx[np.lexsort((idx, -scores[idx]))]
    return [(ids[i], float(scores[i])) for i in idx]


def as_run(rankings: dict[str, list[tuple[str, float]]]) -> Run:
    # Rank-derived scores: trec_eval sorts by score, ties must keep the ranking's order.
    return {q: {d: float(len(r) - i) for i, (d, _) in enumerate(r)} for q, r in rankings.items()}


def rrf(legs: Sequence[list[tuple[str, float]]], k: int = 60, depth: int = TOP_K) -> list[tuple[str, float]]:
    fused: dict[str, float] = {}
    for leg in legs:
        for rank, (doc, _) in enumerate(leg, start=1):
            fused[doc] = fused.get(doc, 0.0) + 1.0 / (k + rank)
    return sorted(fused.items(), key=lambda x: (-x[1], x[0]))[:depth]


def standard_scores(
    vector: list[tuple[str, float]], text: list[tuple[str, float]], fusion: FusionConfig, depth: int = TOP_K
) -> list[tuple[str, float]]:
    """The default fusion written out by hand: per-list standard scores, -3 for a missing hit, weighted sum."""

    def z(leg: list[tuple[str, float]]) -> dict[str, float]:
        if not leg:
            return {}
        scores = np.array([s for _, s in leg])
        mean, std = float(scores.mean()), float(scores.std())
        return {d: (s - mean) / std if std else 0.0 for d, s in leg}

    v, t = z(vector[: fusion.candidates]), z(text[: fusion.candidates])
    wv, wt = fusion.vector_weight, fusion.text_weight
    fused = {d: wv * v.get(d, -3.0) + wt * t.get(d, -3.0) for d in {*v, *t}}
    return sorted(fused.items(), key=lambda x: (-x[1], x[0]))[:depth]


async def raw_quality(
    dataset: BeirDataset, embedder: Embedder, fusion: FusionConfig, language: str | None = None
) -> dict[str, dict[str, float]]:
    """bm25s, exact numpy cosine, RRF and our default fusion by hand, tantivy BM25, LanceDB FTS/vector.

    The bm25s, tantivy and LanceDB figures use the libraries' own English analysis, what every store
    did before ``language=`` existed: on a non-English collection they are the "before" figures. With
    a ``language``, bm25s also indexes the tokens of ``toolish_rag.analysis`` for that language (what
    the stores search with), as ``bm25s (toolish_rag analyzer)``.
    """
    import bm25s
    import Stemmer

    ids, texts = texts_of(dataset)
    queries = dataset.judged_queries
    doc_vecs = np.asarray((await embedder.embed_documents(texts)).embeddings, dtype=np.float32)
    query_vecs = np.asarray((await embedder.embed_query([q for _, q in queries])).embeddings, dtype=np.float32)
    doc_vecs /= np.linalg.norm(doc_vecs, axis=1, keepdims=True).clip(1e-12)
    query_vecs /= np.linalg.norm(query_vecs, axis=1, keepdims=True).clip(1e-12)

    stemmer = Stemmer.Stemmer('english')
    bm25 = bm25s.BM25()
    bm25.index(bm25s.tokenize(texts, stopwords='en', stemmer=stemmer, show_progress=False), show_progress=False)

    vector: dict[str, list[tuple[str, float]]] = {}
    text: dict[str, list[tuple[str, float]]] = {}
    depth = max(TOP_K, fusion.candidates)
    for (qid, query), qvec in zip(queries, query_vecs, strict=True):
        vector[qid] = top(ids, doc_vecs @ qvec, depth)
        tokens = bm25s.tokenize([query], stopwords='en', stemmer=stemmer, show_progress=False, return_ids=False)[0]
        scores = bm25.get_scores(tokens) if tokens else np.zeros(len(ids))
        text[qid] = [(d, s) for d, s in top(ids, np.asarray(scores, dtype=np.float64), depth) if s > 0]
    analyzed: dict[str, dict[str, float]] = {}
    if language is not None:
        from toolish_rag.analysis import analyzer_for

        analyzer = analyzer_for(language)
        bm25_analyzed = bm25s.BM25()
        bm25_analyzed.index(analyzer.tokenize(texts), show_progress=False)
        run_analyzed: dict[str, list[tuple[str, float]]] = {}
        for qid, query in queries:
            words = analyzer.tokens(query)
            scores = bm25_analyzed.get_scores(words) if words else np.zeros(len(ids))
            ranked = top(ids, np.asarray(scores, dtype=np.float64), TOP_K)
            run_analyzed[qid] = [(d, s) for d, s in ranked if s > 0]
        analyzed['bm25s (toolish_rag analyzer)'] = score_run(as_run(run_analyzed), dataset.qrels)
    out = {
        'bm25s': score_run(as_run({q: r[:TOP_K] for q, r in text.items()}), dataset.qrels),
        'numpy cosine': score_run(as_run({q: r[:TOP_K] for q, r in vector.items()}), dataset.qrels),
        'RRF k=60 (bm25s + cosine)': score_run(
            as_run({q: rrf([vector[q][:TOP_K], text[q][:TOP_K]]) for q in text}), dataset.qrels
        ),
        'standard scores (bm25s + cosine)': score_run(
            as_run({q: standard_scores(vector[q], text[q], fusion) for q in text}), dataset.qrels
        ),
        **analyzed,
    }
    out['tantivy BM25'] = raw_tantivy(dataset, ids, texts)
    out.update(raw_lancedb(dataset, ids, texts, doc_vecs, query_vecs, fusion))
    return out


def raw_tantivy(dataset: BeirDataset, ids: list[str], texts: list[str]) -> dict[str, float]:
    """tantivy-py alone: the same analyzer as `TantivyStore`'s default, a lenient parse of each query."""
    import tantivy

    from toolish_rag_tantivy._analyzers import build_analyzer

    name = 'subword_stem'
    sb = tantivy.SchemaBuilder()
    sb.add_text_field('id', stored=True, tokenizer_name='raw')
    sb.add_text_field('text', stored=False, tokenizer_name=name)
    index = tantivy.Index(sb.build())
    index.register_tokenizer(name, build_analyzer(name))
    writer = index.writer(heap_size=128_000_000, num_threads=1)
    for doc_id, text in zip(ids, texts, strict=True):
        writer.add_document(tantivy.Document(id=doc_id, text=text))
    writer.commit()
    index.reload()
    searcher = index.searcher()
    run: Run = {}
    for qid, query in dataset.judged_queries:
        parsed, _errors = index.parse_query_lenient(query, ['text'])
        hits = searcher.search(parsed, TOP_K).hits
        run[qid] = {searcher.doc(addr)['id'][0]: float(TOP_K - i) for i, (_, addr) in enumerate(hits)}
    return score_run(run, dataset.qrels)


def raw_lancedb(
    dataset: BeirDataset,
    ids: list[str],
    texts: list[str],
    doc_vecs: np.ndarray[Any, Any],
    query_vecs: np.ndarray[Any, Any],
    fusion: FusionConfig,
) -> dict[str, dict[str, float]]:
    """LanceDB alone: its native full-text index (same options as the store), exact cosine search, both fused."""
    import lancedb
    import pyarrow as pa
    from lancedb.index import FTS

    depth = max(TOP_K, fusion.candidates)
    text: dict[str, list[tuple[str, float]]] = {}
    vector: dict[str, list[tuple[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        db = lancedb.connect(tmp)
        vectors = pa.FixedSizeListArray.from_arrays(pa.array(doc_vecs.ravel(), pa.float32()), doc_vecs.shape[1])
        table = db.create_table('raw', pa.table({'id': ids, 'text': texts, 'vector': vectors}))
        table.create_index('text', config=FTS(with_position=True, remove_stop_words=False))
        for (qid, query), qvec in zip(dataset.judged_queries, query_vecs, strict=True):
            rows = table.search(query, query_type='fts').select(['id', '_score']).limit(depth).to_list()
            text[qid] = [(r['id'], float(r['_score'])) for r in rows]
            search = table.search(qvec, query_type='vector').metric('cosine')
            rows = search.select(['id', '_distance']).limit(depth).to_list()
            vector[qid] = [(r['id'], 1.0 - float(r['_distance'])) for r in rows]
    return {
        'LanceDB FTS': score_run(as_run({q: r[:TOP_K] for q, r in text.items()}), dataset.qrels),
        'LanceDB vector (exact)': score_run(as_run({q: r[:TOP_K] for q, r in vector.items()}), dataset.qrels),
        'standard scores (LanceDB FTS + vector)': score_run(
            as_run({q: standard_scores(vector[q], text[q], fusion) for q in text}), dataset.qrels
        ),
    }


# --------------------------------------------------------------------------- quality: our stores


SINGLE_VECTOR = 'memory-single-vector'
"""An `InMemoryStore` with ``windows=None`` (one vector per chunk): what multi-vector chunks add."""


def make_stores(kinds: Sequence[str], embedder: Embedder, root: Path, language: str | None = None) -> dict[str, Any]:
    stores: dict[str, Any] = {}
    for kind in kinds:
        if kind == 'memory':
            stores[kind] = InMemoryStore(embedder, language=language)
            stores[SINGLE_VECTOR] = InMemoryStore(embedder, language=language, windows=None)
        elif kind == 'lancedb':
            from toolish_rag_lancedb import LanceDBStore

            stores[kind] = LanceDBStore(root / 'lancedb', embedder=embedder, language=language)
        elif kind == 'tantivy':
            from toolish_rag_tantivy import TantivyStore

            stores[kind] = TantivyStore(root / 'tantivy', language=language)
        else:
            raise SystemExit(f'unknown store {kind!r}')
    return stores


async def store_quality(
    dataset: BeirDataset, embedder: Embedder, kinds: Sequence[str], fusion: FusionConfig, language: str | None = None
) -> dict[str, dict[str, dict[str, float]]]:
    out: dict[str, dict[str, dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for kind, store in make_stores(kinds, embedder, Path(tmp), language).items():
            start = time.perf_counter()
            report = await ingest(store, beir_documents(dataset), progress=False)
            if report.failed:
                raise SystemExit(f'{kind}: {len(report.failed)} corpus entries failed to index')
            longest = max(len(q) for _, q in dataset.judged_queries)  # some collections' queries are paragraphs
            rag: ToolishRag[Any] = ToolishRag(
                store, name='kb', max_top_k=TOP_K, fusion=fusion, max_query_chars=max(2000, longest)
            )
            offered = [n.removeprefix('kb_').removesuffix('_search') for n in rag.tool_names]
            tools = [t for t in ('text', 'vector', 'hybrid') if t in offered and (kind != SINGLE_VECTOR or t != 'text')]
            out[kind] = await evaluate_dataset(rag, dataset, tools, top_k=TOP_K)
            figures = ', '.join(f'{t} {m["ndcg@10"]:.4f}' for t, m in out[kind].items())
            log(f'  {kind}: {figures} ({time.perf_counter() - start:.0f} s)')
    return out


def run_peer(dataset_dir: Path, split: str, cache_dir: Path, latency_queries: int) -> dict[str, Any] | None:
    if not PEER_PYTHON.exists():
        log('  peer: benchmarks/.venv-peer missing (benchmarks/peer/setup installs it); no peer column')
        return None
    with tempfile.NamedTemporaryFile(suffix='.json') as f:
        cmd = [
            str(PEER_PYTHON),
            str(HERE / 'peer' / 'llamaindex_bench.py'),
            str(dataset_dir),
            '--split',
            split,
            '--cache-dir',
            str(cache_dir / 'peer'),
            '--latency-queries',
            str(latency_queries),
            '--json-out',
            f.name,
        ]
        env = {k: v for k, v in os.environ.items() if k != 'VIRTUAL_ENV'}
        done = subprocess.run(cmd, env=env, check=False, stdout=subprocess.DEVNULL)
        if done.returncode != 0:
            raise SystemExit(f'peer benchmark failed ({done.returncode}): {" ".join(cmd)}')
        result: dict[str, Any] = json.loads(Path(f.name).read_text())
    best = result['best_fusion']
    log(f'  peer: {best} {result["tools"][best]["ndcg@10"]:.4f}')
    return result


# --------------------------------------------------------------------------- speed


def run_speed(script: str, args: Sequence[str]) -> dict[str, Any] | None:
    with tempfile.NamedTemporaryFile(suffix='.json') as f:
        cmd = [sys.executable, str(HERE / script), *args, '--json-out', f.name]
        log(f'speed: {" ".join(cmd[1:])}')
        start = time.perf_counter()
        done = subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL)
        if done.returncode != 0:
            raise SystemExit(f'{script} failed ({done.returncode})')
        result: dict[str, Any] = json.loads(Path(f.name).read_text())
        result['wall_seconds'] = time.perf_counter() - start
    return result


# --------------------------------------------------------------------------- main


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--quick', action='store_true', help='smoke run: tiny synthetic data, hashing embedder')
    parser.add_argument('--out', type=Path, default=ROOT / 'docs' / 'benchmarks.md')
    parser.add_argument('--json', type=Path, default=None, help='also write every figure as JSON here')
    parser.add_argument('--datasets', default=','.join(DATASETS))
    parser.add_argument('--stores', default='memory,lancedb,tantivy')
    parser.add_argument('--sizes', type=int, nargs='*', default=[100_000, 1_000_000], help='synthetic speed sizes')
    parser.add_argument('--no-peer', action='store_true')
    parser.add_argument('--no-speed', action='store_true')
    parser.add_argument('--no-quality', action='store_true')
    parser.add_argument('--cache-dir', type=Path, default=Path.home() / '.cache' / 'toolish-rag' / 'bench')
    args = parser.parse_args()
    kinds = [k for k in args.stores.split(',') if k]
    results: dict[str, Any] = {'machine': machine(), 'quick': args.quick, 'quality': {}, 'speed': {}}
    log(THREADS)
    results['import_ms'] = {m: import_time(m, 3 if args.quick else 5) for m in ('toolish_rag', *_store_modules(kinds))}
    fusion = FusionConfig()
    results['fusion'] = repr(fusion)
    tmp = Path(tempfile.mkdtemp(prefix='toolish-bench-'))
    try:
        if args.quick:
            embedder = Embedder(HashingEmbeddingModel(384))
            datasets = {'synthetic': (write_synthetic_beir(tmp / 'synthetic'), 'test')}
        else:
            if not data_dir().is_dir():
                raise SystemExit(f'the evaluation collections are not at {data_dir()} (see docs/benchmarks.md)')
            base = resolve_embedder(None)
            cached = CachedEmbeddingModel(base.model, args.cache_dir / 'vectors')  # type: ignore[arg-type]
            settings = {'sentence_transformers_normalize_embeddings': True}  # what resolve_embedder sets
            embedder = Embedder(cached, settings=settings)  # type: ignore[arg-type]
            datasets = {n: (data_dir() / n, DATASETS[n]) for n in args.datasets.split(',') if n}
        if not args.no_quality:
            for name, (folder, split) in datasets.items():
                dataset = load_beir(folder, split)
                log(f'quality: {name} ({split}, {len(dataset.corpus)} docs, {len(dataset.judged_queries)} queries)')
                entry: dict[str, Any] = {'split': split, 'docs': len(dataset.corpus)}
                entry['queries'] = len(dataset.judged_queries)
                language = LANGUAGES.get(name)
                entry['language'] = language or 'en'
                entry['stores'] = await store_quality(dataset, embedder, kinds, fusion, language)
                entry['raw'] = await raw_quality(dataset, embedder, fusion, language)
                if not args.no_peer:
                    entry['peer'] = run_peer(folder, split, args.cache_dir, 20 if args.quick else 200)
                results['quality'][name] = entry
        if not args.no_speed:
            cache = ['--cache-dir', str((tmp if args.quick else args.cache_dir) / 'vectors')]
            sizes = [str(s) for s in ([2_000] if args.quick else args.sizes)]
            for kind in kinds:
                if kind == 'memory':
                    extra = ['--quick'] if args.quick else ['--sizes', *sizes, *cache, '--no-write']
                    results['speed'][kind] = run_speed('core_bench.py', extra)
                elif kind == 'tantivy':
                    extra = ['--quick'] if args.quick else ['--sizes', *sizes]
                    results['speed'][kind] = run_speed('tantivy_bench.py', extra)
                elif kind == 'lancedb':
                    extra = ['--sizes', *sizes, *cache]
                    if args.quick:
                        extra += ['--no-scifact', '-n', '20']
                    results['speed'][kind] = run_speed('lancedb_bench.py', extra)
            ingest_args = ['--limit', '50'] if args.quick else ['--limit', '1000']
            if args.quick:
                ingest_args += ['--data', str(datasets['synthetic'][0]), '--embedder', 'hashing']
            results['ingest'] = run_speed('ingest_bench.py', ingest_args)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    results['machine']['load_average_at_end'] = ' '.join(f'{x:.2f}' for x in os.getloadavg())
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding='utf-8')
    args.out.write_text(render(results), encoding='utf-8')
    log(f'wrote {args.out}')


def _store_modules(kinds: Sequence[str]) -> list[str]:
    return [f'toolish_rag_{k}' for k in kinds if k != 'memory']


if __name__ == '__main__':
    asyncio.run(main())
