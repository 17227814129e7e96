"""`IngestReport`: what an ingest run did, and how to show it."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from ._names import displayable

__all__ = [
    'IngestInterrupted',
    'IngestIssue',
    'IngestReport',
    'format_lines',
    'format_report',
    'naming_the_limit',
    'ocr_pages_text',
    'render_report',
]


@dataclass(frozen=True, slots=True)
class IngestIssue:
    """A file (or document uri) and why it was not ingested, or what to know about it."""

    path: str
    reason: str

    def __post_init__(self) -> None:
        # a file name that is not UTF-8 is shown with its bytes escaped: the report and its JSON stay valid text
        object.__setattr__(self, 'path', displayable(self.path))
        object.__setattr__(self, 'reason', displayable(self.reason))


@dataclass(slots=True)
class IngestReport:
    """Outcome of `ingest`: uris per outcome, plus counts and timing."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    """Document uris deleted by ``sync=True`` because their files are gone."""
    failed: list[IngestIssue] = field(default_factory=list)
    """Files that could not be ingested (corrupt, encrypted, scanned, binary...), with the reason."""
    skipped: list[IngestIssue] = field(default_factory=list)
    """Files left out on purpose: unsupported type in a folder, over the size limit, empty."""
    warnings: list[IngestIssue] = field(default_factory=list)
    ocr: list[IngestIssue] = field(default_factory=list)
    """Files whose text OCR read, in whole or part, each with its pages (``pages 1-3, 5``)."""
    chunks: int = 0
    """Chunks written (added and updated documents)."""
    seconds: float = 0.0
    interrupted: bool = False
    """The run was cancelled (Ctrl-C) before it was done: what it lists was done, a re-run does the rest."""

    @property
    def ok(self) -> bool:
        return not self.failed

    @property
    def files_seen(self) -> int:
        return len(self.added) + len(self.updated) + len(self.unchanged) + len(self.failed) + len(self.skipped)

    def summary(self) -> str:
        """One line: ``added 3, updated 1, unchanged 20, removed 0, failed 2, skipped 1 (12 chunks) in 1.2 s``,
        begun by ``interrupted:`` and ended by what to do when the run was `interrupted`."""
        line = (
            f'added {len(self.added)}, updated {len(self.updated)}, unchanged {len(self.unchanged)}, '
            f'removed {len(self.removed)}, failed {len(self.failed)}, skipped {len(self.skipped)} '
            f'({self.chunks} chunks) in {self.seconds:.1f} s'
        )
        if self.interrupted:
            return f'interrupted: {line}; the same command again ingests the rest'
        return line

    def to_dict(self) -> dict[str, Any]:
        """Every field (issues as ``{"path", "reason"}`` objects), plus ``ok``: the JSON report's content."""
        return {**asdict(self), 'ok': self.ok}

    def to_json(self, *, indent: int | None = 2) -> str:
        """`to_dict` as JSON (``toolish-rag ingest --json``)."""
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)


def ocr_pages_text(pages: Iterable[int]) -> str:
    """``page 2`` / ``pages 1-3, 7``: the pages of a file OCR read, runs folded."""
    ordered = sorted(set(pages))
    runs: list[list[int]] = []
    for page in ordered:
        if runs and page == runs[-1][-1] + 1:
            runs[-1].append(page)
        else:
            runs.append([page])
    text = ', '.join(f'{r[0]}-{r[-1]}' if len(r) > 1 else str(r[0]) for r in runs)
    return f'page{"s" if len(ordered) > 1 else ""} {text}'


_LIMITS = (
    (re.compile(r'-second limit'), '--max-seconds S; IngestLimits(seconds=...)'),
    (re.compile(r'-byte memory limit'), '--max-memory MIB; IngestLimits(memory_bytes=...)'),
    (re.compile(r'-character limit'), 'IngestLimits(text_chars=...)'),
    (re.compile(r'-element limit'), 'IngestLimits(elements=...)'),
    (re.compile(r'unpacks to more than|-byte limit \(a zip bomb'), 'IngestLimits(unpacked_bytes=...)'),
)
"""A per-file bound's message (by its readers' wording) -> the flag or option that raises it (docs/ingestion.md#bounds-per-file)."""


def naming_the_limit(reason: str) -> str:
    """``reason``, followed by the flag that raises the limit it names, when it is a per-file bound's message.

    The readers and workers say which bound a file passed; this says where to change it, in one place.
    """
    for pattern, flag in _LIMITS:
        if pattern.search(reason):
            return f'{reason} (raise it with {flag})'
    return reason


class IngestInterrupted(asyncio.CancelledError):
    """`ingest` was cancelled: the cancellation, carrying the report of what was done (``interrupted`` set).

    A `asyncio.CancelledError`, so code that handles cancellation is not changed by it; ``toolish-rag
    ingest`` catches it to print the summary on Ctrl-C (docs/ingestion.md#reports).
    """

    def __init__(self, report: IngestReport) -> None:
        super().__init__('ingest interrupted')
        self.report = report


@dataclass(frozen=True, slots=True)
class _Summary:
    """The summary line, folded to the console's width between its items (``added 3,``), never inside one."""

    line: str
    style: str

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        items = re.findall(r'[^,;]+[,;]?\s*', self.line)
        row = ''
        for item in items:
            if row and len(row) + len(item.rstrip()) > width:
                yield Text(row.rstrip(), style=self.style)
                row = '  '
            row += item
        yield Text(row.rstrip(), style=self.style)


SHOWN = 10
"""Skipped files and warnings listed by name in the human summary; past it, a count of the rest."""


def _sections(report: IngestReport, verbose: bool) -> list[tuple[str, list[IngestIssue], int | None]]:
    """``(label, issues, how many to list)``: every failure; skips and warnings up to `SHOWN` (all if ``verbose``)."""
    limit = None if verbose else SHOWN
    return [
        ('failed', report.failed, None),
        ('skipped', report.skipped, limit),
        ('warning', report.warnings, limit),
        ('ocr', report.ocr, limit),
    ]


def render_report(report: IngestReport, *, verbose: bool = False) -> RenderableType:
    """A rich renderable: the summary line, then failures, skips and warnings (the first `SHOWN` of the last two,
    unless ``verbose``). The summary folds between its items, never inside one."""
    style = 'bold red' if report.failed else 'bold yellow' if report.interrupted else 'bold green'
    parts: list[RenderableType] = [_Summary(report.summary(), style)]
    colours = {'failed': 'red', 'skipped': 'yellow', 'warning': 'yellow', 'ocr': 'cyan'}
    for label, issues, limit in _sections(report, verbose):
        if not issues:
            continue
        table = Table(show_header=True, header_style=colours[label], box=None, pad_edge=False)
        table.add_column(label, overflow='fold')
        table.add_column('reason', overflow='fold')
        for issue in issues[:limit]:
            table.add_row(issue.path, issue.reason)
        if limit is not None and len(issues) > limit:
            table.add_row(f'... and {len(issues) - limit} more', '(-v lists them all)')
        parts.append(table)
    return Group(*parts)


def format_report(report: IngestReport, *, verbose: bool = False, width: int = 120) -> str:
    """`render_report` as plain text (for logs and tests)."""
    console = Console(width=width, record=True, file=None, force_terminal=False, color_system=None)
    with console.capture() as capture:
        console.print(render_report(report, verbose=verbose))
    return capture.get()


def format_lines(report: IngestReport, *, verbose: bool = False) -> str:
    """The summary, then one ``failed: PATH: REASON`` line per failure, never wrapped (for logs and grep).

    Then ``skipped:`` and ``warning:`` lines, the first `SHOWN` of each and a count of the rest (all with
    ``verbose``). What the CLI prints when its output is not a terminal: the table of `render_report` folds
    long paths to the width.
    """
    lines = [report.summary()]
    for label, issues, limit in _sections(report, verbose):
        lines += [f'{label}: {issue.path}: {" ".join(issue.reason.split())}' for issue in issues[:limit]]
        if limit is not None and len(issues) > limit:
            lines.append(f'{label}: ... and {len(issues) - limit} more (-v lists them all)')
    return '\n'.join(lines) + '\n'
