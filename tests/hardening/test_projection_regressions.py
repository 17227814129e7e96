"""What a tenant sees is a function of its own records only.

Each test builds the same acme records alone and beside foreign ones (row counts that are not a
multiple of 4, rare foreign words) and asks for bitwise equal answers. See docs/filters.md#corpus-statistics.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from toolish_rag import DocumentBuilder, EmbeddingWindows, PropertyFilter as F
from toolish_rag.content import Document
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.protocols import ScopedTextRanking
from toolish_rag.retriever import Retriever
from toolish_rag.stores import Federated, InMemoryStore

SCOPE = F.eq('tenant', 'acme')
_WORDS = ('refund', 'policy', 'parcel', 'warranty', 'password', 'invoice', 'receipt', 'freight', 'damage', 'claim')


def tenant_documents(
    tenant: str,
    count: int,
    seed: int,
    *,
    rare: str = '',
    chunk_words: int = 12,
    start: int = 0,
    words: tuple[str, ...] = _WORDS,
) -> list[Document]:
    """``count`` one-chunk documents of ``tenant`` in ``words`` (and ``rare``, once to three times each)."""
    rng = random.Random(seed)
    docs = []
    for i in range(start, start + count):
        b = DocumentBuilder(f'file:///{tenant}/{i}.md', f'{tenant} note {i}', metadata={'tenant': tenant})
        text = [rng.choice(words) for _ in range(chunk_words)]
        b.add_chunk(None, ' '.join(text + ([rare] * rng.randrange(1, 4) if rare else [])))
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


async def _loaded(
    memory_docs: list[Document], tantivy_docs: list[Document], partitioned: bool = False, **options: Any
) -> Federated:
    """``Federated({'a': memory, 'b': TantivyStore})`` (or a `PartitionedTantivyStore` by tenant) holding these documents."""
    tantivy = pytest.importorskip('toolish_rag_tantivy', reason='needs the Tantivy adapter (stores/tantivy)')
    b = tantivy.PartitionedTantivyStore(partition_key='tenant') if partitioned else tantivy.TantivyStore()
    federation = Federated({'a': InMemoryStore(HashingEmbeddingModel(64)), 'b': b}, **options)
    await federation.members['a'].upsert(memory_docs)
    await federation.members['b'].upsert(tantivy_docs)
    return federation


async def _text(federation: Federated, query: str, top_k: int) -> list[tuple[str, str, float]]:
    return [
        (getattr(h, 'source', ''), h.id, h.score) for h in await Retriever(federation, SCOPE).text_search(query, top_k)
    ]


@pytest.mark.parametrize('partitioned', [False, True], ids=['tantivy', 'partitioned'])
async def test_federation_text_candidates_do_not_depend_on_foreign_records(partitioned: bool) -> None:
    """A plain `TantivyStore` member ranks with index-wide BM25: its candidates are chosen from its census instead.
    A `PartitionedTantivyStore` by tenant ranks in the scope itself (`ScopedTextRanking`) and keeps its own.

    'zebulon' is rare in acme (10 of the Tantivy member's 300 records) and in every globex record:
    index-wide, its weight falls below 'refund''s and acme's zebulon records fall out of the
    member's top candidates; in acme's scope they are the best answers.
    """
    acme_a = tenant_documents('acme', 30, 2)
    acme_b = tenant_documents('acme', 290, 3, start=100) + tenant_documents('acme', 10, 5, rare='zebulon', start=400)
    alone = await _loaded(acme_a, acme_b, partitioned)
    queries = ['refund zebulon', 'policy zebulon', 'parcel freight']
    expected = {q: await _text(alone, q, 20) for q in queries}
    assert any(h[1] in {c.id for d in acme_b[-10:] for c in d.chunks} for h in expected['refund zebulon'][:10])
    globex = tenant_documents('globex', 501, 4, rare='zebulon', chunk_words=2, words=('receipt', 'claim'))
    shared = await _loaded(acme_a, globex + acme_b, partitioned)
    for q in queries:
        assert await _text(shared, q, 20) == expected[q], q


def test_which_stores_say_they_rank_text_in_the_scope() -> None:
    """`ScopedTextRanking`: what a federation trusts to choose a member's text candidates (else its census does)."""
    tantivy = pytest.importorskip('toolish_rag_tantivy', reason='needs the Tantivy adapter (stores/tantivy)')
    partitioned = tantivy.PartitionedTantivyStore(partition_key='tenant')
    assert isinstance(partitioned, ScopedTextRanking)
    assert partitioned.text_ranking_in_scope(SCOPE)
    assert partitioned.text_ranking_in_scope(F.in_('tenant', ['acme', 'globex']) | F.eq('tenant', 'initech'))
    assert not partitioned.text_ranking_in_scope(SCOPE & F.eq('year', 2024))  # a part of the partition's records
    assert not partitioned.text_ranking_in_scope(F.ne('tenant', 'globex'))
    assert not isinstance(tantivy.TantivyStore(), ScopedTextRanking)
    assert InMemoryStore(HashingEmbeddingModel(8)).text_ranking_in_scope(SCOPE & F.eq('year', 2024))
    assert not InMemoryStore(HashingEmbeddingModel(8), statistics='store').text_ranking_in_scope(SCOPE)
