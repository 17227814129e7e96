"""SciFact train nDCG@10 through the tools against raw LanceDB on the same table ("the tool layer loses nothing").

Slow (embeds 5,183 abstracts with all-MiniLM-L6-v2): ``pytest -m slow stores/lancedb/tests -s``.
benchmarks/lancedb_bench.py --quality prints the same comparison.
"""

from __future__ import annotations

import pathlib
from typing import Any

import numpy as np
import pytest

from toolish_rag.content import Chunk
from toolish_rag.embedding import resolve_embedder
from toolish_rag.evaluation import beir_documents, evaluate_dataset, load_beir, score_run
from toolish_rag.fusion import FusionConfig, fuse
from toolish_rag.search import SearchHit
from toolish_rag.toolset import ToolishRag
from toolish_rag_lancedb import LanceDBStore

SCIFACT = pathlib.Path(__file__).resolve().parents[3].parent / 'shared' / 'data' / 'scifact'
DEPTH = 100
FLOORS = {'text': 0.68, 'vector': 0.64, 'hybrid': 0.71}  # measured: 0.6964, 0.6602, 0.7330 (z-score fusion)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (SCIFACT / 'qrels' / 'train.tsv').is_file(), reason=f'SciFact (train qrels) not found under {SCIFACT}'
    ),
]


async def test_tools_lose_nothing_against_raw_lancedb(tmp_path: pathlib.Path) -> None:
    dataset = load_beir(SCIFACT, 'train')
    docs = beir_documents(dataset)
    embedder = resolve_embedder(None)
    # LanceDB's own analyzer, not the default 'auto': the raw side queries this table's text index as
    # LanceDB does (`nearest_to_text(query)`). The default's figures: benchmarks/hybrid_floor_bench.py.
    store = LanceDBStore(tmp_path / 'kb', embedder=embedder, language='lancedb')
    for start in range(0, len(docs), 500):
        await store.upsert(docs[start : start + 500])
    await store.optimize()
    rag: ToolishRag[None] = ToolishRag(store, name='q', max_top_k=DEPTH)
    tool = await evaluate_dataset(rag, dataset, ['text', 'vector', 'hybrid'], top_k=DEPTH)

    table: Any = await store.records_table()  # the very table the store queries
    chunks = {c.id: c for d in docs for c in d.chunks}
    corpus_of = {i: str(c.metadata['corpus_id']) for i, c in chunks.items() if isinstance(c, Chunk)}

    def fused(vector: list[tuple[str, float]], text: list[tuple[str, float]]) -> list[str]:
        # The store leaves fusion to the core: raw = the core's fusion (same config) of the raw legs.
        legs = [[SearchHit(chunks[i], s) for i, s in leg] for leg in (vector, text)]
        return [h.id for h in fuse(legs[0], legs[1], DEPTH, FusionConfig())]

    def ranking(ids: list[str]) -> dict[str, float]:
        out: dict[str, float] = {}
        for rank, rid in enumerate(ids):
            out.setdefault(corpus_of[rid], float(DEPTH - rank))
        return out

    runs: dict[str, dict[str, dict[str, float]]] = {'text': {}, 'vector': {}, 'hybrid': {}}
    for qid, query in dataset.judged_queries:
        vec = np.asarray((await embedder.embed_query(query)).embeddings[0], dtype=np.float32)
        vq = table.query().nearest_to(vec).column('vector').distance_type('cosine').select(['id']).limit(DEPTH)
        vector = [(r['id'], 1.0 - r['_distance']) for r in (await vq.to_arrow()).to_pylist()]
        tq = table.query().nearest_to_text(query).select(['id']).limit(DEPTH)
        text = [(r['id'], r['_score']) for r in (await tq.to_arrow()).to_pylist()]
        runs['vector'][qid] = ranking([i for i, _ in vector])
        runs['text'][qid] = ranking([i for i, _ in text])
        runs['hybrid'][qid] = ranking(fused(vector, text))
    raw = {mode: score_run(run, dataset.qrels)['ndcg@10'] for mode, run in runs.items()}
    print({mode: (round(tool[mode]['ndcg@10'], 4), round(raw[mode], 4)) for mode in runs})
    for mode in runs:
        assert tool[mode]['ndcg@10'] >= raw[mode] - 0.005, (mode, tool[mode]['ndcg@10'], raw[mode])
        assert tool[mode]['ndcg@10'] >= FLOORS[mode], (mode, tool[mode]['ndcg@10'])
