"""`char_class`: code points as a regex character class written in ranges (text analysis, quote matching).

Private: used by `toolish_rag.analysis` and `toolish_rag.citations`; may change.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ['char_class']


def char_class(code_points: Iterable[int]) -> str:
    """Ascending ``code_points`` as a regex character class (``[...]``), consecutive ones written as ranges."""
    ranges: list[tuple[int, int]] = []
    for cp in code_points:
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1] = (ranges[-1][0], cp)
        else:
            ranges.append((cp, cp))
    return '[' + ''.join(re.escape(chr(lo)) + (f'-{re.escape(chr(hi))}' if hi > lo else '') for lo, hi in ranges) + ']'
