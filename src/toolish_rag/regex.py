"""Regular expressions that cannot hang a search: RE2 compilation and bounded matching.

The helpers every store's ``regex_search`` uses. See docs/concepts.md#how-the-core-is-built.
"""

from __future__ import annotations

from typing import Any

import re2

from .content import Chunk, Record
from .errors import ECHO_CHARS, InvalidRequestError, QuerySyntaxError, echo
from .search import RegexRequest

__all__ = [
    'MAX_PATTERN_LENGTH',
    'compile_pattern',
    'compile_request',
    'count_matches',
    'regex_rank_key',
    'regex_text',
    'scan_limit_error',
]

MAX_PATTERN_LENGTH = 1000
_MAX_COUNTED = 1000
_MAX_SAMPLES = 3


def compile_pattern(pattern: str, *, case_sensitive: bool = True) -> Any:
    """Compile ``pattern`` with RE2, or raise ``ValueError`` saying what to change."""
    if not pattern:
        raise ValueError('the pattern is empty: give a regular expression such as ERR-[0-9]{4}')
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise ValueError(f'the pattern is {len(pattern)} characters long; keep it under {MAX_PATTERN_LENGTH}')
    if any('\ud800' <= ch <= '\udfff' for ch in pattern):
        # RE2 takes UTF-8; without this the model would read Python's codec error instead.
        raise ValueError('the pattern contains a lone surrogate (half of a UTF-16 pair): send whole characters')
    options = re2.Options()
    options.case_sensitive = case_sensitive
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except re2.error as e:
        reason = e.args[0] if e.args else e
        if isinstance(reason, bytes):
            reason = reason.decode('utf-8', 'replace')
        reason = str(reason)
        if len(reason) > ECHO_CHARS:  # RE2 quotes the offending part of the pattern, which may be long
            reason = reason[:ECHO_CHARS] + '…'
        raise ValueError(
            f'invalid regular expression {echo(pattern)}: {reason}. The syntax is RE2 (like Python re, '
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


def compile_request(request: RegexRequest) -> Any:
    """`compile_pattern` for a store's ``regex_search``: a pattern RE2 refuses raises `QuerySyntaxError`.

    The toolset turns `QuerySyntaxError`, not a bare ``ValueError``, into a retry message for
    the model (anything else is treated as a bug and propagates), so every store has to
    translate the error the same way; this is that translation.
    """
    try:
        return compile_pattern(request.pattern, case_sensitive=request.case_sensitive)
    except ValueError as e:
        raise QuerySyntaxError(str(e)) from e


def regex_text(record: Record) -> str:
    """The text a regex search matches: a chunk's ``urtext``, an entity's ``text``.

    Regex search is for exact character patterns (error codes, identifiers, markup), so it
    reads a chunk's source text as written, not the ``text`` that was cleaned up for the
    embedder and BM25; an entity has no other text. A store that stores a separate column for
    regex scans fills it with this.
    """
    return record.urtext if isinstance(record, Chunk) else record.text


def regex_rank_key(
    count: int, record_id: str, document_id: str | None = None, sequence_number: int | None = None
) -> tuple[int, str, int]:
    """Where a record that matched ``count`` times ranks among regex hits (sort ascending).

    Most matches first; ties in reading order: a chunk (it has a ``document_id``) by its
    document id, then ``sequence_number``; an entity (``document_id=None``) by its own id.
    Taking the fields rather than a record lets a store rank the rows of a narrow scan and
    load whole records only for the ``top_k`` it returns.
    """
    if document_id is None:
        return (-count, record_id, 0)
    return (-count, document_id, sequence_number or 0)


def scan_limit_error(total: int, limit: int) -> InvalidRequestError:
    """The retry message for a regex search that would read ``total`` records, over a store's ``limit``.

    The message names the limit, never ``total``: a store that cannot push the scope down is
    called without it (the core post-filters), so its count would include records outside
    the caller's scope, an existence oracle for other tenants' data. It says how to get under
    the limit.
    """
    del total  # deliberately not shown; see above
    return InvalidRequestError(
        f'a regex search here would scan more than {limit} records (each match is counted, to rank by it): narrow '
        'it with a filter or a more distinctive pattern (a case-sensitive literal selects fewer records than (?i) '
        'does), or find the passages with text_search first'
    )
