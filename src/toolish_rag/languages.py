"""Which language a text is written in, offline: lingua's models ship in its wheel.

`detect_language` names one language (or ``None`` when the text is too short or the detector
unsure); `detect_languages` splits a mixed text into its languages' shares. The candidates are the
languages the text analyzer knows (`toolish_rag.analysis.LANGUAGES`) plus a few it does not
(Vietnamese, Ukrainian, Hebrew...), so that their text is named for what it is rather than taken
for a neighbour the analyzer would then stem wrongly. See docs/text-analysis.md#automatic-language.
"""

from __future__ import annotations

import re
import threading
import warnings
from typing import Any

from ._extras import install_command, missing_modules
from ._language_codes import CODES, UNSTEMMED

__all__ = ['DETECTABLE', 'detect_language', 'detect_languages']

_EXTRA: frozenset[str] = frozenset({'vi', 'uk', 'bg', 'mk', 'be', 'kk', 'he', 'ur'})
"""Languages lingua knows and the analyzer does not, whose text would otherwise pass for a neighbour's."""

_ALIASES: dict[str, str] = {'nb': 'no', 'nn': 'no'}
"""lingua's codes that the analyzer spells otherwise (Bokmål and Nynorsk share Norwegian's stemmer)."""

_MIN_WORDS = 3
"""Fewer words than this (outside a script only one candidate writes) name no language."""

_MIN_CONFIDENCE = 0.5
"""The detector's confidence in its best language below which a text's language is unsure."""

_MAX_CHARS = 1_000
"""How much of a long text `detect_language` reads: a chunk's language shows in its first lines, and
lingua's time grows with the text (on XQuAD passages, 1,000 characters name the language as often
as 2,000, 500 misread one more passage in 240: docs/text-analysis.md#automatic-language)."""

_WORD = re.compile(r'\w+')
_SENTENCES = re.compile(r'(?<=[.!?;。！？；])\s+|\n+')  # noqa: RUF001

# Scripts in which one candidate language is written: a short text in them needs no statistics.
_SCRIPTS: tuple[tuple[int, int, str], ...] = (
    (0x0370, 0x03FF, 'el'),
    (0x1F00, 0x1FFF, 'el'),
    (0x0530, 0x058F, 'hy'),
    (0x0900, 0x097F, 'hi'),  # Devanagari: of the candidates only Hindi (Nepali has no model: named Hindi)
    (0x0B80, 0x0BFF, 'ta'),
    (0x0E00, 0x0E7F, 'th'),
    (0x1100, 0x11FF, 'ko'),
    (0x3130, 0x318F, 'ko'),
    (0xAC00, 0xD7AF, 'ko'),
    (0x3040, 0x30FF, 'ja'),
    (0x4E00, 0x9FFF, 'zh'),
)

_NO_LINGUA = (
    'language detection needs the "languages" extra (lingua is not installed): a text\'s language is named by its '
    f'script (and in an "auto" store its stop words) alone, else unknown; {install_command("languages")}'
)

_lock = threading.Lock()
_built: list[Any] = []


def _code(language: Any) -> str:
    code: str = language.iso_code_639_1.name.lower()
    return _ALIASES.get(code, code)


def _detector() -> Any:
    """lingua's detector over the candidates, built once (its models load lazily, on first need);
    ``None`` without the ``languages`` extra (said once, in a warning).

    Low-accuracy mode: trigram models only, a fifth of the memory of the full models (about
    150 MB once every Latin-script model is loaded, against 730) at the same speed; see
    docs/text-analysis.md#automatic-language for what it costs on short texts.
    """
    if _built:
        return _built[0]
    with _lock:
        if not _built:
            if missing_modules('lingua'):
                warnings.warn(_NO_LINGUA, RuntimeWarning, stacklevel=4)
                _built.append(None)
                return None
            from lingua import Language, LanguageDetectorBuilder

            wanted = DETECTABLE
            candidates = [language for language in Language.all() if _code(language) in wanted]
            _built.append(LanguageDetectorBuilder.from_languages(*candidates).with_low_accuracy_mode().build())
    return _built[0]


DETECTABLE: frozenset[str] = frozenset(CODES) | frozenset(UNSTEMMED) | _EXTRA
"""The ISO 639-1 codes the detector can name (the analyzer's languages and a few more).

Nepali and Yiddish, which the analyzer knows, have no lingua model: Nepali text is named Hindi
(the same script), Yiddish text has no name."""


def _script_language(text: str) -> str | None:
    """The language of ``text`` when all its letters are in one single-language script (CJK: kana means Japanese)."""
    found: set[str] = set()
    for char in text:
        if not char.isalpha():
            continue
        cp = ord(char)
        for lo, hi, code in _SCRIPTS:
            if lo <= cp <= hi:
                found.add(code)
                break
        else:
            return None
    if found == {'ja', 'zh'}:
        return 'ja'
    return found.pop() if len(found) == 1 else None


def detect_language(text: str, min_confidence: float = _MIN_CONFIDENCE) -> str | None:
    """The ISO 639-1 code of the language ``text`` is written in; ``None`` when too short or unsure.

    ``min_confidence``: the detector's confidence in its best language below which the text is
    unsure (0.5 by default; short questions misread as a neighbour language score around 0.8).
    A text of fewer than three words names a language only when its script does (Greek, Hangul,
    Thai...). Only the first 1,000 characters are read. Blocking (a few milliseconds for a
    passage; the first call of a script loads its models): call it from a thread in async code.
    """
    text = text.strip()
    if not text:
        return None
    script = _script_language(text[:_MAX_CHARS])
    if script is not None:
        return script
    if len(_WORD.findall(text, 0, _MAX_CHARS)) < _MIN_WORDS:
        return None
    detector = _detector()
    if detector is None:
        return None
    values = detector.compute_language_confidence_values(text[:_MAX_CHARS])
    if not values or values[0].value < min_confidence:
        return None
    return _code(values[0].language)


def detect_languages(text: str) -> list[tuple[str, float]]:
    """The languages of a mixed text with their shares of its characters, largest first.

    ``[('de', 0.6), ('en', 0.4)]`` for a text three-fifths German; ``[]`` when too short to tell.
    The text is cut into sentences (and lines), each named by `detect_language`; a sentence too
    short or unsure to name counts for the language of the sentence before it (else after it).
    (lingua's own mixed-text detection names three-word stretches, often wrongly.) The whole
    text is read: blocking, as `detect_language`.
    """
    sentences = [s for s in _SENTENCES.split(text) if s.strip()]
    named = [detect_language(s) for s in sentences]
    known = [code for code in named if code is not None]
    if not known:
        return []
    shares: dict[str, int] = {}
    last = known[0]
    for sentence, code in zip(sentences, named, strict=True):
        last = code or last
        shares[last] = shares.get(last, 0) + len(sentence)
    total = sum(shares.values())
    return sorted(((code, size / total) for code, size in shares.items()), key=lambda item: (-item[1], item[0]))
