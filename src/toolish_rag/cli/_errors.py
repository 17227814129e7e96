"""How the ``toolish-rag`` command reports an exception: one line on stderr and a non-zero exit.

A failure the user can act on (a bad argument, a file, a store's refusal, a missing dependency) is
its message; anything else is named as unexpected. ``TOOLISH_RAG_DEBUG=1`` shows the traceback
instead. See docs/troubleshooting.md (Getting the traceback).
"""

from __future__ import annotations

import os
import sys

from .._extras import MissingExtraError
from ._terminal import terminal_safe

__all__ = ['DEBUG_ENV', 'EXPECTED', 'debugging', 'report']

DEBUG_ENV = 'TOOLISH_RAG_DEBUG'
"""Set (to anything but ``0`` or empty) to let every exception propagate with its traceback."""

EXPECTED: tuple[type[Exception], ...] = (ValueError, OSError, RuntimeError, MissingExtraError)
"""What stores, readers and optional dependencies raise for conditions the user can act on
(a LanceDB commit conflict after its retries, a full disk, a missing extra: `MissingExtraError` names it)."""


def debugging() -> bool:
    return os.environ.get(DEBUG_ENV, '') not in ('', '0')


def report(error: Exception) -> int:
    """Print ``error`` as one line on stderr; the exit code: 2 for an expected failure, 1 for anything else."""
    lines = terminal_safe(str(error)).splitlines()
    text = '; '.join(line.strip() for line in lines if line.strip()) or type(error).__name__
    if isinstance(error, EXPECTED):
        print(f'toolish-rag: {text}', file=sys.stderr)
        return 2
    print(
        f'toolish-rag: unexpected error ({type(error).__name__}: {text}); '
        f'run again with {DEBUG_ENV}=1 for the traceback, and please report it',
        file=sys.stderr,
    )
    return 1
