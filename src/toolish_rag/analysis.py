"""Language-aware text analysis for BM25: one tokenizer every store shares.

See docs/text-analysis.md#what-the-analyzer-does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ._language_codes import UNSTEMMED
from ._language_vote import _FALLBACK, _analysable, _detected_languages
from ._tokens import (  # _stop_words: also read by the OCR noise check (ingest._readers._ocr_noise)
    _NONE,
    _WORDS,
    AUTO,
    LANGUAGES,
    _algorithm,
    _stop_words as _stop_words,
    tokenize,
)
from .languages import detect_language

__all__ = ['AUTO', 'LANGUAGES', 'Analysis', 'TextAnalyzer', 'analyzer_for']

_IDENTITY_PREFIX = 'toolish-v1:'
_AUTO_V2_IDENTITY = 'toolish-v2:auto'
"""``'auto'`` with accent folding and the stop-word fallback; ``'toolish-v1:auto'`` (saved before) has neither."""

_MIN_QUERY_SHARE = 100
"""A language of fewer than 1/100 of the records searched analyses only the queries detected in it."""

_MINOR_CONFIDENCE = 0.95
"""How sure the detector must be of a query's language for a language under 1% of the records to join."""


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
        if self.language in UNSTEMMED:
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
        """Each text's tokens in this analyzer's language (`toolish_rag._tokens.tokenize`)."""
        return tokenize(texts, self.language, fold=fold, keep_stop_only=keep_stop_only)


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


@dataclass(frozen=True, slots=True)
class Analysis:
    """What `TextAnalyzer.analyse` made of a batch of texts."""

    tokens: list[list[str]]
    """Each text's tokens, in order."""
    languages: list[str]
    """The analyzer language each text was analysed in (a `LANGUAGES` code or ``'none'``)."""


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
