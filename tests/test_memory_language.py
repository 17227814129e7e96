"""`InMemoryStore(language=...)`: text search in the collection's language (issue 16, part 3).

The store indexes and queries the tokens of one `TextAnalyzer`; the choice is saved with a
persisted store (a store saved before analyzers existed opens as English, what it was built
with), and opening it with another language re-analyses the texts rather than querying an
index built with a different analyzer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolish_rag import TextAnalyzer, ToolishRag
from toolish_rag.builder import DocumentBuilder
from toolish_rag.cli import build_parser
from toolish_rag.content import Chunk, Document
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.filters import PropertyFilter as F
from toolish_rag.protocols import DocumentStore, TextSearch
from toolish_rag.retriever import Retriever
from toolish_rag.search import SearchRequest
from toolish_rag.stores import InMemoryStore, open_store
from toolish_rag.stores.registry import _takes_language
from toolish_rag.testing import StoreConformance

CHINESE = {
    'beijing': '北京大学创建于1898年，是中国第一所国立综合性大学。',  # noqa: RUF001
    'shanghai': '上海是中国最大的城市，也是重要的金融中心。',  # noqa: RUF001
    'rivers': '长江是亚洲最长的河流，流经中国多个省份。',  # noqa: RUF001
}
GERMAN = {
    'houses': 'Die Häuser der Altstadt wurden im Krieg zerstört.',
    'bikes': 'Viele Fahrräder stehen vor dem Bahnhof.',
    'bread': 'Das Brot wird jeden Morgen frisch gebacken.',
}


def _docs(texts: dict[str, str], tenant: str = 'acme') -> list[Document]:
    out = []
    for key, text in texts.items():
        b = DocumentBuilder(f'file:///{key}.md', key, metadata={'tenant': tenant})
        b.add_chunk(b.section('Body'), text)
        out.append(b.build())
    return out


async def _top(store: InMemoryStore, query: str, k: int = 3) -> list[str]:
    hits = await store.text_search(SearchRequest(query, k))
    return [h.record.document_id for h in hits if isinstance(h.record, Chunk)]


def _ids(docs: list[Document]) -> dict[str, str]:
    return {d.title: d.id for d in docs}


async def test_chinese_questions_find_their_passage() -> None:
    store = InMemoryStore(HashingEmbeddingModel(32), language='zh')
    docs = _docs(CHINESE)
    await store.upsert(docs)
    ids = _ids(docs)
    assert (await _top(store, '北京大学是什么时候创建的？'))[0] == ids['beijing']  # noqa: RUF001
    assert (await _top(store, '最大的城市'))[0] == ids['shanghai']
    assert (await _top(store, '亚洲最长的河流'))[0] == ids['rivers']
    assert store.text_analyzer == TextAnalyzer('zh') and store.language == 'zh'
    assert "language='zh'" in repr(store)


async def test_german_stems_and_stop_words() -> None:
    german = InMemoryStore(HashingEmbeddingModel(32), language='de')
    english = InMemoryStore(HashingEmbeddingModel(32), language='en')
    docs = _docs(GERMAN)
    for store in (german, english):
        await store.upsert(docs)
    ids = _ids(docs)
    assert await _top(german, 'Haus', 1) == [ids['houses']]  # 'Häuser' stems to 'haus'
    assert await _top(german, 'Fahrrad', 1) == [ids['bikes']]
    assert await _top(english, 'Haus') == []  # English stemming does not fold German plurals
    assert await _top(german, 'die der dem') == []  # German stop words only
    assert len(await _top(english, 'die der dem')) == 2  # ... that English keeps (the third has none)


async def test_scoped_search_in_another_language_sees_only_its_scope() -> None:
    store = InMemoryStore(HashingEmbeddingModel(32), language='zh')
    await store.upsert([*_docs(CHINESE, 'acme'), *_docs({'other': '北京大学的另一份文件'}, 'globex')])
    hits = await Retriever(store, F.eq('tenant', 'acme')).text_search('北京大学', 10)
    assert hits and all(h.record.metadata['tenant'] == 'acme' for h in hits)


# -- persistence --------------------------------------------------------------------------


def _settings(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((path / 'settings.json').read_text(encoding='utf-8'))
    return loaded


async def test_the_language_is_saved_and_reopens(tmp_path: Path) -> None:
    store = InMemoryStore(HashingEmbeddingModel(32), path=tmp_path, language='zh', statistics='store')
    await store.upsert(_docs(CHINESE))
    assert _settings(tmp_path) == {'statistics': 'store', 'analyzer': 'toolish-v1:zh'}
    reopened = InMemoryStore(HashingEmbeddingModel(32), path=tmp_path)
    assert reopened.language == 'zh' and reopened.statistics == 'store'
    assert await _top(reopened, '最大的城市') == await _top(store, '最大的城市')


async def test_a_store_saved_before_languages_opens_as_english(tmp_path: Path) -> None:
    old = InMemoryStore(HashingEmbeddingModel(32), path=tmp_path, statistics='store', language='en')
    await old.upsert(_docs(GERMAN))  # its manifest says 'en', the default then
    (tmp_path / 'settings.json').write_text(json.dumps({'statistics': 'store'}), encoding='utf-8')  # as written then
    reopened = InMemoryStore(HashingEmbeddingModel(32), path=tmp_path)
    assert reopened.language == 'en'
    assert await _top(reopened, 'Haus') == []
    assert _settings(tmp_path) == {'statistics': 'store'}  # opening as English records nothing


async def test_another_explicit_language_reanalyses_and_is_saved(tmp_path: Path) -> None:
    english = InMemoryStore(HashingEmbeddingModel(32), path=tmp_path, language='en')
    docs = _docs(GERMAN)
    await english.upsert(docs)
    assert await _top(english, 'Haus') == []
    assert _settings(tmp_path) == {'analyzer': 'toolish-v1:en'}

    german = InMemoryStore(HashingEmbeddingModel(32), path=tmp_path, language='de')
    assert await _top(german, 'Haus', 1) == [_ids(docs)['houses']]  # the index was rebuilt with German
    assert _settings(tmp_path) == {'analyzer': 'toolish-v1:de'}
    assert InMemoryStore(HashingEmbeddingModel(32), path=tmp_path).language == 'de'
    back = InMemoryStore(HashingEmbeddingModel(32), path=tmp_path, language='en')
    assert await _top(back, 'Haus') == [] and _settings(tmp_path) == {'analyzer': 'toolish-v1:en'}


async def test_a_reopened_auto_store_does_not_detect_its_records_again(tmp_path: Path) -> None:
    store = InMemoryStore(HashingEmbeddingModel(32), path=tmp_path, language='auto')
    docs = _docs(GERMAN)
    await store.upsert(docs)
    saved = sorted((tmp_path / 'segments').glob('*/languages.json'))
    assert saved and [json.loads(f.read_text(encoding='utf-8')) for f in saved] == [['de', 'de', 'de']]
    assert await _top(store, 'Haus', 1) == [_ids(docs)['houses']]
    # The saved languages are what a reopened store analyses in: rewritten to English, the German
    # plural no longer stems to 'haus' (a store that detected again would find it).
    saved[0].write_text(json.dumps(['en', 'en', 'en']), encoding='utf-8')
    assert await _top(InMemoryStore(HashingEmbeddingModel(32), path=tmp_path), 'Haus') == []
    # A store saved before languages were kept detects them when reopened, as then.
    saved[0].unlink()
    assert await _top(InMemoryStore(HashingEmbeddingModel(32), path=tmp_path), 'Haus', 1) == [_ids(docs)['houses']]


def test_an_unknown_language_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match='unknown text analysis language'):
        InMemoryStore(HashingEmbeddingModel(32), language='klingon')
    (tmp_path / 'settings.json').write_text(json.dumps({'analyzer': 'other-lib:zh'}), encoding='utf-8')
    with pytest.raises(ValueError, match='unknown text analyzer'):
        InMemoryStore(HashingEmbeddingModel(32), path=tmp_path)


# -- what the model reads -----------------------------------------------------------------


async def _text_description(store: InMemoryStore) -> str:
    definitions = await ToolishRag(store, name='kb').tool_definitions()
    [text] = [d for d in definitions if d.name == 'kb_text_search']
    return text.description or ''


async def test_the_text_tool_says_what_the_analyzer_does() -> None:
    english = await _text_description(InMemoryStore(HashingEmbeddingModel(32), language='en'))
    chinese = await _text_description(InMemoryStore(HashingEmbeddingModel(32), language='zh'))
    german = await _text_description(InMemoryStore(HashingEmbeddingModel(32), language='de'))
    assert 'English stemming' in english and 'text analysis' not in english
    assert TextAnalyzer('zh').describe() in chinese and 'English stemming' not in chinese
    assert TextAnalyzer('de').describe() in german and 'English stemming' not in german


# -- plumbing: registry and CLI -----------------------------------------------------------


def test_open_store_passes_the_language(tmp_path: Path) -> None:
    assert open_store('memory', embedder=HashingEmbeddingModel(8), language='ja').language == 'ja'
    assert open_store('memory', embedder=HashingEmbeddingModel(8)).language == 'auto'


def test_factories_without_a_language_keyword_are_told_apart() -> None:
    def old(location: str, *, embedder: Any = None) -> None: ...

    def new(location: str, *, embedder: Any = None, language: str | None = None) -> None: ...

    def options(location: str, *, embedder: Any = None, **options: Any) -> None: ...

    assert not _takes_language(old)
    assert _takes_language(new) and _takes_language(options)


def test_cli_language_option() -> None:
    parser = build_parser()
    args = parser.parse_args(['eval', 'some/folder', '--store', 'memory', '--language', 'German'])
    assert args.language == 'de'
    assert parser.parse_args(['search', 'q']).language is None
    with pytest.raises(SystemExit):
        parser.parse_args(['eval', 'some/folder', '--language', 'klingon'])


# -- the conformance kit in another language ------------------------------------------------


@pytest.mark.slow  # the whole kit again (about 15 s idle); the default run has it in English (test_conformance_memory.py)
class TestChineseInMemoryStore(StoreConformance):
    # A language changes how text is analysed when written, queried and reopened: text search and writes.
    protocols = frozenset({TextSearch, DocumentStore})

    async def make_store(self, path: Path, embedder: Any) -> InMemoryStore:
        return InMemoryStore(embedder, path=path, language='zh')

    async def reopen_store(self, path: Path, embedder: Any) -> InMemoryStore:
        return InMemoryStore(embedder, path=path)
