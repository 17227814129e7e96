"""The adversarial measurement: every genuine XQuAD quote accepted, every rule-made corruption rejected.

Runs `benchmarks/grounding_bench.py` in full (all 1,190 XQuAD-en questions, text search, 15-30 s
on 2 cores; marked slow) in a subprocess, as the docs' command does: the script pins its
thread pools before numpy loads, which a test process has already done. The script's own exit
code carries the criteria; the totals line is parsed as well, so the test fails with the
numbers if the report ever stops saying what it measured.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
XQUAD = (ROOT / '..' / 'shared' / 'data' / 'xquad-en').resolve()
TOTALS = re.compile(
    r'^Totals: genuine quotes and variants (\d+) \((\d+) distinct\), accepted (\d+); '
    r'corruptions (\d+) \((\d+) distinct\), accepted (\d+)\.$',
    re.MULTILINE,
)


@pytest.mark.slow
@pytest.mark.shared_data
def test_every_genuine_quote_accepted_and_every_corruption_rejected() -> None:
    if not (XQUAD / 'corpus.jsonl').is_file():
        pytest.skip(f'XQuAD-en is not at {XQUAD} (../shared/data next to the repository)')
    done = subprocess.run(
        [sys.executable, str(ROOT / 'benchmarks' / 'grounding_bench.py')],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
        env={**os.environ, 'HF_HUB_OFFLINE': '1'},
    )
    out = done.stdout
    assert done.returncode == 0, out[-6000:] + done.stderr[-3000:]
    totals = TOTALS.search(out)
    assert totals is not None, out
    genuine, genuine_distinct, genuine_ok, corrupt, corrupt_distinct, corrupt_ok = map(int, totals.groups())
    assert genuine_ok == genuine and genuine_distinct >= 1000, out
    assert corrupt_ok == 0 and corrupt >= corrupt_distinct >= 1000, out
    answers = re.search(r'^\| genuine sentence \| genuine \| (\d+) \| \d+ \| (\d+) \| 0 \|', out, re.MULTILINE)
    assert answers is not None and int(answers[1]) == int(answers[2]) >= 1000, out
    assert 'FAIL' not in out, out
