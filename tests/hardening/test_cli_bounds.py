"""The CLI's per-file bounds hold (issue 41 item 8): ``toolish-rag ingest`` parses in worker processes whenever
a time or memory bound applies, the defaults included, and ``--executor`` chooses.

Before the fix the CLI parsed fewer than 64 files in threads: ``--max-memory`` did nothing (a
15 MB HTML reached 1.7 GB under ``--max-memory 512``) and ``--max-seconds`` held only at the
readers' checkpoints. Here a 1 MiB memory bound, which any worker process is over, must stop
a page whose parse outlasts the supervisor's first look (50 ms); threads cannot measure it.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from toolish_rag.cli import main
from toolish_rag.cli._ingest_cmd import executor_for
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.ingest import IngestLimits, IngestReport
from toolish_rag.ingest._watch import watch
from toolish_rag.stores import InMemoryStore


def _page() -> str:
    rows = ''.join(f'<tr><td>row {n}</td><td>{"cell text " * 8}</td></tr>' for n in range(1_500))
    return f'<html><body><h1>Big</h1><table>{rows}</table></body></html>'


def _ingest(folder: Path, capsys: pytest.CaptureFixture[str], *options: str) -> dict[str, object]:
    argv = ['ingest', str(folder), '--store', 'memory:./kb', '--embedder', 'hashing', '--json', *options]
    main(argv)
    report: dict[str, object] = json.loads(capsys.readouterr().out)
    return report


def test_the_memory_bound_stops_a_file_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv('TOOLISH_RAG_STORE', raising=False)
    (tmp_path / 'docs').mkdir()
    (tmp_path / 'docs' / 'big.html').write_text(_page())
    report = _ingest(tmp_path / 'docs', capsys, '--max-memory', '1')
    assert [f['reason'] for f in report['failed']] == [  # type: ignore[attr-defined]
        'stopped: used more than the 1,048,576-byte memory limit per file'
        ' (raise it with --max-memory MIB; IngestLimits(memory_bytes=...))'
    ]
    threads = _ingest(tmp_path / 'docs', capsys, '--max-memory', '1', '--executor', 'thread')
    assert not threads['failed'] and len(threads['added']) == 1  # type: ignore[arg-type]  # nothing measured it


@pytest.mark.parametrize(
    ('chosen', 'limits', 'executor'),
    [
        (None, IngestLimits(), 'process'),
        (None, IngestLimits(seconds=None), 'process'),
        (None, IngestLimits(memory_bytes=None), 'process'),
        (None, IngestLimits(seconds=None, memory_bytes=None), 'auto'),
        ('thread', IngestLimits(), 'thread'),
    ],
)
def test_processes_whenever_a_bound_applies(chosen: str | None, limits: IngestLimits, executor: str) -> None:
    assert executor_for(chosen, limits) == executor


async def test_watch_batches_parse_with_the_local_executor_given(tmp_path: Path) -> None:
    """``--watch``: a change batch's files are bounded like the initial run's (they were parsed in threads)."""
    pytest.importorskip('watchfiles', reason='--watch needs toolish-rag[watch]')
    (tmp_path / 'a.md').write_text('# A\n\nfirst\n')
    reports: list[IngestReport] = []
    stop = asyncio.Event()
    store = InMemoryStore(HashingEmbeddingModel(64))
    bounded = IngestLimits(memory_bytes=1 << 20)
    running = watch(
        store, tmp_path, debounce_ms=300, stop_event=stop, on_report=reports.append, progress=False,
        executor='process', limits=bounded,
    )  # fmt: skip
    task = asyncio.create_task(running)
    try:
        await _until(lambda: reports or task.done())
        (tmp_path / 'big.html').write_text(_page())
        await _until(lambda: len(reports) > 1 or task.done())
    finally:
        stop.set()
        await asyncio.wait_for(task, 120)
    assert [(Path(f.path).name, f.reason) for f in reports[1].failed] == [
        (
            'big.html',
            'stopped: used more than the 1,048,576-byte memory limit per file'
            ' (raise it with --max-memory MIB; IngestLimits(memory_bytes=...))',
        )
    ]


async def _until(check: Callable[[], object]) -> None:
    deadline = time.monotonic() + 120  # the fork server's first start on a loaded machine
    while not check() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
