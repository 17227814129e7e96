"""What worker processes cost ``toolish-rag ingest`` on a small tree, against threads, measured in one run.

The CLI parses in processes whenever a time or memory bound applies (docs/security.md): this
measures what that costs where it costs most, a handful of small files. Each run is a fresh
``toolish-rag ingest`` of ``examples/docs`` (5 files) into a new memory store with the hashing
embedder, ``--executor thread`` and ``--executor process`` alternating; the command runs under a
child subreaper (Linux), so the CPU of every process it starts (the fork server and its workers,
which no one else waits for) is counted. Prints the medians and their ratio.

    python benchmarks/executor_overhead.py [--runs 5]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / 'examples' / 'docs'
_PR_SET_CHILD_SUBREAPER = 36


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(executor: str, folder: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one ingest, orphans (the fork server's workers) reaped and counted."""
    before, started = _child_cpu(), time.perf_counter()
    command = ['toolish-rag', 'ingest', str(DOCS), '--store', f'memory:{folder}', '--embedder', 'hashing']
    subprocess.run([*command, '--executor', executor, '--json'], check=True, stdout=subprocess.DEVNULL)
    while True:
        try:
            os.wait()
        except ChildProcessError:
            break
    return time.perf_counter() - started, _child_cpu() - before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--runs', type=int, default=5)
    args = parser.parse_args()
    if ctypes.CDLL(None).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit('needs Linux (PR_SET_CHILD_SUBREAPER) to count the fork server and its workers')
    results: dict[str, list[tuple[float, float]]] = {'thread': [], 'process': []}
    with tempfile.TemporaryDirectory() as scratch:
        for n in range(args.runs):
            for executor in results:
                results[executor].append(_run(executor, Path(scratch) / f'{executor}-{n}'))
    medians = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in results.items()}
    for executor, (wall, cpu) in medians.items():
        print(f'{executor:8} wall {wall:6.2f} s  cpu {cpu:6.2f} s  (median of {args.runs})')
    (tw, tc), (pw, pc) = medians['thread'], medians['process']
    print(f'process / thread: wall {pw / tw:.2f}x, cpu {pc / tc:.2f}x (+{pc - tc:.2f} CPU-s per run)')


if __name__ == '__main__':
    main()
