"""RE2 patterns rewritten as ``regexp_like`` prefilters that can select more rows, never fewer.

See docs/stores/lancedb.md (Design notes).
"""

from __future__ import annotations

import re

__all__ = ['prefilter_pattern']

Ranges = tuple[tuple[int, int], ...]
"""A set of code points: sorted, disjoint, non-adjacent inclusive ranges."""

_MAX = 0x10FFFF
_ANY: Ranges = ((0, _MAX),)
_NONE: Ranges = ()
_SURROGATES = (0xD800, 0xDFFF)

_PERL: dict[str, Ranges] = {
    'd': ((0x30, 0x39),),
    's': ((0x09, 0x0A), (0x0C, 0x0D), (0x20, 0x20)),
    'w': ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)),
}
"""RE2's Perl classes (ASCII only; ``\\s`` has no ``\\v``)."""

_POSIX: dict[str, Ranges] = {
    'alnum': ((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)),
    'alpha': ((0x41, 0x5A), (0x61, 0x7A)),
    'ascii': ((0x00, 0x7F),),
    'blank': ((0x09, 0x09), (0x20, 0x20)),
    'cntrl': ((0x00, 0x1F), (0x7F, 0x7F)),
    'digit': ((0x30, 0x39),),
    'graph': ((0x21, 0x7E),),
    'lower': ((0x61, 0x7A),),
    'print': ((0x20, 0x7E),),
    'punct': ((0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E)),
    'space': ((0x09, 0x0D), (0x20, 0x20)),
    'upper': ((0x41, 0x5A),),
    'word': ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)),
    'xdigit': ((0x30, 0x39), (0x41, 0x46), (0x61, 0x66)),
}
"""RE2's POSIX classes, ``[[:name:]]`` (ASCII only)."""

_EXTRA_FOLDS = {ord('k'): 0x212A, ord('K'): 0x212A, ord('s'): 0x17F, ord('S'): 0x17F}
"""Non-ASCII members of an ASCII letter's fold orbit in RE2 (Kelvin sign, long s)."""

_C_ESCAPES = {'n': 0x0A, 'r': 0x0D, 't': 0x09, 'a': 0x07, 'f': 0x0C, 'v': 0x0B}
_REPEAT = re.compile(r'\{(0|[1-9][0-9]*)(?:(,)(0|[1-9][0-9]*)?)?\}')
_HEX = re.compile(r'x(?:\{([0-9A-Fa-f]+)\}|([0-9A-Fa-f]{2}))')
_OCTAL = re.compile(r'0[0-7]{0,2}|[1-7][0-7]{1,2}')
_NAME = re.compile(r'P?<[A-Za-z0-9_]+>')
_FLAGS = re.compile(r'([imsU]*)(?:-([imsU]+))?([:)])')


class _NoPrefilter(Exception):
    """The pattern holds a construct with no safe rewrite (``\\C``) or one this lexer does not know."""


def prefilter_pattern(pattern: str, *, case_sensitive: bool = True) -> str | None:
    """A ``regexp_like`` pattern matching at least every text RE2 finds ``pattern`` in, or ``None``.

    ``pattern`` must already compile with RE2 (`toolish_rag.regex.compile_request`): the
    rewrite follows RE2's reading of it and gives up (``None``) on anything unexpected rather
    than guess. ``None`` means: no prefilter, scan the records in scope.
    """
    try:
        return _Rewriter(pattern, fold=not case_sensitive).run()
    except (_NoPrefilter, IndexError):
        return None


# -- code point sets ------------------------------------------------------------------------


def _normalize(ranges: list[tuple[int, int]] | Ranges) -> Ranges:
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    return tuple(merged)


def _complement(ranges: Ranges) -> Ranges:
    out: list[tuple[int, int]] = []
    start = 0
    for lo, hi in ranges:
        if lo > start:
            out.append((start, lo - 1))
        start = hi + 1
    if start <= _MAX:
        out.append((start, _MAX))
    return tuple(out)


def _fold_ascii(ranges: Ranges) -> Ranges:
    """RE2's case-folded set of an ASCII set; any character if the set is not all ASCII."""
    if ranges and ranges[-1][1] > 0x7F:
        return _ANY
    out = list(ranges)
    for lo, hi in ranges:
        for cp in range(lo, hi + 1):
            ch = chr(cp)
            if ch.isalpha():
                other = ord(ch.swapcase())
                out.append((other, other))
            if cp in _EXTRA_FOLDS:
                out.append((_EXTRA_FOLDS[cp], _EXTRA_FOLDS[cp]))
    return _normalize(out)


def _endpoint(cp: int) -> str:
    ch = chr(cp)
    return ch if ch.isascii() and ch.isalnum() else f'\\x{{{cp:X}}}'


def _render(ranges: Ranges) -> str:
    """One atom matching exactly the characters of ``ranges`` (text never holds surrogates)."""
    lo_s, hi_s = _SURROGATES
    usable: list[tuple[int, int]] = []
    for lo, hi in ranges:
        if hi < lo_s or lo > hi_s:
            usable.append((lo, hi))
            continue
        if lo < lo_s:
            usable.append((lo, lo_s - 1))
        if hi > hi_s:
            usable.append((hi_s + 1, hi))
    if usable == [(0, lo_s - 1), (hi_s + 1, _MAX)]:
        return '(?s:.)'
    if not usable:
        return '[^\\x{0}-\\x{10FFFF}]'
    if len(usable) == 1 and usable[0][0] == usable[0][1]:
        return _endpoint(usable[0][0])
    parts = (_endpoint(lo) if lo == hi else f'{_endpoint(lo)}-{_endpoint(hi)}' for lo, hi in usable)
    return '[' + ''.join(parts) + ']'


# -- the rewrite ----------------------------------------------------------------------------


class _Rewriter:
    """One pass over an RE2 pattern, in the order RE2's parser reads it, writing the wider pattern."""

    def __init__(self, pattern: str, *, fold: bool) -> None:
        self.text = pattern
        self.pos = 0
        self.fold = fold
        self.saved: list[bool] = []  # the fold flag to restore at each open group's ")"
        self.out: list[str] = []
        self.quantified = False  # the last piece written is a quantifier

    def run(self) -> str:
        text = self.text
        while self.pos < len(text):
            c = text[self.pos]
            if c == '(':
                self._open()
            elif c == ')':
                if not self.saved:
                    raise _NoPrefilter
                self.fold = self.saved.pop()
                self._emit(')', 1)
            elif c == '|':
                self._emit('|', 1)
            elif c in '^$':
                self._emit('(?:)', 1)
            elif c == '.':
                self._emit('(?s:.)', 1)
            elif c == '[':
                self._class()
            elif c in '*+?':
                self._quantify(c, 2 if text.startswith('?', self.pos + 1) else 1)
            elif c == '{':
                self._brace()
            elif c == '\\':
                self._escape()
            else:
                self._emit(self._literal(ord(c)), 1)
        if self.saved:
            raise _NoPrefilter
        return ''.join(self.out)

    def _emit(self, piece: str, consumed: int) -> None:
        self.out.append(piece)
        self.pos += consumed
        self.quantified = False

    def _quantify(self, quantifier: str, consumed: int) -> None:
        """Write a quantifier; one that RE2 stacks on another (``a*\\Q\\E+``, ``a*(?i)?``) widens both to ``*``.

        RE2 accepts a second repetition when an empty construct separates it from the first
        and squashes the pair; ``x*`` holds every ``(x{m,n}){p,q}``.
        """
        if self.quantified:
            self.out[-1] = '*'
        else:
            self.out.append(quantifier)
        self.pos += consumed
        self.quantified = True

    def _literal(self, cp: int) -> str:
        return _render(_fold_ascii(((cp, cp),)) if self.fold else ((cp, cp),))

    def _open(self) -> None:
        """``(``, ``(?:``, ``(?P<name>``, ``(?<name>``, ``(?flags)`` or ``(?flags:``."""
        if not self.text.startswith('(?', self.pos):
            self.saved.append(self.fold)
            self._emit('(?:', 1)
            return
        name = _NAME.match(self.text, self.pos + 2)
        if name is not None:
            self.saved.append(self.fold)
            self._emit('(?:', 2 + len(name.group(0)))
            return
        flags = _FLAGS.match(self.text, self.pos + 2)
        if flags is None:
            raise _NoPrefilter
        fold = self.fold
        if 'i' in flags.group(1):
            fold = True
        if flags.group(2) is not None and 'i' in flags.group(2):
            fold = False
        consumed = 2 + len(flags.group(0))
        if flags.group(3) == ')':  # (?i): the rest of the current group
            self.fold = fold
            self.pos += consumed
            return
        self.saved.append(self.fold)
        self.fold = fold
        self._emit('(?:', consumed)

    def _brace(self) -> None:
        """``{n}``, ``{n,}``, ``{n,m}`` (then an optional lazy ``?``), or a literal ``{``."""
        m = _REPEAT.match(self.text, self.pos)
        if m is None or any(len(n) > 9 for n in (m.group(1), m.group(3) or '')):  # RE2: not a repetition
            self._emit(self._literal(ord('{')), 1)
            return
        lo, comma, hi = m.group(1), m.group(2), m.group(3)
        end = m.end() + (1 if self.text.startswith('?', m.end()) else 0)
        self._quantify('{' + lo + (',' if comma else '') + (hi or '') + '}', end - self.pos)

    def _escape(self) -> None:
        """A backslash outside a class, in RE2's order: assertions, ``\\C``, ``\\Q``, classes, characters."""
        kind = self.text[self.pos + 1]
        if kind in 'bBAz':
            self._emit('(?:)', 2)
        elif kind == 'C':
            raise _NoPrefilter
        elif kind == 'Q':
            end = self.text.find('\\E', self.pos + 2)
            stop = len(self.text) if end < 0 else end
            for ch in self.text[self.pos + 2 : stop]:
                self._emit(self._literal(ord(ch)), 0)
            self.pos = len(self.text) if end < 0 else end + 2
        elif kind in 'pP':
            self._skip_unicode_class()
            self._emit('(?s:.)', 0)
        elif kind.lower() in _PERL:
            self._emit(_render(self._perl(kind)[1]), 2)
        else:
            self._emit(self._literal(self._escaped_char()), 0)

    def _skip_unicode_class(self) -> None:
        """Past ``\\pL``, ``\\p{Greek}``, ``\\P{^Greek}``: whatever RE2's tables hold, any character covers it."""
        if self.text.startswith('{', self.pos + 2):
            end = self.text.find('}', self.pos + 3)
            if end < 0:
                raise _NoPrefilter
            self.pos = end + 1
        elif self.pos + 2 < len(self.text):
            self.pos += 3
        else:
            raise _NoPrefilter

    def _perl(self, kind: str) -> tuple[Ranges, Ranges]:
        """(lower, upper) bounds of the set RE2 gives ``\\d \\s \\w \\D \\S \\W`` under the current flags."""
        return self._group(_PERL[kind.lower()], negated=kind.isupper())

    def _group(self, table: Ranges, *, negated: bool) -> tuple[Ranges, Ranges]:
        if not negated:
            return table, _fold_ascii(table) if self.fold else table
        # RE2 complements the folded set; complementing the unfolded one is wider.
        return (_NONE if self.fold else _complement(table)), _complement(table)

    def _escaped_char(self) -> int:
        """The character of an escape such as ``\\n``, ``\\x{41}``, ``\\101``, ``\\.`` (RE2's ParseEscape)."""
        kind = self.text[self.pos + 1]
        if kind.isascii() and not kind.isalnum():
            self.pos += 2
            return ord(kind)
        if kind in _C_ESCAPES:
            self.pos += 2
            return _C_ESCAPES[kind]
        octal = _OCTAL.match(self.text, self.pos + 1)
        if octal is not None:
            self.pos = octal.end()
            return int(octal.group(0), 8)
        hexa = _HEX.match(self.text, self.pos + 1)
        if hexa is not None:
            self.pos = hexa.end()
            return int(hexa.group(1) or hexa.group(2), 16)
        raise _NoPrefilter

    def _class(self) -> None:
        """A bracket class, read item by item as RE2's ParseCharClass does.

        Each item gives a lower and an upper bound of what RE2 adds for it (they differ under
        folding and for Unicode classes): a class is at most the union of the upper bounds,
        a negated class at most the complement of the union of the lower bounds.
        """
        self.pos += 1
        negated = self.text.startswith('^', self.pos)
        self.pos += negated
        lower: list[tuple[int, int]] = []
        upper: list[tuple[int, int]] = []
        first = True
        while self.text[self.pos] != ']' or first:
            first = False
            low, high = self._class_item()
            lower.extend(low)
            upper.extend(high)
        self._emit(_render(_complement(_normalize(lower)) if negated else _normalize(upper)), 1)

    def _class_item(self) -> tuple[Ranges, Ranges]:
        text, pos = self.text, self.pos
        if text.startswith('[:', pos):
            end = text.find(':]', pos + 2)
            if end >= 0:
                name = text[pos + 2 : end]
                negated = name.startswith('^')
                table = _POSIX.get(name.removeprefix('^'))
                if table is None:
                    raise _NoPrefilter
                self.pos = end + 2
                return self._group(table, negated=negated)
        if text.startswith(('\\p', '\\P'), pos):
            self._skip_unicode_class()
            return _NONE, _ANY
        if text[pos] == '\\' and text[pos + 1].lower() in _PERL:
            self.pos += 2
            return self._perl(text[pos + 1])
        lo = self._class_char()
        hi = lo
        if self.text.startswith('-', self.pos) and self.text[self.pos + 1] != ']':
            self.pos += 1
            hi = self._class_char()
        exact = ((lo, hi),)
        return exact, _fold_ascii(exact) if self.fold else exact

    def _class_char(self) -> int:
        if self.text[self.pos] == '\\':
            return self._escaped_char()
        self.pos += 1
        return ord(self.text[self.pos - 1])
