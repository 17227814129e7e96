"""Cutting text into BM25 tokens for one language: words, stop words, stems, bigrams of unspaced scripts.

`toolish_rag.analysis.TextAnalyzer` is the face (and chooses the language); this module is the mechanics.
See docs/text-analysis.md#what-the-analyzer-does.
"""

from __future__ import annotations

import json
import re
import threading
import unicodedata
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import Any

from ._char_class import char_class
from ._language_codes import CODES, UNSTEMMED

__all__ = ['AUTO', 'LANGUAGES', 'tokenize']

_CODES = CODES
_UNSTEMMED = UNSTEMMED


def _languages() -> Mapping[str, str]:
    import Stemmer

    shipped = set(Stemmer.algorithms())
    found = {code: name for code, name in _CODES.items() if name in shipped}
    return MappingProxyType(dict(sorted({**found, **_UNSTEMMED}.items())))


LANGUAGES: Mapping[str, str] = _languages()
"""ISO 639-1 code -> language name, for every language the analyzer knows.

The name is the PyStemmer (Snowball) algorithm when PyStemmer ships one (``'de'`` -> ``'german'``);
``'zh'``, ``'ja'``, ``'ko'`` and ``'th'`` have no stemmer (their text is bigrammed). Besides these
codes, ``'none'`` means no stop words and no stemming.
"""

_NONE = 'none'

AUTO = 'auto'
"""The analyzer language that detects each text's language and analyses it with that language's rules.

See docs/text-analysis.md#automatic-language."""


@cache
def _stop_words(code: str) -> frozenset[str]:
    """The stop-word list for ``code`` (empty when there is none): bm25s's lists, kept as data in
    ``toolish_rag/data/stop_words.json`` (MIT, ``data/STOP_WORDS_LICENSE``) so an English store's
    tokens stay exactly bm25s's without installing it (docs/design.md#dependencies)."""
    return frozenset(_stop_word_lists().get(code, ()))


@cache
def _stop_word_lists() -> dict[str, list[str]]:
    text = resources.files('toolish_rag').joinpath('data/stop_words.json').read_text(encoding='utf-8')
    lists: dict[str, list[str]] = json.loads(text)['lists']
    return lists


# Blocks of scripts written without spaces between words. Only their letters, marks and digits
# form runs (their punctuation, e.g. '。' or Tibetan's shad, separates runs like a space does).
_UNSPACED_BLOCKS: tuple[tuple[int, int], ...] = (
    (0x0E00, 0x0E7F),  # Thai
    (0x0E80, 0x0EFF),  # Lao
    (0x0F00, 0x0FFF),  # Tibetan
    (0x1000, 0x109F),  # Myanmar
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x1780, 0x17FF),  # Khmer
    (0x19E0, 0x19FF),  # Khmer symbols
    (0x2E80, 0x2FDF),  # CJK and Kangxi radicals
    (0x3005, 0x3007),  # iteration mark, closing mark, ideographic zero
    (0x3021, 0x3029),  # Hangzhou numerals
    (0x3031, 0x3035),  # kana repeat marks
    (0x3038, 0x303C),
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3130, 0x318F),  # Hangul compatibility Jamo
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xA960, 0xA97F),  # Hangul Jamo extended A
    (0xA9E0, 0xA9FF),  # Myanmar extended B
    (0xAA60, 0xAA7F),  # Myanmar extended A
    (0xAC00, 0xD7FF),  # Hangul syllables, Jamo extended B
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFFDC),  # half-width Katakana and Hangul
    (0x1B000, 0x1B16F),  # kana supplement and extensions
    (0x20000, 0x3134F),  # CJK extensions B to G
)


@cache
def _unspaced_pattern() -> re.Pattern[str]:
    """A pattern splitting text into other text and runs of unspaced letters (in a group)."""
    members = char_class(
        cp for lo, hi in _UNSPACED_BLOCKS for cp in range(lo, hi + 1) if unicodedata.category(chr(cp))[0] in 'LMN'
    )
    return re.compile(f'({members}+)')


def _marks() -> str:
    """Every combining mark (Unicode categories Mn, Mc, Me) as character-class ranges.

    Python's ``\\w`` leaves them out, so a word in Devanagari, Bengali, Tamil, Thai, or Arabic or
    Hebrew with vowel points would be cut at each vowel sign ('भारत' -> 'रत').
    """
    marks = char_class(cp for cp in range(0x300, 0x20000) if unicodedata.category(chr(cp)) in ('Mn', 'Mc', 'Me'))
    return marks[1:-1]  # the inside of the class, joined to \w in `_WORDS`'s


_BM25S_WORDS = re.compile(r'(?u)\b\w\w+\b')
"""bm25s's (and scikit-learn's) word pattern: two or more word characters. English keeps it, so
an English store's tokens are exactly bm25s's."""

_WORDS = re.compile(f'[\\w{_marks()}]{{2,}}')
"""The word pattern of every other language: bm25s's with combining marks counted as word
characters (on ASCII text it finds exactly what bm25s's finds)."""

_stemmers = threading.local()
"""PyStemmer's stemmers are not thread-safe (searches run in worker threads): one per thread."""

_STEM_CACHE_LIMIT = 1_000_000
_stem_caches: dict[str, dict[str, str]] = {}
"""Stems by language: a vocabulary is stemmed once, whatever the number of texts and queries.

Reads and single inserts of a dict are atomic, and stems are pure, so threads share it unlocked."""


def _stemmer(algorithm: str) -> Any:
    found: dict[str, Any] | None = getattr(_stemmers, 'by_name', None)
    if found is None:
        found = _stemmers.by_name = {}
    stemmer = found.get(algorithm)
    if stemmer is None:
        import Stemmer

        stemmer = found[algorithm] = Stemmer.Stemmer(algorithm)
    return stemmer


def _bigrams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


_FOLD_SPECIAL = {'ß': 'ss', 'ẞ': 'ss', 'æ': 'ae', 'Æ': 'ae', 'œ': 'oe', 'Œ': 'oe', 'ø': 'o', 'Ø': 'o', 'đ': 'd'}
_FOLD_SPECIAL |= {'Đ': 'd', 'ł': 'l', 'Ł': 'l', 'þ': 'th', 'Þ': 'th', 'ð': 'd', 'Ð': 'd', '\u0131': 'i', 'ħ': 'h'}


@cache
def _fold_table() -> dict[int, str]:
    """Latin letters with diacritics (Latin-1 to Latin Extended-B, Latin Extended Additional) to ASCII."""
    table = {ord(k): v for k, v in _FOLD_SPECIAL.items()}
    for cp in [*range(0xC0, 0x250), *range(0x1E00, 0x1F00)]:
        if cp in table:
            continue
        base = ''.join(c for c in unicodedata.normalize('NFKD', chr(cp)) if not unicodedata.combining(c))
        if base and base != chr(cp) and base.isascii() and base.isalpha():
            table[cp] = base.lower()
    return table


def _stem_cache(algorithm: str) -> dict[str, str]:
    found = _stem_caches.get(algorithm)
    if found is None:
        found = _stem_caches.setdefault(algorithm, {})
    return found


def _algorithm(code: str) -> str | None:
    if code in _UNSTEMMED or code in (_NONE, AUTO):
        return None
    return LANGUAGES[code]


def tokenize(
    texts: Sequence[str], language: str, *, fold: bool = False, keep_stop_only: bool = False
) -> list[list[str]]:
    """Each text's tokens in ``language`` (an analyzer code, not ``'auto'``): see `TextAnalyzer`.

    ``fold``: Latin letters' accents folded before stemming, ``café`` -> ``cafe``; ``keep_stop_only``:
    a text of stop words only keeps them rather than having no token.
    """
    out, words, pieces = _split(texts, language, keep_stop_only=keep_stop_only)
    return _stemmed(out, words, pieces, _algorithm(language), fold=fold)


def _split(texts: Sequence[str], language: str, *, keep_stop_only: bool) -> tuple[list[list[str]], set[str], set[str]]:
    """Each text's words and bigrams (stop words dropped), and the distinct words and bigrams of all."""
    split_runs = _unspaced_pattern().split
    normalise = language != 'en'
    find_words = (_WORDS if normalise else _BM25S_WORDS).findall
    stop = _stop_words(language)
    out: list[list[str]] = []
    words: set[str] = set()
    pieces: set[str] = set()
    for text in texts:
        if normalise:
            text = unicodedata.normalize('NFKC', text)
        text = text.lower()
        if text.isascii():  # O(1) in CPython: no unspaced script, the common case
            every = find_words(text)
            tokens = [w for w in every if w not in stop]
            if keep_stop_only and not tokens:
                tokens = every
            words.update(tokens)
            out.append(tokens)
            continue
        tokens = []
        # Even positions are the text between runs (all of it when there is none), odd ones runs.
        for i, part in enumerate(split_runs(text)):
            if i % 2:
                if part not in stop:
                    bigrams = _bigrams(part)
                    pieces.update(bigrams)
                    tokens.extend(bigrams)
            elif part:
                found = [w for w in find_words(part) if w not in stop]
                words.update(found)
                tokens.extend(found)
        if keep_stop_only and not tokens and stop:
            tokens = [w for part in split_runs(text)[::2] for w in find_words(part)]
            words.update(tokens)
        out.append(tokens)
    return out, words, pieces


def _stemmed(
    out: list[list[str]], words: set[str], pieces: set[str], algorithm: str | None, *, fold: bool
) -> list[list[str]]:
    """``out`` with each word stemmed by ``algorithm`` (cached), folded first when ``fold``."""
    if fold:
        words = {w for w in words if not w.isascii()} if algorithm is None else words
    if (algorithm is None and not fold) or not words:
        return out
    # Folded before stemming, so a word typed with or without its accents is stemmed alike.
    table = _fold_table() if fold else None
    plain = {w: w if table is None or w.isascii() else w.translate(table) for w in words}
    if algorithm is None:  # folding only: the other words stay themselves
        return [[plain.get(t, t) for t in tokens] for tokens in out]
    stems = _stem_cache(algorithm)
    missing = list({p for p in plain.values() if p not in stems})
    if missing:
        if len(stems) + len(missing) > _STEM_CACHE_LIMIT:
            # A fresh dict, not clear(): a thread mapping its batch through the old one keeps it whole.
            stems = _stem_caches[algorithm] = {}
        stems.update(zip(missing, _stemmer(algorithm).stemWords(missing), strict=True))
    stem_of = {w: stems[p] for w, p in plain.items()}
    # This batch's words to their stems, its bigrams to themselves (a bigram holds only unspaced
    # letters and a word none, so the two never collide).
    stem_of.update(zip(pieces, pieces, strict=True))
    get = stem_of.__getitem__
    return [list(map(get, tokens)) for tokens in out]
