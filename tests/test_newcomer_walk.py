"""The newcomer walk (issue 27's acceptance): the README's commands, run as a new user runs them.

A fresh temporary directory, the ``toolish-rag`` command as a subprocess, offline, no key, no
``$TOOLISH_RAG_STORE``: ingest the example documents into the default store, list the tools,
search with each tool, build and show the graph, evaluate a small BEIR folder, serve MCP over
stdio, ask with pydantic-ai's offline test model. Every step's output must say what the user
needs and nothing else: no traceback, no deprecation warning, no progress bar on a pipe. Read
commands on a store that does not exist fail instead of answering from an empty one.

One module fixture ingests once; each step runs once (`Walk.step` caches it). A command is a new
`toolish-rag` process, as for the user, except `tools` and text and regex search, which run
through the CLI's ``main`` in one interpreter that then says whether torch was imported (it must
not be: only a vector needs the model). A command that embeds imports torch (about 7 CPU seconds
of the 2.5 a command costs otherwise); the whole walk is in the default run (about 50 CPU seconds).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_DOCS = ROOT / 'examples' / 'docs'
ENTRY_POINT = Path(sys.executable).with_name('toolish-rag')
CLI = [str(ENTRY_POINT)] if ENTRY_POINT.exists() else [sys.executable, '-m', 'toolish_rag.cli']
TOOLS = [
    'docs_vector_search',
    'docs_text_search',
    'docs_hybrid_search',
    'docs_regex_search',
    'docs_broaden_chunk',
    'docs_zoom_out',
    'docs_list_documents',
    'docs_outline',
    'docs_read_section',
    'docs_verify_citations',
]
"""What ``toolish-rag tools`` lists before ``graph build``; after it, the graph tools too (`GRAPH_TOOLS`)."""
GRAPH_TOOLS = ['docs_graph_context', 'docs_multihop_search']

NOISE = [
    ('a traceback', re.compile(r'Traceback \(most recent call last\)')),
    ('a warning', re.compile(r'\b\w*Warning:|\bis deprecated\b|\bdeprecated\b.*\binstead\b')),
    ('a progress bar', re.compile(r'━{3,}[^\n]*\d+/\d+|\d+%\|[^\n]*\|')),
    ('model loading', re.compile(r'Loading weights|Batches:')),
]


@dataclass(frozen=True)
class Step:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return f'{self.stdout}\n{self.stderr}'

    def describe(self) -> str:
        return f'toolish-rag {" ".join(self.argv)} (exit {self.returncode}):\n{self.output[-3000:]}'


def assert_clean(step: Step) -> None:
    """The step says what happened and nothing else (what a user reads in a terminal or a log)."""
    for what, pattern in NOISE:
        found = pattern.search(step.output)
        assert found is None, f'{what} ({found.group(0)!r}) in {step.describe()}'


class Walk:
    """The user's shell: one fresh directory, the user's environment without the project's variables."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.env = {**os.environ, 'HF_HUB_OFFLINE': '1', 'TOKENIZERS_PARALLELISM': 'false', 'COLUMNS': '80'}
        for variable in ('TOOLISH_RAG_STORE', 'TOOLISH_RAG_MODEL', 'OPENAI_API_KEY', 'ANTHROPIC_API_KEY'):
            self.env.pop(variable, None)
        self._steps: dict[tuple[str, ...], Step] = {}
        self.torch: dict[tuple[str, ...], bool] = {}

    def run(self, *argv: str, cwd: Path | None = None) -> Step:
        done = subprocess.run(
            [*CLI, *argv],
            cwd=cwd or self.home,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        return Step(argv, done.returncode, done.stdout, done.stderr)

    def step(self, *argv: str) -> Step:
        """Run ``toolish-rag ARGV`` once in the walk's directory; later calls get the same result."""
        if argv not in self._steps:
            self._steps[argv] = self.run(*argv)
        return self._steps[argv]

    def read_in_one_process(self, *commands: tuple[str, ...]) -> dict[tuple[str, ...], bool]:
        """Run read-only commands through the CLI's ``main`` in one new interpreter, in order; each
        becomes that command's step. Returns whether torch was imported once each had run."""
        done = subprocess.run(
            [sys.executable, '-c', READ_STEPS, json.dumps(commands)],
            cwd=self.home,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0 and done.stdout, done.stderr[-3000:]
        assert_clean(Step(('(the process)',), done.returncode, '', done.stderr))  # what escaped the redirects
        torch = {}
        for argv, code, out, err, loaded in json.loads(done.stdout.splitlines()[-1]):
            self._steps[tuple(argv)] = Step(tuple(argv), code, out, err)
            torch[tuple(argv)] = loaded
        return torch


READ_STEPS = """
import contextlib, io, json, sys
from toolish_rag.cli import main

steps = []
for argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
            print(e.code, file=err)
    steps.append((argv, code, out.getvalue(), err.getvalue(), 'torch' in sys.modules))
print(json.dumps(steps))
"""
TEXT_SEARCH = ('search', 'refund window', '--tool', 'text')
REGEX_SEARCH = ('search', 'ERR-4[0-9]{3}', '--tool', 'regex')


@pytest.fixture(scope='module')
def walk() -> Iterator[Walk]:
    with tempfile.TemporaryDirectory(prefix='toolish-rag-newcomer-') as home:
        walk = Walk(Path(home))
        ingested = walk.step('ingest', str(EXAMPLE_DOCS))
        assert ingested.returncode == 0, ingested.describe()
        write_beir(walk.home / 'mini-beir')
        # `tools`, text and regex search need no vector: one interpreter runs the three (about 2.5
        # CPU seconds instead of 7.5) and says whether any of them imported torch.
        walk.torch = walk.read_in_one_process(('tools',), TEXT_SEARCH, REGEX_SEARCH)
        yield walk


def write_beir(folder: Path) -> Path:
    """A BEIR-layout folder as a user would prepare one: corpus.jsonl, queries.jsonl, qrels/test.tsv."""
    (folder / 'qrels').mkdir(parents=True)
    corpus = [
        {'_id': 'd1', 'title': 'Refunds', 'text': 'Refunds are paid within 30 days of the request.'},
        {'_id': 'd2', 'title': 'Shipping', 'text': 'Parcels leave the Rotterdam warehouse within two days.'},
        {'_id': 'd3', 'title': 'Warranty', 'text': 'The pen has a 24-month warranty against battery failure.'},
    ]
    queries = [{'_id': 'q1', 'text': 'when are refunds paid'}, {'_id': 'q2', 'text': 'how long is the warranty'}]
    (folder / 'corpus.jsonl').write_text(''.join(json.dumps(d) + '\n' for d in corpus), encoding='utf-8')
    (folder / 'queries.jsonl').write_text(''.join(json.dumps(q) + '\n' for q in queries), encoding='utf-8')
    (folder / 'qrels' / 'test.tsv').write_text('query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td3\t1\n', encoding='utf-8')
    return folder


def test_ingest_fills_the_default_store(walk: Walk) -> None:
    step = walk.step('ingest', str(EXAMPLE_DOCS))
    assert 'added 5' in step.output and 'failed 0' in step.output, step.describe()
    summary = next(line for line in step.output.splitlines() if 'added 5' in line)
    assert 'skipped 0' in summary, f'the summary wraps mid-phrase: {step.describe()}'
    assert (walk.home / '.toolish-rag').is_dir(), 'the default store lives under .toolish-rag/ in the current directory'


def test_ingest_says_only_what_happened(walk: Walk) -> None:
    assert_clean(walk.step('ingest', str(EXAMPLE_DOCS)))


def test_tools_lists_what_a_model_sees(walk: Walk) -> None:
    step = walk.step('tools')
    assert step.returncode == 0, step.describe()
    for name in TOOLS:
        assert f'## {name}\n' in step.stdout, f'{name} missing from {step.describe()}'
    for name in GRAPH_TOOLS:  # no graph built yet
        assert f'## {name}\n' not in step.stdout, f'{name} listed before graph build: {step.describe()}'
    assert '"properties"' in step.stdout  # the JSON schema the model fills
    assert_clean(step)


HEADINGS = {
    'text': 'Text search results for',
    'regex': 'Regex matches for',
    'vector': 'Vector search results for',
    'hybrid': 'Hybrid search results for',
}


@pytest.mark.parametrize(
    ('tool', 'query', 'expected'),
    [
        ('text', 'refund window', 'refunds.md'),
        ('regex', 'ERR-4[0-9]{3}', 'ERR-4012'),
        ('vector', 'how long do I have to send an item back', 'refunds.md'),
        ('hybrid', 'my pen battery stopped charging', 'warranty.md'),
    ],
)
def test_search_with_each_tool(walk: Walk, tool: str, query: str, expected: str) -> None:
    step = walk.step('search', query, '--tool', tool)
    assert step.returncode == 0, step.describe()
    assert step.stdout.startswith(HEADINGS[tool]), step.describe()
    assert expected in step.stdout and 'chunk ' in step.stdout, step.describe()
    assert_clean(step)


def test_graph_build_and_show(walk: Walk) -> None:
    built = walk.step('graph', 'build')
    assert built.returncode == 0, built.describe()
    assert re.search(r'structure: 5 of 5 documents built, [1-9]\d* relations written', built.output), built.describe()
    assert_clean(built)
    listed = walk.run('tools').stdout  # run again: step('tools') is the answer from before the build
    assert all(f'## {name}\n' in listed for name in GRAPH_TOOLS), 'graph build did not add the graph tools'

    found = re.search(r'chunk (\S+) \|', walk.step('search', 'refund window', '--tool', 'text').stdout)
    assert found, 'the text search step printed no chunk id'
    shown = walk.step('graph', 'show', found.group(1))
    assert shown.returncode == 0, shown.describe()
    assert shown.stdout.startswith('Graph walk from 1 seed'), shown.describe()
    assert 'via PART_OF' in shown.stdout and 'Edges walked' in shown.stdout, shown.describe()
    assert_clean(shown)


def test_eval_on_a_beir_folder(walk: Walk) -> None:
    pytest.importorskip('pytrec_eval', reason='toolish-rag[eval] is not installed')
    step = walk.step('eval', 'mini-beir')
    assert step.returncode == 0, step.describe()
    assert 'nDCG@10' in step.stdout and 'recall@100' in step.stdout and 'MRR@10' in step.stdout, step.describe()
    for tool in ('text', 'vector', 'hybrid'):
        assert re.search(rf'{tool}\s+│\s+1\.0000', step.stdout), f'{tool} row: {step.describe()}'


def test_eval_says_only_what_happened(walk: Walk) -> None:
    pytest.importorskip('pytrec_eval', reason='toolish-rag[eval] is not installed')
    step = walk.step('eval', 'mini-beir')
    assert_clean(step)
    summary = next(line for line in step.output.splitlines() if 'added 3' in line)
    assert 'skipped 0' in summary, f'the summary wraps mid-phrase: {step.describe()}'


async def test_mcp_over_stdio_lists_and_serves_the_tools(walk: Walk) -> None:
    pytest.importorskip('mcp', reason='toolish-rag[mcp] is not installed')
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=CLI[0], args=[*CLI[1:], 'mcp'], env=walk.env, cwd=str(walk.home))
    with tempfile.TemporaryFile('w+', encoding='utf-8') as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            # short names (the client puts its key in front); the graph was built by an earlier step
            assert names == [t.removeprefix('docs_') for t in [*TOOLS, *GRAPH_TOOLS]]
            got = await client.call_tool('text_search', {'query': 'how long is the pen warranty'})
            text = got.content[0].text  # type: ignore[union-attr]
            assert not got.is_error and text.startswith(HEADINGS['text']) and 'warranty.md' in text
        errlog.seek(0)
        server_log = errlog.read()
    assert_clean(Step(('mcp',), 0, '', server_log))


def test_ask_with_the_offline_test_model(walk: Walk) -> None:
    step = walk.step('ask', 'How long do refunds take?', '--model', 'test')
    assert step.returncode == 0, step.describe()
    # pydantic-ai's test model writes filler, never a quote that checks: the user is told so.
    assert 'do not fully answer' in step.stdout and 'exact quotes' in step.stdout, step.describe()
    assert_clean(step)


def test_read_commands_refuse_a_missing_store(walk: Walk, tmp_path: Path) -> None:
    typo = walk.run('search', 'refund window', '--store', 'lancedb:./nonexistent-kb')
    assert typo.returncode != 0, typo.describe()
    assert 'nonexistent-kb' in typo.stderr, typo.describe()
    assert not (walk.home / 'nonexistent-kb').exists(), 'a read command created the store it was refusing'
    assert_clean(typo)

    elsewhere = walk.run('tools', cwd=tmp_path)  # after a `cd`: no default store here
    assert elsewhere.returncode != 0, elsewhere.describe()
    assert '.toolish-rag' in elsewhere.stderr, elsewhere.describe()
    assert not (tmp_path / '.toolish-rag').exists(), 'a read command created an empty default store'
    assert_clean(elsewhere)


def test_tools_and_text_search_never_import_torch(walk: Walk) -> None:
    """Only a vector needs the embedding model: listing tools and searching text must not load it (issue 27).

    Checked on the walk's own store, written by the real model (its manifest names all-MiniLM-L6-v2).
    """
    assert walk.torch == {('tools',): False, TEXT_SEARCH: False, REGEX_SEARCH: False}


def test_the_walk_leaves_only_the_default_store_behind(walk: Walk) -> None:
    """Nothing outside .toolish-rag/ and the user's own files: no stray store folder in the directory."""
    entries = sorted(p.name for p in walk.home.iterdir())
    assert set(entries) <= {'.toolish-rag', 'mini-beir'}, entries
