"""Issue 41 regressions: what a tenant sees is a function of its own records only.

Each test builds the same acme records alone and beside foreign ones (row counts that are not a
multiple of 4, rare foreign words) and asks for bitwise equal answers. See docs/filters.md#corpus-statistics.
"""

from __future__ import annotations

import random

import pytest

from toolish_rag import DocumentBuilder, EmbeddingWindows, PropertyFilter as F
from toolish_rag.content import Document
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.retriever import Retriever
from toolish_rag.stores import InMemoryStore

SCOPE = F.eq('tenant', 'acme')
_WORDS = ['refund', 'policy', 'parcel', 'warranty', 'password', 'invoice', 'receipt', 'freight', 'damage', 'claim']


def tenant_documents(tenant: str, count: int, seed: int, *, rare: str = '', chunk_words: int = 12) -> list[Document]:
    """``count`` one-chunk documents of ``tenant`` in the shared words (and ``rare`` words, repeated)."""
    rng = random.Random(seed)
    docs = []
    for i in range(count):
        b = DocumentBuilder(f'file:///{tenant}/{i}.md', f'{tenant} note {i}', metadata={'tenant': tenant})
        words = [rng.choice(_WORDS) for _ in range(chunk_words)]
        b.add_chunk(None, ' '.join(words + ([rare] * rng.randrange(1, 4) if rare else [])))
        docs.append(b.build())
    return docs


async def _scores(store: InMemoryStore, query: str) -> list[tuple[str, float]]:
    return [(h.id, h.score) for h in await Retriever(store, SCOPE).vector_search(query, 7)]


@pytest.mark.parametrize('windows', [None, EmbeddingWindows(max_tokens=8, window_tokens=8, overlap=2)])
async def test_memory_vector_scores_do_not_depend_on_the_foreign_row_count(windows: EmbeddingWindows | None) -> None:
    acme = tenant_documents('acme', 7, 1, chunk_words=20)
    alone = InMemoryStore(HashingEmbeddingModel(64), windows=windows)
    await alone.upsert(acme)
    queries = ['refund policy', 'parcel damage claim', 'warranty password invoice']
    expected = {q: await _scores(alone, q) for q in queries}
    for foreign in (1, 2, 3, 5, 6, 7, 9, 13):
        shared = InMemoryStore(HashingEmbeddingModel(64), windows=windows)
        await shared.upsert(tenant_documents('globex', foreign, foreign, chunk_words=20) + acme)
        for q in queries:
            assert await _scores(shared, q) == expected[q], (foreign, q)
