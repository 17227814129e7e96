"""Whether what OCR read on a picture is text: a logo, an icon or an illustration reads as noise.

A standalone image file is kept only when enough of its OCR'd words are read: Tesseract is sure
of them (confidence) and they are shaped like words or numbers, or are words of the page's
detected language (its stop words). Scanned PDF pages are never judged: a page of a document
is its text, whatever OCR made of it. See docs/ingestion.md#ocr.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from ._ocr import OcrPage, OcrWord

__all__ = ['MIN_READ_SHARE', 'MIN_READ_WORDS', 'TextVerdict', 'judge_page']

MIN_READ_WORDS = 3
"""Fewer read words than this are no text to keep (a logo's name, a button's label)."""

MIN_READ_SHARE = 0.5
"""The share of a page's letters and digits that must be in read words."""

SURE = 60.0
"""Tesseract's confidence from which a word of the right shape is read."""

FAIRLY_SURE = 40.0
"""The confidence from which a word of the page's language (a stop word) is read."""

_CORE = re.compile(r'^[\W_]+|[\W_]+$')
_RUN = re.compile(r'[^\W_]+')
_RUN_SHAPE = re.compile(r'^(?:\d+|[^\W\d_][^\W\d_A-Z]*|[^\W\d_a-z]+)$')
"""A run of letters or digits as text has them: a number, or a word in lower case, Capitalised or UPPER CASE."""
_VOWELS = frozenset('aeiouyæøœаеёиоуыэюяієїўαεηιουω')  # Latin, Cyrillic, Greek  # noqa: RUF001


@dataclass(frozen=True, slots=True)
class TextVerdict:
    """What `judge_page` found: how many words were read, of how many, and whether the page is text."""

    read_words: int
    words: int
    read_share: float
    """Share of the page's letters and digits in read words (0 to 1)."""

    @property
    def is_text(self) -> bool:
        return self.read_words >= MIN_READ_WORDS and self.read_share >= MIN_READ_SHARE

    def reason(self) -> str:
        """Why a page is not text, in a report's words."""
        if not self.words:
            return 'no text found in the image (OCR)'
        return (
            f'OCR read no text in the image, only noise ({self.read_words} of {self.words} words read, '
            f'{self.read_share:.0%} of its characters): a logo, icon or illustration'
        )


def _wordlike(run: str) -> bool:
    """A number, or letters shaped like a word; in scripts with vowels, a run of four letters or more has one."""
    if not _RUN_SHAPE.match(run):
        return False
    if run.isdigit() or len(run) < 4:
        return True
    letters = [unicodedata.normalize('NFD', c)[0].casefold() for c in run]
    if not all(c.isascii() or '\u0370' <= c <= '\u04ff' for c in letters):
        return True
    return any(c in _VOWELS for c in letters)


def _read(word: OcrWord, core: str, stop_words: frozenset[str]) -> bool:
    """A word Tesseract is sure of whose every run of letters or digits is wordlike (``string_decoder.js``,
    ``12:30``, ``n=250``), or a fairly sure word of the page's language."""
    if word.confidence >= FAIRLY_SURE and len(core) > 1 and core.casefold() in stop_words:
        return True
    if word.confidence < SURE or (len(core) < 2 and not core.isdigit()):
        return False
    return all(_wordlike(run) for run in _RUN.findall(core))


def _stop_words(page: OcrPage) -> frozenset[str]:
    from ...analysis import _stop_words as stop_words_of
    from ...languages import detect_language

    sure = ' '.join(w.text for w in page.words if w.confidence >= SURE)
    code = detect_language(sure) if sure else None
    return stop_words_of(code) | stop_words_of('en') if code else stop_words_of('en')


def judge_page(page: OcrPage) -> TextVerdict:
    """How much of what OCR read on ``page`` reads as text (words of the detected language, numbers)."""
    cores = [(w, _CORE.sub('', w.text)) for w in page.words]
    cores = [(w, core) for w, core in cores if core]
    if not cores:
        return TextVerdict(0, 0, 0.0)
    stop_words = _stop_words(page)
    read = [core for w, core in cores if _read(w, core, stop_words)]
    total = sum(len(core) for _, core in cores)
    return TextVerdict(len(read), len(cores), sum(map(len, read)) / total)
