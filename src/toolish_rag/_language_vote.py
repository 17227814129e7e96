"""Naming each text's language for ``language='auto'``: a document's language once, a text's own when cheap
evidence (stop words, script) disagrees, lingua only in doubt. See docs/text-analysis.md#automatic-language.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import cache

from ._tokens import _NONE, _WORDS, LANGUAGES, _stop_words
from .languages import _script_language, detect_language

_FALLBACK = 'en'
"""The language of a text whose language, and whose document's, no detection names."""

_OWN_MIN_CHARS = 40
"""A chunk shorter than this takes its document's language (too few letters to tell on its own)."""


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
