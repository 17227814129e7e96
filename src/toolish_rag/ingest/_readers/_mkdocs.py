"""Markdown as documentation sites write it: includes resolved, admonitions, blocks and tabs made plain text.

A page of an mkdocs site is not all in its file: ``--8<-- "file"`` (pymdownx.snippets) and
FastAPI-style ``{* path hl[3] ln[1:9] *}`` put another file's text where they stand, and
``!!! note "Title"`` / ``??? tip`` / ``=== "Tab"`` (indented bodies) or ``/// note | Title``
... ``///`` (pymdownx.blocks) wrap text that would otherwise read as indented code. `expand`
rewrites a page into the Markdown its site renders from, before it is parsed.

An include is looked for from the mkdocs project folder (the nearest folder up from the page
holding ``mkdocs.yml``), then from the page's folder and each folder above it, and is read
only when it lies inside the folders being ingested (`including`): a target outside them is
refused, a missing one reported; neither fails the page. See docs/ingestion.md#markdown.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

from .._model import ReadError

__all__ = ['expand', 'including']

MAX_DEPTH = 5
"""Includes inside included files are followed this deep (a loop is cut at its first repeat)."""
MAX_INCLUDES = 200
"""Includes read per page at most: the rest are reported, not read."""
MAX_INCLUDE_BYTES = 2 * 1024 * 1024
"""A larger include target is reported, not read."""

_ROOTS: ContextVar[tuple[str, ...] | None] = ContextVar('toolish_rag_include_roots', default=None)

_SNIPPET = re.compile(r'^(?P<indent>[ \t]*)(?P<escape>;?)--8<--[ \t]+(?P<q>["\'])(?P<target>.+?)(?P=q)[ \t]*$')
_SNIPPET_FENCE = re.compile(r'^[ \t]*--8<--[ \t]*$')
_SNIPPET_MARK = re.compile(r'--8<--[ \t]+\[(?P<edge>start|end):(?P<name>[\w-]+)\]')
_CURLY = re.compile(r'^(?P<indent>[ \t]*)\{\*[ \t]+(?P<target>\S+)(?P<options>.*?)\*\}[ \t]*$')
_LINES_OPTION = re.compile(r'\bln\[(?P<ranges>[\d:,\s]*)\]')
_RANGE_SPEC = re.compile(r'^(?P<path>.+?):(?P<ranges>-?\d*(?::-?\d*)?(?:,-?\d*(?::-?\d*)?)*)$')
_SECTION_SPEC = re.compile(r'^(?P<path>.+?):(?P<name>[A-Za-z_][\w-]*)$')
_FENCE = re.compile(r'^[ \t]*(?P<mark>`{3,}|~{3,})')
_ADMONITION = re.compile(
    r'^(?P<indent>[ \t]*)(?:(?:!!!|\?\?\?\+?)[ \t]+(?P<kind>[\w-]+(?:[ \t]+[\w-]+)*)'
    r'(?:[ \t]+(?P<title>"[^"]*"|\'[^\']*\'))?|===!?[ \t]+(?P<tab>"[^"]*"|\'[^\']*\'))[ \t]*$'
)
_BLOCK_OPEN = re.compile(r'^[ \t]*(?P<slashes>/{3,})[ \t]*(?P<kind>[\w-]+)(?:[ \t]*\|[ \t]*(?P<title>.*?))?[ \t]*$')
_BLOCK_CLOSE = re.compile(r'^[ \t]*/{3,}[ \t]*$')
_LANGUAGES = {'.py': 'python', '.js': 'javascript', '.ts': 'typescript', '.sh': 'bash', '.yml': 'yaml', '.md': ''}


@contextmanager
def including(roots: Sequence[str | os.PathLike[str]]) -> Iterator[None]:
    """Within it, `expand` reads include targets under ``roots`` (files or folders) only; outside it, none."""
    token = _ROOTS.set(tuple(os.path.realpath(r) for r in roots))
    try:
        yield
    finally:
        _ROOTS.reset(token)


def expand(body: str, page: Path | None, warnings: list[str]) -> str:
    """``body`` with its includes' text in place and its admonitions, blocks and tabs as plain paragraphs.

    ``page`` is the file the text came from (``None``: includes are left as they are). What could
    not be included is added to ``warnings``.
    """
    if page is not None and ('--8<--' in body or '{*' in body):
        state = _Includes(_ROOTS.get(), page, warnings)
        body = '\n'.join(state.lines(body.split('\n'), page, 0, ()))
    if '!!!' in body or '???' in body or '===' in body or '///' in body:
        body = '\n'.join(_plain(body.split('\n')))
    return body


@dataclass(slots=True)
class _Includes:
    """One page's include expansion: where targets may be read from, and what went wrong."""

    roots: tuple[str, ...] | None
    page: Path
    warnings: list[str]
    read: int = 0
    _reported: set[str] = field(default_factory=set)

    def lines(self, lines: list[str], source: Path, depth: int, chain: tuple[str, ...]) -> Iterator[str]:
        """``lines`` of ``source`` with every include line replaced by its target's lines."""
        block: list[str] | None = None  # inside a multi-line ``--8<--`` block: its file names
        for line in lines:
            if block is not None:
                if _SNIPPET_FENCE.match(line):
                    for name in block:
                        yield from self._snippet('', name, source, depth, chain)
                    block = None
                elif line.strip() and not line.lstrip().startswith(';'):
                    block.append(line.strip())
                continue
            if _SNIPPET_FENCE.match(line):
                block = []
            elif (m := _SNIPPET.match(line)) is not None:
                if m['escape']:
                    yield line.replace(';--8<--', '--8<--', 1)  # pymdownx's escape: shown, not included
                else:
                    yield from self._snippet(m['indent'], m['target'], source, depth, chain)
            elif (m := _CURLY.match(line)) is not None:
                yield from self._curly(m['indent'], m['target'], m['options'], source, depth, chain)
            elif not _SNIPPET_MARK.search(line):  # section markers in an included file are never shown
                yield line

    def _snippet(self, indent: str, spec: str, source: Path, depth: int, chain: tuple[str, ...]) -> Iterator[str]:
        if re.match(r'^[a-z][a-z0-9+.-]*://', spec, re.IGNORECASE):
            self._warn(f'include {spec!r} not read: remote snippets are not fetched')
            return
        target, ranges, section = spec, None, None
        if (m := _RANGE_SPEC.match(spec)) is not None and not self._exists(spec, source):
            target, ranges = m['path'], _ranges(m['ranges'])
        elif (m := _SECTION_SPEC.match(spec)) is not None and not self._exists(spec, source):
            target, section = m['path'], m['name']
        text = self._text(target, source, depth, chain)
        if text is None:
            return
        lines = text.split('\n')
        if section is not None:
            inside = _section(lines, section)
            if inside is None:
                self._warn(f'include {spec!r}: no section {section!r} in {target}')
                return
            lines = inside
        if ranges is not None:
            lines = _pick(lines, ranges)
        resolved = self._resolve(target, source)
        nested = self.lines(lines, resolved if isinstance(resolved, Path) else source, depth + 1, (*chain, target))
        for line in nested:
            yield indent + line if line else line

    def _curly(
        self, indent: str, target: str, options: str, source: Path, depth: int, chain: tuple[str, ...]
    ) -> Iterator[str]:
        text = self._text(target, source, depth, chain)
        if text is None:
            return
        lines = text.rstrip('\n').split('\n')
        if (m := _LINES_OPTION.search(options)) is not None:
            lines = _pick(lines, _ranges(m['ranges']))
        language = _LANGUAGES.get(Path(target).suffix.lower(), Path(target).suffix.lstrip('.'))
        yield f'{indent}```{language}'
        yield from (indent + line if line else line for line in lines)
        yield f'{indent}```'

    def _text(self, target: str, source: Path, depth: int, chain: tuple[str, ...]) -> str | None:
        """The target's text, or ``None`` with the reason reported."""
        if depth >= MAX_DEPTH or target in chain:
            self._warn(f'include {target!r} not read: it includes itself, or nests deeper than {MAX_DEPTH}')
            return None
        if self.read >= MAX_INCLUDES:
            self._warn(f'includes past the first {MAX_INCLUDES} of the page not read')
            return None
        resolved = self._resolve(target, source)
        if isinstance(resolved, str):
            self._warn(resolved)
            return None
        try:
            if resolved.stat().st_size > MAX_INCLUDE_BYTES:
                self._warn(f'include {target!r} not read: larger than {MAX_INCLUDE_BYTES:,} bytes')
                return None
            from .text import decode_text

            text = decode_text(resolved.read_bytes())
        except (OSError, ReadError) as exc:
            self._warn(f'include {target!r} not read: {getattr(exc, "strerror", None) or exc}')
            return None
        self.read += 1
        return text.replace('\r\n', '\n')

    def _exists(self, target: str, source: Path) -> bool:
        return isinstance(self._resolve(target, source), Path)

    def _resolve(self, target: str, source: Path) -> Path | str:
        """Where ``target`` is (inside the roots), else why it is not read."""
        if self.roots is None:
            return f'include {target!r} not read: includes are resolved only while ingesting folders'
        outside = None
        for base in _bases(source.parent):
            candidate = base / target
            if not candidate.is_file():
                continue
            real = os.path.realpath(candidate)
            if any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in self.roots):
                return Path(real)
            outside = outside or candidate
        if outside is not None:
            return f'include {target!r} refused: {outside} is outside the ingested folders'
        return f'include {target!r} not found (from the mkdocs project folder or any folder above the page)'

    def _warn(self, message: str) -> None:
        if message not in self._reported:
            self._reported.add(message)
            self.warnings.append(message)


def _bases(folder: Path) -> list[Path]:
    """Folders an include is looked for from: the mkdocs project folder, then ``folder`` and up."""
    ups = [folder, *folder.parents]
    project = _project_folder(folder)
    return [project, *ups] if project is not None else ups


@functools.lru_cache(maxsize=256)
def _project_folder(folder: Path) -> Path | None:
    for up in (folder, *folder.parents):
        if (up / 'mkdocs.yml').is_file() or (up / 'mkdocs.yaml').is_file():
            return up
    return None


def _ranges(spec: str) -> list[tuple[int, int | None]]:
    """``'1:3,7'`` -> ``[(1, 3), (7, 7)]`` (1-based, inclusive; an open end runs to the last line)."""
    out: list[tuple[int, int | None]] = []
    for part in spec.replace(' ', '').split(','):
        if not part:
            continue
        first, _, last = part.partition(':')
        start = int(first) if first.lstrip('-').isdigit() else 1
        end: int | None = start if ':' not in part else (int(last) if last.lstrip('-').isdigit() else None)
        out.append((start, end))
    return out


def _pick(lines: list[str], ranges: list[tuple[int, int | None]]) -> list[str]:
    picked: list[str] = []
    for start, end in ranges:
        first = start - 1 if start > 0 else max(len(lines) + start, 0)
        last = len(lines) if end is None else (end if end > 0 else len(lines) + end + 1)
        picked.extend(lines[first:last])
    return picked


def _section(lines: list[str], name: str) -> list[str] | None:
    """The lines between ``--8<-- [start:name]`` and ``--8<-- [end:name]`` (``None``: no such section)."""
    inside, found, out = False, False, []
    for line in lines:
        mark = _SNIPPET_MARK.search(line)
        if mark is not None and mark['name'] == name:
            inside, found = mark['edge'] == 'start', True
            continue
        if inside:
            out.append(line)
    return out if found else None


def _plain(lines: list[str]) -> Iterator[str]:
    """Admonitions, collapsible details and tabs as a title paragraph and their body dedented; blocks' fences gone."""
    fence: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if (m := _FENCE.match(line)) is not None:
            if fence is None:
                fence = m['mark']
            elif m['mark'].startswith(fence) and not line.strip()[len(m['mark']) :].strip():
                fence = None
            yield line
            continue
        if fence is not None:
            yield line
            continue
        if (m := _ADMONITION.match(line)) is not None:
            indent = _width(m['indent'])
            body: list[str] = []
            while i < len(lines) and (not lines[i].strip() or _width(_leading(lines[i])) >= indent + 4):
                body.append(_dedent(lines[i], indent + 4, indent))
                i += 1
            while body and not body[-1].strip():
                body.pop()
            title = _title(m['tab'] or m['title'], (m['kind'] or '').split(' ')[0])
            if title:
                yield m['indent'] + title
                yield ''
            yield from _plain(body)
            yield ''
        elif (m := _BLOCK_OPEN.match(line)) is not None:
            title = _title(m['title'], m['kind'])
            yield (_leading(line) + title) if title else ''
            yield ''
        elif _BLOCK_CLOSE.match(line):
            yield ''
        else:
            yield line


def _title(given: str | None, kind: str) -> str:
    """An admonition's or block's shown title: the one given (quoted or not), else its kind (``note`` -> ``Note``)."""
    if given is not None:
        return given.strip().strip('"\'').strip() if given.strip()[:1] in '"\'' else given.strip()
    return kind.replace('-', ' ').capitalize() if kind not in ('tab', 'html', 'define') else ''


def _leading(line: str) -> str:
    return line[: len(line) - len(line.lstrip(' \t'))]


def _width(whitespace: str) -> int:
    return len(whitespace.expandtabs(4))


def _dedent(line: str, width: int, to: int) -> str:
    """``line`` with its first ``width`` columns of indentation made ``to`` columns."""
    if not line.strip():
        return ''
    lead = _leading(line).expandtabs(4)
    return ' ' * to + lead[width:] + line.lstrip(' \t')
