"""File names that are not valid UTF-8, shown and recorded in a displayable form.

On POSIX a name is bytes; Python decodes the bytes that are not UTF-8 to lone surrogates
(``surrogateescape``), which no JSON or store accepts. ``caf\\xe9.txt`` (Latin-1 bytes)
becomes the text ``caf\\xe9.txt`` with a literal backslash. See docs/ingestion.md#file-names.
"""

from __future__ import annotations

import os

__all__ = ['displayable']


def displayable(text: str | os.PathLike[str]) -> str:
    """``text`` with each undecodable byte of a file name written ``\\xNN`` (valid UTF-8 text is unchanged)."""
    value = os.fspath(text)
    try:
        value.encode('utf-8')
    except UnicodeEncodeError:
        try:
            return value.encode('utf-8', 'surrogateescape').decode('utf-8', 'backslashreplace')
        except UnicodeEncodeError:  # a surrogate that is no escaped byte
            return value.encode('utf-8', 'backslashreplace').decode('utf-8')
    return value
