"""Quality at a glance: ``eval`` run from the page on the BEIR folder named at start-up (``--eval-data``), into
a new in-memory store (never the inspected one), with a progress bar, and nDCG@10 / recall@100 / MRR@10 per
search tool plotted; and the failures of the last ingest's report (``--ingest-report``). Not offered under
tokens. See docs/inspect.md#quality."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._html import Html, join, markup, table
from ._page import Page

if TYPE_CHECKING:
    from ..ingest import IngestReport

__all__ = ['Quality', 'chart']

logger = logging.getLogger('toolish_rag.inspect')

METRICS = ('ndcg@10', 'recall@100', 'mrr@10')
_COLOURS = ('#4062bb', '#59c3c3', '#f45b69')


@dataclass
class _Run:
    state: str = 'idle'
    """idle, indexing, querying, done or failed."""
    done: int = 0
    total: int = 0
    results: dict[str, dict[str, float]] = field(default_factory=dict)
    error: str = ''


class Quality:
    """The Quality page's state: at most one evaluation at a time, in a background task of the server's loop."""

    def __init__(self, data: str | Path | None, embedder: Any, report: IngestReport | None) -> None:
        self.data = Path(data) if data is not None else None
        self.embedder = embedder
        self.report = report
        self.run = _Run()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self.data is None or (self._task is not None and not self._task.done()):
            return
        self.run = _Run(state='indexing')
        self._task = asyncio.get_running_loop().create_task(self._evaluate(self.data))

    async def _evaluate(self, folder: Path) -> None:
        from ..evaluation import beir_documents, evaluate_dataset, load_beir
        from ..ingest import ingest
        from ..stores import InMemoryStore
        from ..toolset import ToolishRag

        run = self.run
        try:
            dataset = await asyncio.to_thread(load_beir, folder)
            store = InMemoryStore(self.embedder)
            longest = max((len(q) for _, q in dataset.judged_queries), default=0)
            rag: ToolishRag[Any] = ToolishRag(store, name='docs', max_top_k=100, max_query_chars=max(2000, longest))
            wanted = [t for t in ('text', 'vector', 'hybrid') if f'{t}_search' in rag.offered_tools]
            run.total = len(dataset.judged_queries) * len(wanted)
            report = await ingest(store, beir_documents(dataset), progress=False)
            if report.failed:
                raise RuntimeError(f'{len(report.failed)} corpus entries failed to index')
            run.state = 'querying'

            def advance() -> None:
                run.done += 1

            run.results = await evaluate_dataset(rag, dataset, wanted, top_k=100, on_query=advance)
            run.state = 'done'
        except Exception as e:
            logger.exception('inspect: evaluation failed')
            run.state, run.error = 'failed', f'{type(e).__name__}: {e}'

    def status(self) -> dict[str, Any]:
        run = self.run
        return {'state': run.state, 'done': run.done, 'total': run.total, 'error': run.error}

    def page(self) -> Page:
        return Page('Quality', markup('{}{}', self._eval_part(), self._report_part()))

    def _eval_part(self) -> Html:
        if self.data is None:
            return markup(
                '<h2>Retrieval quality</h2><p class="lacks">No evaluation data: start the inspector with '
                '<code>--eval-data DIR</code> (a BEIR folder) to evaluate from this page.</p>'
            )
        run = self.run
        button = (
            markup(
                '<form method="post" action="/quality"><button type="submit" id="run-eval">Evaluate {}</button></form>',
                self.data.name,
            )
            if run.state in ('idle', 'done', 'failed')
            else Html('')
        )
        progress = markup(
            '<p><progress id="eval-progress" max="{}" value="{}" data-status="/quality/status"></progress> '
            '<span id="eval-state">{}</span></p>',
            max(run.total, 1),
            run.done,
            run.state if run.state != 'querying' else f'querying {run.done}/{run.total}',
        )
        results = Html('')
        if run.state == 'done':
            rows = [(tool, *(f'{m[k]:.4f}' for k in METRICS)) for tool, m in run.results.items()]
            results = markup('{}{}', chart(run.results), table(['tool', 'nDCG@10', 'recall@100', 'MRR@10'], rows))
        error = markup('<p class="error">{}</p>', run.error) if run.error else Html('')
        return markup(
            '<h2>Retrieval quality on {}</h2><p class="muted">Indexed into a new in-memory store each run; the '
            'inspected store is never written.</p>{}{}{}{}',
            self.data.name,
            button,
            progress,
            error,
            results,
        )

    def _report_part(self) -> Html:
        if self.report is None:
            return markup(
                '<h2>Last ingest</h2><p class="lacks">No ingest report: save one with <code>toolish-rag ingest ... '
                '--json &gt; report.json</code> and start the inspector with <code>--ingest-report report.json</code>.'
                '</p>'
            )
        report = self.report
        failed = table(['file', 'reason'], [(i.path, i.reason) for i in report.failed]) if report.failed else Html('')
        return markup(
            '<h2>Last ingest</h2><p id="ingest-summary">{}</p>{}',
            report.summary(),
            failed or markup('<p>No failures.</p>'),
        )


def _legend(left: int, height: int) -> Html:
    """A coloured square and name per metric, along the chart's foot."""
    return join(
        markup(
            '<rect x="{}" y="{}" width="10" height="10" fill="{}"></rect><text x="{}" y="{}" class="legend">{}</text>',
            left + i * 110,
            height - 10,
            _COLOURS[i],
            left + i * 110 + 14,
            height - 1,
            metric,
        )
        for i, metric in enumerate(METRICS)
    )


def chart(results: dict[str, dict[str, float]]) -> Html:
    """Grouped bars: one group per tool, one bar per metric (0 to 1), labelled with its value."""
    width, height, top, bottom, left = 640, 260, 20, 40, 40
    tools = list(results)
    group = (width - left - 10) / max(len(tools), 1)
    bar = group / (len(METRICS) + 1)
    plot = height - top - bottom
    parts: list[Html] = []
    for t, tool in enumerate(tools):
        x0 = left + t * group + bar / 2
        for m, metric in enumerate(METRICS):
            value = max(0.0, min(1.0, results[tool].get(metric, 0.0)))
            h = value * plot
            x = x0 + m * bar
            parts.append(
                markup(
                    '<rect x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{} {}: {}</title></rect>'
                    '<text x="{}" y="{}" class="value">{}</text>',
                    f'{x:.1f}',
                    f'{top + plot - h:.1f}',
                    f'{bar * 0.9:.1f}',
                    f'{h:.1f}',
                    _COLOURS[m],
                    tool,
                    metric,
                    f'{value:.3f}',
                    f'{x + bar * 0.45:.1f}',
                    f'{top + plot - h - 4:.1f}',
                    f'{value:.2f}',
                )
            )
        parts.append(
            markup('<text x="{}" y="{}" class="tool">{}</text>', f'{x0 + group / 2 - bar / 2:.1f}', height - 18, tool)
        )
    legend = _legend(left, height)
    axis = markup(
        '<line x1="{}" y1="{}" x2="{}" y2="{}" class="axis"></line><text x="4" y="{}" class="axis">1.0</text>'
        '<text x="4" y="{}" class="axis">0</text>',
        left,
        top + plot,
        width - 10,
        top + plot,
        top + 4,
        top + plot,
    )
    return markup(
        '<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {} {}" width="{}" height="{}" role="img" '
        'aria-label="metrics per tool">{}{}{}</svg>',
        width,
        height + 6,
        width,
        height + 6,
        axis,
        join(parts),
        legend,
    )
