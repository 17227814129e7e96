"""`LanceDBStore(language=...)`: the core's language-aware analyzer, indexed as a whitespace-split column.

Chinese found by Chinese queries (character bigrams), German by stems, the analyzer saved in the
table's metadata and refused when reopened with another, filters and exact ``top_k`` under a
language, and the three stores (memory, Tantivy, LanceDB) matching the same records.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from toolish_rag import ToolishRag
from toolish_rag.analysis import TextAnalyzer, analyzer_for
from toolish_rag.builder import DocumentBuilder
from toolish_rag.content import Document, Entity, MetadataValue
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.filters import PropertyFilter as F, matches
from toolish_rag.protocols import DocumentStore, TextSearch
from toolish_rag.search import SearchRequest
from toolish_rag.stores.memory import InMemoryStore
from toolish_rag.testing import StoreConformance
from toolish_rag_lancedb import TEXT_QUERY_SYNTAX, LanceDBStore, open_store


def _doc(uri: str, texts: list[str], metadata: dict[str, MetadataValue] | None = None) -> Document:
    b = DocumentBuilder(uri, uri.rsplit('/', 1)[-1], metadata=metadata or {})
    section = b.section('Body')
    for t in texts:
        b.add_chunk(section, t)
    return b.build()


CHINESE = [
    _doc('zh/beijing', ['北京大学是中国最早的国立综合性大学,创办于1898年。']),
    _doc('zh/weather', ['上海今天的天气很好,适合出去散步。']),
    _doc('zh/scattered', ['他在大学读书,后来搬到北京工作。']),
]
GERMAN = [
    _doc('de/haus', ['Das kleine Haus steht am Ende der Straße.']),
    _doc('de/fahrrad', ['Die Fahrräder wurden gestern repariert.']),
    _doc('de/wetter', ['Das Wetter in Berlin war sonnig und warm.']),
]
MIXED = [
    *CHINESE,
    *GERMAN,
    _doc('en/refund', ['Refunds are issued within thirty days of the purchase.']),
    _doc('en/policy', ['The refund policy covers damaged items only.']),
    _doc('ja/tokyo', ['東京タワーは日本の電波塔です。']),
    _doc('mixed/page', ['Peking University (北京大学) publishes Häuser research papers.']),
]
QUERIES = [
    '北京的大学',
    '天气怎么样',
    '中国',
    'Häuser',
    'Fahrrad repariert',
    'wetter berlin',
    'refund policy',
    'refunds',
    '東京の電波塔',
    'university',
    'research papers about 北京',
]


def _store(path: Path, language: str | None = None) -> LanceDBStore:
    return LanceDBStore(path, embedder=HashingEmbeddingModel(16), language=language)


async def _ids(store: Any, query: str, top_k: int = 50, f: Any = None) -> list[str]:
    hits = await store.text_search(SearchRequest(query=query, top_k=top_k, filter=f))
    return [h.record.document_uri for h in hits]


# -- Chinese, German ------------------------------------------------------------------------


async def test_chinese_text_is_found_by_a_chinese_query_through_bigrams(tmp_path: Path) -> None:
    store = _store(tmp_path / 'kb', 'zh')
    await store.upsert(CHINESE)
    found = await _ids(store, '北京的大学')
    assert found[0] == 'zh/beijing'
    assert set(found) == {'zh/beijing', 'zh/scattered'}
    assert await _ids(store, '天气') == ['zh/weather']
    # A quoted phrase ranks the page with its characters in a row first (and only re-ranks).
    assert (await _ids(store, '"大学读书"'))[0] == 'zh/scattered'
    legacy = _store(tmp_path / 'legacy', 'lancedb')
    await legacy.upsert(CHINESE)
    assert await _ids(legacy, '北京的大学') == []  # LanceDB's word analyzer: one token per sentence


async def test_german_words_match_by_their_stems(tmp_path: Path) -> None:
    store = _store(tmp_path / 'kb', 'de')
    await store.upsert(GERMAN)
    assert await _ids(store, 'Häuser') == ['de/haus']
    assert await _ids(store, 'Fahrrädern') == ['de/fahrrad']
    assert await _ids(store, 'das und der') == []  # German stop words only: nothing to match
    legacy = _store(tmp_path / 'legacy', 'lancedb')
    await legacy.upsert(GERMAN)
    assert await _ids(legacy, 'Häuser') == []


async def test_symbols_without_words_fall_back_to_a_substring_scan(tmp_path: Path) -> None:
    store = _store(tmp_path / 'kb', 'zh')
    await store.upsert([_doc('x/rocket', ['发射 🚀 成功']), *CHINESE])
    assert await _ids(store, '🚀') == ['x/rocket']


async def test_the_table_holds_the_core_tokens_and_the_index_is_on_them(tmp_path: Path) -> None:
    store = _store(tmp_path / 'kb', 'zh')
    doc = _doc('x/one', ['Peking University 北京大学 Häuser'])
    await store.upsert([doc, Entity(id='e1', name='北京大学', description='中国的一所大学')])
    table = await store.records_table()
    rows = {r['id']: r['words'] for r in (await table.query().select(['id', 'words']).to_arrow()).to_pylist()}
    analyzer = analyzer_for('zh')
    assert rows[doc.chunks[0].id] == ' '.join(analyzer.tokens(doc.chunks[0].text))
    assert rows['e1'] == ' '.join(analyzer.tokens('北京大学: 中国的一所大学'))
    stats = await store.index_stats()
    assert stats['words_idx']['columns'] == ['words'] and 'text_idx' not in stats
    hits = await store.text_search(SearchRequest(query='北京的大学', top_k=5))
    assert {h.record.id for h in hits} == {doc.chunks[0].id, 'e1'}


# -- saved analyzer -----------------------------------------------------------------------


async def test_reopening_keeps_the_language_and_another_one_is_refused(tmp_path: Path) -> None:
    path = tmp_path / 'kb'
    store = _store(path, 'zh')
    await store.upsert(CHINESE)
    before = await _ids(store, '北京的大学')
    await store.aclose()

    reopened = _store(path)
    # Known before the first read (tool descriptions are built synchronously).
    assert reopened.text_analyzer == TextAnalyzer('zh')
    assert await _ids(reopened, '北京的大学') == before
    await reopened.upsert([_doc('zh/more', ['北京的胡同'])])  # later writes analyse with the saved one
    assert 'zh/more' in await _ids(reopened, '北京')

    assert await _ids(_store(path, 'chinese'), '北京的大学')  # a name is the same analyzer
    wrong = _store(path, 'de')
    with pytest.raises(ValueError, match=r"indexed with language='zh'.*new location.*language='de'"):
        await wrong.count()
    with pytest.raises(ValueError, match=r"indexed with language='zh'"):
        await wrong.upsert(GERMAN)
    assert await _store(path).count() == 4  # the refused write wrote nothing


async def test_a_legacy_store_is_unchanged_and_refuses_a_language(tmp_path: Path) -> None:
    path = tmp_path / 'kb'
    store = _store(path, 'lancedb')  # LanceDB's own analyzer: what stores built before 'auto' hold
    await store.upsert(GERMAN)
    table = await store.records_table()
    schema = await table.schema()
    assert 'words' not in schema.names and b'toolish_rag.text_analyzer' not in (schema.metadata or {})
    assert 'text_idx' in await store.index_stats()
    assert store.text_analyzer is None and store.text_query_syntax == TEXT_QUERY_SYNTAX
    with pytest.raises(ValueError, match=r"English analyzer \(language=None or 'lancedb'\).*language='en'"):
        await _store(path, 'en').count()
    assert _store(path).text_analyzer is None  # read from the table before connecting


def test_an_unknown_language_is_refused_at_once(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match='unknown text analysis language'):
        _store(tmp_path / 'kb', 'klingon')


async def test_the_text_tool_describes_the_configured_analyzer(tmp_path: Path) -> None:
    assert 'English stemming' in TEXT_QUERY_SYNTAX
    store = _store(tmp_path / 'kb', 'zh')
    assert 'stemming' not in store.text_query_syntax
    definitions = {d.name: d.description or '' for d in await ToolishRag(store).tool_definitions()}
    assert store.text_query_syntax in definitions['docs_text_search']
    assert 'English stemming' not in definitions['docs_text_search']


async def test_open_store_passes_the_language(tmp_path: Path) -> None:
    from toolish_rag.stores.registry import open_store as open_spec

    store = open_spec(f'lancedb:{tmp_path / "kb"}', embedder=HashingEmbeddingModel(16), language='de')
    assert isinstance(store, LanceDBStore) and store.text_analyzer == TextAnalyzer('de')
    other = open_store(str(tmp_path / 'other'), embedder=HashingEmbeddingModel(16), language='zh')
    assert other.text_analyzer == TextAnalyzer('zh')


# -- filters and exact top_k ------------------------------------------------------------------


def _filtered_corpus() -> list[Document]:
    rng = random.Random(7)
    words = ['北京', '大学', '上海', '天气', '图书馆', '学生']
    docs = []
    for i in range(300):
        text = ''.join(rng.choice(words) for _ in range(4)) + '。'
        docs.append(_doc(f'gen/{i}', [text], {'n': i, 'tenant': 'acme' if i % 30 == 0 else 'globex'}))
    return docs


async def test_filters_and_exact_top_k_under_a_language(tmp_path: Path) -> None:
    docs = _filtered_corpus()
    store = _store(tmp_path / 'kb', 'zh')
    await store.upsert(docs)
    analyzer = TextAnalyzer('zh')
    query = '图书馆的学生'
    wanted = set(analyzer.tokens(query))
    scopes = [F.eq('tenant', 'acme'), F.eq('tenant', 'acme') & F.lt('n', 150), F.in_('n', [3, 33, 63, 93]), None]
    for scope in scopes:
        expected = {
            c.document_uri
            for d in docs
            for c in d.chunks
            if matches(scope, c) and wanted & set(analyzer.tokens(c.text))
        }
        assert expected, scope
        assert set(await _ids(store, query, top_k=500, f=scope)) == expected, scope
        top = await _ids(store, query, top_k=3, f=scope)
        assert len(top) == min(3, len(expected)) and set(top) <= expected, scope


# -- the three stores agree -----------------------------------------------------------------


@pytest.mark.parametrize('language', ['zh', 'de', 'en'])
async def test_memory_tantivy_and_lancedb_match_the_same_records(tmp_path: Path, language: str) -> None:
    tantivy_store = pytest.importorskip('toolish_rag_tantivy')
    stores = {
        'memory': InMemoryStore(HashingEmbeddingModel(16), language=language),
        'tantivy': tantivy_store.TantivyStore(language=language),
        'lancedb': _store(tmp_path / 'kb', language),
    }
    for store in stores.values():
        await store.upsert(MIXED)
    matched = 0
    for query in QUERIES:
        found = {name: set(await _ids(store, query)) for name, store in stores.items()}
        assert found['tantivy'] == found['memory'] == found['lancedb'], (query, found)
        matched += bool(found['memory'])
    assert matched >= len(QUERIES) - 2  # the queries do match: the agreement is not on empty sets


# -- the conformance kit with a language analyzer ----------------------------------------------


@pytest.mark.slow
class TestLanceDBChineseConformance(StoreConformance):
    # A language changes how text is analysed when written, queried and reopened: text search and writes.
    protocols = frozenset({TextSearch, DocumentStore})

    async def make_store(self, path: Path, embedder: Any) -> LanceDBStore:
        return LanceDBStore(path, embedder=embedder, language='zh')

    async def reopen_store(self, path: Path, embedder: Any) -> LanceDBStore:
        return LanceDBStore(path, embedder=embedder)
