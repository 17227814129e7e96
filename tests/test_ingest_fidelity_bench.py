"""`benchmarks/ingest_fidelity.py` runs end to end on one small document, and scores as the fidelity README says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIDELITY = ROOT.parent / 'shared' / 'data' / 'fidelity'
sys.path.insert(0, str(ROOT / 'benchmarks'))

import ingest_fidelity as bench  # noqa: E402


def test_normalisation_follows_the_readme() -> None:
    md = '## Heading\n\n- **bold** item with [a link](http://x)\n\n| a | b |\n| - | - |\n| sim-\nply | c\\_d |\n'
    assert bench.words(bench.normalise(md, markdown=True)) == [
        'heading',
        'bold',
        'item',
        'with',
        'a',
        'link',
        'a',
        'b',
        'simply',
        'c_d',
    ]
    assert bench.words(bench.normalise('\u201cQuoted\u201d \u2014 te~xt', markdown=False, unlv=True)) == [
        'quoted',
        'text',
    ]
    assert bench.prf(['a', 'b', 'b'], ['a', 'b']) == (2 / 3, 1.0, 0.8)
    assert bench.order_score(['a', 'b', 'c'], ['a', 'c', 'b']) == pytest.approx(1 / 3)
    assert bench.heading_recall(['Intro', 'Other'], '# Intro\n\ntext\n\n## Missing\n') == 0.5


def test_the_benchmark_runs_on_one_document() -> None:
    if not (FIDELITY / 'manifest.json').is_file():
        pytest.skip(f'fidelity data not found at {FIDELITY} (../shared/data is absent)')
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / 'benchmarks' / 'ingest_fidelity.py'),
            '--docs',
            'docling_example_03',
            '--converters',
            'default',
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    row = next(line for line in done.stdout.splitlines() if line.startswith('| docling_example_03.html | default |'))
    cells = [c.strip() for c in row.strip('|').split('|')]
    assert cells[2] == 'ok'
    f1, headings, cell_accuracy = float(cells[3]), float(cells[7]), float(cells[8])
    assert f1 > 0.9 and headings > 0.5 and cell_accuracy > 0.5  # a simple page every reader gets nearly right
