"""MCP start-up benchmark (issue 40): how soon ``toolish-rag mcp`` (stdio) answers ``initialize``, and its first
tool call, beside a minimal MCP server measured in the same run.

    .venv/bin/python benchmarks/mcp_startup_bench.py            # the repository's docs/ in LanceDB, default embedder
    .venv/bin/python benchmarks/mcp_startup_bench.py --quick    # a few pages in a memory store, hashing embedder
    .venv/bin/python benchmarks/mcp_startup_bench.py --repeat 7 --json out.json

The client is the official ``mcp`` SDK's stdio client, as a desktop client or pydantic-ai's ``MCPToolset`` uses
it: each start spawns the server, and ``initialize`` is timed from the spawn to the handshake's answer (what
pydantic-ai's ``init_timeout`` bounds, 5 s by default); the first tool call from the spawn to its result (a
``tools/list`` then a ``hybrid_search``, which needs the store opened and the embedding model loaded). The
minimal server is a tiny ``MCPServer`` (ex-FastMCP) script with one echo tool, written by this benchmark and
started the same way. toolish-rag is measured twice: a first start (no kept handshake: the toolset is built
before ``initialize`` is answered) and later starts (the handshake answered from the instructions kept by the
last start; the toolset built after it). The goal: later starts' ``initialize`` within 2x the minimal server's.
Medians of ``--repeat`` starts, interleaved (minimal, toolish-rag, minimal, ...) so that load drifts alike.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]

MINIMAL_SERVER = '''
from mcp.server.mcpserver import MCPServer

app = MCPServer('minimal')


@app.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


app.run()
'''


def toolish_command() -> list[str]:
    """The ``toolish-rag`` console script beside this Python, else ``python -m toolish_rag.cli``."""
    script = Path(sys.executable).with_name('toolish-rag')
    return [str(script)] if script.exists() else [sys.executable, '-m', 'toolish_rag.cli']


def ingest(work: Path, quick: bool, pages_wanted: int | None = None) -> list[str]:
    """Ingest the pages into a store under ``work``; the store options every later command takes."""
    pages = work / 'pages'
    pages.mkdir()
    sources = sorted((ROOT / 'docs').glob('*.md'))[: pages_wanted or (4 if quick else None)]
    for page in sources:
        shutil.copy(page, pages / page.name)
    store = (
        ['--store', f'memory:{work / "store"}', '--embedder', 'hashing']
        if quick
        else ['--store', f'lancedb:{work / "store"}']
    )
    started = time.perf_counter()
    subprocess.run([*toolish_command(), 'ingest', str(pages), *store], check=True, capture_output=True)
    print(f'ingested {len(sources)} pages in {time.perf_counter() - started:.1f} s ({store[1]})', file=sys.stderr)
    return store


async def one_start(params: StdioServerParameters, tool: str, arguments: dict[str, Any]) -> tuple[float, float]:
    """Seconds from the spawn to ``initialize`` answered, and to the first tool call's result."""
    started = time.perf_counter()
    async with Client(params) as client:
        initialized = time.perf_counter() - started
        names = [t.name for t in (await client.list_tools()).tools]
        assert tool in names, names
        result = await client.call_tool(tool, arguments)
        assert not result.is_error, result
        return initialized, time.perf_counter() - started


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float('nan')


async def measure(repeat: int, quick: bool, pages: int | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix='mcp-startup-') as tmp:
        work = Path(tmp)
        store = ingest(work, quick, pages)
        (work / 'minimal.py').write_text(MINIMAL_SERVER)
        cache = work / 'cache'
        env = {**os.environ, 'TOOLISH_RAG_CACHE_DIR': str(cache), 'HF_HUB_OFFLINE': '1', 'TOOLISH_RAG_STORE': ''}
        minimal = StdioServerParameters(command=sys.executable, args=[str(work / 'minimal.py')], env=env, cwd=tmp)
        toolish = StdioServerParameters(
            command=toolish_command()[0], args=[*toolish_command()[1:], 'mcp', *store], env=env, cwd=tmp
        )
        search = ('hybrid_search', {'query': 'how do I serve the tools over MCP', 'top_k': 5})
        runs: dict[str, list[tuple[float, float]]] = {'minimal': [], 'first start': [], 'later starts': []}
        for _ in range(repeat):
            runs['minimal'].append(await one_start(minimal, 'echo', {'text': 'hi'}))
            shutil.rmtree(cache, ignore_errors=True)  # nothing kept: a first start
            runs['first start'].append(await one_start(toolish, *search))
            runs['minimal'].append(await one_start(minimal, 'echo', {'text': 'hi'}))
            runs['later starts'].append(await one_start(toolish, *search))  # the handshake kept by the one before
    base = median([i for i, _ in runs['minimal']])
    base_call = median([c for _, c in runs['minimal']])
    rows = {
        name: {
            'initialize_s': median([i for i, _ in values]),
            'first_tool_call_s': median([c for _, c in values]),
            'initialize_ratio': median([i for i, _ in values]) / base,
            'first_tool_call_ratio': median([c for _, c in values]) / base_call,
            'starts': len(values),
        }
        for name, values in runs.items()
    }
    return {'store': store[1], 'repeat': repeat, 'load_average': os.getloadavg(), 'servers': rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--repeat', type=int, default=5, help='starts of each server (default: 5)')
    parser.add_argument('--quick', action='store_true', help='a few pages, memory store, hashing embedder')
    parser.add_argument('--pages', type=int, default=None, help="how many of docs/'s pages to ingest (default: all)")
    parser.add_argument('--json', type=Path, default=None, help='also write the figures to this file')
    args = parser.parse_args()
    result = asyncio.run(measure(args.repeat, args.quick, args.pages))
    print(f'store {result["store"]}, {result["repeat"]} starts each, load average {result["load_average"]}')
    print(f'{"server":<14} {"initialize":>11} {"x minimal":>10} {"1st call":>9} {"x minimal":>10}')
    for name, row in result['servers'].items():
        print(
            f'{name:<14} {row["initialize_s"]:>10.2f}s {row["initialize_ratio"]:>9.2f}x '
            f'{row["first_tool_call_s"]:>8.2f}s {row["first_tool_call_ratio"]:>9.2f}x'
        )
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == '__main__':
    main()
