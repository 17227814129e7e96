"""`IngestReport`: what an ingest run did, and how to show it."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

__all__ = ['IngestIssue', 'IngestReport', 'format_lines', 'format_report', 'render_report']


@dataclass(frozen=True, slots=True)
class IngestIssue:
    """A file (or document uri) and why it was not ingested, or what to know about it."""

    path: str
    reason: str


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
    chunks: int = 0
    """Chunks written (added and updated documents)."""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failed

    @property
    def files_seen(self) -> int:
        return len(self.added) + len(self.updated) + len(self.unchanged) + len(self.failed) + len(self.skipped)

    def summary(self) -> str:
        """One line: ``added 3, updated 1, unchanged 20, removed 0, failed 2, skipped 1 (12 chunks) in 1.2 s``."""
        return (
            f'added {len(self.added)}, updated {len(self.updated)}, unchanged {len(self.unchanged)}, '
            f'removed {len(self.removed)}, failed {len(self.failed)}, skipped {len(self.skipped)} '
            f'({self.chunks} chunks) in {self.seconds:.1f} s'
        )

    def to_dict(self) -> dict[str, Any]:
        """Every field (issues as ``{"path", "reason"}`` objects), plus ``ok``: the JSON report's content."""
        return {**asdict(self), 'ok': self.ok}

    def to_json(self, *, indent: int | None = 2) -> str:
        """`to_dict` as JSON (``toolish-rag ingest --json``)."""
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)


def render_report(report: IngestReport, *, verbose: bool = False) -> RenderableType:
    """A rich renderable: the summary line, then failures (and, if ``verbose``, skips and warnings)."""
    parts: list[RenderableType] = [Text(report.summary(), style='bold red' if report.failed else 'bold green')]
    sections: list[tuple[str, list[IngestIssue], str]] = [('failed', report.failed, 'red')]
    if verbose:
        sections += [('skipped', report.skipped, 'yellow'), ('warning', report.warnings, 'yellow')]
    for label, issues, style in sections:
        if not issues:
            continue
        table = Table(show_header=True, header_style=style, box=None, pad_edge=False)
        table.add_column(label, overflow='fold')
        table.add_column('reason', overflow='fold')
        for issue in issues:
            table.add_row(issue.path, issue.reason)
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

    With ``verbose``, ``skipped:`` and ``warning:`` lines too. What the CLI prints when its
    output is not a terminal: the table of `render_report` folds long paths to the width.
    """
    lines = [report.summary()]
    sections: list[tuple[str, list[IngestIssue]]] = [('failed', report.failed)]
    if verbose:
        sections += [('skipped', report.skipped), ('warning', report.warnings)]
    for label, issues in sections:
        lines += [f'{label}: {issue.path}: {" ".join(issue.reason.split())}' for issue in issues]
    return '\n'.join(lines) + '\n'
