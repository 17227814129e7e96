"""What ``toolish-rag ingest`` prints: greppable lines off a terminal, JSON with ``--json``, the table on one.

Regression: off a terminal (CI logs, ``| grep``) the failure table folded long file
names mid-word at the console width, so neither the names nor ``grep`` worked.
"""

from __future__ import annotations

import io
import json
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from toolish_rag.cli import main
from toolish_rag.ingest import IngestIssue, IngestReport
from toolish_rag.ingest._report import format_lines, format_report


def _tree(root: Path) -> tuple[Path, Path]:
    """A readable Markdown file and a "DOCX" that is no ZIP, the latter under a path far wider than a console."""
    deep = root / ('quarterly reports and other long folder names ' * 3).strip() / 'finance-department-archive'
    deep.mkdir(parents=True)
    good = root / 'refunds.md'
    good.write_text('# Refunds\n\nRefunds are paid within 30 days.\n')
    bad = deep / 'board-minutes-2024-q3-final-final-version-with-comments.docx'
    bad.write_bytes(b'this is not a zip file at all')
    assert len(str(bad)) > 200
    return good, bad


def _ingest(root: Path, *extra: str) -> int:
    return main(['ingest', str(root), '--store', f'memory:{root.parent / "kb"}', '--embedder', 'hashing', *extra])


def test_off_a_terminal_each_failure_is_one_unwrapped_line_on_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, bad = _tree(tmp_path / 'docs')
    assert _ingest(tmp_path / 'docs') == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith('added 1, updated 0, unchanged 0, removed 0, failed 1, skipped 0')
    failures = [line for line in out if line.startswith('failed: ')]
    assert failures == [f'failed: {bad}: corrupt DOCX (not a readable ZIP container): File is not a zip file']


def test_json_report_has_every_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good, bad = _tree(tmp_path / 'docs')
    assert _ingest(tmp_path / 'docs', '--json') == 1
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {f.name for f in fields(IngestReport)} | {'ok'}
    assert report['ok'] is False and report['chunks'] >= 1 and report['seconds'] >= 0
    assert report['failed'] == [
        {'path': str(bad), 'reason': 'corrupt DOCX (not a readable ZIP container): File is not a zip file'}
    ]
    assert len(report['added']) == 1 and good.name in report['added'][0]
    assert report['updated'] == report['unchanged'] == report['removed'] == []

    assert _ingest(tmp_path / 'docs', '--json') == 1  # again: the Markdown file is unchanged now
    again = json.loads(capsys.readouterr().out)
    assert again['unchanged'] == report['added'] and again['added'] == []


class _Terminal(io.StringIO):
    """A text stream that says it is a terminal, as ``sys.stdout`` is in an interactive shell."""

    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_summary_table_goes_to_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path / 'docs')
    terminal = _Terminal()
    monkeypatch.setattr(sys, 'stdout', terminal)
    assert _ingest(tmp_path / 'docs', '--no-progress') == 1
    assert terminal.getvalue() == ''
    err = capsys.readouterr().err
    assert 'failed 1' in err and 'reason' in err  # the rich table, with its header


def test_format_lines_and_to_json() -> None:
    report = IngestReport(
        added=['file:///a.md'],
        failed=[IngestIssue('/x/y z.docx', 'encrypted DOCX:\n  the file is password-protected')],
        skipped=[IngestIssue('/x/big.pdf', 'over the size limit')],
        warnings=[IngestIssue('/x/a.md', 'metadata key dropped')],
        chunks=3,
        seconds=0.25,
    )
    assert format_lines(report).splitlines()[1:] == [
        'failed: /x/y z.docx: encrypted DOCX: the file is password-protected',
        'skipped: /x/big.pdf: over the size limit',  # shown without --json or -v (issue 27 item 8)
        'warning: /x/a.md: metadata key dropped',
    ]
    data = json.loads(report.to_json())
    assert data['failed'] == [{'path': '/x/y z.docx', 'reason': 'encrypted DOCX:\n  the file is password-protected'}]
    assert data['skipped'][0]['reason'] == 'over the size limit' and data['chunks'] == 3 and data['ok'] is False


def test_skips_and_warnings_are_listed_up_to_ten_then_counted() -> None:
    report = IngestReport(skipped=[IngestIssue(f'/x/{i:02}.png', 'unsupported file type') for i in range(13)])
    lines = format_lines(report).splitlines()
    assert lines[1:11] == [f'skipped: /x/{i:02}.png: unsupported file type' for i in range(10)]
    assert lines[11:] == ['skipped: ... and 3 more (-v lists them all)']
    assert len(format_lines(report, verbose=True).splitlines()) == 14
    table = format_report(report, width=80)
    assert '/x/09.png' in table and '/x/10.png' not in table and '... and 3 more' in table


def test_the_summary_folds_between_items_never_inside_one() -> None:
    report = IngestReport(added=['a'] * 3, skipped=[IngestIssue('/x/a.png', 'unsupported')], chunks=12, seconds=1.5)
    for width in (40, 60, 80):
        summary = format_report(report, width=width).split('skipped   ')[0]  # before the skipped table
        rows = [row.strip() for row in summary.strip().splitlines()]
        assert all(len(row) <= width for row in rows)
        assert ' '.join(rows) == report.summary()  # every fold falls between two items
    assert '(12\nchunks)' not in format_report(report, width=80)


def test_an_interrupted_run_says_so_and_what_to_do() -> None:
    report = IngestReport(added=['a'], chunks=2, seconds=0.5, interrupted=True)
    assert report.summary().startswith('interrupted: added 1,')
    assert report.summary().endswith('the same command again ingests the rest')
    assert json.loads(report.to_json())['interrupted'] is True


def test_the_cli_lists_skips_without_json_and_all_of_them_with_v(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / 'docs'
    docs.mkdir()
    (docs / 'refunds.md').write_text('# Refunds\n\nRefunds are paid within 30 days.\n')
    for i in range(12):
        (docs / f'scan{i:02}.bmp').write_bytes(b'BM')  # a bitmap format no reader takes
    assert _ingest(docs) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(': ')[1] for line in out if line.startswith('skipped: /')] == [
        str(docs / f'scan{i:02}.bmp') for i in range(10)
    ]
    assert out[-1] == 'skipped: ... and 2 more (-v lists them all)'
    assert _ingest(docs, '-v') == 0
    assert sum(line.startswith('skipped: /') for line in capsys.readouterr().out.splitlines()) == 12
