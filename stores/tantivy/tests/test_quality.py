"""Retrieval quality through the store vs raw tantivy with the same analyzer, in the same run.

Run with ``pytest -m slow stores/tantivy/tests/test_quality.py -s`` to see the figures.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import tantivy

from toolish_rag.builder import DocumentBuilder
from toolish_rag.search import SearchRequest
from toolish_rag_tantivy import TantivyStore
from toolish_rag_tantivy._analyzers import AnalyzerName, build_analyzer

DATA = Path(__file__).resolve().parents[4] / 'shared' / 'data'

pytestmark = [
    pytest.mark.shared_data,
    pytest.mark.slow,
    pytest.mark.skipif(not (DATA / 'scifact').exists(), reason=f'shared data not found at {DATA}'),
]


@pytest.fixture(autouse=True)
def _only_when_slow_is_selected(request: pytest.FixtureRequest) -> None:
    if 'slow' not in (request.config.option.markexpr or '') or 'not slow' in request.config.option.markexpr:
        pytest.skip('quality run (~30 s): select it with -m slow')


def load(name: str, split: str) -> tuple[list[dict[str, Any]], dict[str, str], dict[str, dict[str, int]]]:
    root = DATA / name
    corpus = [json.loads(line) for line in (root / 'corpus.jsonl').open()]
    qrels: dict[str, dict[str, int]] = {}
    for i, line in enumerate((root / 'qrels' / f'{split}.tsv').open()):
        if i == 0:
            continue
        qid, did, score = line.rstrip('\n').split('\t')
        qrels.setdefault(qid, {})[did] = int(score)
    queries = {q['_id']: q['text'] for q in map(json.loads, (root / 'queries.jsonl').open()) if q['_id'] in qrels}
    return corpus, queries, qrels


def ndcg10(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]) -> float:
    import pytrec_eval

    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {'ndcg_cut.10'})
    scores = evaluator.evaluate(run)
    return sum(s['ndcg_cut_10'] for s in scores.values()) / len(qrels)


async def store_run(
    corpus: list[dict[str, Any]], queries: dict[str, str], analyzer: AnalyzerName
) -> dict[str, dict[str, float]]:
    store = TantivyStore(analyzer=analyzer, writer_threads=2)
    docs = []
    for d in corpus:
        b = DocumentBuilder(f'beir:{d["_id"]}', d.get('title') or '', id=d['_id'])
        b.add_chunk(None, d['text'])  # indexed text: "title\n\ntext"
        docs.append(b.build())
    await store.upsert(docs)
    run: dict[str, dict[str, float]] = {}
    for qid, text in queries.items():
        hits = await store.text_search(SearchRequest(text, 10))
        run[qid] = {h.record.document_id: h.score for h in hits}  # type: ignore[union-attr]
    return run


def raw_run(
    corpus: list[dict[str, Any]], queries: dict[str, str], analyzer: AnalyzerName
) -> dict[str, dict[str, float]]:
    """Plain tantivy: one text field, same analyzer, tantivy's own lenient query parser."""
    sb = tantivy.SchemaBuilder()
    sb.add_text_field('id', stored=True, tokenizer_name='raw')
    sb.add_text_field('text', tokenizer_name='a')
    index = tantivy.Index(sb.build())
    index.register_tokenizer('a', build_analyzer(analyzer))
    writer = index.writer(128_000_000, 2)
    for d in corpus:
        title = d.get('title') or ''
        writer.add_document(tantivy.Document(id=d['_id'], text=f'{title}\n\n{d["text"]}' if title else d['text']))
    writer.commit()
    index.reload()
    searcher = index.searcher()
    run: dict[str, dict[str, float]] = {}
    for qid, text in queries.items():
        query, _ = index.parse_query_lenient(text, ['text'])
        run[qid] = {searcher.doc(a)['id'][0]: s for s, a in searcher.search(query, 10).hits}
    return run


@pytest.mark.parametrize('analyzer', ['subword_stem', 'en_stem'])
async def test_scifact_matches_raw_tantivy(analyzer: AnalyzerName) -> None:
    corpus, queries, qrels = load('scifact', 'train')
    ours = ndcg10(qrels, await store_run(corpus, queries, analyzer))
    raw = ndcg10(qrels, raw_run(corpus, queries, analyzer))
    print(f'\nSciFact train nDCG@10 [{analyzer}]: store {ours:.4f}  raw tantivy {raw:.4f}')
    assert abs(ours - raw) <= 0.005
    assert ours > 0.6


@pytest.mark.skipif(not (DATA / 'anthropic-codebase-rag').exists(), reason='codebase set absent')
async def test_codebase_subword_analyzer_beats_en_stem() -> None:
    corpus, queries, qrels = load('anthropic-codebase-rag', 'test')
    figures = {}
    for analyzer in ('subword_stem', 'en_stem', 'simple'):
        ours = ndcg10(qrels, await store_run(corpus, queries, analyzer))  # type: ignore[arg-type]
        raw = ndcg10(qrels, raw_run(corpus, queries, analyzer))  # type: ignore[arg-type]
        figures[analyzer] = ours
        print(f'\ncodebase test nDCG@10 [{analyzer}]: store {ours:.4f}  raw tantivy {raw:.4f}')
        assert abs(ours - raw) <= 0.005
    assert figures['subword_stem'] > figures['en_stem']
