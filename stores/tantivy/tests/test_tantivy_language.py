"""`TantivyStore(language=...)`: the core's language-aware analyzer, indexed as whitespace-split words.

Chinese found by Chinese queries (character bigrams), German by stems, the analysis saved with
the index and refused when reopened with another, filters and exact ``top_k`` under a language,
the partitioned store, and the same matches as `InMemoryStore` with the same language.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from toolish_rag import ToolishRag
from toolish_rag.analysis import TextAnalyzer, analyzer_for
from toolish_rag.builder import DocumentBuilder
from toolish_rag.content import Document, Entity, MetadataValue
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.errors import QuerySyntaxError
from toolish_rag.filters import PropertyFilter as F, matches
from toolish_rag.protocols import DocumentStore, TextSearch
from toolish_rag.search import SearchRequest
from toolish_rag.stores.memory import InMemoryStore
from toolish_rag.testing import StoreConformance
from toolish_rag_tantivy import PartitionedTantivyStore, TantivyStore, open_store
from toolish_rag_tantivy._query import TEXT_QUERY_SYNTAX


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


async def _ids(store: Any, query: str, top_k: int = 50, f: Any = None) -> list[str]:
    hits = await store.text_search(SearchRequest(query=query, top_k=top_k, filter=f))
    return [h.record.document_uri for h in hits]


# -- Chinese, German ------------------------------------------------------------------------


async def test_chinese_text_is_found_by_a_chinese_query_through_bigrams() -> None:
    store = TantivyStore(language='zh')
    await store.upsert(CHINESE)
    # "北京的大学" shares the bigrams 北京 and 大学 with the Peking University page, and no
    # whole word: the text has no spaces, so a word analyzer sees one token per sentence.
    found = await _ids(store, '北京的大学')
    assert found[0] == 'zh/beijing'
    assert set(found) == {'zh/beijing', 'zh/scattered'}
    assert await _ids(store, '天气') == ['zh/weather']
    legacy = TantivyStore(analyzer='subword_stem')  # what indexes built before 'auto' hold
    await legacy.upsert(CHINESE)
    assert await _ids(legacy, '北京的大学') == []  # what the language analyzer fixes


async def test_a_quoted_chinese_phrase_needs_its_characters_in_a_row() -> None:
    store = TantivyStore(language='zh')
    await store.upsert(CHINESE)
    # Unquoted, the sentence's bigrams are OR-ed (not one long phrase), so both pages match;
    # quoted, only the page with 北京大学 in a row does.
    assert set(await _ids(store, '北京大学')) == {'zh/beijing', 'zh/scattered'}
    assert await _ids(store, '"北京大学"') == ['zh/beijing']


async def test_german_words_match_by_their_stems_and_stop_words_are_dropped() -> None:
    store = TantivyStore(language='de')
    await store.upsert(GERMAN)
    assert await _ids(store, 'Häuser') == ['de/haus']  # häuser and haus share the stem
    assert await _ids(store, 'Fahrrad') == ['de/fahrrad']
    assert await _ids(store, 'Fahrrädern') == ['de/fahrrad']
    with pytest.raises(QuerySyntaxError, match='no searchable words'):
        await _ids(store, 'das und der')  # German stop words only
    legacy = TantivyStore(analyzer='subword_stem')  # what indexes built before 'auto' hold
    await legacy.upsert(GERMAN)
    assert await _ids(legacy, 'Häuser') == []


async def test_query_operators_still_work_on_analysed_words() -> None:
    store = TantivyStore(language='de')
    await store.upsert(GERMAN)
    assert await _ids(store, '+haus -wetter') == ['de/haus']
    assert await _ids(store, 'Berlin -sonnig') == []
    assert set(await _ids(store, 'haus OR wetter')) == {'de/haus', 'de/wetter'}
    assert await _ids(store, 'sonig~1') == ['de/wetter']  # a misspelling within one edit
    assert await _ids(store, 'tenant:haus') == ['de/haus']  # never a field: plain words


async def test_the_index_holds_exactly_the_core_tokens() -> None:
    store = TantivyStore(language='zh')
    doc = _doc('x/one', ['Peking University 北京大学 Häuser'])
    await store.upsert([doc])
    tokens = analyzer_for('zh').tokens(doc.chunks[0].text)
    assert {'北京', '京大', '大学', 'häuser', 'peking'} <= set(tokens)
    for token in tokens:  # each core token is a term of the index, found as itself
        assert await _ids(store, f'"{token}"') == ['x/one'], token


# -- saved analysis -------------------------------------------------------------------------


async def test_reopening_keeps_the_language_and_another_one_is_refused(tmp_path: Path) -> None:
    path = tmp_path / 'ix'
    store = TantivyStore(path, language='zh')
    await store.upsert(CHINESE)
    store.close()
    saved = json.loads((path / 'toolish_rag_tantivy.json').read_text())
    assert saved['analyzer'] == 'toolish-v1:zh'

    reopened = TantivyStore(path)
    assert reopened.text_analyzer == TextAnalyzer('zh') and reopened.analyzer_name is None
    assert reopened.language == 'zh'
    assert await _ids(reopened, '北京的大学') == await _ids(store, '北京的大学')
    assert TantivyStore(path, language='chinese').language == 'zh'  # a name is the same analyzer
    with pytest.raises(ValueError, match=r"indexed with language='zh'.*new location.*language='de'"):
        TantivyStore(path, language='de')
    with pytest.raises(ValueError, match=r"indexed with language='zh'.*analyzer='en_stem'"):
        TantivyStore(path, analyzer='en_stem')


def test_a_legacy_index_keeps_its_analyzer_and_refuses_a_language(tmp_path: Path) -> None:
    TantivyStore(tmp_path / 'ix', analyzer='subword_stem')  # the default before 'auto'
    saved = json.loads((tmp_path / 'ix' / 'toolish_rag_tantivy.json').read_text())
    assert saved == {'format': 2, 'analyzer': 'subword_stem'}  # today's format, unchanged
    legacy = TantivyStore(tmp_path / 'ix')
    assert legacy.text_analyzer is None and legacy.analyzer_name == 'subword_stem'
    with pytest.raises(ValueError):
        legacy.index.parse_query('x', ['words'])  # no words field: the schema is today's
    with pytest.raises(ValueError, match=r"indexed with analyzer='subword_stem'.*language='en'"):
        TantivyStore(tmp_path / 'ix', language='en')


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match='not both'):
        TantivyStore(analyzer='en_stem', language='de')
    with pytest.raises(ValueError, match='unknown text analysis language'):
        TantivyStore(language='klingon')


async def test_the_text_tool_does_not_claim_english_stemming() -> None:
    store = TantivyStore(language='zh')
    assert TantivyStore(analyzer='subword_stem').text_query_syntax == TEXT_QUERY_SYNTAX
    assert TantivyStore().text_query_syntax == store.text_query_syntax  # 'auto', the default
    assert 'stemmed' not in store.text_query_syntax and 'case changes' not in store.text_query_syntax
    definitions = {d.name: d.description or '' for d in await ToolishRag(store).tool_definitions()}
    assert store.text_query_syntax in definitions['docs_text_search']


async def test_entities_are_analysed_like_chunks() -> None:
    store = TantivyStore(language='zh')
    await store.upsert([Entity(id='e1', name='北京大学', description='中国的一所大学')])
    hits = await store.text_search(SearchRequest(query='北京的大学', top_k=5))
    assert [h.record.id for h in hits] == ['e1']


# -- filters and exact top_k ------------------------------------------------------------------


def _filtered_corpus() -> list[Document]:
    rng = random.Random(7)
    words = ['北京', '大学', '上海', '天气', '图书馆', '学生']
    docs = []
    for i in range(300):
        text = ''.join(rng.choice(words) for _ in range(4)) + '。'
        docs.append(_doc(f'gen/{i}', [text], {'n': i, 'tenant': 'acme' if i % 30 == 0 else 'globex'}))
    return docs


@pytest.mark.parametrize(
    'scope',
    [F.eq('tenant', 'acme'), F.eq('tenant', 'acme') & F.lt('n', 150), F.in_('n', [3, 33, 63, 93]), None],
    ids=['acme', 'acme-and-range', 'in', 'none'],
)
async def test_filters_and_exact_top_k_under_a_language(scope: Any) -> None:
    docs = _filtered_corpus()
    store = TantivyStore(language='zh')
    await store.upsert(docs)
    analyzer = TextAnalyzer('zh')
    query = '图书馆的学生'
    wanted = set(analyzer.tokens(query))
    expected = {
        c.document_uri for d in docs for c in d.chunks if matches(scope, c) and wanted & set(analyzer.tokens(c.text))
    }
    assert expected  # the query matches in every scope
    assert set(await _ids(store, query, top_k=500, f=scope)) == expected
    top = await _ids(store, query, top_k=3, f=scope)
    assert len(top) == min(3, len(expected)) and set(top) <= expected


# -- partitioned, entry point -----------------------------------------------------------------


async def test_partitioned_store_uses_and_saves_the_language(tmp_path: Path) -> None:
    path = tmp_path / 'parts'
    docs = [_doc('a/1', ['北京大学的图书馆'], {'tenant': 'a'}), _doc('b/1', ['上海的大学'], {'tenant': 'b'})]
    store = PartitionedTantivyStore(path, partition_key='tenant', language='zh')
    await store.upsert(docs)
    assert set(await _ids(store, '大学')) == {'a/1', 'b/1'}
    assert await _ids(store, '大学', f=F.eq('tenant', 'b')) == ['b/1']
    store.close()
    reopened = open_store(str(path))
    assert isinstance(reopened, PartitionedTantivyStore) and reopened.text_analyzer == TextAnalyzer('zh')
    assert await _ids(reopened, '图书馆') == ['a/1']
    with pytest.raises(ValueError, match=r"indexed with language='zh'"):
        PartitionedTantivyStore(path, language='de')


async def test_open_store_passes_the_language(tmp_path: Path) -> None:
    from toolish_rag.stores.registry import open_store as open_spec

    store = open_spec(f'tantivy:{tmp_path / "ix"}', language='de')
    assert isinstance(store, TantivyStore) and store.language == 'de'
    assert open_spec(f'tantivy:{tmp_path / "ix"}').language == 'de'  # saved
    assert open_store('', language='zh').language == 'zh'  # in RAM


# -- the same matches as the in-memory store ----------------------------------------------------


@pytest.mark.parametrize('language', ['zh', 'de', 'en'])
async def test_tantivy_matches_what_the_memory_store_matches(language: str) -> None:
    memory = InMemoryStore(HashingEmbeddingModel(16), language=language)
    tantivy = TantivyStore(language=language)
    for store in (memory, tantivy):
        await store.upsert(MIXED)
    for query in QUERIES:
        assert set(await _ids(tantivy, query)) == set(await _ids(memory, query)), query


# -- the conformance kit with a language analyzer ----------------------------------------------


@pytest.mark.slow
class TestTantivyChineseConformance(StoreConformance):
    # A language changes how text is analysed when written, queried and reopened: text search and writes.
    protocols = frozenset({TextSearch, DocumentStore})

    async def make_store(self, path: Path, embedder: Any) -> TantivyStore:
        return TantivyStore(path / 'index', language='zh')

    async def reopen_store(self, path: Path, embedder: Any) -> TantivyStore:
        return TantivyStore(path / 'index')
