"""Python source: the file's text kept exactly, sections from the `ast` (classes, functions, methods).

See docs/ingestion.md#how-the-pipeline-is-built.
"""

from __future__ import annotations

import ast
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

from .._model import OutlineBuilder, ParsedDocument
from .text import decode_text, paragraph_spans

__all__ = ['python_title', 'read_python']

VERSION = 0
"""Bump when the same bytes read differently: its files are then read again (docs/ingestion.md#reader-versions)."""

_Definition: TypeAlias = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef

_GAP_TITLE_CHARS = 80
"""A section titled by its first line keeps at most this many characters of it."""


def python_title(path: Path) -> str:
    """The document title: the file name (``agent.py``); a package's ``__init__.py`` keeps its folder.

    A module's dotted name cannot be known from a path alone (it depends on where the package
    root is), and ``__init__.py`` on its own would name every package the same.
    """
    if path.stem in ('__init__', '__main__') and path.parent.name:
        return f'{path.parent.name}/{path.name}'
    return path.name


def read_python(data: bytes, path: Path) -> ParsedDocument:
    """A ``.py``/``.pyi`` file: its decoded text as ``source``, outlined from its `ast` (see docs/ingestion.md#how-the-pipeline-is-built)."""
    text = decode_text(data)
    title = python_title(path)
    outline = OutlineBuilder()
    try:
        # Python warns about the code it parses (invalid escape sequences): the user ingesting
        # it cannot act on that, so the warnings are not shown. The filter is process-wide, but
        # parse workers run readers only, and a reader's warnings are its ParsedDocument's.
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            tree = ast.parse(text, filename=str(path))
    except (SyntaxError, ValueError, RecursionError) as exc:
        where = f' (line {exc.lineno})' if isinstance(exc, SyntaxError) and exc.lineno else ''
        _add_paragraphs(outline, text, 0, len(text))
        version = f'{sys.version_info.major}.{sys.version_info.minor}'
        warning = f'not valid Python {version} syntax{where}: read as plain text, without sections'
        return ParsedDocument(source=text, title=title, root=outline.root, format='python', warnings=[warning])
    _Outliner.of(text, outline).body(tree.body, 0, len(text), level=1)
    return ParsedDocument(source=text, title=title, root=outline.root, format='python')


def _add_paragraphs(outline: OutlineBuilder, text: str, start: int, end: int) -> None:
    """``text[start:end]`` as code blocks of the open section, one per blank-line separated paragraph."""
    for s, e in paragraph_spans(text, start, end):
        outline.add_span(s, e, 'code')


def _gap_title(text: str, start: int, end: int) -> str:
    first = next((line for line in text[start:end].split('\n') if line.strip()), '')
    title = ' '.join(first.split())
    if len(title) > _GAP_TITLE_CHARS:
        title = title[: _GAP_TITLE_CHARS - 1] + '…'
    return title or '(code)'


def _heading(node: _Definition) -> str:
    if isinstance(node, ast.ClassDef):
        return f'class {node.name}'
    prefix = 'async def' if isinstance(node, ast.AsyncFunctionDef) else 'def'
    return f'{prefix} {node.name}'


@dataclass(frozen=True, slots=True)
class _Outliner:
    """Walks statement lists and records sections and blocks at character offsets of ``text``."""

    text: str
    outline: OutlineBuilder
    line_starts: tuple[int, ...]
    """Offset of each line; Python ends lines only at ``\\n`` here (decoding normalised ``\\r``)."""

    @classmethod
    def of(cls, text: str, outline: OutlineBuilder) -> _Outliner:
        return cls(text, outline, (0, *(i + 1 for i, ch in enumerate(text) if ch == '\n')))

    def _line_end(self, lineno: int) -> int:
        """Offset just past the text of 1-based line ``lineno`` (before its ``\\n``)."""
        return self.line_starts[lineno] - 1 if lineno < len(self.line_starts) else len(self.text)

    def _definition_start(self, node: _Definition, floor: int) -> int:
        """Where ``node``'s section starts: its first decorator, or the comments above that, not before ``floor``.

        Going up line by line from the decorator, over comment and blank lines only: the scan stops
        at the first line of code (the end of the previous statement, or a class's header line).
        """
        line = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1  # 0-based
        start = self.line_starts[line]
        while line > 0 and self.line_starts[line - 1] >= floor:
            above = self.text[self.line_starts[line - 1] : self.line_starts[line]].strip()
            if above and not above.startswith('#'):
                break
            line -= 1
            if above:
                start = self.line_starts[line]
        return start

    def body(self, statements: Sequence[ast.stmt], start: int, end: int, *, level: int) -> None:
        """Outline ``text[start:end]``, holding ``statements``; their definitions become sections at ``level``."""
        pos = start
        previous_end = start
        opened = False
        for statement in statements:
            if not isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                previous_end = self._line_end(statement.end_lineno or statement.lineno)
                continue
            section_start = self._definition_start(statement, previous_end)
            self._gap(pos, section_start, level, opened)
            section_end = self._line_end(statement.end_lineno or statement.lineno)
            self.outline.open_section(_heading(statement), level, section_start)
            if isinstance(statement, ast.ClassDef):
                self.body(statement.body, section_start, section_end, level=level + 1)
            else:
                _add_paragraphs(self.outline, self.text, section_start, section_end)
            pos = previous_end = section_end
            opened = True
        self._gap(pos, end, level, opened)

    def _gap(self, start: int, end: int, level: int, opened: bool) -> None:
        """Code between definitions: the enclosing text before the first one, else a section of its own."""
        spans = paragraph_spans(self.text, start, end)
        if not spans:
            return
        if opened:
            self.outline.open_section(_gap_title(self.text, start, end), level, spans[0][0])
        for s, e in spans:
            self.outline.add_span(s, e, 'code')
