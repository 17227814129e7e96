"""`benchmarks/graph_bench.py --quick` runs end to end on HotpotQA (60 questions) and reports sane figures.

Not the acceptance figures (those are the full run's, in docs/benchmarks-graph.md): this checks that
every row is there, every share lies in [0, 1], both legs scored the very same questions, the walk
and networkx agreed, and ``--quick`` left the docs page alone. Without ``../shared/data`` the
benchmark exits with a message naming the missing directory (checked on a copy of the scripts).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HOTPOTQA = (ROOT / '..' / 'shared' / 'data' / 'hotpotqa').resolve()
SCRIPT = ROOT / 'benchmarks' / 'graph_bench.py'
ENV = {**os.environ, 'HF_HUB_OFFLINE': '1'}


@pytest.mark.slow  # ~45 s (embeds 600 paragraphs with the real model); the default run keeps the issue within its minute
@pytest.mark.model
@pytest.mark.shared_data
def test_graph_bench_quick_runs(tmp_path: Path) -> None:
    if not (HOTPOTQA / 'corpus.jsonl').is_file():
        pytest.skip(f'HotpotQA is not at {HOTPOTQA} (../shared/data next to the repository)')
    page = ROOT / 'docs' / 'benchmarks-graph.md'
    before = page.read_text(encoding='utf-8')
    out_json = tmp_path / 'graph.json'
    done = subprocess.run(
        [sys.executable, str(SCRIPT), '--quick', '--json-out', str(out_json)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=ENV,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-3000:]
    out = done.stdout

    # The report's rows: hybrid, the primary rule, and every rule at s = 3..7, each over all 60 questions.
    share = r'([0-9.]+)'
    row = re.compile(
        rf'^\| ([a-z0-9+, -]+) \| (\d*) \| (\d+) \| {share} \| [+-][0-9.]+ \| {share} \| {share} \| {share} \|$',
        re.MULTILINE,
    )
    rows = row.findall(out)
    names = {(name, seeds) for name, seeds, *_ in rows}
    assert ('hybrid top-10', '') in names and ('seed+neighbours', '5') in names, out
    for rule in ('seed+neighbours', 'seed+neighbours, per seed 1', 'reserve 2'):
        assert {(rule, str(s)) for s in range(3, 8)} <= names, f'no sensitivity rows for {rule}:\n{out}'
    for name, _, n, *figures in rows:
        assert n == '60', f'{name}: {n} questions\n{out}'
        assert all(0.0 <= float(f) <= 1.0 for f in figures), f'{name}: {figures}\n{out}'
    assert re.search(r'^- graph: ExactNameLinker over \d+ documents: [\d,]+ relations', out, re.MULTILINE), out
    assert re.search(r'second build [0-9.]+ s, 0 writes', out), out  # the linker's ledger: nothing rewritten
    assert '`.venv/bin/python benchmarks/graph_bench.py --quick' in out and 'peak RSS' in out

    # Both legs on the same questions, shares in [0, 1], by-type counts adding up.
    result = json.loads(out_json.read_text(encoding='utf-8'))
    hybrid = result['hybrid']
    assert result['questions'] == len(hybrid['questions']) == 60
    assert sum(t['n'] for t in hybrid['by_type'].values()) == 60
    assert len(result['legs']) == 25
    for leg in [hybrid, *result['legs']]:
        assert leg['questions'] == hybrid['questions'], leg['name']
        assert 0.0 <= leg['both_at_10'] <= leg['recall_at_10'] <= 1.0, leg
        assert all(0.0 <= t['both_at_10'] <= 1.0 for t in leg['by_type'].values()), leg

    # The walk and networkx's BFS found the same nodes on every call; a latency was measured.
    speed = result['speed']
    assert speed['same'] == speed['calls'] == 60, speed
    assert speed['walk_p50_ms'] > 0 and speed['networkx_p50_ms'] > 0
    assert page.read_text(encoding='utf-8') == before  # --quick never rewrites the docs page


def test_graph_bench_without_shared_data_says_so(tmp_path: Path) -> None:
    """A copy of the scripts whose ``../shared/data`` does not exist exits 1 with a message naming the path."""
    benchmarks = tmp_path / 'repo' / 'benchmarks'
    benchmarks.mkdir(parents=True)
    for name in ('graph_bench.py', 'common.py', 'pin_threads.py'):
        shutil.copy(ROOT / 'benchmarks' / name, benchmarks / name)
    done = subprocess.run(
        [sys.executable, str(benchmarks / 'graph_bench.py'), '--quick'],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=ENV,
    )
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    missing = tmp_path / 'shared' / 'data' / 'hotpotqa'
    assert f'graph_bench: HotpotQA is not at {missing}' in done.stderr, done.stderr[-2000:]
    assert 'Traceback' not in done.stderr
