"""What the commands print to a terminal: stored text with its control characters made visible.

Record titles, headings and text come from ingested files, which anyone may have written. A raw
ESC or OSC sequence printed to the operator's terminal clears the screen, retitles the window or
shows an OSC-8 link whose target is hidden; every renderer of the CLI passes what it prints through
`terminal_safe` (docs/security.md#terminal-output). Markdown is shown rendered in a terminal and as
plain text (no Markdown escapes) in a pipe or a file.
"""

from __future__ import annotations

import io
import re
import sys
from typing import IO

__all__ = ['json_safe', 'print_markdown', 'terminal_safe']

_UNSAFE = re.compile('[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]')
"""C0 controls but newline and tab, DEL, C1 controls (CSI, OSC... as one byte), and the bidirectional
overrides and isolates that reorder what a terminal shows."""


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f'\\x{code:02x}' if code < 0x100 else f'\\u{code:04x}'


def terminal_safe(text: str) -> str:
    """``text`` with every control character shown as its escape (ESC as ``\\x1b``), newlines and tabs kept."""
    return _UNSAFE.sub(_escaped, text)


def json_safe(text: str) -> str:
    """JSON text with the control characters ``json.dumps`` leaves as they are (C1, bidi) as ``\\uXXXX`` escapes."""
    return _UNSAFE.sub(lambda m: f'\\u{ord(m.group()):04x}', text)


def print_markdown(markdown: str, out: IO[str] | None = None) -> None:
    """Print ``markdown`` rendered to a terminal, or as plain text (no escapes, no styles) to anything else."""
    from rich.console import Console
    from rich.markdown import Markdown

    out = out if out is not None else sys.stdout
    safe = Markdown(terminal_safe(markdown))
    if out.isatty():
        Console(file=out).print(safe)
        return
    buffer = io.StringIO()
    Console(file=buffer, width=1000, color_system=None, force_terminal=False, emoji=False, highlight=False).print(safe)
    print('\n'.join(line.rstrip() for line in buffer.getvalue().splitlines()), file=out)
