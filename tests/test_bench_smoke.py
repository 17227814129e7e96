"""The core benchmark still runs: `benchmarks/core_bench.py --quick` end to end (no timing asserts)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_core_bench_quick_runs() -> None:
    page = ROOT / 'docs' / 'benchmarks-core.md'
    before = page.read_text(encoding='utf-8') if page.exists() else None
    done = subprocess.run(
        [sys.executable, str(ROOT / 'benchmarks' / 'core_bench.py'), '--quick'],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    for tool in ('vector_search', 'text_search', 'hybrid_search', 'regex_search', 'broaden_chunk', 'zoom_out'):
        assert re.search(rf'^\| {tool}( \([a-z ]+\))? \| \d+ \| [0-9.]+ / [0-9.]+ \|', out, re.MULTILINE), (
            f'no row for {tool}:\n{out}'
        )
    # Filtered searches return exactly min(top_k, in-scope matches) hits, all in scope.
    exact = re.findall(
        r'^\| \d+% \(\d+ chunks\) \| \w+ \| (\d+) \| [^|]+ \| [^|]+ \| [^|]+ \| (\d+)/(\d+) \|$', out, re.MULTILINE
    )
    assert len(exact) == 9, out
    assert all(calls == good == total for calls, good, total in exact), out
    assert 'import toolish_rag' in out and 'peak RSS' in out
    # --quick never rewrites the docs page.
    after = page.read_text(encoding='utf-8') if page.exists() else None
    assert after == before
