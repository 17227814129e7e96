"""`toolish_rag.analysis`: the one text analyzer the three stores share (issue 16, part 3).

English must stay bm25s's tokenisation exactly (held on SciFact and on generated text), so
English indexes and scores do not move; other languages get their stop words and stems;
unspaced scripts become character bigrams in every language.
"""

from __future__ import annotations

import json
import threading
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from tests.helpers import bm25s_english
from toolish_rag import LANGUAGES, TextAnalyzer, analyzer_for
from toolish_rag._tokens import _unspaced_pattern

SCIFACT = Path(__file__).resolve().parents[1] / '..' / 'shared' / 'data' / 'scifact' / 'corpus.jsonl'


# -- unspaced scripts -------------------------------------------------------------------


@pytest.mark.parametrize(
    ('language', 'text', 'expected'),
    [
        ('zh', '北京大学', ['北京', '京大', '大学']),
        ('zh', '书', ['书']),  # a one-character run stays a unigram
        ('zh', '北京。大学', ['北京', '大学']),  # punctuation ends a run
        ('ja', '東京タワー', ['東京', '京タ', 'タワ', 'ワー']),
        ('ja', 'ひらがな', ['ひら', 'らが', 'がな']),
        ('ko', '한국어 텍스트', ['한국', '국어', '텍스', '스트']),
        ('th', 'ภาษาไทย', ['ภา', 'าษ', 'ษา', 'าไ', 'ไท', 'ทย']),
        ('en', '北京大学', ['北京', '京大', '大学']),  # in every language, English included
        ('none', '北京大学', ['北京', '京大', '大学']),
    ],
)
def test_unspaced_runs_become_overlapping_bigrams(language: str, text: str, expected: list[str]) -> None:
    assert TextAnalyzer(language).tokens(text) == expected


def test_mixed_scripts_keep_order_and_cut_at_the_script_boundary() -> None:
    # bm25s alone reads 'python是一种编程语言' as one word: nothing in a query would match it.
    tokens = TextAnalyzer('en').tokens('Running Python是一种语言 in 2024年')
    assert tokens == ['run', 'python', '是一', '一种', '种语', '语言', '2024', '年']
    assert bm25s_english(['Python是一种语言'])[0] == ['python是一种语言']


def test_a_whole_run_that_is_a_stop_word_is_dropped() -> None:
    assert '但是' in TextAnalyzer('zh').stop_words
    assert TextAnalyzer('zh').tokens('但是\uff0c北京') == ['北京']
    assert TextAnalyzer('en').tokens('但是\uff0c北京') == ['但是', '北京']  # not an English stop word


def test_chinese_query_matches_without_word_breaks() -> None:
    zh = TextAnalyzer('zh')
    passage = set(zh.tokens('北京大学创建于1898年\uff0c是中国第一所国立综合性大学。'))
    query = zh.tokens('北京大学是什么时候创建的\uff1f')
    assert {'北京', '京大', '大学', '创建'} <= passage & set(query)


# -- stemmed languages ------------------------------------------------------------------


def test_german_stop_words_and_stems() -> None:
    de = TextAnalyzer('de')
    assert de.tokens('Die Häuser der Bundesrepublik und die Fahrräder') == ['haus', 'bundesrepubl', 'fahrrad']
    assert de.tokens('Haus') == de.tokens('Häusern') == ['haus']
    # The English analyzer keeps German stop words and does not fold plurals.
    assert TextAnalyzer('en').tokens('Die Häuser') == ['die', 'häuser']


def test_non_english_text_is_nfkc_normalised() -> None:
    de = TextAnalyzer('de')
    decomposed = 'Fahrra\u0308der'  # 'a' + combining diaeresis, as some PDFs and file systems write it
    assert de.tokens(decomposed) == de.tokens('Fahrräder') == ['fahrrad']
    assert de.tokens('\uff21\uff22\uff23 \ufb01nanz') == ['abc', 'finanz']  # full-width letters, a ligature


@pytest.mark.parametrize('language', ['fr', 'es', 'ru', 'sv'])
def test_each_stemmed_language_folds_its_own_inflections(language: str) -> None:
    pairs = {
        'fr': ('maisons', 'maison'),
        'es': ('casas', 'casa'),
        'ru': ('книги', 'книга'),
        'sv': ('husen', 'hus'),
    }
    inflected, base = pairs[language]
    analyzer = TextAnalyzer(language)
    assert analyzer.tokens(inflected) == analyzer.tokens(base)
    assert analyzer.stemmer == LANGUAGES[language]


# -- English is bm25s, exactly ----------------------------------------------------------


def test_the_vendored_stop_word_lists_are_bm25s_lists() -> None:
    # Kept as data so the core does not install bm25s (docs/design.md): the same words, in each language.
    from bm25s import stopwords

    from toolish_rag._tokens import _stop_words

    names = {'en': 'EN', 'de': 'GERMAN', 'nl': 'DUTCH', 'fr': 'FRENCH', 'es': 'SPANISH', 'pt': 'PORTUGUESE'}
    names |= {'it': 'ITALIAN', 'ru': 'RUSSIAN', 'sv': 'SWEDISH', 'no': 'NORWEGIAN', 'zh': 'CHINESE', 'tr': 'TURKISH'}
    names |= {'ko': 'KOREAN', 'da': 'DANISH'}
    for code, name in names.items():
        assert _stop_words(code) == frozenset(getattr(stopwords, f'STOPWORDS_{name}')), code
    assert _stop_words('fi') == frozenset()


def test_english_equals_bm25s_on_scifact() -> None:
    if not SCIFACT.is_file():
        pytest.skip(f'SciFact is not at {SCIFACT}')
    with SCIFACT.open(encoding='utf-8') as f:
        rows = [json.loads(line) for line in f]
    texts = [f'{r["title"]}\n\n{r["text"]}' for r in rows]
    spaced = [t for t in texts if not _unspaced_pattern().search(t.lower())]
    assert len(spaced) > 5000
    assert TextAnalyzer('en').tokenize(spaced) == bm25s_english(spaced)


_WORDS = st.sampled_from(
    [
        'the',
        'The',
        'and',
        'running',
        'Runs',
        'ran',
        'généralement',
        'über',
        '\ufb01nance',
        '\uff21\uff22\uff23',
        'x',
        '42',
        'a_b',
    ]
)
_SPACED_TEXT = st.lists(
    st.one_of(_WORDS, st.text(st.characters(exclude_categories=['Cs']), max_size=12)), max_size=20
).map(' '.join)


@settings(max_examples=300, deadline=None)
@given(st.lists(_SPACED_TEXT, min_size=1, max_size=5))
def test_english_equals_bm25s_on_any_text_without_unspaced_scripts(texts: list[str]) -> None:
    texts = [t for t in texts if not _unspaced_pattern().search(t.lower())]
    assert TextAnalyzer('en').tokenize(texts) == bm25s_english(texts)


def test_combining_marks_stay_inside_their_words() -> None:
    """Python's \\w leaves out vowel signs and points: a Hindi word must not be cut at each one."""
    text = 'भारत की राजधानी नई दिल्ली है'
    assert TextAnalyzer('none').tokenize([text]) == [['भारत', 'की', 'राजधानी', 'नई', 'दिल्ली', 'है']]
    hindi = TextAnalyzer('hi').tokenize([text])[0]
    assert 'रत' not in hindi and any(token.startswith('भारत') for token in hindi)
    assert TextAnalyzer('none').tokenize(['தமிழ் மொழி']) == [['தமிழ்', 'மொழி']]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted([*LANGUAGES, 'none'])), st.text(st.characters(exclude_categories=['Cs'])))
def test_tokens_are_never_empty_and_hold_no_whitespace(language: str, text: str) -> None:
    """Stores index ``' '.join(tokens)`` with a whitespace tokenizer: a token must survive that."""
    analyzer = TextAnalyzer(language)
    tokens = analyzer.tokens(text)
    assert all(t and t.split() == [t] for t in tokens)
    assert ' '.join(tokens).split() == tokens
    assert analyzer.tokenize([text, text]) == [tokens, tokens]  # the batch path and the stem cache agree


def test_the_batch_path_equals_one_text_at_a_time_in_threads() -> None:
    """Searches tokenize in worker threads: the shared stem cache and per-thread stemmers hold."""
    texts = [f'Die Fahrräder {i} fuhren über Brücken und Straßen nummer{i % 50}' for i in range(400)]
    de = TextAnalyzer('de')
    expected = [de.tokens(t) for t in texts]
    results: list[list[list[str]]] = []

    def work() -> None:
        results.append(de.tokenize(texts))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [expected] * 4


# -- identity and choice ----------------------------------------------------------------


@pytest.mark.parametrize('language', sorted([*LANGUAGES, 'none']))
def test_identity_round_trips(language: str) -> None:
    analyzer = TextAnalyzer(language)
    assert analyzer.identity == f'toolish-v1:{language}'
    assert TextAnalyzer.from_identity(analyzer.identity) == analyzer
    assert analyzer.describe().endswith('.')


def test_languages_cover_pystemmer_and_unspaced_codes() -> None:
    import Stemmer

    assert {'en', 'de', 'fr', 'es', 'ru', 'zh', 'ja', 'ko', 'th'} <= set(LANGUAGES)
    stemmed = {name for code, name in LANGUAGES.items() if code not in {'zh', 'ja', 'ko', 'th'}}
    assert stemmed <= set(Stemmer.algorithms())
    assert len(stemmed) >= 25


def test_analyzer_for_defaults_to_english_and_accepts_names() -> None:
    assert analyzer_for(None) == TextAnalyzer() == TextAnalyzer('en')
    assert analyzer_for('DE') == analyzer_for('german') == TextAnalyzer('de')
    assert analyzer_for('none').stemmer is None and not analyzer_for('none').stop_words


def test_unknown_language_error_lists_the_codes() -> None:
    with pytest.raises(ValueError, match='unknown text analysis language') as info:
        analyzer_for('klingon')
    assert 'de' in str(info.value) and 'zh' in str(info.value) and 'none' in str(info.value)
    with pytest.raises(ValueError):
        TextAnalyzer('xx')
    with pytest.raises(ValueError, match='unknown text analyzer'):
        TextAnalyzer.from_identity('lucene:standard')


def test_descriptions_say_what_the_analyzer_does() -> None:
    assert 'German stop words' in TextAnalyzer('de').describe()
    assert 'Snowball' in TextAnalyzer('de').describe()
    zh = TextAnalyzer('zh').describe()
    assert zh.startswith('Chinese') and 'two-character' in zh and 'Snowball' not in zh
    assert 'no stemming' in TextAnalyzer('none').describe()


def test_unspaced_class_holds_letters_not_punctuation() -> None:
    pattern = _unspaced_pattern()
    for ch in '北ひカ한ไ𠀀':
        assert pattern.fullmatch(ch), ch
    for ch in '。、「」།၊':
        assert not pattern.search(ch), unicodedata.name(ch)
