"""Import time of ``toolish_rag`` (issue 42 item 4): each statement in a fresh interpreter, against pydantic-ai.

    python benchmarks/import_time.py              # 15 runs of each, medians
    python benchmarks/import_time.py --repeat 31
    git archive b725478 src | tar -x -C /tmp/before   # an older tree, measured in the same run:
    python benchmarks/import_time.py --before /tmp/before/src

Each line is timed in its own ``python -c`` process (a cold import, as a program or the CLI starts), the
interpreter's own start-up (``pass``) subtracted; the ratio column divides by ``import pydantic_ai`` measured
in the same run, so a noisy machine moves both. The last column names the heavy packages the statement left in
``sys.modules`` (torch, sentence-transformers, the document readers): the slim core's promise is that the
quick start's capability part loads none of them. Results: docs/benchmarks-core.md#import-time.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path

HEAVY = (
    'torch',
    'sentence_transformers',
    'transformers',
    'bs4',
    'lxml',
    'docx',
    'pptx',
    'openpyxl',
    'pypdfium2',
    'pdfplumber',
    'PIL',
    'lingua',
    'markdown_it',
    'striprtf',
    'charset_normalizer',
    'bm25s',
)

STATEMENTS = {
    'pass': 'pass',
    'import pydantic_ai': 'import pydantic_ai',
    'import toolish_rag': 'import toolish_rag',
    'quick start imports': (
        'import pydantic_ai\n'
        'from toolish_rag import PropertyFilter, ToolishRag\n'
        'from toolish_rag.stores import InMemoryStore'
    ),
    'quick start + ingest': (
        'import pydantic_ai\n'
        'from toolish_rag import ToolishRag\n'
        'from toolish_rag.stores import InMemoryStore\n'
        'from toolish_rag.ingest import ingest'
    ),
}

_DRIVER = """
import json, sys, time
start = time.perf_counter()
exec(compile({code!r}, '<statement>', 'exec'))
elapsed = time.perf_counter() - start
print(json.dumps({{'s': elapsed, 'heavy': sorted(m for m in {heavy!r} if m in sys.modules)}}))
"""


def _once(code: str, source: str) -> tuple[float, list[str]]:
    """Wall time of the whole process (start-up included) and the heavy modules the statement loaded.

    ``source``: the ``src`` folder to import toolish_rag from (first on ``PYTHONPATH``).
    """
    import time

    driver = _DRIVER.format(code=code, heavy=HEAVY)
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join([source, *filter(None, [env.get('PYTHONPATH')])])
    start = time.perf_counter()
    done = subprocess.run([sys.executable, '-c', driver], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if done.returncode:  # e.g. the ingestion statement in a slim install: its error is the result
        return math.nan, [f'fails: {done.stderr.strip().splitlines()[-1][:100]}']
    heavy: list[str] = json.loads(done.stdout.strip().splitlines()[-1])['heavy']
    return wall, heavy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--repeat', type=int, default=15)
    parser.add_argument('--before', help='another src folder (an older checkout) measured in the same run')
    args = parser.parse_args()
    trees = {
        'now': str(Path(__file__).resolve().parents[1] / 'src'),
        **({'before': args.before} if args.before else {}),
    }
    runs = [(tree, name) for tree in trees for name in STATEMENTS if tree == 'now' or 'toolish_rag' in STATEMENTS[name]]
    walls: dict[tuple[str, str], list[float]] = {run: [] for run in runs}
    heavy: dict[tuple[str, str], list[str]] = {}
    for _ in range(args.repeat):  # interleaved, so a slow spell of the machine lands on every statement
        for tree, name in runs:
            wall, loaded = _once(STATEMENTS[name], trees[tree])
            walls[tree, name].append(wall)
            heavy[tree, name] = loaded
    base = statistics.median(walls['now', 'pass'])
    reference = statistics.median(walls['now', 'import pydantic_ai']) - base
    print(
        f'python {sys.version.split()[0]}, {args.repeat} runs each, medians; interpreter start-up {base * 1000:.0f} ms'
    )
    print('| tree | statement | import time | / import pydantic_ai | heavy modules loaded |')
    print('|---|---|---|---|---|')
    for tree, name in runs:
        if name == 'pass':
            continue
        cost = statistics.median(walls[tree, name]) - base
        loaded = ', '.join(heavy[tree, name]) or 'none'
        print(f'| {tree} | `{name}` | {cost * 1000:.0f} ms | {cost / reference:.2f} | {loaded} |')


if __name__ == '__main__':
    main()
