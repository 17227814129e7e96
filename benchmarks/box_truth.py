"""Where another reader (pdfplumber, plain Tesseract) draws the characters of a quote: the truth of provenance_bench.

A quote is text of one of our chunks; the truth is the other reader's boxes of the same characters on the page,
found without our boxes:

* **prose**: the quote spelled (whitespace aside, NFKC: a ligature ``ﬁ`` is ``fi``) in the other reader's
  character order, exactly once; else in the drawn order (`reading_order`: line by line, left to right; the
  reader's own runs cell by cell on some pages); else its words chained where they stand (`chain_words`:
  reading orders differ: columns, right to left, line numbers). A word broken by a hyphen at a line's end, which
  our readers join, is also spelled joined (`hyphens_joined`).
* **tables** (a quote holding a cell bar ``|``): our chunk's text of a table is a rendering (cell bars, the
  ``| --- |`` line, empty cells), so it is not searched as a string: it is cut into its cells and rows, and each
  word is matched to a drawn word of the same text, chained so that a cell's words follow in reading order
  (a word space apart on a line, or on a line below: a cell stacking numbers one a line is one cell), the next cell of a row stands to its right and the next row below (`table_tokens`). The ``---`` of the header
  rule is not drawn, so not looked for; a cell repeating the one before it that the page does not draw again
  beside it (a merged cell the rendering spreads over its columns) is matched to the words drawn once.
* **repeated text** (found in two places, or two chains as short): the quote is widened, a word at a time on
  either side, by its own chunk's text around it (up to `MAX_CONTEXT` words a side) until the wider text is found
  once; the truth is then the part of it that is the quote. Still repeated (a paragraph printed twice), prose
  only: our text of the page (the document's chunks' text between the first and last offsets boxed on the
  page) spells it n times and the quote is the k-th; when the reader's order spells it n times too, the truth
  is its k-th. The chunk's offsets, never our boxes, pick the place.

What is not found is returned as the reason (`Unscored`), and counted by reason.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal, NamedTuple

import numpy as np

Box = tuple[float, float, float, float]
Item = tuple[Box, str]
Relation = Literal['word', 'inner', 'cell', 'row']

MAX_CONTEXT = 12
"""Words of the chunk's own text a quote may be widened by on either side to tell repeated text apart."""
_FAR = 10.0
"""The cost of a step against the table's order (a next cell to the left, a next row above): allowed, never cheap."""


_UP = 0.05
_TIE = 1.5
"""A second chain (ending elsewhere) within this factor of the shortest: the place cannot be told (widen)."""


class Unscored(str):
    """Why the truth of a quote was not found: ``missing`` (a word the other reader does not draw or spells
    otherwise), ``repeated`` (still found twice with all the context there is)."""


MISSING, REPEATED = Unscored('missing'), Unscored('repeated')


class Token(NamedTuple):
    text: str
    relation: Relation
    """How it follows the token before it: in the same cell (or prose), in the next cell of a row, in a next row."""


def nfkc(text: str) -> str:
    return unicodedata.normalize('NFKC', text)


def table_tokens(text: str) -> list[tuple[int, Token]]:
    """A rendered table's ``text`` cut into words (with their offsets), each with how it follows the one
    before: in its cell (``inner``), in the next cell of the row, in a next row."""
    out: list[tuple[int, Token]] = []
    pending: Relation = 'inner'
    for m in re.finditer(r'\n|(?<!\\)\||[^\s|]+(?:\\\|[^\s|]*)*', text):
        part = m.group(0)
        if part == '\n':
            pending = 'row'
        elif part == '|':
            pending = 'cell' if pending == 'inner' else pending
        elif not re.fullmatch(r'-{3,}|:?-{3,}:?', part):  # the header rule: a rendering, not drawn
            out.append((m.start(), Token(nfkc(part.replace('\\|', '|')), pending)))
            pending = 'inner'
    return out


def _middle(b: Box) -> float:
    return (b[1] + b[3]) / 2


def _steps(a: np.ndarray, b: np.ndarray, relation: Relation) -> np.ndarray:
    """How far each word of ``b`` (rows) stands from following each of ``a`` (columns) as ``relation`` says,
    in page fractions: the next cell to the right on the row, the next row below, the next word in reading
    order (either way across: right-to-left scripts; a line up, the next column's top, costs `_UP` more).
    One drawn word is never two tokens."""
    ax0, atop, ax1, abot = (a[:, k][None, :] for k in range(4))
    bx0, btop, bx1, bbot = (b[:, k][:, None] for k in range(4))
    rise = np.abs((atop + abot) / 2 - (btop + bbot) / 2)
    if relation == 'cell':  # to the right, on the row (a cell of several lines may end lower or start higher)
        gap = bx0 - ax1
        out = np.where(gap >= -0.002, gap + 3 * rise, _FAR + np.abs(gap))
    elif relation == 'row':  # below, anywhere across
        out = np.where(btop > atop + 0.001, btop - atop, _FAR + np.abs(btop - atop))
    else:
        gap = np.maximum(0.0, np.maximum(bx0 - ax1, ax0 - bx1))
        out = gap + 3 * rise + np.where((btop + bbot) / 2 < atop, _UP, 0.0)
        if relation == 'inner':  # in one cell: never more than a word space right of it, nor a line up
            apart = (bx0 - ax1 > 1.5 * (abot - atop)) | ((btop + bbot) / 2 < atop)
            out = np.where(apart, out + _FAR, out)
    same = (ax0 == bx0) & (atop == btop) & (ax1 == bx1) & (abot == bbot)
    return np.where(same, _FAR * 10, out)


def chain_words(words: list[Item], tokens: list[Token]) -> list[Item] | Unscored:
    """One drawn word per token, in the chain of least total `_steps`, whatever order the reader lists them in
    (each token matched to a word of its text, or reversed: pdfplumber spells right-to-left words backwards).
    `MISSING` when a token has no such word, `REPEATED` when a second chain, ending elsewhere, is nearly as
    short (within `_TIE`)."""
    candidates = [[w for w in words if nfkc(w[1]) in (t.text, t.text[::-1])] for t in tokens]
    if not tokens or any(not c for c in candidates):
        return MISSING
    boxes = [np.array([w[0] for w in c], dtype=float) for c in candidates]
    cost = np.zeros(len(candidates[0]))
    back: list[np.ndarray] = []
    for n in range(1, len(tokens)):
        total = cost[None, :] + _steps(boxes[n - 1], boxes[n], tokens[n].relation)
        best = total.argmin(axis=1)
        cost = total[np.arange(len(best)), best]
        back.append(best)
    order = np.argsort(cost, kind='stable')
    if len(order) > 1 and cost[order[1]] <= cost[order[0]] * _TIE + 0.01:
        return REPEATED  # two places spell it nearly as well (a row of zeros)
    at = int(order[0])
    chain = [candidates[-1][at]]
    for n in range(len(back) - 1, -1, -1):
        at = int(back[n][at])
        chain.append(candidates[n][at])
    return chain[::-1]


def _squeezed(text: str) -> str:
    return re.sub(r'\s+', '', nfkc(text))


def find_spelled(
    chars: list[Item], before: str, quote: str, after: str, nth: tuple[int, int] | None = None
) -> list[Item] | Unscored:
    """The characters spelling ``before + quote + after`` (whitespace aside, NFKC) exactly once in the reader's
    order, cut to the quote's; `MISSING` when not spelled, `REPEATED` when spelled more than once, but for
    ``nth = (k, n)``: the k-th (0-based) when it is spelled exactly ``n`` times."""
    spelled, owner = [], []
    for n, (_, text) in enumerate(chars):
        for ch in re.sub(r'\s+', '', nfkc(text)):
            spelled.append(ch)
            owner.append(n)
    joined = ''.join(spelled)
    head, wanted = (re.sub(r'\s+', '', nfkc(t)) for t in (before, quote))
    whole = head + wanted + re.sub(r'\s+', '', nfkc(after))
    at = joined.find(whole) if wanted else -1
    if at < 0:
        return MISSING
    if joined.find(whole, at + 1) >= 0:
        places = [m.start() for m in re.finditer(f'(?={re.escape(whole)})', joined)]
        if nth is None or len(places) != nth[1]:
            return REPEATED
        at = places[nth[0]]
    kept = sorted(set(owner[at + len(head) : at + len(head) + len(wanted)]))
    return [chars[n] for n in kept]


def reading_order(chars: list[Item]) -> list[Item]:
    """``chars`` line by line down the page, left to right on a line (a line: characters whose middles are
    within half a character's height of its first's): the drawn order, where the reader's own (the content
    stream's) runs cell by cell or column by column."""
    lines: list[list[Item]] = []
    for item in sorted(chars, key=lambda c: _middle(c[0])):
        box = item[0]
        if lines and abs(_middle(lines[-1][0][0]) - _middle(box)) < (box[3] - box[1]) * 0.5:
            lines[-1].append(item)
        else:
            lines.append([item])
    return [c for line in lines for c in sorted(line, key=lambda c: c[0][0])]


def _spelled(chars: list[Item], before: str, quote: str, after: str) -> list[Item] | Unscored:
    """`find_spelled` in the reader's order, else (not spelled there) in the drawn `reading_order`; else both
    again with the hyphens of words broken at a line's end dropped (`hyphens_joined`)."""
    found: list[Item] | Unscored = MISSING
    for order in (chars, reading_order(chars)):
        for items in (order, hyphens_joined(order)):
            found = find_spelled(items, before, quote, after)
            if found is not MISSING:
                return found
    return found


def hyphens_joined(items: list[Item]) -> list[Item]:
    """``items`` without the hyphen of a word broken at a line's end (``per-`` / ``sons``): our readers join such
    a word (``persons``), and so does a quote of it, where the other reader keeps the hyphen. A word ending in
    ``-`` loses it; a ``-`` character whose next item stands on another line is dropped."""
    out: list[Item] = []
    for n, (box, text) in enumerate(items):
        if len(text) > 1 and text.endswith('-'):
            out.append((box, text[:-1]))
        elif text == '-' and n + 1 < len(items) and abs(_middle(items[n + 1][0]) - _middle(box)) >= (box[3] - box[1]):
            continue
        else:
            out.append((box, text))
    return out


def _chained(words: list[Item], before: str, quote: str, after: str, table: bool) -> list[Item] | Unscored:
    """The drawn words of ``quote`` chained with its context's (`chain_words`), cut to the quote's. In a table,
    a cell repeating the one before it is a merged cell the rendering spreads where the page does not draw it
    again beside it: its words are then the ones drawn once (`_repeats`)."""
    text = before + quote + after
    if table:
        tokens = table_tokens(text)
    else:
        tokens = [(m.start(), Token(nfkc(m.group(0)), 'word')) for m in re.finditer(r'\S+', text)]
    chain = chain_words(words, [token for _, token in tokens])
    repeats = _repeats([token for _, token in tokens]) if table else []
    if repeats and not isinstance(chain, Unscored) and not all(_beside(chain[n - 1][0], chain[n][0]) for n in repeats):
        chain = _drawn_once(words, [token for _, token in tokens], repeats)
    if isinstance(chain, Unscored):
        return chain
    head = sum(at < len(before) for at, _ in tokens)
    body = sum(len(before) <= at < len(before) + len(quote) for at, _ in tokens)
    return list(dict.fromkeys(chain[head : head + body]))


def _cells(tokens: list[Token]) -> list[list[int]]:
    cells: list[list[int]] = []
    for n, token in enumerate(tokens):
        if not cells or token.relation in ('cell', 'row'):
            cells.append([])
        cells[-1].append(n)
    return cells


def _repeats(tokens: list[Token]) -> list[int]:
    """The first token of each cell whose words are the cell's before it, in its row."""
    cells = _cells(tokens)
    texts = [[tokens[n].text for n in cell] for cell in cells]
    return [
        cell[0] for i, cell in enumerate(cells) if i and tokens[cell[0]].relation == 'cell' and texts[i] == texts[i - 1]
    ]


def _drawn_once(words: list[Item], tokens: list[Token], repeats: list[int]) -> list[Item] | Unscored:
    """`chain_words` of ``tokens`` but the repeating cells (starting at ``repeats``), whose words are then
    those of the cell they repeat: one drawn (merged) cell."""
    cells = _cells(tokens)
    starts = {cell[0]: i for i, cell in enumerate(cells)}
    again = {n: cells[starts[first] - 1][k] for first in repeats for k, n in enumerate(cells[starts[first]])}
    kept = [n for n in range(len(tokens)) if n not in again]
    chain = chain_words(words, [tokens[n] for n in kept])
    if isinstance(chain, Unscored):
        return chain
    placed = dict(zip(kept, chain, strict=True))
    for n in sorted(again):
        placed[n] = placed[again[n]]
    return [placed[n] for n in range(len(tokens))]


def _beside(a: Box, b: Box) -> bool:
    """``b`` drawn right of ``a`` on its line, within a quarter of the page: the next cell, drawn again."""
    return abs(_middle(a) - _middle(b)) < (a[3] - a[1]) * 0.5 and 0 <= b[0] - a[2] < 0.25


def _context(text: str, start: int, end: int, words_before: int, words_after: int) -> tuple[str, str]:
    """Up to ``words_before`` words of ``text`` before offset ``start`` and ``words_after`` after ``end``."""
    head = [m.start() for m in re.finditer(r'\S+', text[:start])]
    tail = [m.end() for m in re.finditer(r'\S+', text[end:])]
    b = head[-words_before] if words_before and len(head) >= words_before else (0 if words_before else start)
    a = end + tail[words_after - 1] if words_after and len(tail) >= words_after else (len(text) if words_after else end)
    return text[b:start], text[end:a]


def truth_run(
    chars: list[Item],
    words: list[Item],
    text: str,
    start: int,
    end: int,
    *,
    table: bool,
    page: tuple[str, int] | None = None,
) -> list[Item] | Unscored:
    """The other reader's characters (or words) of ``text[start:end]`` (a quote of a chunk's ``text``) on the
    page: prose spelled in its order, else chained; a table's cells chained. Repeated: widened by ``text``;
    still repeated, prose: the k-th of n places in our ``page`` text (``(text, the quote's offset)``) is the
    k-th in the reader's order when it spells it n times too (`nth_place`)."""
    found = _widened(chars, words, text, start, end, table)
    if found is REPEATED and page is not None and not table:
        places = [m.start() for m in re.finditer(f'(?={re.escape(_squeezed(text[start:end]))})', _squeezed(page[0]))]
        k = len(_squeezed(page[0][: page[1]]))
        if k in places:
            found = find_spelled(chars, '', text[start:end], '', (places.index(k), len(places)))
    return found


def _widened(
    chars: list[Item], words: list[Item], text: str, start: int, end: int, table: bool
) -> list[Item] | Unscored:
    quote, tried = text[start:end], set()
    for k in range(MAX_CONTEXT + 1):
        repeated = False
        for nb, na in ((k, k), (k, 0), (0, k)):
            before, after = _context(text, start, end, nb, na)
            if (before, after) in tried:
                continue  # the chunk's text ends there: nothing more on that side
            tried.add((before, after))
            found = _chained(words, before, quote, after, True) if table else _spelled(chars, before, quote, after)
            if not table and found is MISSING:  # not in the reader's order: its words where they stand
                found = _chained(words, before, quote, after, False)
            if not isinstance(found, Unscored):
                return found
            repeated = repeated or found is REPEATED
        if not repeated:  # widened past what the page draws in that order (or not found at all)
            return REPEATED if k else MISSING
    return REPEATED


__all__ = [
    'MISSING',
    'REPEATED',
    'Unscored',
    'chain_words',
    'find_spelled',
    'reading_order',
    'table_tokens',
    'truth_run',
]
