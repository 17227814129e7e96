"""Which hybrid fusion? nDCG@10 of fusion configurations on SciFact, Cranfield and CISI.

    .venv/bin/python benchmarks/fusion_bench.py [--datasets scifact,cranfield,cisi] [--cache-dir /tmp/emb]

Each corpus goes into an `InMemoryStore` (all-MiniLM-L6-v2, BM25 via bm25s), every judged
query is run once through `Retriever.vector_search` and `Retriever.text_search` for the 200
best hits, and each configuration fuses prefixes of those lists with `toolish_rag.fusion.fuse`
(what `Retriever.hybrid_search` does with ``candidates`` hits per leg; the script checks that
equivalence on a sample of queries). A few fusions that `FusionConfig` does not offer
(min-max, max-normalised convex sums) are computed here for comparison only.

``--cache-dir`` keeps document vectors between runs (outside the repository; iteration only).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pin_threads import set_thread_counts

THREADS = set_thread_counts(2)

from common import (  # noqa: E402
    BeirDataset,
    CachedEmbeddingModel,
    build_documents,
    data_dir,
    hit_doc_ids,
    load_beir,
    ndcg_at_10,
)
from pydantic_ai.embeddings import Embedder  # noqa: E402

from toolish_rag.embedding import resolve_embedder  # noqa: E402
from toolish_rag.fusion import FusionConfig, fuse  # noqa: E402
from toolish_rag.retriever import Retriever  # noqa: E402
from toolish_rag.search import SearchHit  # noqa: E402
from toolish_rag.stores.memory import InMemoryStore  # noqa: E402

SPLITS = {'scifact': 'train', 'cranfield': 'test', 'cisi': 'test', 'anthropic-codebase-rag': 'test'}
DEPTH = 200
Legs = dict[str, tuple[list[SearchHit], list[SearchHit]]]


def embedder(cache_dir: Path | None, batch_size: int) -> Embedder:
    base = resolve_embedder(None)
    settings = {'sentence_transformers_normalize_embeddings': True, 'sentence_transformers_batch_size': batch_size}
    model = base.model if cache_dir is None else CachedEmbeddingModel(base.model, cache_dir)  # type: ignore[arg-type]
    return Embedder(model, settings=settings)  # type: ignore[arg-type]


async def collect(dataset: BeirDataset, emb: Embedder) -> tuple[Retriever, Legs, float]:
    store = InMemoryStore(emb)
    start = time.perf_counter()
    await store.upsert(build_documents(dataset))
    build_s = time.perf_counter() - start
    retriever = Retriever(store)
    legs: Legs = {}
    for qid, text in dataset.queries.items():
        legs[qid] = (await retriever.vector_search(text, DEPTH), await retriever.text_search(text, DEPTH))
    return retriever, legs, build_s


def fused_rankings(
    legs: Legs, fusion: Callable[[list[SearchHit], list[SearchHit]], list[SearchHit]]
) -> dict[str, list[str]]:
    return {qid: hit_doc_ids(fusion(v, t)[:10]) for qid, (v, t) in legs.items()}


def with_config(config: FusionConfig) -> Callable[[list[SearchHit], list[SearchHit]], list[SearchHit]]:
    n = max(10, config.candidates)
    return lambda v, t: fuse(v[:n], t[:n], 10, config)


def _max_norm(hits: Sequence[SearchHit]) -> dict[str, float]:
    top = max((h.score for h in hits), default=0.0)
    return {h.id: h.score / top if top > 0 else 0.0 for h in hits}


def scaled_sum(
    scale_v: Callable[[Sequence[SearchHit]], dict[str, float]],
    scale_t: Callable[[Sequence[SearchHit]], dict[str, float]],
    vector_weight: float,
    candidates: int,
) -> Callable[[list[SearchHit], list[SearchHit]], list[SearchHit]]:
    def run(v: list[SearchHit], t: list[SearchHit]) -> list[SearchHit]:
        v, t = v[:candidates], t[:candidates]
        sv, st = scale_v(v), scale_t(t)
        records = {h.id: h.record for h in [*t, *v]}
        score = {r: vector_weight * sv.get(r, 0.0) + (1 - vector_weight) * st.get(r, 0.0) for r in records}
        order = sorted(score, key=lambda r: (-score[r], r))
        return [SearchHit(records[r], score[r]) for r in order[:10]]

    return run


def _raw(hits: Sequence[SearchHit]) -> dict[str, float]:
    return {h.id: h.score for h in hits}


def configurations() -> list[tuple[str, Callable[[list[SearchHit], list[SearchHit]], list[SearchHit]]]]:
    out: list[tuple[str, Callable[[list[SearchHit], list[SearchHit]], list[SearchHit]]]] = []
    for k in (60, 20, 10):
        for c in (50, 100, 200):
            out.append((f'rrf k={k} c={c}', with_config(FusionConfig(method='rrf', rrf_k=k, candidates=c))))
    for c in (20, 30, 50, 100, 200):
        for w in (0.3, 0.4, 0.5, 0.6, 0.7) if c in (50, 100, 200) else (0.5,):
            cfg = FusionConfig(method='dbsf', vector_weight=w, text_weight=1 - w, candidates=c)
            out.append((f'dbsf v={w} c={c}', with_config(cfg)))
    for c in (50, 100, 200):
        for w in (0.3, 0.4, 0.5, 0.6, 0.7) if c == 100 else (0.5,):
            cfg = FusionConfig(method='minmax', vector_weight=w, text_weight=1 - w, candidates=c)
            out.append((f'minmax v={w} c={c}', with_config(cfg)))
    for c in (50, 100, 200):
        for w in (0.4, 0.45, 0.5, 0.55, 0.6) if c == 100 else (0.45, 0.5):
            cfg = FusionConfig(method='zscore', vector_weight=w, text_weight=1 - w, candidates=c)
            out.append((f'zscore v={w} c={c}', with_config(cfg)))
    for w in (0.5, 0.7, 0.9):
        # Raw cosine plus BM25 divided by the top BM25 score of the query (a query-length-free scale).
        out.append((f'cos+bm25/max v={w} c=100', scaled_sum(_raw, _max_norm, w, 100)))
    return out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--datasets', default=','.join(SPLITS))
    parser.add_argument('--cache-dir', type=Path, default=None, help='keep document vectors here (outside the repo)')
    parser.add_argument('--batch-size', type=int, default=16)
    parser.add_argument('--out', type=Path, default=None, help='also write the markdown table here')
    args = parser.parse_args()
    names = [n for n in args.datasets.split(',') if n]
    if not data_dir().is_dir():
        sys.exit(f'no evaluation data at {data_dir()}')
    print(THREADS, flush=True)
    emb = embedder(args.cache_dir, args.batch_size)
    results: dict[str, dict[str, float]] = {}
    singles: dict[str, dict[str, float]] = {}
    for name in names:
        dataset = load_beir(name, SPLITS[name])
        start = time.perf_counter()
        retriever, legs, build_s = await collect(dataset, emb)
        print(
            f'{name}: {len(dataset.corpus)} docs, {len(dataset.queries)} queries; index {build_s:.1f}s, '
            f'queries {time.perf_counter() - start - build_s:.1f}s',
            flush=True,
        )
        singles[name] = {
            'vector': ndcg_at_10(dataset.qrels, {q: hit_doc_ids(v[:10]) for q, (v, _) in legs.items()}),
            'text': ndcg_at_10(dataset.qrels, {q: hit_doc_ids(t[:10]) for q, (_, t) in legs.items()}),
        }
        # The offline fusion is what Retriever.hybrid_search computes; they can differ only
        # where a leg's cut-off falls among tied scores (the store may keep either tied hit).
        for cfg in (FusionConfig(), FusionConfig(method='rrf'), FusionConfig(method='dbsf', candidates=50)):
            fused = with_config(cfg)
            sample = list(dataset.queries)[:20]
            same = 0
            for qid in sample:
                live = await Retriever(retriever.store, fusion=cfg).hybrid_search(dataset.queries[qid], 10)
                same += [h.id for h in live] == [h.id for h in fused(*legs[qid])]
            print(f'  {cfg.method} c={cfg.candidates}: {same}/{len(sample)} sampled queries identical to hybrid_search')
        for label, fusion in configurations():
            results.setdefault(label, {})[name] = ndcg_at_10(dataset.qrels, fused_rankings(legs, fusion))
    lines = [
        '| configuration | ' + ' | '.join(names) + ' | mean |',
        '|---|' + '---:|' * (len(names) + 1),
    ]
    for single in ('vector', 'text'):
        vals = [singles[n][single] for n in names]
        lines.append(f'| {single} only | ' + ' | '.join(f'{v:.4f}' for v in vals) + f' | {sum(vals) / len(vals):.4f} |')
    for label, per in results.items():
        vals = [per[n] for n in names]
        lines.append(f'| {label} | ' + ' | '.join(f'{v:.4f}' for v in vals) + f' | {sum(vals) / len(vals):.4f} |')
    table = '\n'.join(lines)
    print(table)
    if args.out:
        args.out.write_text(table + '\n', encoding='utf-8')


if __name__ == '__main__':
    asyncio.run(main())
