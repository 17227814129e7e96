"""Finding a model's quote in a chunk's exact source text, and the sentence it most resembles.

Exact except for whitespace, invisible format characters, quote marks, dashes and canonical
(NFC) equivalence; on word boundaries; with offsets into the original text.
See docs/grounded.md#quote-matching-exactly.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache

from .._char_class import char_class

__all__ = [
    'CLOSEST_MAX_CHARS',
    'DEFAULT_MIN_QUOTE_CHARS',
    'QuoteMatch',
    'closest_sentence',
    'find_quote',
    'normalise_quote',
]

DEFAULT_MIN_QUOTE_CHARS = 12
"""The shortest quote accepted: shorter fragments ('not', 'in 2019') prove nothing."""

_WHITESPACE = (
    '\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005'
    '\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000'
)
"""Every character for which ``str.isspace()`` is true (a test keeps this list complete)."""
_ABSENT = '\u200b\u2060\ufeff\u00ad'
"""Invisible format characters treated as if they were not there."""
_DOUBLE_QUOTES = '"\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb\uff02'
_SINGLE_QUOTES = "'\u2018\u2019\u201a\u201b\u2032`\u00b4\u2039\u203a\u02bc\uff07"
_DASHES = '-\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe63\uff0d'
_TRANSLATION = str.maketrans(
    {
        **dict.fromkeys(_DOUBLE_QUOTES, '"'),
        **dict.fromkeys(_SINGLE_QUOTES, "'"),
        **dict.fromkeys(_DASHES, '-'),
    }
)
_SKIP = _WHITESPACE + _ABSENT
_SKIP_CLASS = '[' + re.escape(_SKIP) + ']'
_RUN = re.compile(f'{_SKIP_CLASS}{{2,}}|[{re.escape(_SKIP.replace(" ", ""))}]')
"""What normalisation rewrites: a run of 2+ skippable characters, or one that is not a plain space."""
_HAS_WHITESPACE = re.compile('[' + re.escape(_WHITESPACE) + ']')
_CACHE_MAX_CHARS = 200_000
"""Texts longer than this go to a much smaller cache."""

_NO_SPACE_SCRIPTS = (
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x0F00, 0x0FFF),  # Tibetan
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x2E80, 0x2FDF),  # CJK radicals
    (0x3000, 0x31FF),  # CJK punctuation, Hiragana, Katakana, Bopomofo
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFF9F),  # half-width Katakana
    (0x20000, 0x3FFFF),  # CJK extensions B onwards
)


@dataclass(frozen=True, slots=True)
class QuoteMatch:
    """Where a quote stands: ``text[start:end]`` is the quoted span of the original text."""

    start: int
    end: int


@dataclass(frozen=True, slots=True)
class _Composition:
    """Where each character of the composed (NFC) text comes from in the text before composition.

    Segment ``k`` starts at composed position ``seg_out[k]``. A copied segment (``seg_end[k]`` is
    ``None``) maps one to one from ``seg_src[k]``; a recomposed combining sequence maps every one
    of its characters to the whole source sequence ``[seg_src[k], seg_end[k])``, so a match that
    keeps any part of it keeps all of it, and one that would split it is recognisable.
    """

    seg_out: tuple[int, ...]
    seg_src: tuple[int, ...]
    seg_end: tuple[int | None, ...]

    def source(self, position: int) -> tuple[int, int]:
        """The span ``[start, end)`` of the pre-composition text the character at ``position`` comes from."""
        k = bisect_right(self.seg_out, position) - 1
        end = self.seg_end[k]
        if end is None:
            start = self.seg_src[k] + position - self.seg_out[k]
            return start, start + 1
        return self.seg_src[k], end


@dataclass(frozen=True, slots=True)
class _Normalised:
    """A normalised text and a sparse map back to the original, in two steps.

    First the character-for-character step: positions ``seg_norm[k] <= p < seg_norm[k + 1]`` of
    the whitespace-collapsed text come from original position ``seg_orig[k] + (p - seg_norm[k])``
    (a collapsed whitespace run is a segment of one space mapped to the run's first whitespace
    character). Then, only when that text was not already in NFC (rare: decomposed PDF
    extractions), ``composed`` maps the composed text back to it.
    """

    text: str
    seg_norm: tuple[int, ...]
    seg_orig: tuple[int, ...]
    composed: _Composition | None = None

    def _collapsed(self, position: int) -> int:
        k = bisect_right(self.seg_norm, position) - 1
        return self.seg_orig[k] + position - self.seg_norm[k]

    def start(self, position: int) -> int:
        """Where the character at ``position`` starts in the original text."""
        if self.composed is None:
            return self._collapsed(position)
        return self._collapsed(self.composed.source(position)[0])

    def end(self, position: int) -> int:
        """Where the character at ``position`` ends in the original text (exclusive)."""
        if self.composed is None:
            return self._collapsed(position) + 1
        return self._collapsed(self.composed.source(position)[1] - 1) + 1

    def splits_sequence(self, position: int) -> bool:
        """Do the characters at ``position - 1`` and ``position`` come from one recomposed combining sequence?"""
        if self.composed is None or not 0 < position < len(self.text):
            return False
        return self.composed.source(position - 1)[0] == self.composed.source(position)[0]


def normalise_quote(quote: str) -> str:
    """``quote`` as matching sees it: whitespace collapsed and trimmed, quote marks and dashes unified, in NFC."""
    return _normalise(quote).text


def _normalise(text: str) -> _Normalised:
    if len(text) <= _CACHE_MAX_CHARS:
        return _normalise_cached(text)
    return _normalise_large(text)


@lru_cache(maxsize=2048)
def _normalise_cached(text: str) -> _Normalised:
    return _normalise_uncached(text)


@lru_cache(maxsize=4)
def _normalise_large(text: str) -> _Normalised:
    """Few, so a handful of huge texts checked over and over stay cheap without holding much memory."""
    return _normalise_uncached(text)


def _normalise_uncached(text: str) -> _Normalised:
    translated = text.translate(_TRANSLATION)  # one character for one: positions unchanged
    parts: list[str] = []
    seg_norm: list[int] = []
    seg_orig: list[int] = []
    length = 0
    pending_space: int | None = None  # original position of a whitespace run not yet emitted
    previous = 0

    def copy(start: int, end: int) -> None:
        nonlocal length, pending_space
        if pending_space is not None and length:  # a run between two words: one space
            parts.append(' ')
            seg_norm.append(length)
            seg_orig.append(pending_space)
            length += 1
        pending_space = None
        parts.append(translated[start:end])
        seg_norm.append(length)
        seg_orig.append(start)
        length += end - start

    for run in _RUN.finditer(translated):
        if run.start() > previous:
            copy(previous, run.start())
        space = _HAS_WHITESPACE.search(translated, run.start(), run.end())
        if space is not None and pending_space is None:
            pending_space = space.start()
        previous = run.end()
    if previous < len(translated):
        copy(previous, len(translated))
    joined = ''.join(parts)
    # A single plain space is copied as is, so one may still stand at either end.
    if joined.endswith(' '):
        joined = joined[:-1]
    if joined.startswith(' '):
        joined = joined[1:]
        seg_orig[0] += 1
        seg_norm = [0] + [p - 1 for p in seg_norm[1:]]
    composed, composition = _compose(joined)
    return _Normalised(composed, tuple(seg_norm) or (0,), tuple(seg_orig) or (0,), composition)


_UNICODE_SCAN_END = 0x30000
"""No code point from here on has a combining class or a canonical decomposition (a test checks)."""
_HANGUL_VOWELS_AND_TRAILS = ((0x1161, 0x1175), (0x11A8, 0x11C2))
"""Conjoining jamo that compose with the syllable before them (algorithmically, so absent from the decomposition data)."""


@lru_cache(maxsize=1)
def _sequences() -> re.Pattern[str]:
    """What NFC may rewrite: a character with the combining characters after it, or a lone singleton.

    A *combining* character is one NFC may reorder or compose with what precedes it: a nonzero
    combining class, the second half of a canonical composition (``NFC_Quick_Check=Maybe``,
    Hangul vowel and trailing jamo included), or one whose decomposition begins with such a
    character. Every other character is a boundary NFC never crosses (the ``ccc=0`` and
    ``NFC_Quick_Check=Yes`` starters of UAX #15), so composing each sequence on its own gives
    the NFC of the whole text. A boundary that NFC still rewrites alone (a singleton such as
    U+212B ANGSTROM SIGN or a CJK compatibility ideograph) is a sequence of one.

    Built on first use (a scan of 200,000 code points, about 0.2 s): most processes never
    meet a text that is not already NFC.
    """
    seconds = {code for low, high in _HANGUL_VOWELS_AND_TRAILS for code in range(low, high + 1)}
    for code in range(_UNICODE_SCAN_END):
        decomposition = unicodedata.decomposition(chr(code)).split()
        if len(decomposition) == 2 and not decomposition[0].startswith('<'):
            seconds.add(int(decomposition[1], 16))
    combining: list[int] = []
    singletons: list[int] = []
    for code in range(_UNICODE_SCAN_END):
        char = chr(code)
        first = ord(unicodedata.normalize('NFD', char)[0])
        if unicodedata.combining(char) or code in seconds or unicodedata.combining(chr(first)) or first in seconds:
            combining.append(code)
        elif unicodedata.normalize('NFC', char) != char:
            singletons.append(code)
    marks = char_class(combining)
    return re.compile(f'[^{marks[1:]}?{marks}+|{char_class(singletons)}')


def _compose(text: str) -> tuple[str, _Composition | None]:
    """``text`` in NFC, composed one combining sequence at a time so every character maps back to its sequence.

    Only canonical equivalence: NFKC's compatibility folds (``'\ufb01'`` to ``'fi'``, full-width
    letters, superscripts) would accept a quote that is not verbatim. The composed characters
    go through the quote-mark and dash translation again (U+1FEF GREEK VARIA is canonically a
    grave accent, one of the single quote marks).
    """
    if text.isascii() or unicodedata.is_normalized('NFC', text):
        return text, None  # the common case: nothing to map
    parts: list[str] = []
    seg_out: list[int] = []
    seg_src: list[int] = []
    seg_end: list[int | None] = []
    length = 0
    previous = 0
    for sequence in _sequences().finditer(text):
        composed = unicodedata.normalize('NFC', sequence.group()).translate(_TRANSLATION)
        if composed == sequence.group():
            continue
        start, end = sequence.span()
        if start > previous:
            parts.append(text[previous:start])
            seg_out.append(length)
            seg_src.append(previous)
            seg_end.append(None)
            length += start - previous
        parts.append(composed)
        seg_out.append(length)
        seg_src.append(start)
        seg_end.append(end)
        length += len(composed)
        previous = end
    parts.append(text[previous:])
    seg_out.append(length)
    seg_src.append(previous)
    seg_end.append(None)
    return ''.join(parts), _Composition(tuple(seg_out), tuple(seg_src), tuple(seg_end))


def _in_word(char: str) -> bool:
    """A letter or digit of a script that separates its words (a quote may not cut between two)."""
    if not char.isalnum():
        return False
    code = ord(char)
    return not any(low <= code <= high for low, high in _NO_SPACE_SCRIPTS)


_WORD_JOINERS = '-\u2010\u2011\u2013\ufe63\uff0d' + "'\u2018\u2019\u201b`\u00b4\u02bc\uff07"
"""Characters that join two word characters into one word: hyphens (``non-toxic``) and apostrophes (``can't``).

The en dash is one too (``Michelson\u2013Morley``), but not the em dash or horizontal bar: an
unspaced em dash is punctuation between two phrases (``he left\u2014quietly``), so a quote may
start or end next to it. Primes and single guillemets are never apostrophes.
"""
_NUMBER_JOINERS = '/:.,-'
"""Between two digits these make one number: ``1/5``, ``12:30``, ``3.5``, ``1,000``, ``2020-01`` (all dashes are ``-`` here)."""
_GROUP_SPACES = ' \u00a0\u2009\u202f'
"""A single one of these between digit groups makes one number: ``12 500 000`` (``\\d{1,3}( \\d{3})+``)."""


def _digit_run(text: str, start: int, step: int) -> int:
    """How many digits stand in a row from ``start`` going in direction ``step`` (1 or -1)."""
    count = 0
    while 0 <= start < len(text) and text[start].isdigit():
        count += 1
        start += step
    return count


def _joins(normalised: _Normalised, source: str, position: int) -> bool:
    """Is the character at ``position`` of the normalised text the joint inside one word or number?

    A quote may neither start nor end on either side of such a joint: ``'refundable'`` is not a
    quote of ``'non-refundable'``, ``'Patients can'`` not of ``"Patients can't"``, ``'5 of the
    patients'`` not of ``'1/5 of the patients'``, ``'500 000'`` not of ``'12 500 000'``. The
    normalised text has unified dashes, quote marks and whitespace, so which joint it is is
    read from the ``source`` character.
    """
    text = normalised.text
    if not 0 < position < len(text) - 1:
        return False
    joint, before, after = text[position], text[position - 1], text[position + 1]
    word_joint = joint in "-'" and source[normalised.start(position)] in _WORD_JOINERS
    if word_joint and _in_word(before) and _in_word(after):
        return True
    if not (before.isdigit() and after.isdigit()):
        return False
    if joint in _NUMBER_JOINERS:
        return True
    if joint != ' ':
        return False
    original = normalised.start(position)
    return (
        source[original] in _GROUP_SPACES
        and normalised.start(position + 1) == original + 1  # one separator, not a run
        and 1 <= _digit_run(text, position - 1, -1) <= 3
        and _digit_run(text, position + 1, 1) == 3
    )


def _cuts_at_start(normalised: _Normalised, source: str, start: int) -> bool:
    """Would a quote starting at ``start`` of the normalised text begin in the middle of a word or number?"""
    text = normalised.text
    first = text[start]
    if unicodedata.category(first).startswith('M') or normalised.splits_sequence(start):
        return True  # a combining mark cut from its base letter
    if start == 0:
        return False
    before = text[start - 1]
    if _in_word(before) and _in_word(first):
        return True
    if _joins(normalised, source, start - 1) or _joins(normalised, source, start):
        return True
    # '5 million' is not a quote of '.5 million', '-5 million' or '+5 million' either.
    return first.isdigit() and before in '.,-+'


def _cuts_at_end(normalised: _Normalised, source: str, end: int) -> bool:
    """Would a quote ending at ``end`` of the normalised text stop in the middle of a word or number?"""
    text = normalised.text
    if end >= len(text):
        return False
    last, after = text[end - 1], text[end]
    if unicodedata.category(after).startswith('M') or normalised.splits_sequence(end):
        return True  # 'caq' is not a quote of 'caq\u0301', nor '\u1eb9' of 'e\u0323\u0301' (NFC '\u1eb9\u0301')
    if _in_word(last) and _in_word(after):
        return True
    if _joins(normalised, source, end) or _joins(normalised, source, end - 1):
        return True  # 'Patients can' is not a quote of "Patients can't", nor '3' of '3.5'
    return last.isdigit() and after in '%\u2030'


def find_quote(quote: str, text: str) -> QuoteMatch | None:
    """Where ``quote`` stands in ``text`` (the first place), normalising only whitespace, quote marks, dashes and NFC.

    ``None`` when it does not, or when the quote is empty after normalisation. The offsets are
    into ``text`` as given, so ``text[match.start:match.end]`` is the original span.
    """
    needle = _normalise(quote).text
    if not needle:
        return None
    haystack = _normalise(text)
    position = haystack.text.find(needle)
    while position >= 0:
        end = position + len(needle)
        if not _cuts_at_start(haystack, text, position) and not _cuts_at_end(haystack, text, end):
            return QuoteMatch(haystack.start(position), haystack.end(end - 1))
        position = haystack.text.find(needle, position + 1)
    return None


CLOSEST_MAX_CHARS = 300
"""The longest sentence `closest_sentence` returns (longer ones are cut around the best match)."""
_CLOSEST_MIN_COVERAGE = 0.6
_CLOSEST_CANDIDATES = 8
_COMPARE_CHARS = 600
"""difflib is quadratic: quote and sentence are compared on their first 600 characters."""
_SENTENCE_END = re.compile(r'(?<=[.!?\u2026\u3002\uff01\uff1f])\s+|\n\s*\n')
_WORD = re.compile(r'\w+')


def _sentences(text: str) -> tuple[tuple[str, frozenset[str]], ...]:
    if len(text) <= _CACHE_MAX_CHARS:
        return _sentences_cached(text)
    return _sentences_large(text)


def _split_sentences(text: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """The sentences of ``text``, each with its lower-cased words (for the cheap first ranking)."""
    return tuple((s, frozenset(_WORD.findall(s.lower()))) for s in _SENTENCE_END.split(text) if s.strip())


_sentences_cached = lru_cache(maxsize=256)(_split_sentences)
_sentences_large = lru_cache(maxsize=2)(_split_sentences)


def closest_sentence(quote: str, text: str) -> str | None:
    """The sentence of ``text`` most like ``quote``, for feedback; ``None`` when none is reasonably close.

    Candidates are the sentences sharing the most words with the quote (cheap, so a megabyte
    text costs one pass); the best of them by difflib's matching blocks wins if they cover at
    least 60% of the quote. The sentence comes back whitespace-collapsed and at most
    `CLOSEST_MAX_CHARS` long, so feedback stays bounded whatever the chunk.
    """
    needle = _normalise(quote).text[:_COMPARE_CHARS]
    if not needle:
        return None
    words = frozenset(_WORD.findall(needle.lower()))
    scored = sorted(
        (-len(words & sentence_words), index, sentence)
        for index, (sentence, sentence_words) in enumerate(_sentences(text))
        if not words or words & sentence_words
    )
    best: tuple[float, float, str, int] | None = None
    for _, _, sentence in scored[:_CLOSEST_CANDIDATES]:
        candidate = _normalise(sentence).text[:_COMPARE_CHARS]
        matcher = difflib.SequenceMatcher(None, needle, candidate, autojunk=False)
        blocks = matcher.get_matching_blocks()
        coverage = sum(block.size for block in blocks) / len(needle)
        if best is None or (coverage, matcher.ratio()) > best[:2]:
            anchor = next((block.b for block in blocks if block.size), 0)
            best = (coverage, matcher.ratio(), sentence, anchor)
    if best is None or best[0] < _CLOSEST_MIN_COVERAGE:
        return None
    _, _, sentence, anchor = best
    # Shown as written (so the model can copy it), only its whitespace collapsed.
    shown = ' '.join(sentence.split())
    if len(shown) <= CLOSEST_MAX_CHARS:
        return shown
    width = CLOSEST_MAX_CHARS - 2  # room for an ellipsis at each end
    start = max(0, min(anchor - 40, len(shown) - width))
    return ('…' if start else '') + shown[start : start + width] + ('…' if start + width < len(shown) else '')
