"""CLI start-up benchmark (issue 40): ``toolish-rag search`` from a cold process, by phase, and the warm path.

    .venv/bin/python benchmarks/cli_startup_bench.py            # the repository's docs/ in LanceDB, default embedder
    .venv/bin/python benchmarks/cli_startup_bench.py --quick    # a few pages in a memory store, hashing embedder

Cold: each run is a new process, as a shell runs ``toolish-rag search``. A small driver replays what the command
does and times each phase: the interpreter itself (``python -c pass``), importing the command (``toolish_rag.cli``),
importing the toolset and the store's package, opening the store (``open_rag``), loading the embedding model
(hybrid only: a text search never loads it) and the tool call. The real command's wall time is measured
beside it. Warm: ``toolish-rag search - --json`` answers one query per line of stdin from one process; each
query after the first is timed from writing its line to reading its answer's line (the median); and the same
tool call repeated in one process (the Python API, or the MCP server's) is timed directly. The goal: a warm text search under 0.2 s.
Medians of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mcp_startup_bench import ingest, toolish_command

QUERIES = [
    'how do I serve the tools over MCP',
    'scope a token to one tenant',
    'rebuild the graph after an ingest',
    'which embedder does the store use',
    'verify a citation quote',
    'regex search over a large store',
    'group hits by document',
    'limits per token',
]

DRIVER = r"""
import asyncio, json, sys, time
started = time.perf_counter()
from toolish_rag.cli import build_parser
imported_cli = time.perf_counter()
args = build_parser().parse_args(json.loads(sys.argv[1]))
import toolish_rag.toolset
from toolish_rag.stores.registry import open_store  # the store's package is imported when it is opened
imported = time.perf_counter()
from toolish_rag.cli._common import open_rag
store, rag = open_rag(args)
opened = time.perf_counter()
tool = sys.argv[2]
if tool != 'text_search':
    from toolish_rag.embedding import preload_embedder
    preload_embedder(getattr(store, 'embedder', None))
loaded = time.perf_counter()
asyncio.run(rag.run_tool(tool, {'query': sys.argv[3], 'top_k': 5}))
done = time.perf_counter()
print(json.dumps({'import command': imported_cli - started, 'import toolset': imported - imported_cli,
                  'open store': opened - imported, 'load model': loaded - opened, 'query': done - loaded}))
"""

WARM = r"""
import asyncio, json, statistics, sys, time
from toolish_rag.cli import build_parser
from toolish_rag.cli._common import open_rag
args = build_parser().parse_args(json.loads(sys.argv[1]))
store, rag = open_rag(args)
queries = json.loads(sys.argv[3])

async def main():
    await rag.run_tool(sys.argv[2], {'query': queries[0], 'top_k': 5})  # the first loads what it needs
    times = []
    for query in queries * 3:
        started = time.perf_counter()
        await rag.run_tool(sys.argv[2], {'query': query, 'top_k': 5})
        times.append(time.perf_counter() - started)
    print(json.dumps(statistics.median(times)))
asyncio.run(main())
"""


def timed(command: list[str], **kwargs: Any) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, **kwargs)
    return time.perf_counter() - started


def warm_stdin(command: list[str]) -> float:
    """Median seconds from writing a query line to ``search -`` to reading its answer, after the first query."""
    process = subprocess.Popen([*command, '-', '--json'], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdin is not None and process.stdout is not None
    times = []
    try:
        for query in QUERIES * 2:
            started = time.perf_counter()
            process.stdin.write(query + '\n')
            process.stdin.flush()
            json.loads(process.stdout.readline())
            times.append(time.perf_counter() - started)
    finally:
        process.stdin.close()
        process.wait(60)
    return statistics.median(times[1:])


def run(repeat: int, quick: bool, pages: int | None) -> dict[str, Any]:
    out: dict[str, Any] = {'load_average_start': os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix='cli-startup-') as tmp:
        store = ingest(Path(tmp), quick, pages)
        out['store'] = store[1]
        out['interpreter_s'] = statistics.median(timed([sys.executable, '-c', 'pass']) for _ in range(repeat))
        for tool in ('text_search', 'hybrid_search'):
            flag = tool.removesuffix('_search')
            argv = json.dumps(['search', 'x', '--tool', flag, *store])
            phases = [
                json.loads(
                    subprocess.run(
                        [sys.executable, '-c', DRIVER, argv, tool, QUERIES[i % len(QUERIES)]],
                        check=True,
                        capture_output=True,
                        text=True,
                    ).stdout.splitlines()[-1]
                )
                for i in range(repeat)
            ]
            command = [*toolish_command(), 'search', '--tool', flag, *store]
            one = statistics.median(timed([*command, QUERIES[i % len(QUERIES)]]) for i in range(repeat))
            warm = statistics.median(warm_stdin(command) for _ in range(repeat))
            in_process = json.loads(
                subprocess.run(
                    [sys.executable, '-c', WARM, argv, tool, json.dumps(QUERIES)],
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout.splitlines()[-1]
            )
            out[tool] = {
                'cold_phases_s': {k: statistics.median(p[k] for p in phases) for k in phases[0]},
                'cold_command_s': one,
                'warm_per_query_stdin_s': warm,
                'warm_per_query_in_process_s': in_process,
            }
    out['load_average_end'] = os.getloadavg()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--repeat', type=int, default=5, help='runs of each measure (default: 5)')
    parser.add_argument('--quick', action='store_true', help='a few pages, memory store, hashing embedder')
    parser.add_argument('--pages', type=int, default=None, help="how many of docs/'s pages to ingest (default: all)")
    parser.add_argument('--json', type=Path, default=None, help='also write the figures to this file')
    args = parser.parse_args()
    result = run(args.repeat, args.quick, args.pages)
    print(
        f'store {result["store"]}; interpreter start {result["interpreter_s"]:.2f} s; load {result["load_average_start"]}'
    )
    for tool in ('text_search', 'hybrid_search'):
        row = result[tool]
        phases = ', '.join(f'{k} {v:.2f}' for k, v in row['cold_phases_s'].items())
        print(
            f'{tool}: cold command {row["cold_command_s"]:.2f} s ({phases}); warm per query: '
            f'search - {row["warm_per_query_stdin_s"]:.3f} s, in process {row["warm_per_query_in_process_s"]:.3f} s'
        )
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == '__main__':
    main()
