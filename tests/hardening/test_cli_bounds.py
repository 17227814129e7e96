"""The CLI's per-file bounds hold (issue 41 item 8): ``toolish-rag ingest`` parses in worker processes whenever
a time or memory bound applies, the defaults included, and ``--executor`` chooses.

Before the fix the CLI parsed fewer than 64 files in threads: ``--max-memory`` did nothing (a
15 MB HTML reached 1.7 GB under ``--max-memory 512``) and ``--max-seconds`` held only at the
readers' checkpoints. Here a 1 MiB memory bound, which any worker process is over, must stop
a page whose parse outlasts the supervisor's first look (50 ms); threads cannot measure it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolish_rag.cli import main
from toolish_rag.cli._ingest_cmd import executor_for
from toolish_rag.ingest import IngestLimits


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
