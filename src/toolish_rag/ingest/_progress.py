"""The live progress bar of an ingest run, and the summary printed when it ends.

It reads the run's `IngestReport` for its counters, so the bar and the final report can
never disagree.
"""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

from ._report import IngestReport, render_report

__all__ = ['IngestProgress']


class IngestProgress:
    """A rich progress bar over the files and documents of one run (nothing with ``enabled=False``)."""

    def __init__(self, enabled: bool | Console, report: IngestReport) -> None:
        self.report = report
        self.console = enabled if isinstance(enabled, Console) else Console(stderr=True)
        self.enabled = enabled is not False
        self.started = time.perf_counter()
        self.progress: Progress | None = None
        self.task: TaskID | None = None

    def start(self, total: int) -> None:
        if not self.enabled:
            return
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn('[bold]ingest'),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn('{task.fields[stats]}'),
            TimeElapsedColumn(),
            console=self.console,
            transient=False,
        )
        self.progress.start()
        self.task = self.progress.add_task('ingest', total=total, stats='')

    def advance(self) -> None:
        """One more file or document settled (written, unchanged, failed or skipped)."""
        if self.progress is None or self.task is None:
            return
        r = self.report
        elapsed = max(time.perf_counter() - self.started, 1e-6)
        done = len(r.added) + len(r.updated) + len(r.unchanged) + len(r.failed)
        stats = (
            f'[green]+{len(r.added)}[/] [cyan]~{len(r.updated)}[/] ={len(r.unchanged)} '
            f'[red]!{len(r.failed)}[/]  {done / elapsed:.1f} docs/s  {r.chunks} chunks'
        )
        self.progress.update(self.task, advance=1, stats=stats)

    def stop(self) -> None:
        """End the bar and print the report's summary (and failures) under it."""
        if self.progress is not None:
            self.progress.stop()
            self.console.print(render_report(self.report))
