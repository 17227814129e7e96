"""Language-aware text analysis for BM25: one tokenizer every store shares.

See docs/text-analysis.md#what-the-analyzer-does.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Any

from ._char_class import char_class
from ._language_codes import CODES, UNSTEMMED
from .languages import _script_language, detect_language

__all__ = ['AUTO', 'LANGUAGES', 'Analysis', 'TextAnalyzer', 'analyzer_for']

_IDENTITY_PREFIX = 'toolish-v1:'
_AUTO_V2_IDENTITY = 'toolish-v2:auto'
"""``'auto'`` with accent folding and the stop-word fallback; ``'toolish-v1:auto'`` (saved before) has neither."""

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

_FALLBACK = 'en'
"""The language of a text whose language, and whose document's, no detection names."""

_MIN_QUERY_SHARE = 100
"""A language of fewer than 1/100 of the records searched analyses only the queries detected in it."""

_MINOR_CONFIDENCE = 0.95
"""How sure the detector must be of a query's language for a language under 1% of the records to join."""

_OWN_MIN_CHARS = 40
"""A chunk shorter than this takes its document's language (too few letters to tell on its own)."""


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


@dataclass(frozen=True, slots=True)
class TextAnalyzer:
    """How text is cut into BM25 tokens for one language (docs/text-analysis.md has the rules).

    ``language`` is a code from `LANGUAGES` (an English name such as ``'german'`` is accepted
    and stored as its code), ``'none'``: no stop words, no stemming, or ``'auto'`` (`AUTO`):
    each text analysed in its detected language (`analyse`), each query in the languages the
    collection holds (`query_tokens`).
    """

    language: str = 'en'
    revision: int = 2
    """For ``'auto'`` only: 2 (the default) folds accents and keeps an all-stop-word text's words
    (`_FOLDED`); 1 is ``'auto'`` as indexes saved before it did read back. Other languages: always 1."""

    def __post_init__(self) -> None:
        object.__setattr__(self, 'language', _code(self.language))
        if self.language != AUTO:
            object.__setattr__(self, 'revision', 1)
        elif self.revision not in (1, 2):
            raise ValueError(f"unknown revision {self.revision!r} of language='auto' (1 or 2)")

    # -- what it is -------------------------------------------------------------------

    @property
    def identity(self) -> str:
        """A stable id to save with an index (``'toolish-v1:de'``): another identity means rebuild."""
        if self.language == AUTO and self.revision == 2:
            return _AUTO_V2_IDENTITY
        return f'{_IDENTITY_PREFIX}{self.language}'

    @classmethod
    def from_identity(cls, identity: str) -> TextAnalyzer:
        """The analyzer an index saved with ``identity`` was built with (`ValueError` if unknown)."""
        if identity == _AUTO_V2_IDENTITY:
            return cls(AUTO)
        if not identity.startswith(_IDENTITY_PREFIX):
            raise ValueError(f'unknown text analyzer {identity!r} (written by a newer toolish-rag?)')
        language = identity.removeprefix(_IDENTITY_PREFIX)
        return cls(language, revision=1) if language == AUTO else cls(language)

    @property
    def name(self) -> str:
        """The language's English name, capitalised (``'German'``); ``'Unstemmed'`` for ``'none'``."""
        if self.language == AUTO:
            return 'Detected-language'
        return 'Unstemmed' if self.language == _NONE else LANGUAGES[self.language].capitalize()

    @property
    def stemmer(self) -> str | None:
        """The PyStemmer algorithm applied to words, if any."""
        return _algorithm(self.language)

    @property
    def stop_words(self) -> frozenset[str]:
        """The words (and whole unspaced runs) dropped before stemming (``'auto'``: each language's own)."""
        return _stop_words(self.language)

    @property
    def auto(self) -> bool:
        """Whether each text's language is detected (``language='auto'``)."""
        return self.language == AUTO

    def describe(self) -> str:
        """One sentence for the text tool's description: what the model's query words become."""
        # Every request carries the tool descriptions: what the query's words become, in few words.
        unspaced = (
            'scripts without spaces (Chinese, Japanese, Korean, Thai...) match by overlapping two-character pieces '
            '(no word breaks needed)'
        )
        if self.language == AUTO:
            return (
                "Text analysis in each passage's detected language (lower-cased, stop words dropped, Snowball stems: "
                f'different endings of a word match), a query in each language the collection holds; {unspaced}.'
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

    def tokenize(self, texts: Sequence[str], documents: Sequence[str] | None = None) -> list[list[str]]:
        """The tokens of each text, in order: the batch path (each distinct word is stemmed once).

        ``documents`` (one id per text) only matters to ``'auto'``: see `analyse`.
        """
        if self.language == AUTO:
            return self.analyse(texts, documents).tokens
        return self._tokenize(texts)

    def analyse(
        self, texts: Sequence[str], documents: Sequence[str] | None = None, *, languages: Sequence[str] | None = None
    ) -> Analysis:
        """The tokens of each text and the language they were analysed in (`Analysis`).

        A fixed language analyses every text in itself. ``'auto'`` names each document's language
        once, from its first 1,000 characters (``documents`` holds each text's document id;
        ``None``: the texts are one document): by its stop words or script when they are clear,
        else by `toolish_rag.languages.detect_language` (a few milliseconds). A text of 40
        characters or more keeps its document's language when its own stop words or script agree,
        and is detected otherwise; a shorter one takes its document's (if the document's is
        unknown: the language most of its detected text is in, else English). A language the
        analyzer has no rules for (Vietnamese, say) is analysed as ``'none'``. ``languages``: each
        text's language as an earlier ``'auto'`` analysis named it (a reopened store's), so nothing
        is detected. See docs/text-analysis.md#automatic-language.
        """
        if self.language != AUTO:
            return Analysis(self._tokenize(texts), [self.language] * len(texts))
        if languages is None:
            languages = _detected_languages(texts, documents)
        elif len(languages) != len(texts):
            raise ValueError(f'{len(languages)} languages for {len(texts)} texts')
        else:
            languages = [_analysable(code) if code else _FALLBACK for code in languages]
        tokens: list[list[str]] = [[] for _ in texts]
        by_language: dict[str, list[int]] = {}
        for i, code in enumerate(languages):
            by_language.setdefault(code, []).append(i)
        for code, positions in by_language.items():
            found = self._in(code)._tokenize([texts[i] for i in positions], **self._rules(code))
            for i, text_tokens in zip(positions, found, strict=True):
                tokens[i] = text_tokens
        return Analysis(tokens, languages)

    def _in(self, code: str) -> TextAnalyzer:
        return TextAnalyzer(code)

    def _rules(self, code: str) -> dict[str, bool]:
        """How ``'auto'`` analyses a text in ``code`` beyond that language's own analyzer (revision 2:
        Latin-script accents folded, `_FOLDED`; an all-stop-word text keeps its words)."""
        if self.revision < 2:
            return {}
        return {'fold': code in _FOLDED, 'keep_stop_only': True}

    def query_tokens(self, query: str, languages: Iterable[str] | Mapping[str, int] = ()) -> list[str]:
        """The tokens to search ``query`` by, in a collection whose texts are in ``languages``.

        A fixed language: `tokens`. ``'auto'``: the union of the query's tokens in each of
        ``languages`` (analyzer codes, as `analyse` names them; none given: the query's detected
        language, else English), each token as often as the analysis that repeats it most. A
        German question then yields German stems for German passages and English ones for
        English passages. The stop words of the query's detected language are dropped before
        every analysis; those of another language are kept by the others' analyses, but an
        index holds each passage's own-language tokens only, so they rarely match anything.
        """
        if self.language != AUTO:
            return self.tokens(query)
        detected = detect_language(query)
        codes = self._query_languages(detected, languages, query)
        own = _analysable(detected) if detected is not None else None
        stop = _stop_words(own) if own is not None and own in codes else frozenset()
        # The query's own stop words go before any analysis ('bir' is no English stop word, but a
        # Turkish question's 'bir' would match the one Turkish passage analysed in English).
        rest = _WORDS.sub(lambda m: ' ' if m.group().lower() in stop else m.group(), query) if stop else query
        counts: dict[str, int] = {}
        if stop and not _WORDS.search(rest):
            rest = query  # only stop words: kept, as an all-stop-word passage keeps them
        for code in codes:
            seen: dict[str, int] = {}
            for token in self._in(code)._tokenize([query if code == own else rest], **self._rules(code))[0]:
                seen[token] = seen.get(token, 0) + 1
            for token, count in seen.items():
                counts[token] = max(counts.get(token, 0), count)
        return [token for token, count in counts.items() for _ in range(count)]

    def query_languages(self, query: str, languages: Iterable[str] | Mapping[str, int] = ()) -> list[str]:
        """The analyzer languages `query_tokens` analyses ``query`` in, sorted (a fixed language: itself).

        For ``'auto'``: ``languages`` (those of the texts searched, as analyzer codes; given as
        a mapping to record counts, a language under 1% of the records only when the query is
        detected in it), else the query's detected language, else English.
        """
        if self.language != AUTO:
            return [self.language]
        return self._query_languages(detect_language(query), languages, query)

    @staticmethod
    def _query_languages(detected: str | None, languages: Iterable[str] | Mapping[str, int], query: str) -> list[str]:
        counts = {
            _analysable(code): count
            for code, count in (languages.items() if isinstance(languages, Mapping) else ((c, 1) for c in languages))
            if code not in (AUTO, '') and count > 0
        }
        own = _analysable(detected) if detected is not None else None
        if isinstance(languages, Mapping) and counts:
            # Counts given: a language of under 1% of the records (a passage or two the detector
            # misread, say) joins only for a query detected in it with high confidence.
            total = sum(counts.values())
            wanted = {code for code, count in counts.items() if count * _MIN_QUERY_SHARE >= total}
            if own in counts and (own in wanted or detect_language(query, _MINOR_CONFIDENCE) == detected):
                wanted.add(own)
        else:
            wanted = set(counts)
        if not wanted and own is not None:
            wanted.add(own)
        return sorted(wanted or {_FALLBACK})

    def phrase_tokens(self, phrase: str, code: str) -> list[str]:
        """``phrase``'s tokens as a text analysed in ``code`` is tokenised (``'auto'``: with its rules)."""
        if self.language != AUTO:
            return self.tokens(phrase)
        return self._in(code)._tokenize([phrase], **self._rules(code))[0]

    def _tokenize(self, texts: Sequence[str], *, fold: bool = False, keep_stop_only: bool = False) -> list[list[str]]:
        """Each text's tokens (``fold``: Latin letters' accents folded before stemming, ``café`` -> ``cafe``;
        ``keep_stop_only``: a text of stop words only keeps them rather than having no token)."""
        split_runs = _unspaced_pattern().split
        normalise = self.language != 'en'
        find_words = (_WORDS if normalise else _BM25S_WORDS).findall
        stop = self.stop_words
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
        algorithm = self.stemmer
        if fold:
            words = {w for w in words if not w.isascii()} if algorithm is None else words
        if (algorithm is None and not fold) or not words:
            return out
        # Folded before stemming, so a word typed with or without its accents is stemmed alike.
        table = _fold_table() if fold else None
        plain = {w: w if table is None or w.isascii() else w.translate(table) for w in words}
        if algorithm is None:
            stem_of = plain
        else:
            stems = _stem_cache(algorithm)
            missing = list({p for p in plain.values() if p not in stems})
            if missing:
                if len(stems) + len(missing) > _STEM_CACHE_LIMIT:
                    # A fresh dict, not clear(): a thread mapping its batch through the old one keeps it whole.
                    stems = _stem_caches[algorithm] = {}
                stems.update(zip(missing, _stemmer(algorithm).stemWords(missing), strict=True))
            stem_of = {w: stems[p] for w, p in plain.items()}
        if algorithm is None:  # folding only: the other words stay themselves
            return [[stem_of.get(t, t) for t in tokens] for tokens in out]
        # This batch's words to their stems, its bigrams to themselves (a bigram holds only unspaced
        # letters and a word none, so the two never collide).
        stem_of.update(zip(pieces, pieces, strict=True))
        get = stem_of.__getitem__
        return [list(map(get, tokens)) for tokens in out]


_FOLDED = frozenset(
    {'ca', 'cs', 'da', 'de', 'en', 'eo', 'es', 'et', 'eu', 'fi', 'fr', 'ga', 'hu', 'id', 'it', 'lt', 'nl', 'no', 'pl'}
    | {'pt', 'ro', 'st', 'sv'}
)
"""The analyzer languages whose text ``'auto'`` (revision 2) folds to unaccented Latin letters before
stemming (``café``, ``naïve``, ``Straße``, ``ș`` -> ``cafe``, ``naive``, ``strasse``, ``s``), as LanceDB's
and Lucene's ASCII folding do: readers of these languages type a word with or without its accents.
Not Turkish (its Snowball suffix rules read ö, ü and the dotless i: folded first, XQuAD-tr text nDCG@10 fell
from 0.9447 to 0.9399), not Vietnamese (its tone marks tell words apart; it is analysed as
``'none'``), not any script but Latin (Greek tonos, Devanagari vowel signs stay).
docs/text-analysis.md#accents-and-stop-words."""

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


@dataclass(frozen=True, slots=True)
class Analysis:
    """What `TextAnalyzer.analyse` made of a batch of texts."""

    tokens: list[list[str]]
    """Each text's tokens, in order."""
    languages: list[str]
    """The analyzer language each text was analysed in (a `LANGUAGES` code or ``'none'``)."""


def _analysable(code: str) -> str:
    """The analyzer language for a detected ``code`` (``'none'`` for a language it has no rules for)."""
    return code if code in LANGUAGES or code == _NONE else _NONE


def _detected_languages(
    texts: Sequence[str], documents: Sequence[str] | None, known: Sequence[str] | None = None
) -> list[str]:
    """The analyzer language of each text (see `TextAnalyzer.analyse`).

    Each document's language is named once, from its first texts; a text keeps it unless cheap
    evidence says otherwise (see `_text_language`), so lingua reads a text only when in doubt.
    """
    if documents is not None and len(documents) != len(texts):
        raise ValueError(f'{len(documents)} document ids for {len(texts)} texts')
    groups = list(documents) if documents is not None else [''] * len(texts)
    members: dict[str, list[int]] = {}
    for i, group in enumerate(groups):
        members.setdefault(group, []).append(i)
    out: list[str] = [''] * len(texts)
    for positions in members.values():
        head = _head([texts[i] for i in positions])
        document = _cheap_language(head) or detect_language(head)
        if document is not None and len(positions) == 1:
            out[positions[0]] = _analysable(document)  # the text is its document's head: named already
            continue
        script = _script(head)
        own = [
            _text_language(texts[i], document, script) if len(texts[i].strip()) >= _OWN_MIN_CHARS else None
            for i in positions
        ]
        inherited = document
        if inherited is None:
            weights: dict[str, int] = {}
            for i, code in zip(positions, own, strict=True):
                if code is not None:
                    weights[code] = weights.get(code, 0) + len(texts[i])
            inherited = max(sorted(weights), key=weights.__getitem__) if weights else _FALLBACK
        for i, code in zip(positions, own, strict=True):
            out[i] = _analysable(code or inherited)
    return out


_HEAD_CHARS = 1_000
"""How much of a document's first texts names its language (as much as `detect_language` reads)."""

_VOTE_MIN_WORDS = 8
"""Fewer words than this are too few for stop words to name a language (lingua decides)."""

_VOTE_SHARE = 0.2
"""The share of a text's words a language's stop words must make for them to name it without lingua."""

_VOTE_MARGIN = 1.5
"""...and at least this many times as many of its words as any other language's stop words..."""

_VOTE_OWN_SHARE = 0.08
"""...and this share of its words stop words of that language alone (Romanian text holds a fifth of
Spanish or French stop words at most, and under 8% of either's alone: XQuAD ro, 240 passages)."""

_KEEP_SHARE = 0.12
"""The share of a text's words its document language's stop words must make for it to keep that language."""

_VOTERS = ('da', 'de', 'en', 'es', 'fr', 'it', 'nl', 'no', 'pt', 'sv', 'tr')
"""The Latin-script languages with a stop-word list (Russian's also fits Ukrainian or Bulgarian text:
Cyrillic is left to lingua)."""


def _head(texts: Sequence[str]) -> str:
    """A document's first ``_HEAD_CHARS`` characters or so, its texts in order."""
    parts: list[str] = []
    size = 0
    for text in texts:
        parts.append(text)
        size += len(text)
        if size >= _HEAD_CHARS:
            break
    return '\n'.join(parts)


@cache
def _voters() -> dict[str, tuple[str, ...]]:
    """Each stop word of a `_VOTERS` language: the languages whose list holds it (read-only)."""
    found: dict[str, list[str]] = {}
    for code in _VOTERS:
        for word in _stop_words(code):
            found.setdefault(word, []).append(code)
    return {word: tuple(codes) for word, codes in found.items()}


def _votes(words: Sequence[str]) -> tuple[dict[str, int], dict[str, int]]:
    """How many of ``words`` are each voting language's stop words, and its alone."""
    voters = _voters()
    counts: dict[str, int] = {}
    alone: dict[str, int] = {}
    for word, n in Counter([w for w in words if w in voters]).items():
        codes = voters[word]
        for code in codes:
            counts[code] = counts.get(code, 0) + n
        if len(codes) == 1:
            alone[codes[0]] = alone.get(codes[0], 0) + n
    return counts, alone


def _stop_word_language(words: Sequence[str]) -> str | None:
    """The language whose stop words ``words`` clearly hold (see `_cheap_language`), else ``None``."""
    if len(words) < _VOTE_MIN_WORDS:
        return None
    counts, alone = _votes(words)
    if not counts:
        return None
    best = max(sorted(counts), key=counts.__getitem__)
    top = counts[best]
    runner = max((n for code, n in counts.items() if code != best), default=0)
    if top < _VOTE_SHARE * len(words) or top < _VOTE_MARGIN * runner:
        return None
    return best if alone.get(best, 0) >= _VOTE_OWN_SHARE * len(words) else None


def _words(text: str) -> list[str]:
    return _WORDS.findall(text[:_HEAD_CHARS].lower())


def _cheap_language(text: str) -> str | None:
    """``text``'s language when its stop words or its script name it clearly (no lingua), else ``None``.

    A text of at least eight words of which a fifth or more are one `_VOTERS` language's stop words,
    1.5 times as many as any other's, and 8% that language's alone, is in that language; a text in
    a script only one language writes (Greek, Thai, kana...) is in that one. Measured on XQuAD:
    docs/text-analysis.md#automatic-language.
    """
    head = text[:_HEAD_CHARS]
    script = None if head.isascii() else _script_language(head[:_SCRIPT_CHARS])
    return script or _stop_word_language(_words(head))


_SCRIPT_CHARS = 400
"""How much of a text `_script` reads."""


def _script(text: str) -> str:
    """The Unicode block most of the first letters of ``text`` are in (``'latin'`` for ASCII), ``''``: none."""
    sample = text[:_SCRIPT_CHARS]
    if sample.isascii():
        return 'latin'
    counts: dict[str, int] = {}
    for char in sample:
        if char.isalpha():
            cp = ord(char)
            block = 'latin' if cp < 0x250 or 0x1E00 <= cp <= 0x1EFF else f'{cp >> 7:x}'
            counts[block] = counts.get(block, 0) + 1
    return max(sorted(counts), key=counts.__getitem__) if counts else ''


def _text_language(text: str, document: str | None, script: str) -> str | None:
    """The language of a text of a document in ``document`` (``None``: unknown) written in ``script``.

    Stop words or script naming a language clearly name it (`_cheap_language`). Otherwise the
    text keeps its document's language when an eighth of its words are that language's stop
    words or, for a language without a list, when it is written in the document's script and
    under a fifth of its words are any listed language's stop words; anything else is detected.
    """
    cheap = _cheap_language(text)
    if cheap is not None or document is None:
        return cheap or detect_language(text)
    stop = _stop_words(document) if document in _VOTERS else frozenset()
    if stop:
        words = _words(text)
        if words and sum(w in stop for w in words) >= _KEEP_SHARE * len(words):
            return document
    elif _script(text) == script:
        words = _words(text)
        if max(_votes(words)[0].values(), default=0) < _VOTE_SHARE * len(words):
            return document
    return detect_language(text)


def _stem_cache(algorithm: str) -> dict[str, str]:
    found = _stem_caches.get(algorithm)
    if found is None:
        found = _stem_caches.setdefault(algorithm, {})
    return found


def _algorithm(code: str) -> str | None:
    if code in _UNSTEMMED or code in (_NONE, AUTO):
        return None
    return LANGUAGES[code]


def _code(language: str) -> str:
    given = language.strip().lower() if isinstance(language, str) else language
    if given in (_NONE, AUTO) or given in LANGUAGES:
        return given
    by_name = {name: code for code, name in LANGUAGES.items()}
    if isinstance(given, str) and given in by_name:
        return by_name[given]
    raise ValueError(
        f'unknown text analysis language {language!r}: choose one of {", ".join(LANGUAGES)} '
        f"(ISO 639-1 codes), 'auto' (detected per text) or 'none' (no stemming, no stop words)"
    )


def analyzer_for(language: str | None) -> TextAnalyzer:
    """The analyzer for a collection's ``language`` (``None``: English, what a store saved before ``'auto'``
    without a language was analysed in; a new store's default is ``'auto'``)."""
    return TextAnalyzer('en' if language is None else language)
