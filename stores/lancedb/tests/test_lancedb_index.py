"""ANN index creation and upkeep, exact top_k under filters with an index, index_stats, registry."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from toolish_rag.builder import DocumentBuilder
from toolish_rag.content import Document
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.filters import PropertyFilter as F
from toolish_rag.search import SearchRequest
from toolish_rag.stores.registry import available_stores, open_store as open_registered
from toolish_rag_lancedb import LanceDBStore

TOPICS = ['refund policy', 'shipping times', 'warranty claims', 'error codes', 'account security', 'pricing plans']


def _doc(n: int, start: int = 0, uri: str = 'file:///bulk.md') -> Document:
    b = DocumentBuilder(uri, 'Bulk')
    s = b.section('All')
    for i in range(start, start + n):
        b.add_chunk(s, f'record {i} about {TOPICS[i % 6]} number {i % 13}', metadata={'rare': i % 50 == 7, 'i': i})
    return b.build()


async def test_ann_index_is_built_kept_current_and_exact_under_filters(tmp_path: pathlib.Path) -> None:
    store = LanceDBStore(tmp_path / 'kb', embedder=HashingEmbeddingModel(64), ann_threshold=300, max_unindexed_rows=150)
    await store.upsert([_doc(200)])
    assert 'vector_idx' not in await store.index_stats()  # small: exact search
    await store.upsert([_doc(150, 0, 'file:///more.md')])
    stats = await store.index_stats()
    assert stats['vector_idx']['indexed_rows'] == 350 and stats['vector_idx']['unindexed_rows'] == 0
    assert stats['words_idx']['unindexed_rows'] == 0

    # A 2%-selective filter through the ANN index still yields exactly top_k, all matching.
    hits = await store.vector_search(SearchRequest('record about warranty claims', 5, F.eq('rare', True)))
    assert len(hits) == 5 and all(h.record.metadata['rare'] is True for h in hits)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    q = np.asarray((await store.embedder.embed_query('record about warranty claims')).embeddings[0])
    for hit, e in zip(
        hits, (await store.embedder.embed_documents([h.record.text for h in hits])).embeddings, strict=True
    ):
        v = np.asarray(e)
        assert hit.score == pytest.approx(float(v @ q / np.linalg.norm(v) / np.linalg.norm(q)), abs=1e-5)

    # New rows are searchable at once, and folded into the index once enough pile up.
    await store.upsert([_doc(100, 0, 'file:///late.md')])
    assert (await store.index_stats())['vector_idx']['unindexed_rows'] == 100
    found = await store.text_search(SearchRequest('record 42', 50, F.gte('i', 0)))
    assert {h.record.document_uri for h in found} >= {'file:///late.md'}
    await store.upsert([_doc(100, 0, 'file:///later.md')])
    stats = await store.index_stats()
    assert stats['vector_idx']['unindexed_rows'] == 0 and stats['vector_idx']['indexed_rows'] == 550


async def test_registry_opens_the_store(tmp_path: pathlib.Path) -> None:
    assert 'lancedb' in available_stores()
    store = open_registered(f'lancedb:{tmp_path / "kb"}', embedder=HashingEmbeddingModel(32))
    assert isinstance(store, LanceDBStore)
    await store.upsert([_doc(3)])
    assert len(await store.vector_search(SearchRequest('record', 10))) == 3
