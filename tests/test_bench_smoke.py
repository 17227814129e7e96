"""The core benchmark still runs (`benchmarks/core_bench.py --quick` end to end, no timing asserts),
and every speed script runs with the thread pools its thread note claims."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _bench(script: str, *args: str) -> str:
    """What ``benchmarks/<script> <args>`` printed (it must succeed within five minutes)."""
    done = subprocess.run(
        [sys.executable, str(ROOT / 'benchmarks' / script), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


BLAS_THREADS = (
    'from threadpoolctl import threadpool_info; '
    "print(sorted({p['num_threads'] for p in threadpool_info() if p['user_api'] == 'blas'}))"
)
"""Prints the thread counts of the BLAS pools numpy loaded: the speed scripts' thread note says ``[1]``."""


def _unpinned_env() -> dict[str, str]:
    """This environment without thread counts, so that only the script's own pins apply."""
    return {k: v for k, v in os.environ.items() if not k.endswith('_NUM_THREADS')} | {'HF_HUB_OFFLINE': '1'}


def _bench_then_blas_threads(script: str, *args: str) -> tuple[str, str]:
    """``benchmarks/<script>.py <args>`` run as ``__main__`` in one interpreter (it must succeed within five
    minutes), then that interpreter's BLAS thread counts: what the script printed, and the counts."""
    path = str(ROOT / 'benchmarks' / f'{script}.py')
    code = (
        f'import runpy, sys; sys.path.insert(0, {str(ROOT / "benchmarks")!r}); sys.argv = [{path!r}, *{args!r}]; '
        f'runpy.run_path({path!r}, run_name="__main__"); {BLAS_THREADS}'
    )
    done = subprocess.run(
        [sys.executable, '-c', code], capture_output=True, text=True, timeout=300, cwd=ROOT, env=_unpinned_env()
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out, threads = done.stdout.rstrip('\n').rsplit('\n', 1)
    return out, threads


def test_memory_write_bench_runs_and_its_reopened_store_agrees() -> None:
    """`benchmarks/memory_write_bench.py` on 2,000 chunks: every row printed, and the saved store,
    reopened, ranks as the live one (the script checks that itself and fails otherwise)."""
    out = _bench('memory_write_bench.py', '--size', '2000', '--writes', '4', '--deletes', '3')
    for row in (
        'replace one document (10 chunks) | 4 |',
        'delete one document | 3 |',
        'vector search, first after a write',
    ):
        assert row in out, out
    assert 'same records and text rankings' in out and 'Raw rebuild at this size' in out


def test_core_bench_quick_runs_with_blas_pinned_to_one_thread() -> None:
    """`benchmarks/core_bench.py --quick` end to end; the thread note says one BLAS thread and numpy's pool has it."""
    page = ROOT / 'docs' / 'benchmarks-core.md'
    before = page.read_text(encoding='utf-8') if page.exists() else None
    out, threads = _bench_then_blas_threads('core_bench', '--quick')
    assert threads == '[1]', out
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


@pytest.mark.parametrize('script', ['lancedb_bench', 'tantivy_bench'])
def test_speed_scripts_really_pin_blas_to_one_thread(script: str) -> None:
    """The thread note says one BLAS thread: numpy's pool must have it (the pins must precede numpy).
    core_bench and navigation_bench are checked after their quick runs, in the same interpreter."""
    code = f'import sys; sys.path.insert(0, {str(ROOT / "benchmarks")!r}); import {script}; {BLAS_THREADS}'
    done = subprocess.run(
        [sys.executable, '-c', code], capture_output=True, text=True, timeout=120, cwd=ROOT, env=_unpinned_env()
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split('\n')[-2] == '[1]', done.stdout


def test_thread_pins_after_numpy_loaded_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pinning after numpy loaded its BLAS would print a thread note that is not true."""
    import numpy  # noqa: F401  (loaded, as in any test process)

    from benchmarks.pin_threads import set_thread_counts

    for var in ('OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS', 'NUMEXPR_NUM_THREADS'):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(RuntimeError, match='before numpy'):
        set_thread_counts(2, torch=False)


def test_navigation_bench_quick_runs_with_blas_pinned_to_one_thread() -> None:
    """`benchmarks/navigation_bench.py --quick`: every store, every navigation row and exact filtered searches;
    the thread note says one BLAS thread and numpy's pool has it."""
    page = ROOT / 'docs' / 'benchmarks-core.md'
    before = page.read_text(encoding='utf-8')
    out, threads = _bench_then_blas_threads('navigation_bench', '--quick')
    assert threads == '[1]', out
    number = r'[0-9.]+'
    for store in ('memory', 'lancedb', 'tantivy'):
        for call in ('list_documents, first page', 'read_section, 30-chunk section', 'outline, whole document'):
            row = rf'^\| synthetic-\d+ \| {store} \| {call}[^|]* \| {number} / {number} \| {number} \| {number} / {number} \| {number}x \| {number}x \|'
            assert re.search(row, out, re.MULTILINE), f'no {call} row for {store}:\n{out}'
    # Model-filtered searches at 1%, 10%, 50%: vector and text (memory, lancedb), text (tantivy),
    # in the report (rows are also printed as they come).
    assert 'Searches with a model filter' in out, out
    exact = re.findall(
        r'^\| synthetic-\d+ \| \w+ \| \w+_search \| \d+% [^|]+ \| (\d+) \| [^|]+ \| [^|]+ \| (\d+)/(\d+) \|$',
        out.split('Searches with a model filter', 1)[1],
        re.MULTILINE,
    )
    assert len(exact) == 15, out
    assert all(calls == good == total for calls, good, total in exact), out
    assert 'peak RSS' in out and '`.venv/bin/python benchmarks/navigation_bench.py --quick`' in out
    assert page.read_text(encoding='utf-8') == before  # --quick never rewrites the docs page


def test_grounding_bench_quick_runs() -> None:
    """`benchmarks/grounding_bench.py --quick` (100 XQuAD questions): every genuine quote accepted, no corruption."""
    xquad = (ROOT / '..' / 'shared' / 'data' / 'xquad-en').resolve()
    if not (xquad / 'corpus.jsonl').is_file():
        pytest.skip(f'XQuAD-en is not at {xquad} (../shared/data next to the repository)')
    done = subprocess.run(
        [sys.executable, str(ROOT / 'benchmarks' / 'grounding_bench.py'), '--quick'],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, 'HF_HUB_OFFLINE': '1'},
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    out = done.stdout
    rows = re.findall(
        r'^\| ([^|]+) \| (genuine|variant|corrupt) \| (\d+) \| \d+ \| (\d+) \| (\d+) \|', out, re.MULTILINE
    )
    kinds = {kind for _, kind, _, _, _ in rows}
    assert kinds == {'genuine', 'variant', 'corrupt'} and len(rows) >= 14, out
    for rule, kind, generated, accepted, rejected in rows:
        assert int(generated) > 0, f'{rule}: nothing generated\n{out}'
        assert int(rejected if kind == 'corrupt' else accepted) == int(generated), f'{rule}: wrong verdicts\n{out}'
    assert re.search(r'^- PASS: corruptions accepted: 0/\d+', out, re.MULTILINE), out
    assert 'FAIL' not in out and 'quotes/s' in out and '`.venv/bin/python benchmarks/grounding_bench.py --quick`' in out
