"""The command line's argument parser: an unknown option is answered in the subcommand's own usage, with the
closest option it has (``--topk``: did you mean ``--top-k``?), and help is plain text. See docs/troubleshooting.md."""

from __future__ import annotations

import argparse
import difflib
import textwrap
from collections.abc import Sequence
from typing import Any

__all__ = ['Parser', 'did_you_mean']


def did_you_mean(unknown: Sequence[str], parser: argparse.ArgumentParser) -> str:
    """``unrecognized arguments: ...``, with the parser's closest option for each unknown option given."""
    known = [s for action in parser._actions for s in action.option_strings]  # argparse has no public list
    hints = []
    for arg in unknown:
        if arg.startswith('-'):
            close = difflib.get_close_matches(arg.partition('=')[0], known, n=1, cutoff=0.6)
            if close:
                hints.append(f'did you mean {close[0]}?')
    return '; '.join([f'unrecognized arguments: {" ".join(unknown)}', *hints])


class _Formatter(argparse.HelpFormatter):
    """argparse's help layout, never wrapping a line at a hyphen (paths like ``.toolish-rag/eval`` stay whole)."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(self._whitespace_matcher.sub(' ', text).strip(), width, break_on_hyphens=False)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        text = self._whitespace_matcher.sub(' ', text).strip()
        return textwrap.fill(text, width, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False)


class Parser(argparse.ArgumentParser):
    """An `argparse.ArgumentParser` whose unknown options are reported by the subcommand they were given to."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault('formatter_class', _Formatter)
        super().__init__(*args, **kwargs)
        self.commands: dict[str, argparse.ArgumentParser] = {}
        """The subcommands' parsers by name (filled by whoever adds them)."""

    def format_help(self) -> str:
        """argparse's help, without the reStructuredText quotes of the docstrings it shows (``--link``)."""
        return super().format_help().replace('``', '')

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        parsed, unknown = self.parse_known_args(args, namespace)
        if unknown:
            command = self.commands.get(getattr(parsed, 'command', None) or '', self)
            command.error(did_you_mean(unknown, command))
        return parsed
