"""Shared helpers for the benchmarks and quality tests: BEIR data, documents, nDCG.

* `data_dir` / `load_beir` read a BEIR-layout collection from ``../shared/data`` (never
  copied into the repository).
* `build_documents` turns each corpus entry into one `Document` with one chunk whose
  indexed text *and* source text are ``title + "\\n\\n" + text`` (built with
  `DocumentBuilder(indexed_text=None)` and the text passed explicitly, so the builder adds
  no heading of its own).
* `evaluate` runs every judged query through a `Retriever` (the code path the agent's
  tools use) and `ndcg_at_10` scores the run with ``pytrec-eval-terrier`` (trec_eval's
  nDCG, linear gains), averaged over *all* judged queries: a query with no hits scores 0.
* `reference_ndcg` is a small pure-Python nDCG used to cross-check pytrec_eval.
* `CachedEmbeddingModel` is for iterating on benchmarks only (a cache directory outside
  the repository); tests never use it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic_ai.embeddings import EmbeddingModel, EmbeddingResult, EmbeddingSettings
from pydantic_ai.embeddings.result import EmbedInputType

from toolish_rag.builder import DocumentBuilder
from toolish_rag.content import Document
from toolish_rag.retriever import Retriever
from toolish_rag.search import SearchHit

__all__ = [
    'BeirDataset',
    'CachedEmbeddingModel',
    'Qrels',
    'Run',
    'build_documents',
    'chunk_text',
    'data_dir',
    'evaluate',
    'hit_doc_ids',
    'load_beir',
    'peak_rss_mib',
    'ndcg_at_10',
    'ranking_to_run',
    'reference_ndcg',
    'set_thread_counts',
]

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]
Mode = Literal['vector', 'text', 'hybrid']


def set_thread_counts(n: int, *, blas: int = 1, torch: bool = True) -> str:
    """Pin thread pools: torch/OpenMP to ``n``, numpy's BLAS to ``blas``; returns a line saying so.

    BLAS gets one thread by default: numpy's matrix-vector products here are small, and in a
    standalone check an OpenBLAS pool at 2 threads next to torch's OpenMP pool on two cores
    made each MiniLM query embedding about 7x slower (107 ms instead of 15 ms).
    The environment variables only take effect if set before numpy/torch load their
    libraries, so call this first thing in a script. ``torch=False`` leaves torch unimported
    (for runs that use no neural model).
    """
    os.environ['OMP_NUM_THREADS'] = str(n)
    for var in ('OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS', 'NUMEXPR_NUM_THREADS'):
        os.environ[var] = str(blas)
    os.environ.setdefault('TOKENIZERS_PARALLELISM', 'false')
    # What toolish_rag.embedding.prefer_passive_openmp does for users; set here because torch
    # is imported below, before any embedder is resolved.
    os.environ.setdefault('OMP_WAIT_POLICY', 'PASSIVE')
    note = (
        f'threads: OMP_NUM_THREADS={n}, OMP_WAIT_POLICY={os.environ["OMP_WAIT_POLICY"]}, '
        f'OPENBLAS/MKL/NUMEXPR_NUM_THREADS={blas}, TOKENIZERS_PARALLELISM={os.environ["TOKENIZERS_PARALLELISM"]}'
    )
    if torch:
        import torch as _torch

        _torch.set_num_threads(n)
        note += f', torch.set_num_threads({n}) (torch reports {_torch.get_num_threads()})'
    return note


def peak_rss_mib() -> float:
    """This process's peak resident memory in MiB.

    Reads ``VmHWM`` (reset by ``exec``): ``ru_maxrss`` is kept across fork and exec on Linux,
    so a benchmark started by the suite would report the suite's own peak.
    """
    try:
        for line in Path('/proc/self/status').read_text().splitlines():
            if line.startswith('VmHWM:'):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def data_dir() -> Path:
    """``../shared/data`` next to the repository root (may not exist)."""
    return (Path(__file__).resolve().parents[1] / '..' / 'shared' / 'data').resolve()


@dataclass(frozen=True)
class BeirDataset:
    name: str
    corpus: dict[str, tuple[str, str]]
    """corpus id -> (title, text)"""
    queries: dict[str, str]
    """Only the queries that have judgments."""
    qrels: Qrels


def load_beir(name: str, split: str, root: Path | None = None) -> BeirDataset:
    """Read ``<root>/<name>`` (BEIR layout); keeps only judged queries and positive judgments."""
    base = (root or data_dir()) / name
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
    return BeirDataset(name, corpus, queries, qrels)


def chunk_text(title: str, text: str) -> str:
    """What is indexed for a corpus entry: the title, a blank line, the text."""
    return f'{title}\n\n{text}' if title else text


def build_documents(dataset: BeirDataset) -> list[Document]:
    """One `Document` per corpus entry, one chunk each; the corpus id is the document id."""
    documents: list[Document] = []
    for doc_id, (title, text) in dataset.corpus.items():
        builder = DocumentBuilder(f'beir://{dataset.name}/{doc_id}', title, id=doc_id, indexed_text=None)
        full = chunk_text(title, text)
        builder.add_chunk(None, full, text=full)
        documents.append(builder.build())
    return documents


def ranking_to_run(rankings: Mapping[str, Sequence[str]]) -> Run:
    """Turn ranked id lists into a trec run whose scores keep exactly that order.

    trec_eval sorts by score and breaks ties by document id, so the raw scores of tied
    hits could reorder them; rank-derived scores evaluate the ranking the tool returned.
    """
    return {qid: {doc: float(len(docs) - i) for i, doc in enumerate(docs)} for qid, docs in rankings.items()}


def ndcg_at_10(qrels: Qrels, rankings: Mapping[str, Sequence[str]]) -> float:
    """Mean nDCG@10 (pytrec-eval-terrier) over every judged query; unanswered queries count 0."""
    import pytrec_eval

    run = {q: r for q, r in ranking_to_run(rankings).items() if r and q in qrels}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {'ndcg_cut.10'})
    per_query = evaluator.evaluate(run)
    return sum(v['ndcg_cut_10'] for v in per_query.values()) / len(qrels)


def reference_ndcg(qrels: Qrels, rankings: Mapping[str, Sequence[str]], k: int = 10) -> float:
    """nDCG@k by the textbook formula (linear gain, log2(rank + 1) discount), mean over judged queries."""
    total = 0.0
    for qid, judged in qrels.items():
        ranked = list(rankings.get(qid, ()))[:k]
        dcg = sum(judged.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranked))
        ideal = sorted(judged.values(), reverse=True)[:k]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        total += dcg / idcg if idcg else 0.0
    return total / len(qrels)


def hit_doc_ids(hits: Sequence[SearchHit]) -> list[str]:
    """Corpus ids of hits, best first (one chunk per document, so one id per hit)."""
    out: list[str] = []
    for h in hits:
        doc_id = getattr(h.record, 'document_id', h.record.id)
        if doc_id not in out:
            out.append(doc_id)
    return out


async def evaluate(
    retriever: Retriever, dataset: BeirDataset, mode: Mode, top_k: int = 10, concurrency: int = 1
) -> dict[str, list[str]]:
    """Run every judged query through ``retriever.<mode>_search``; returns corpus-id rankings."""
    search: Callable[[str, int], Awaitable[list[SearchHit]]] = getattr(retriever, f'{mode}_search')
    rankings: dict[str, list[str]] = {}
    semaphore = asyncio.Semaphore(concurrency)

    async def one(qid: str, text: str) -> None:
        async with semaphore:
            rankings[qid] = hit_doc_ids(await search(text, top_k))

    await asyncio.gather(*(one(q, t) for q, t in dataset.queries.items()))
    return rankings


class CachedEmbeddingModel(EmbeddingModel):
    """Wraps a model and keeps its vectors in ``cache_dir`` (benchmark iteration only).

    Keyed by model name, input type and text digest; one ``.npy`` per text. Never used by
    tests, never pointed inside the repository.
    """

    def __init__(self, inner: EmbeddingModel, cache_dir: Path, *, cache_queries: bool = True) -> None:
        self._inner = inner
        self._cache_queries = cache_queries
        self._dir = cache_dir / inner.model_name.replace('/', '_')
        self._dir.mkdir(parents=True, exist_ok=True)
        super().__init__(settings=inner.settings)

    @property
    def model_name(self) -> str:
        return self._inner.model_name

    @property
    def system(self) -> str:
        return self._inner.system

    def _path(self, text: str, input_type: str) -> Path:
        digest = hashlib.sha256(f'{input_type}\0{text}'.encode()).hexdigest()
        return self._dir / digest[:2] / f'{digest}.npy'

    async def embed(
        self, inputs: str | Sequence[str], *, input_type: EmbedInputType, settings: EmbeddingSettings | None = None
    ) -> EmbeddingResult:
        texts = [inputs] if isinstance(inputs, str) else list(inputs)
        if input_type == 'query' and not self._cache_queries:
            return await self._inner.embed(texts, input_type=input_type, settings=settings)
        found: dict[int, Any] = {}
        missing: list[int] = []
        for i, t in enumerate(texts):
            p = self._path(t, input_type)
            if p.is_file():
                found[i] = np.load(p)
            else:
                missing.append(i)
        if missing:
            fresh = await self._inner.embed([texts[i] for i in missing], input_type=input_type, settings=settings)
            for i, vec in zip(missing, fresh.embeddings, strict=True):
                arr = np.asarray(vec, dtype=np.float32)
                p = self._path(texts[i], input_type)
                p.parent.mkdir(exist_ok=True)
                np.save(p, arr)
                found[i] = arr
        return EmbeddingResult(
            embeddings=[found[i].tolist() for i in range(len(texts))],
            inputs=texts,
            input_type=input_type,
            model_name=self.model_name,
            provider_name=self.system,
        )

    async def max_input_tokens(self) -> int | None:
        return await self._inner.max_input_tokens()

    async def count_tokens(self, text: str) -> int:
        return await self._inner.count_tokens(text)
