"""Regular expressions that cannot hang a search: RE2 compilation and bounded matching.

Python's ``re`` backtracks: ``(a+)+$`` against a long run of ``a`` followed by ``b`` takes
exponential time, and a model will eventually write such a pattern. RE2 (``google-re2``)
matches in time linear in the text and rejects the few constructs that need backtracking
(backreferences, lookaround) with a clear error, which the regex tool passes back to the
model as a retry message. Stores that scan text themselves should use these helpers.
"""

from __future__ import annotations

from typing import Any

import re2

__all__ = ['MAX_PATTERN_LENGTH', 'compile_pattern', 'count_matches']

MAX_PATTERN_LENGTH = 1000
_MAX_COUNTED = 1000
_MAX_SAMPLES = 3


def compile_pattern(pattern: str, *, case_sensitive: bool = True) -> Any:
    """Compile ``pattern`` with RE2, or raise ``ValueError`` saying what to change."""
    if not pattern:
        raise ValueError('the pattern is empty: give a regular expression such as ERR-[0-9]{4}')
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise ValueError(f'the pattern is {len(pattern)} characters long; keep it under {MAX_PATTERN_LENGTH}')
    options = re2.Options()
    options.case_sensitive = case_sensitive
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except re2.error as e:
        reason = e.args[0] if e.args else e
        if isinstance(reason, bytes):
            reason = reason.decode('utf-8', 'replace')
        raise ValueError(
            f'invalid regular expression {pattern!r}: {reason}. The syntax is RE2 (like Python re, '
            'but without backreferences such as \\1 and without lookahead/lookbehind).'
        ) from e


def count_matches(compiled: Any, text: str) -> tuple[int, tuple[str, ...]]:
    """How many non-overlapping matches ``text`` holds (capped), and the first few of them."""
    count = 0
    samples: list[str] = []
    empty_match = False
    for m in compiled.finditer(text):
        if m.end() == m.start():
            empty_match = True
            continue
        count += 1
        if len(samples) < _MAX_SAMPLES:
            samples.append(m.group(0)[:80])
        if count >= _MAX_COUNTED:
            break
    if count == 0 and empty_match:
        return 1, ('',)
    return count, tuple(samples)
