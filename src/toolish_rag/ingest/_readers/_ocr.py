"""OCR with Tesseract: the run's OCR settings, page images to text, and when a PDF text layer is garbage.

The readers that OCR (PDF, images) are handed the run's `OcrOptions` (`ParseJob.ocr`, through
`read_bytes`). Tesseract runs as a subprocess (one thread, a timeout from the
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
import statistics
import subprocess
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

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
    'ColumnTable',
    'column_tables',
    'join_hyphenated',
    'looks_tabular',
    'ocr_image',
    'ocr_page',
    'parse_tsv',
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

    def paragraphs(self) -> list[list[tuple[OcrWord, ...]]]:
        """The lines grouped by paragraph (Tesseract's block and paragraph), in reading order."""
        out: list[list[tuple[OcrWord, ...]]] = []
        previous: tuple[int, int] | None = None
        for line in self.lines():
            key = line[0].block, line[0].paragraph
            if key != previous:
                out.append([])
            out[-1].append(line)
            previous = key
        return out

    def tables(self) -> list[tuple[str, str]]:
        """Each table in `laid_out` text and its header: readers make them table blocks, so a chunk never cuts a
        row and repeats the header when it cuts the table."""
        out: list[tuple[str, str]] = []
        for paragraph in self.paragraphs():
            if looks_tabular(paragraph):
                rows = [' '.join(w.text for w in line) for line in paragraph]
                out.append(('\n'.join(rows), rows[0]))
        for table in column_tables(self):
            rendered = table.rendered()
            out.append((rendered.text, rendered.header))
        return out

    def laid_out(self) -> list[tuple[str, tuple[OcrWord, ...], tuple[int, int]]]:
        """Each line of the page's text: its text, its words and its paragraph, in reading order.

        As Tesseract lays the page out, except a table it read column by column (side-by-side blocks of
        short lines whose lines line up): that is one paragraph, a pipe table rebuilt row by row.
        """
        tables = {min(t.blocks): t for t in column_tables(self)}
        inside = {b for t in tables.values() for b in t.blocks}
        out: list[tuple[str, tuple[OcrWord, ...], tuple[int, int]]] = []
        for line in self.lines():
            block = line[0].block
            if block in tables:
                key = (block, -1)
                rendered = tables.pop(block)
                for text, words in rendered.lines():
                    out.append((text, words, key))
            if block not in inside:
                out.append((' '.join(w.text for w in line), line, (block, line[0].paragraph)))
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
        """The page's text as readers store it: its `laid_out` lines, paragraphs split by blank lines (as
        `raw_text` but tables row by row), hyphenated line ends joined, tidied."""
        parts: list[str] = []
        previous: tuple[int, int] | None = None
        for text, _, paragraph in self.laid_out():
            if previous is not None:
                parts.append('\n\n' if paragraph != previous else '\n')
            parts.append(text)
            previous = paragraph
        return _tidy(join_hyphenated(''.join(parts)))


TABLE_ROWS = 3
"""A paragraph of fewer lines is no table (a label and its value)."""

CELL_WORDS = 4
"""A column of a table: a block whose lines hold this many words or fewer (median); prose lines hold more."""


@dataclass(frozen=True)
class ColumnTable:
    """A table Tesseract read as side-by-side blocks (one a column): its blocks and its rows of cells."""

    blocks: frozenset[int]
    rows: tuple[tuple[tuple[OcrWord, ...], ...], ...]
    """Rows top to bottom; each a cell per column, left to right (a cell's words, maybe none)."""

    def rendered(self) -> Any:
        from ._tables import render_table

        return render_table([[' '.join(w.text for w in cell) for cell in row] for row in self.rows], 1)

    def lines(self) -> list[tuple[str, tuple[OcrWord, ...]]]:
        """The rendered table's lines and each one's words (none for the ``| --- |`` line)."""
        texts = self.rendered().text.split('\n')
        words = [tuple(w for cell in row for w in cell) for row in self.rows]
        return [(text, words.pop(0) if not set(text) <= set('|- ') and words else ()) for text in texts]


def _bounds(lines: Sequence[tuple[OcrWord, ...]]) -> tuple[int, int, int, int]:
    words = [w for line in lines for w in line]
    return (
        min(w.box[0] for w in words),
        min(w.box[1] for w in words),
        max(w.box[2] for w in words),
        max(w.box[3] for w in words),
    )


def column_tables(page: OcrPage) -> list[ColumnTable]:
    """Tables Tesseract split into a block per column: blocks of short lines (`CELL_WORDS`) side by side, at
    least `TABLE_ROWS` lines each, whose lines line up across blocks; each rebuilt as rows of cells."""
    blocks: dict[int, list[tuple[OcrWord, ...]]] = {}
    for line in page.lines():
        blocks.setdefault(line[0].block, []).append(line)
    narrow = {
        b: lines
        for b, lines in blocks.items()
        if len(lines) >= TABLE_ROWS and statistics.median(len(line) for line in lines) <= CELL_WORDS
    }
    bounds = {b: _bounds(lines) for b, lines in narrow.items()}
    out: list[ColumnTable] = []
    taken: set[int] = set()
    for first in narrow:
        if first in taken:
            continue
        group = [first]
        for other in narrow:
            if other not in taken and other not in group and _beside(bounds[other], [bounds[g] for g in group]):
                group.append(other)
        table = _rows(sorted(group, key=lambda b: bounds[b][0]), narrow) if len(group) >= 2 else None
        if table is not None:
            out.append(table)
            taken.update(table.blocks)
    return out


def _beside(box: tuple[int, int, int, int], group: list[tuple[int, int, int, int]]) -> bool:
    """``box`` overlaps the first of ``group`` over half the height of the shorter, and no box of it across."""
    _, top, _, bottom = group[0]
    overlap = min(bottom, box[3]) - max(top, box[1])
    if overlap <= 0.5 * min(bottom - top, box[3] - box[1]):
        return False
    return all(g[2] <= box[0] or g[0] >= box[2] for g in group)


def _rows(group: list[int], blocks: dict[int, list[tuple[OcrWord, ...]]]) -> ColumnTable | None:
    """The blocks of ``group`` (left to right) as rows, when most rows have a cell in two columns or more."""
    lines = [(column, line) for column, b in enumerate(group) for line in blocks[b]]
    height = statistics.median(line[0].box[3] - line[0].box[1] for _, line in lines)
    lines.sort(key=lambda item: (item[1][0].box[1] + item[1][0].box[3]) / 2)
    rows: list[list[tuple[int, tuple[OcrWord, ...]]]] = []
    for column, line in lines:
        middle = (line[0].box[1] + line[0].box[3]) / 2
        if (
            rows
            and abs(middle - rows[-1][0][1][0].box[1] - (rows[-1][0][1][0].box[3] - rows[-1][0][1][0].box[1]) / 2)
            < height * 0.5
        ):
            rows[-1].append((column, line))
        else:
            rows.append([(column, line)])
    if sum(len({c for c, _ in row}) >= 2 for row in rows) < max(TABLE_ROWS, 0.7 * len(rows)):
        return None
    grid = tuple(
        tuple(tuple(w for c, line in row if c == column for w in line) for column in range(len(group))) for row in rows
    )
    return ColumnTable(frozenset(group), grid)


def looks_tabular(lines: Sequence[tuple[OcrWord, ...]]) -> bool:
    """Lines read as rows of a table: at least `TABLE_ROWS`, and most of them with a column gap (a space between
    two words wider than twice the line's height) or three or more numbers."""
    if len(lines) < TABLE_ROWS:
        return False

    def row(line: tuple[OcrWord, ...]) -> bool:
        height = max(1, statistics.median(w.box[3] - w.box[1] for w in line))
        gaps = sum(b.box[0] - a.box[2] > 2 * height for a, b in itertools.pairwise(line))
        numbers = sum(any(c.isdigit() for c in w.text) for w in line)
        return gaps >= 1 or numbers >= 3

    return sum(map(row, lines)) >= max(TABLE_ROWS, 0.7 * len(lines))


def ocr_page(
    image: Image, dpi: float | None = None, *, source: bytes | None = None, languages: Sequence[str] = ()
) -> OcrPage:
    """What Tesseract reads in ``image`` (any mode; sent as 8-bit grey): words with boxes and confidences.

    One Tesseract run (TSV output) gives both the text and the words, in the installed ``languages``
    (`OcrOptions.languages`); with none of them installed, a page in another installed language is read again in it. ``source``: the image file's own bytes
    (one frame, nothing to flatten), read first exactly as ``tesseract FILE -`` reads them, so OCR is
    never worse than plain Tesseract on the same file; a weak reading of them (few sure words) is read
    again with orientation detection, and the surer reading kept. Raises `ReadError` when Tesseract
    is missing, fails, or passes the per-file time limit.
    """
    binary = require_tesseract()
    check_time()
    requested, installed = tuple(languages), installed_languages(binary)
    grey = image if image.mode == 'L' else image.convert('L')
    buffer = io.BytesIO()
    grey.save(buffer, format='PPM')  # PGM: no compression to spend time on; Tesseract reads it from stdin
    languages = tesseract_languages(requested, installed)
    page = _read(binary, buffer.getvalue(), source, languages, dpi, grey.size)
    if not _installed_requested(requested, installed) and installed - {'eng'}:
        # no language given (or none installed): the page's detected language, when Tesseract has it
        better = detected_language(page.raw_text(), installed)
        if better is not None:
            page = _read(binary, buffer.getvalue(), source, f'{better}+eng', dpi, grey.size)
    return page


SURE_WORD = 60.0
"""A word Tesseract is this sure of counts towards how well a page was read."""


def _sure_characters(page: OcrPage) -> int:
    return sum(len(w.text) for w in page.words if w.confidence >= SURE_WORD)


def _read(
    binary: str, grey: bytes, source: bytes | None, languages: str, dpi: float | None, size: tuple[int, int]
) -> OcrPage:
    """The grey page read with orientation detection; or, given the file's own bytes, those read as plain
    Tesseract does, and the grey page too only when most of that reading is unsure."""
    osd = 'osd' in _list_langs(binary)
    if source is None:
        return _tesseract(binary, grey, languages, dpi, size, '1' if osd else '3')
    plain = _tesseract(binary, source, languages, None, size, '3')
    sure = _sure_characters(plain)
    if not osd or not plain.words or sure * 2 >= sum(len(w.text) for w in plain.words):
        return plain  # nothing read (a photo), or mostly sure: as plain Tesseract reads it
    turned = _tesseract(binary, grey, languages, dpi, size, '1')
    return turned if _sure_characters(turned) > sure else plain


def ocr_image(image: Image, dpi: float | None = None, languages: Sequence[str] = ()) -> str:
    """The text Tesseract reads in ``image``, paragraphs split by blank lines (`ocr_page`'s text)."""
    return ocr_page(image, dpi, languages=languages).text


def _tesseract(
    binary: str, image: bytes, languages: str, dpi: float | None, size: tuple[int, int], psm: str
) -> OcrPage:
    """Tesseract's words in ``image`` (an image file's bytes) in ``languages``, within what is left of the file's
    time. ``psm``: ``1``, segmentation with orientation detection (a page scanned sideways), or ``3``, without."""
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
