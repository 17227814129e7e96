"""OCR with Tesseract: the run's OCR settings, page images to text, and when a PDF text layer is garbage.

Readers see the settings of the file being parsed through `ocr_options` (set by `reading`, as
`bounded` sets the limits). Tesseract runs as a subprocess (one thread, a timeout from the
per-file limit); a missing binary is a `ReadError` naming the package to install.
See docs/ingestion.md#ocr.
"""

from __future__ import annotations

import functools
import io
import itertools
import os
import re
import shutil
import subprocess
import unicodedata
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from .._limits import check_time, current_limits, seconds_left
from .._model import ReadError

if TYPE_CHECKING:
    from PIL.Image import Image

__all__ = [
    'DEFAULT_OCR',
    'INSTALL_TESSERACT',
    'NoTextFound',
    'OcrPage',
    'OcrWord',
    'OcrMode',
    'OcrOptions',
    'installed_languages',
    'join_hyphenated',
    'ocr_image',
    'ocr_options',
    'ocr_page',
    'parse_tsv',
    'reading',
    'require_tesseract',
    'tesseract_languages',
    'tesseract_path',
    'text_is_garbage',
]

OcrMode = Literal['never', 'auto', 'always']
"""``never``: text layers only; ``auto``: OCR pages without a usable text layer, and image files;
``always``: OCR every PDF page (ignoring its text layer) and image file."""

INSTALL_TESSERACT = (
    'Tesseract OCR is not installed: install it (Debian/Ubuntu: apt-get install tesseract-ocr; '
    'macOS: brew install tesseract) and ingest again'
)


class NoTextFound(ReadError):
    """A file with nothing to read and nothing wrong (an image without text): skipped, not failed."""


@dataclass(frozen=True, slots=True)
class OcrOptions:
    """How the files of a run are OCR'd: the mode and the languages asked for (docs/ingestion.md#ocr)."""

    mode: OcrMode = 'auto'
    languages: tuple[str, ...] = ()
    """ISO 639-1 codes (``de``) or Tesseract names (``deu``), in order of preference; the installed
    ones are used, English when none is (or none is given)."""

    def __post_init__(self) -> None:
        if self.mode not in ('never', 'auto', 'always'):
            raise ValueError(f"ocr must be 'never', 'auto' or 'always', not {self.mode!r}")


DEFAULT_OCR = OcrOptions()

_options: ContextVar[OcrOptions] = ContextVar('toolish_rag_ingest_ocr', default=DEFAULT_OCR)


@contextmanager
def reading(options: OcrOptions) -> Iterator[None]:
    """Parse within ``options``: readers see them through `ocr_options`."""
    token = _options.set(options)
    try:
        yield
    finally:
        _options.reset(token)


def ocr_options() -> OcrOptions:
    """The OCR settings of the file being parsed (`DEFAULT_OCR` outside `reading`)."""
    return _options.get()


def tesseract_path() -> str | None:
    """The ``tesseract`` binary on ``PATH``, or ``None``."""
    return shutil.which('tesseract')


def require_tesseract() -> str:
    """The ``tesseract`` binary, or a `ReadError` naming the package to install."""
    path = tesseract_path()
    if path is None:
        raise ReadError(INSTALL_TESSERACT)
    return path


@functools.cache
def _list_langs(binary: str) -> frozenset[str]:
    try:
        out = subprocess.run([binary, '--list-langs'], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    lines = out.stdout.splitlines()[1:]  # the first line says where the data is
    return frozenset(ln.strip() for ln in lines if ln.strip())


def installed_languages(binary: str) -> frozenset[str]:
    """The Tesseract language data ``binary`` has (``tesseract --list-langs``), ``osd`` left out."""
    return _list_langs(binary) - {'osd'}


# ISO 639-1 -> Tesseract's traineddata names (ISO 639-2/T, with its few own spellings)
_ISO_TO_TESSERACT = {
    'ar': 'ara', 'bg': 'bul', 'bn': 'ben', 'ca': 'cat', 'cs': 'ces', 'da': 'dan', 'de': 'deu',
    'el': 'ell', 'en': 'eng', 'es': 'spa', 'et': 'est', 'fa': 'fas', 'fi': 'fin', 'fr': 'fra',
    'ga': 'gle', 'he': 'heb', 'hi': 'hin', 'hr': 'hrv', 'hu': 'hun', 'hy': 'hye', 'id': 'ind',
    'it': 'ita', 'ja': 'jpn', 'ko': 'kor', 'lt': 'lit', 'lv': 'lav', 'nb': 'nor', 'nl': 'nld',
    'no': 'nor', 'pl': 'pol', 'pt': 'por', 'ro': 'ron', 'ru': 'rus', 'sk': 'slk', 'sl': 'slv',
    'sr': 'srp', 'sv': 'swe', 'ta': 'tam', 'th': 'tha', 'tr': 'tur', 'uk': 'ukr', 'ur': 'urd',
    'vi': 'vie', 'zh': 'chi_sim',
}  # fmt: skip


def _installed_requested(requested: Sequence[str], installed: frozenset[str]) -> list[str]:
    chosen: list[str] = []
    for item in requested:
        for code in re.split(r'[+,\s]+', item.strip().lower()):
            name = _ISO_TO_TESSERACT.get(code, code)
            if name in installed and name not in chosen:
                chosen.append(name)
    return chosen


def tesseract_languages(requested: Sequence[str], installed: frozenset[str]) -> str:
    """The ``-l`` argument: the requested languages Tesseract has data for, joined by ``+``; else ``eng``.

    A request may be an ISO 639-1 code (``de``), a Tesseract name (``deu``) or several joined by
    ``+``; ``auto`` and unknown or uninstalled names are left out.
    """
    chosen = _installed_requested(requested, installed)
    if chosen:
        return '+'.join(chosen)
    return 'eng' if 'eng' in installed or not installed else sorted(installed)[0]


def detected_language(text: str, installed: frozenset[str]) -> str | None:
    """The Tesseract language of ``text`` (`toolish_rag.languages.detect_language`) when its data is
    installed and it is not English: the language to read a page again in, after a first pass in English."""
    from ...languages import detect_language

    code = detect_language(text)
    name = _ISO_TO_TESSERACT.get(code) if code else None
    return name if name is not None and name != 'eng' and name in installed else None


_HYPHENATED = re.compile(r'([^\W\d_])-[ \t]*\n[ \t]*([^\W\d_])')


def join_hyphenated(text: str) -> str:
    """Join a word broken at a line end: a letter, ``-``, a newline, then a lower-case letter
    (``well-\nKnown`` and ``1990-\n91`` keep their line break)."""
    return _HYPHENATED.sub(lambda m: m[1] + m[2] if m[2].islower() else m[0], text)


@dataclass(frozen=True, slots=True)
class OcrWord:
    """A word Tesseract read: its text, confidence and box in the page image, and where it stands in the layout."""

    text: str
    confidence: float
    """Tesseract's word confidence, 0 to 100."""
    box: tuple[int, int, int, int]
    """``(x0, top, x1, bottom)`` in image pixels, origin top-left."""
    block: int
    paragraph: int
    line: int
    """Tesseract's block, paragraph (in its block) and line (in its paragraph) numbers."""

    @property
    def line_key(self) -> tuple[int, int, int]:
        """The line this word is on: ``(block, paragraph, line)``."""
        return self.block, self.paragraph, self.line


@dataclass(frozen=True, slots=True)
class OcrPage:
    """What Tesseract read on one page image: its size in pixels and the words in reading order.

    The page's text is derived from the words as Tesseract's own text output lays it out:
    words of a line joined by spaces, lines by newlines, paragraphs by blank lines.
    """

    width: int
    height: int
    words: tuple[OcrWord, ...] = ()
    languages: str = 'eng'
    """The ``-l`` argument the page was read with (``deu+eng``)."""

    def lines(self) -> list[tuple[OcrWord, ...]]:
        """The words grouped by line, in reading order."""
        out: list[tuple[OcrWord, ...]] = []
        for _, group in itertools.groupby(self.words, key=lambda w: w.line_key):
            out.append(tuple(group))
        return out

    def raw_text(self) -> str:
        """The text as ``tesseract IMAGE -`` prints it: lines of words, paragraphs split by blank lines."""
        parts: list[str] = []
        previous: tuple[int, int] | None = None
        for line in self.lines():
            paragraph = line[0].block, line[0].paragraph
            if previous is not None:
                parts.append('\n\n' if paragraph != previous else '\n')
            parts.append(' '.join(w.text for w in line))
            previous = paragraph
        return ''.join(parts)

    @property
    def text(self) -> str:
        """The page's text as readers store it: `raw_text` with hyphenated line ends joined, tidied."""
        return _tidy(join_hyphenated(self.raw_text()))


def ocr_page(image: Image, dpi: float | None = None) -> OcrPage:
    """What Tesseract reads in ``image`` (any mode; sent as 8-bit grey): words with boxes and confidences.

    One Tesseract run (TSV output) gives both the text and the words; with no language asked for,
    a page in another installed language is read again in it. Raises `ReadError` when Tesseract
    is missing, fails, or passes the per-file time limit.
    """
    binary = require_tesseract()
    check_time()
    requested, installed = ocr_options().languages, installed_languages(binary)
    grey = image if image.mode == 'L' else image.convert('L')
    buffer = io.BytesIO()
    grey.save(buffer, format='PPM')  # PGM: no compression to spend time on; Tesseract reads it from stdin
    languages = tesseract_languages(requested, installed)
    page = _tesseract(binary, buffer.getvalue(), languages, dpi, grey.size)
    if not _installed_requested(requested, installed) and installed - {'eng'}:
        # no language given (or none installed): the page's detected language, when Tesseract has it
        better = detected_language(page.raw_text(), installed)
        if better is not None:
            page = _tesseract(binary, buffer.getvalue(), f'{better}+eng', dpi, grey.size)
    return page


def ocr_image(image: Image, dpi: float | None = None) -> str:
    """The text Tesseract reads in ``image``, paragraphs split by blank lines (`ocr_page`'s text)."""
    return ocr_page(image, dpi).text


def _tesseract(binary: str, image: bytes, languages: str, dpi: float | None, size: tuple[int, int]) -> OcrPage:
    """Tesseract's words in ``image`` (PGM bytes) in ``languages``, within what is left of the file's time."""
    # --psm 1: page segmentation with orientation detection (a page scanned sideways), when osd data is there
    psm = '1' if 'osd' in _list_langs(binary) else '3'
    command = [binary, 'stdin', 'stdout', '-l', languages, '--psm', psm]
    if dpi:
        command += ['--dpi', str(round(dpi))]
    command.append('tsv')
    limit = current_limits().seconds
    left = seconds_left()  # what is left of the file's time: a page cannot overrun it
    timeout = max(left, 1.0) if left is not None else None
    env = {**os.environ, 'OMP_THREAD_LIMIT': '1'}  # one core per page: the parse pool is the parallelism
    try:
        done = subprocess.run(command, input=image, capture_output=True, timeout=timeout, env=env, check=False)
    except subprocess.TimeoutExpired:
        raise ReadError(f'OCR took longer than the {limit:g}-second limit per file') from None
    except OSError as exc:
        raise ReadError(f'cannot run Tesseract: {exc}') from None
    if done.returncode != 0:
        detail = ' '.join(done.stderr.decode('utf-8', 'replace').split())[-300:]
        raise ReadError(f'Tesseract failed (exit {done.returncode}): {detail}')
    return parse_tsv(done.stdout.decode('utf-8', 'replace'), size, languages)


def parse_tsv(tsv: str, size: tuple[int, int], languages: str = 'eng') -> OcrPage:
    """An `OcrPage` from Tesseract's TSV output (``tesseract IMAGE stdout tsv``) for an image of ``size`` pixels.

    Rows of level 5 are words (others are pages, blocks, paragraphs and lines); words of no text are left out.
    """
    width, height = size
    words: list[OcrWord] = []
    for row in tsv.split('\n')[1:]:
        cells = row.split('\t')
        if len(cells) < 12:
            continue
        if cells[0] == '1':
            width, height = int(cells[8]) or width, int(cells[9]) or height
        text = cells[11].replace('\x0c', '').strip()
        if cells[0] != '5' or not text:
            continue
        left, top, w, h = (int(c) for c in cells[6:10])
        confidence = min(100.0, max(0.0, float(cells[10])))
        block, paragraph, line = (int(c) for c in cells[2:5])
        words.append(OcrWord(text, confidence, (left, top, left + w, top + h), block, paragraph, line))
    return OcrPage(width, height, tuple(words), languages)


def _tidy(text: str) -> str:
    """Lines right-stripped, runs of blank lines made one, no blank lines at the ends."""
    out: list[str] = []
    for line in text.split('\n'):
        line = line.rstrip()
        if line or (out and out[-1]):
            out.append(line)
    return '\n'.join(out).strip('\n')


_RUN = re.compile(r'[^\W_]+')
_WORD_RUN = re.compile(r'^(?:\d+|[^\W\d_][^\W\d_A-Z]*|[^\W\d_a-z]+)$')
"""A run of letters or digits as text has them: a number, or a word in lower case, Capitalised or UPPER CASE."""
_CID = re.compile(r'\(cid:\d+\)')


def _bad_char(c: str) -> bool:
    return c not in '\n\t\r' and (c == '\ufffd' or unicodedata.category(c) in ('Co', 'Cc', 'Cn', 'Cs'))


def text_quality(text: str) -> float:
    """How much of a text layer reads as text, 0 to 1: the share of its letter/digit runs' characters in
    runs shaped like words or numbers (``2tORR2SPON32`` is not), less characters no text has
    (private use, control, U+FFFD, pdfminer's ``(cid:N)``). Code, URLs and UUIDs still score high."""
    cleaned = _CID.sub('\ufffd', text)
    runs = _RUN.findall(cleaned)
    bad = sum(1 for c in cleaned if _bad_char(c))
    total = sum(map(len, runs)) + bad
    if not total:
        return 0.0
    good = sum(len(r) for r in runs if _WORD_RUN.match(r))
    return max(0.0, (good - bad) / total)


GARBAGE_BELOW = 0.5
"""`text_is_garbage`: a text layer whose `text_quality` is under this is read by OCR (measured:
every page of the born-digital test documents scores 0.75 or more, a page pypdf decodes
with a broken font map 0.16; see tests/ingest/test_ocr.py)."""


def text_is_garbage(text: str) -> bool:
    """True for a text layer of at least 20 characters that is mostly not words (a broken font map)."""
    return sum(not c.isspace() for c in text) >= 20 and text_quality(text) < GARBAGE_BELOW
