"""`toolish-rag eval`: BEIR loading, trec_eval metrics, index reuse, JSON output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolish_rag.cli import main
from toolish_rag.evaluation import load_beir, score_run

SHARED = Path(__file__).resolve().parents[1].parent / 'shared' / 'data'


def write_beir(root: Path) -> Path:
    root.mkdir()
    corpus = [
        {'_id': 'd1', 'title': 'Refunds', 'text': 'Refunds are paid within 30 days of a return.'},
        {'_id': 'd2', 'title': 'Shipping', 'text': 'Parcels ship from Rotterdam in two days.'},
        {'_id': 'd3', 'title': 'Warranty', 'text': 'The pen has a 24 month warranty against defects.'},
        {'_id': 'd4', 'title': 'Errors', 'text': 'ERR-4012 means the API key expired; rotate it.'},
    ]
    queries = [
        {'_id': 'q1', 'text': 'how long until refunds are paid'},
        {'_id': 'q2', 'text': 'warranty months for the pen'},
        {'_id': 'q3', 'text': 'expired api key error'},
        {'_id': 'q4', 'text': 'a question nobody judged'},
    ]
    (root / 'corpus.jsonl').write_text('\n'.join(json.dumps(c) for c in corpus) + '\n')
    (root / 'queries.jsonl').write_text('\n'.join(json.dumps(q) for q in queries) + '\n')
    (root / 'qrels').mkdir()
    (root / 'qrels' / 'test.tsv').write_text('query-id\tcorpus-id\tscore\nq1\td1\t2\nq2\td3\t1\nq3\td4\t1\nq3\td1\t0\n')
    return root


def test_metrics_are_trec_eval_with_graded_gains() -> None:
    qrels = {'q1': {'a': 2, 'b': 1}, 'q2': {'c': 1}}
    perfect = score_run({'q1': {'a': 2.0, 'b': 1.0}, 'q2': {'c': 1.0}}, qrels)
    assert perfect == {'ndcg@10': 1.0, 'recall@100': 1.0, 'mrr@10': 1.0}
    swapped = score_run({'q1': {'b': 2.0, 'a': 1.0}, 'q2': {}}, qrels)
    # q1: DCG = 1 + 2/log2(3) against ideal 2 + 1/log2(3); q2 has no hits and counts as 0.
    import math

    q1 = (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))
    assert swapped['ndcg@10'] == pytest.approx(q1 / 2)
    assert swapped['mrr@10'] == pytest.approx(0.5)
    assert swapped['recall@100'] == pytest.approx(0.5)
    deep = score_run({'q1': {f'x{i}': 100.0 - i for i in range(12)} | {'a': 1.0}, 'q2': {'c': 1.0}}, qrels)
    assert deep['mrr@10'] == pytest.approx(0.5)  # q1's first relevant hit is at rank 13: beyond MRR@10


def test_load_beir_reports_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match='qrels'):
        load_beir(tmp_path)
    dataset = load_beir(write_beir(tmp_path / 'mini'))
    assert [q for q, _ in dataset.judged_queries] == ['q1', 'q2', 'q3']


def test_eval_json_and_index_reuse(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = write_beir(tmp_path / 'mini')
    store = f'memory:{tmp_path / "index"}'
    args = ['eval', str(folder), '--store', store, '--embedder', 'hashing', '--json']
    assert main(args) == 0
    first = capsys.readouterr()
    figures = json.loads(first.out)
    assert set(figures) == {'text', 'vector', 'hybrid'}
    assert all(set(m) == {'ndcg@10', 'recall@100', 'mrr@10'} for m in figures.values())
    assert figures['text']['mrr@10'] == 1.0  # each judged query's answer shares its rare words
    assert 'added 4' in first.err
    assert main(args) == 0
    second = capsys.readouterr()
    assert json.loads(second.out) == figures
    assert 'unchanged 4' in second.err and 'added 0' in second.err


def test_eval_refuses_a_tool_the_store_lacks(tmp_path: Path) -> None:
    folder = write_beir(tmp_path / 'mini')
    pytest.importorskip('toolish_rag_tantivy')
    code = main(['eval', str(folder), '--store', f'tantivy:{tmp_path / "t"}', '--tool', 'vector', '--json'])
    assert code == 2


@pytest.mark.shared_data
def test_eval_on_cranfield_text_matches_raw_bm25s(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = SHARED / 'cranfield'
    if not folder.is_dir():
        pytest.skip(f'{folder} not found: the shared evaluation data is only on CI and developer machines')
    import bm25s
    import numpy as np
    import Stemmer

    from toolish_rag.evaluation import beir_documents

    # Raw bm25s as its docs configure it for English (stop words, Snowball stems): the store
    # must rank exactly like it, so none of the store's own code is used here.
    stemmer = Stemmer.Stemmer('english')

    def tokenize(texts: list[str]) -> list[list[str]]:
        tokens: list[list[str]] = bm25s.tokenize(
            texts, stopwords='en', stemmer=stemmer, return_ids=False, show_progress=False
        )
        return tokens

    dataset = load_beir(folder)
    docs = beir_documents(dataset)
    retriever = bm25s.BM25()
    retriever.index(tokenize([d.chunks[0].text for d in docs]), show_progress=False)
    ids = [str(d.metadata['corpus_id']) for d in docs]
    run: dict[str, dict[str, float]] = {}
    for qid, query in dataset.judged_queries:
        tokens = [t for t in tokenize([query])[0] if t in retriever.vocab_dict]
        if not tokens:
            run[qid] = {}
            continue
        scores = retriever.get_scores(tokens)
        top = np.argsort(-scores, kind='stable')[:100]
        run[qid] = {ids[i]: float(100 - r) for r, i in enumerate(top) if scores[i] > 0}
    raw = score_run(run, dataset.qrels)
    # The command in this process (tests/test_chat_cli.py starts `python -m toolish_rag.cli` itself).
    args = ['eval', str(folder), '--store', f'memory:{tmp_path / "idx"}', '--embedder', 'hashing', '--tool', 'text']
    assert main([*args, '--json']) == 0
    ours = json.loads(capsys.readouterr().out)['text']
    for metric in ('ndcg@10', 'recall@100', 'mrr@10'):
        assert ours[metric] == pytest.approx(raw[metric], abs=0.005), metric


def test_eval_takes_paragraph_long_queries_that_a_model_would_be_told_to_shorten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # CISI's longest query is 2,023 characters: over the tools' default cap for a model's query.
    folder = write_beir(tmp_path / 'mini')
    long_query = 'how long until refunds are paid ' + 'and what else applies to a returned order ' * 60
    assert len(long_query) > 2000
    queries = (folder / 'queries.jsonl').read_text().replace('how long until refunds are paid', long_query.strip())
    (folder / 'queries.jsonl').write_text(queries)
    args = ['eval', str(folder), '--store', f'memory:{tmp_path / "index"}', '--embedder', 'hashing', '--json']
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)['text']['mrr@10'] == 1.0
