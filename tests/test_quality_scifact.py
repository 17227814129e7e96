"""Retrieval quality on BEIR SciFact (train split, 5,183 abstracts, 809 judged queries).

The queries go through the tools an agent calls (`ToolishRag.run_tool`, which validates the
arguments, runs the tool function over the `Retriever` and renders the result) and the
ranking is read from the hits the tool returned. Each abstract is one chunk whose text is
``title + "\\n\\n" + text`` (see benchmarks/common.py). Checks:

* text search (BM25) is within 0.005 nDCG@10 of raw ``bm25s`` with the same tokenisation
  (English stop words, Snowball stemmer), computed here on the same corpus; default run, over
  a store with the weight-free hashing embedder (BM25 reads no vector);
* marked ``slow`` (docs/testing.md), with the default model (all-MiniLM-L6-v2): vector search
  reaches 0.655, hybrid search beats both, and text search ranks as over the hashing store.

Embedding the corpus with the model costs about 3 minutes on 2 cores (docs/benchmarks-core.md).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import (  # noqa: E402
    BeirDataset,
    build_documents,
    chunk_text,
    data_dir,
    hit_doc_ids,
    load_beir,
    ndcg_at_10,
    reference_ndcg,
)

SCIFACT = data_dir() / 'scifact'
BM25_TOLERANCE = 0.005
VECTOR_FLOOR = 0.655
EMBED_BATCH_SIZE = 16
"""sentence-transformers batch size for indexing: 8 and 16 tie (about 33 abstracts/s on 2 cores), 32 and 64 are
about 10% slower (`core_bench.py --sweep 8,16,32,64`)."""
SEARCHES = ('text_search', 'vector_search', 'hybrid_search')

Rankings = dict[str, list[str]]


def raw_bm25s(dataset: BeirDataset) -> Rankings:
    """The ranking plain bm25s gives, tokenised as bm25s's README does with our settings."""
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer('english')
    ids = list(dataset.corpus)
    texts = [chunk_text(*dataset.corpus[i]) for i in ids]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords='en', stemmer=stemmer, show_progress=False), show_progress=False)
    qids = list(dataset.queries)
    tokens = bm25s.tokenize([dataset.queries[q] for q in qids], stopwords='en', stemmer=stemmer, show_progress=False)
    results, _ = retriever.retrieve(tokens, k=10, show_progress=False, n_threads=1)
    return {q: [ids[j] for j in row] for q, row in zip(qids, results.tolist(), strict=True)}


async def _tool_rankings(dataset: BeirDataset, embedder: Any, tools: Sequence[str]) -> dict[str, Rankings]:
    from toolish_rag.stores import InMemoryStore
    from toolish_rag.toolset import ToolishRag

    store = InMemoryStore(embedder, language='en')  # the tokenisation raw bm25s is given
    await store.upsert(build_documents(dataset))
    rag: ToolishRag[None] = ToolishRag(store, name='scifact')
    out: dict[str, Rankings] = {}
    for tool in tools:
        rankings: Rankings = {}
        for qid, query in dataset.queries.items():
            result = await rag.run_tool(tool, {'query': query, 'top_k': 10})
            assert result.metadata is not None
            rankings[qid] = hit_doc_ids(result.metadata['hits'])
        out[tool] = rankings
    return out


def _scores(dataset: BeirDataset, rankings: dict[str, Rankings]) -> dict[str, float]:
    result = {name: ndcg_at_10(dataset.qrels, r) for name, r in rankings.items()}
    # Cross-check trec_eval's nDCG with the textbook formula on the real runs.
    for name, r in rankings.items():
        assert reference_ndcg(dataset.qrels, r) == pytest.approx(result[name], abs=1e-9), name
    print('\nSciFact train nDCG@10: ' + ', '.join(f'{k}={v:.4f}' for k, v in result.items()))
    return result


@pytest.fixture(scope='module')
def dataset() -> BeirDataset:
    if not (SCIFACT / 'corpus.jsonl').is_file():
        pytest.skip(f'SciFact is not at {SCIFACT} (../shared/data next to the repository)')
    loaded = load_beir('scifact', 'train')
    assert len(loaded.corpus) == 5183 and len(loaded.queries) == 809
    return loaded


@pytest.fixture(scope='module')
def bm25_scores(dataset: BeirDataset) -> dict[str, float]:
    """text_search over a store with the weight-free hashing embedder (seconds), and raw bm25s."""
    rankings = asyncio.run(_tool_rankings(dataset, 'hashing:64', ('text_search',)))
    rankings['raw_bm25s'] = raw_bm25s(dataset)
    return _scores(dataset, rankings)


@pytest.fixture(scope='module')
def model_scores(dataset: BeirDataset) -> dict[str, float]:
    """The three searches over a store embedded with the default model (minutes: `slow`)."""
    from pydantic_ai.embeddings import Embedder

    from toolish_rag.embedding import resolve_embedder

    default = resolve_embedder(None)
    settings: Any = {
        'sentence_transformers_normalize_embeddings': True,
        'sentence_transformers_batch_size': EMBED_BATCH_SIZE,
    }
    # One BLAS thread: an OpenBLAS pool spinning next to torch's on 2 cores slows every query
    # embedding (docs/benchmarks-core.md). threadpoolctl comes with sentence-transformers.
    from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

    with threadpool_limits(limits=1, user_api='blas'):
        rankings = asyncio.run(_tool_rankings(dataset, Embedder(default.model, settings=settings), SEARCHES))
    return _scores(dataset, rankings)


def test_ndcg_helper_on_a_toy_example() -> None:
    qrels = {'q1': {'a': 2, 'b': 1}, 'q2': {'c': 1}}
    rankings = {'q1': ['b', 'x', 'a'], 'q2': []}
    # q1: DCG = 1/log2(2) + 2/log2(4) = 2; IDCG = 2 + 1/log2(3); q2 has no hits: 0.
    expected = (2 / (2 + 1 / 1.584962500721156)) / 2
    assert reference_ndcg(qrels, rankings) == pytest.approx(expected)
    assert ndcg_at_10(qrels, rankings) == pytest.approx(expected)


@pytest.mark.shared_data
def test_text_search_matches_raw_bm25s(bm25_scores: dict[str, float]) -> None:
    assert abs(bm25_scores['text_search'] - bm25_scores['raw_bm25s']) <= BM25_TOLERANCE, bm25_scores


@pytest.mark.slow
@pytest.mark.model
@pytest.mark.shared_data
def test_text_search_ranks_the_same_over_the_model_embedded_store(
    model_scores: dict[str, float], bm25_scores: dict[str, float]
) -> None:
    assert model_scores['text_search'] == pytest.approx(bm25_scores['text_search'], abs=1e-9), (
        model_scores,
        bm25_scores,
    )


@pytest.mark.slow
@pytest.mark.model
@pytest.mark.shared_data
def test_vector_search_quality(model_scores: dict[str, float]) -> None:
    assert model_scores['vector_search'] >= VECTOR_FLOOR, model_scores


@pytest.mark.slow
@pytest.mark.model
@pytest.mark.shared_data
def test_hybrid_beats_both(model_scores: dict[str, float]) -> None:
    assert model_scores['hybrid_search'] > max(model_scores['text_search'], model_scores['vector_search']), model_scores
