"""Retrieval evaluation on BEIR-layout collections, through the tools an agent uses.

See docs/evaluation.md.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._extras import install_command
from .builder import DocumentBuilder
from .content import Chunk, Document
from .toolset import ToolishRag

__all__ = ['METRICS', 'BeirDataset', 'beir_documents', 'evaluate_dataset', 'load_beir', 'score_run']

METRICS = ('ndcg@10', 'recall@100', 'mrr@10')

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]


@dataclass(frozen=True)
class BeirDataset:
    name: str
    corpus: list[dict[str, Any]]
    queries: dict[str, str]
    qrels: Qrels

    @property
    def judged_queries(self) -> list[tuple[str, str]]:
        return [(qid, self.queries[qid]) for qid in self.qrels if qid in self.queries]


def _jsonl(path: Path) -> Iterable[dict[str, Any]]:
    with open(path, encoding='utf-8') as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def load_beir(folder: str | Path, split: str = 'test') -> BeirDataset:
    """Read a BEIR-layout folder; raises ``FileNotFoundError`` naming what is missing."""
    root = Path(folder)
    needed = [root / 'corpus.jsonl', root / 'queries.jsonl', root / 'qrels' / f'{split}.tsv']
    missing = [str(p) for p in needed if not p.is_file()]
    if missing:
        splits = sorted(p.stem for p in (root / 'qrels').glob('*.tsv'))
        there = f'; its splits: {", ".join(splits)} (pass --split {splits[0]})' if splits else ''
        raise FileNotFoundError(f'not a BEIR folder for split {split!r}: missing {", ".join(missing)}{there}')
    corpus = list(_jsonl(needed[0]))
    queries = {str(q['_id']): str(q['text']) for q in _jsonl(needed[1])}
    qrels: Qrels = {}
    with open(needed[2], encoding='utf-8', newline='') as f:
        rows = csv.reader(f, delimiter='\t')
        for row in rows:
            if len(row) < 3 or not row[2].strip().lstrip('-').isdigit():
                continue  # the header line, or a malformed row
            qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    return BeirDataset(root.resolve().name, corpus, queries, qrels)


def beir_documents(dataset: BeirDataset) -> list[Document]:
    """One document, with one chunk of ``title`` and ``text``, per corpus entry."""
    documents = []
    for entry in dataset.corpus:
        corpus_id = str(entry['_id'])
        title = str(entry.get('title') or '')
        body = str(entry.get('text') or '')
        text = f'{title}\n\n{body}' if title else body
        builder = DocumentBuilder(
            f'beir://{dataset.name}/{corpus_id}',
            title or corpus_id,
            metadata={'corpus_id': corpus_id},
            indexed_text=None,
        )
        builder.add_chunk(None, text)
        documents.append(builder.build())
    return documents


def score_run(run: Run, qrels: Qrels) -> dict[str, float]:
    """nDCG@10, recall@100 and MRR@10 averaged over every judged query (no hits scores 0)."""
    try:
        import pytrec_eval
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise RuntimeError(f'evaluation needs pytrec_eval: {install_command("eval")}') from e
    judged = {q: rels for q, rels in qrels.items() if any(v > 0 for v in rels.values())}
    full = {q: dict(run.get(q, {})) for q in judged}
    top10 = {q: dict(sorted(hits.items(), key=lambda kv: -kv[1])[:10]) for q, hits in full.items()}
    # trec_eval drops queries with no hits: fill with a dummy miss so they count as 0.
    for runs in (full, top10):
        for hits in runs.values():
            if not hits:
                hits['__no_hit__'] = 0.0
    main = pytrec_eval.RelevanceEvaluator(judged, {'ndcg_cut.10', 'recall.100'}).evaluate(full)
    rr = pytrec_eval.RelevanceEvaluator(judged, {'recip_rank'}).evaluate(top10)
    n = len(judged) or 1
    return {
        'ndcg@10': sum(m['ndcg_cut_10'] for m in main.values()) / n,
        'recall@100': sum(m['recall_100'] for m in main.values()) / n,
        'mrr@10': sum(m['recip_rank'] for m in rr.values()) / n,
    }


async def evaluate_dataset(
    rag: ToolishRag[Any],
    dataset: BeirDataset,
    tools: Sequence[str],
    *,
    top_k: int = 100,
    on_query: Callable[[], None] | None = None,
) -> dict[str, dict[str, float]]:
    """Run every judged query through each tool (``'text'``, ``'vector'``, ``'hybrid'``) and score it."""
    results: dict[str, dict[str, float]] = {}
    for tool in tools:
        run: Run = {}
        for qid, query in dataset.judged_queries:
            outcome = await rag.run_tool(f'{tool}_search', {'query': query, 'top_k': top_k})
            ranking: dict[str, float] = {}
            for rank, hit in enumerate(outcome.metadata['hits']):
                record = hit.record
                if isinstance(record, Chunk):
                    corpus_id = str(record.metadata.get('corpus_id', record.document_id))
                    # Rank-derived scores: trec_eval sorts by score, and ties must keep our order.
                    ranking.setdefault(corpus_id, float(top_k - rank))
            run[qid] = ranking
            if on_query is not None:
                on_query()
        results[tool] = score_run(run, dataset.qrels)
    return results
