"""Language-aware text analysis for BM25: one tokenizer every store shares.

See docs/text-analysis.md#what-the-analyzer-does.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Any

__all__ = ['LANGUAGES', 'TextAnalyzer', 'analyzer_for']

_IDENTITY_PREFIX = 'toolish-v1:'

_CODES: dict[str, str] = {
    'ar': 'arabic',
    'ca': 'catalan',
    'cs': 'czech',
    'da': 'danish',
    'de': 'german',
    'el': 'greek',
    'en': 'english',
    'eo': 'esperanto',
    'es': 'spanish',
    'et': 'estonian',
    'eu': 'basque',
    'fa': 'persian',
    'fi': 'finnish',
    'fr': 'french',
    'ga': 'irish',
    'hi': 'hindi',
    'hu': 'hungarian',
    'hy': 'armenian',
    'id': 'indonesian',
    'it': 'italian',
    'lt': 'lithuanian',
    'ne': 'nepali',
    'nl': 'dutch',
    'no': 'norwegian',
    'pl': 'polish',
    'pt': 'portuguese',
    'ro': 'romanian',
    'ru': 'russian',
    'sr': 'serbian',
    'st': 'sesotho',
    'sv': 'swedish',
    'ta': 'tamil',
    'tr': 'turkish',
    'yi': 'yiddish',
}
_UNSTEMMED: dict[str, str] = {'ja': 'japanese', 'ko': 'korean', 'th': 'thai', 'zh': 'chinese'}


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


@cache
def _stop_words(code: str) -> frozenset[str]:
    """bm25s's stop-word list for ``code`` (empty when it ships none)."""
    from bm25s import stopwords

    lists: dict[str, tuple[str, ...]] = {
        'en': stopwords.STOPWORDS_EN,
        'de': stopwords.STOPWORDS_GERMAN,
        'nl': stopwords.STOPWORDS_DUTCH,
        'fr': stopwords.STOPWORDS_FRENCH,
        'es': stopwords.STOPWORDS_SPANISH,
        'pt': stopwords.STOPWORDS_PORTUGUESE,
        'it': stopwords.STOPWORDS_ITALIAN,
        'ru': stopwords.STOPWORDS_RUSSIAN,
        'sv': stopwords.STOPWORDS_SWEDISH,
        'no': stopwords.STOPWORDS_NORWEGIAN,
        'zh': stopwords.STOPWORDS_CHINESE,
        'tr': stopwords.STOPWORDS_TURKISH,
        'ko': stopwords.STOPWORDS_KOREAN,
        'da': stopwords.STOPWORDS_DANISH,
    }
    return frozenset(lists.get(code, ()))


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
    ranges: list[tuple[int, int]] = []
    for lo, hi in _UNSPACED_BLOCKS:
        for cp in range(lo, hi + 1):
            if unicodedata.category(chr(cp))[0] in 'LMN':
                if ranges and ranges[-1][1] == cp - 1:
                    ranges[-1] = (ranges[-1][0], cp)
                else:
                    ranges.append((cp, cp))
    members = ''.join(chr(lo) if lo == hi else f'{chr(lo)}-{chr(hi)}' for lo, hi in ranges)
    return re.compile(f'([{members}]+)')


_WORDS = re.compile(r'(?u)\b\w\w+\b')
"""bm25s's (and scikit-learn's) word pattern: two or more word characters."""

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


@dataclass(frozen=True, slots=True)
class TextAnalyzer:
    """How text is cut into BM25 tokens for one language (docs/text-analysis.md has the rules).

    ``language`` is a code from `LANGUAGES` (an English name such as ``'german'`` is accepted
    and stored as its code) or ``'none'``: no stop words, no stemming.
    """

    language: str = 'en'

    def __post_init__(self) -> None:
        object.__setattr__(self, 'language', _code(self.language))

    # -- what it is -------------------------------------------------------------------

    @property
    def identity(self) -> str:
        """A stable id to save with an index (``'toolish-v1:de'``): another identity means rebuild."""
        return f'{_IDENTITY_PREFIX}{self.language}'

    @classmethod
    def from_identity(cls, identity: str) -> TextAnalyzer:
        """The analyzer an index saved with ``identity`` was built with (`ValueError` if unknown)."""
        if not identity.startswith(_IDENTITY_PREFIX):
            raise ValueError(f'unknown text analyzer {identity!r} (written by a newer toolish-rag?)')
        return cls(identity.removeprefix(_IDENTITY_PREFIX))

    @property
    def name(self) -> str:
        """The language's English name, capitalised (``'German'``); ``'Unstemmed'`` for ``'none'``."""
        return 'Unstemmed' if self.language == _NONE else LANGUAGES[self.language].capitalize()

    @property
    def stemmer(self) -> str | None:
        """The PyStemmer algorithm applied to words, if any."""
        return _algorithm(self.language)

    @property
    def stop_words(self) -> frozenset[str]:
        """The words (and whole unspaced runs) dropped before stemming."""
        return _stop_words(self.language)

    def describe(self) -> str:
        """One sentence for the text tool's description: what the model's query words become."""
        unspaced = (
            'Chinese, Japanese, Korean, Thai and other scripts written without spaces are cut into '
            'overlapping two-character pieces, so a query needs no word breaks and matches any '
            'two-character sequence it shares with a passage'
        )
        if self.language in _UNSTEMMED:
            return f'{self.name} text analysis: {unspaced}; other words are lower-cased and matched whole.'
        parts = ['words lower-cased']
        if self.stop_words:
            parts.append(f'{self.name} stop words dropped')
        if self.stemmer is not None:
            parts.append(f'{self.name} Snowball stems (different endings of a word match)')
        else:
            parts.append('no stemming (words match exactly)')
        subject = 'Text analysis' if self.language == _NONE else f'{self.name} text analysis'
        return f'{subject}: {", ".join(parts)}; {unspaced}.'

    # -- tokens -----------------------------------------------------------------------

    def tokens(self, text: str) -> list[str]:
        """The tokens of one text (a query, say), in order."""
        return self.tokenize([text])[0]

    def tokenize(self, texts: Sequence[str]) -> list[list[str]]:
        """The tokens of each text, in order: the batch path (each distinct word is stemmed once)."""
        split_runs = _unspaced_pattern().split
        find_words = _WORDS.findall
        stop = self.stop_words
        normalise = self.language != 'en'
        out: list[list[str]] = []
        words: set[str] = set()
        pieces: set[str] = set()
        for text in texts:
            if normalise:
                text = unicodedata.normalize('NFKC', text)
            text = text.lower()
            if text.isascii():  # O(1) in CPython: no unspaced script, the common case
                tokens = [w for w in find_words(text) if w not in stop]
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
            out.append(tokens)
        algorithm = self.stemmer
        if algorithm is None or not words:
            return out
        stems = _stem_cache(algorithm)
        missing = [w for w in words if w not in stems]
        if missing:
            if len(stems) + len(missing) > _STEM_CACHE_LIMIT:
                # A fresh dict, not clear(): a thread mapping its batch through the old one keeps it whole.
                stems = _stem_caches[algorithm] = {}
            stems.update(zip(missing, _stemmer(algorithm).stemWords(missing), strict=True))
        # This batch's words to their stems, its bigrams to themselves (a bigram holds only unspaced
        # letters and a word none, so the two never collide).
        stem_of = {w: stems[w] for w in words}
        stem_of.update(zip(pieces, pieces, strict=True))
        get = stem_of.__getitem__
        return [list(map(get, tokens)) for tokens in out]


def _stem_cache(algorithm: str) -> dict[str, str]:
    found = _stem_caches.get(algorithm)
    if found is None:
        found = _stem_caches.setdefault(algorithm, {})
    return found


def _algorithm(code: str) -> str | None:
    if code in _UNSTEMMED or code == _NONE:
        return None
    return LANGUAGES[code]


def _code(language: str) -> str:
    given = language.strip().lower() if isinstance(language, str) else language
    if given == _NONE or given in LANGUAGES:
        return given
    by_name = {name: code for code, name in LANGUAGES.items()}
    if isinstance(given, str) and given in by_name:
        return by_name[given]
    raise ValueError(
        f'unknown text analysis language {language!r}: choose one of {", ".join(LANGUAGES)} '
        f"(ISO 639-1 codes) or 'none' (no stemming, no stop words)"
    )


def analyzer_for(language: str | None) -> TextAnalyzer:
    """The analyzer for a collection's ``language`` (``None``: English, the default everywhere)."""
    return TextAnalyzer('en' if language is None else language)
