"""``toolish-rag mcp`` over stdio, spawned as a subprocess and driven by the MCP SDK's client."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_harness import build_store, chunk_index, corpus
from pydantic_ai import ModelRetry

from toolish_rag import PropertyFilter as F, ToolishRag
from toolish_rag.cli import main
from toolish_rag.mcp import HITS_META_KEY

SCOPE = F.in_('tenant', ['acme', 'initech'])
CHUNKS = chunk_index(corpus())


async def test_stdio_server_serves_the_toolsets_tools_and_text(tmp_path: Path) -> None:
    """Twice: the first start builds the toolset before the handshake and keeps its instructions; the second
    answers the handshake from the kept ones and builds the toolset after it (issue 40). Both serve the same.
    The kept instructions are made stale before the second start: its handshake sends them (so it did not
    build first), and its background check puts the real ones back."""
    store = await build_store(tmp_path / 'store')  # persisted; the subprocess reopens it
    rag: ToolishRag[Any] = ToolishRag(store, name='kb').with_metadata_filter(SCOPE)
    cache = tmp_path / 'cache'
    real = await rag.instructions()
    await _serve_and_compare(tmp_path, rag, cache, real)
    [kept] = list((cache / 'mcp-handshake').glob('*.json'))
    assert json.loads(kept.read_text()) == {'instructions': real}
    kept.write_text(json.dumps({'instructions': 'stale instructions'}))
    await _serve_and_compare(tmp_path, rag, cache, 'stale instructions')
    assert json.loads(kept.read_text()) == {'instructions': real}
    assert len(list((cache / 'mcp-handshake').glob('*'))) == 1


async def _serve_and_compare(tmp_path: Path, rag: ToolishRag[Any], cache: Path, instructions: str | None) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            '-m',
            'toolish_rag.cli',
            'mcp',
            '--store',
            f'memory:{tmp_path / "store"}',
            '--embedder',
            'hashing',
            '--name',
            'kb',
            '--filter',
            SCOPE.to_json(),
        ],
        env={**os.environ, 'TOOLISH_RAG_STORE': '', 'TOOLISH_RAG_CACHE_DIR': str(cache)},
        cwd=str(tmp_path),
    )
    async with Client(params) as client:
        assert client.instructions == instructions  # naming kb_hybrid_search: key = name, see below
        tools = (await client.list_tools()).tools
        expected = await rag.tool_definitions()
        # Short names: a client puts its key for the server in front (`kb` + `_` + `hybrid_search`).
        assert [(t.name, t.description, t.input_schema) for t in tools] == [
            (d.name.removeprefix('kb_'), d.description, d.parameters_json_schema) for d in expected
        ]
        assert len(tools) == 10  # the graph tools come once a graph is built (docs/graph.md)
        assert (await client.list_resources()).resources == [] and (await client.list_prompts()).prompts == []

        calls: list[tuple[str, dict[str, Any]]] = [
            ('kb_text_search', {'query': 'refund receipt', 'top_k': 10}),
            ('kb_hybrid_search', {'query': 'how fast do parcels ship'}),
            ('kb_vector_search', {'query': 'refund window expired', 'top_k': 3}),
            ('kb_regex_search', {'pattern': '(?i)ships parcels', 'top_k': 20}),
        ]
        for tool, args in calls:
            want = await rag.run_tool(tool, args)
            got = await client.call_tool(tool.removeprefix('kb_'), args)
            assert not got.is_error
            assert got.content[0].text == want.return_value  # type: ignore[union-attr]
            ids = [h['id'] for h in (got.meta or {})[HITS_META_KEY]]
            assert ids == [h.record.id for h in want.metadata['hits']]
            assert all(CHUNKS[i].metadata['tenant'] in {'acme', 'initech'} for i in ids)
            assert 'globex' not in got.content[0].text  # type: ignore[union-attr]

        hit = (await rag.run_tool('kb_text_search', {'query': 'refund'})).metadata['hits'][0].record
        for tool, args in [('kb_broaden_chunk', {'chunk_id': hit.id}), ('kb_zoom_out', {'id': hit.id})]:
            got = await client.call_tool(tool.removeprefix('kb_'), args)
            assert got.content[0].text == (await rag.run_tool(tool, args)).return_value  # type: ignore[union-attr]

        for tool, args in [
            ('kb_text_search', {'query': 'x', 'top_k': 0}),
            ('kb_regex_search', {'pattern': '(a'}),
            ('kb_zoom_out', {}),
        ]:
            with pytest.raises(ModelRetry) as retry:
                await rag.run_tool(tool, args)
            got = await client.call_tool(tool.removeprefix('kb_'), args)
            assert got.is_error and got.content[0].text == retry.value.message  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ('argv', 'message'),
    [
        (['--http', '127.0.0.1:0'], '--http needs --tokens'),
        (['--http', '0.0.0.0:8765', '--no-auth'], 'only allowed on a loopback'),
        (['--http', 'nonsense'], 'HOST:PORT'),
        (['--tokens', 'x.toml'], 'only apply with --http'),
        (['--stateless'], 'only apply with --http'),
        (['--max-sessions-per-token', '4'], 'limits per token only apply with --http'),
        (
            ['--http', '127.0.0.1:0', '--no-auth', '--requests-per-minute', '0'],
            'requests_per_minute must be a positive',
        ),
        (['--http', '127.0.0.1:0', '--no-auth', '--session-idle-timeout', 'inf'], 'idle_timeout must be a positive'),
    ],
)
def test_the_command_refuses_unsafe_or_wrong_options(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(['mcp', '--store', f'memory:{tmp_path}', '--embedder', 'hashing', *argv]) == 2
    assert message in capsys.readouterr().err


def test_the_command_rejects_a_bad_token_file_without_echoing_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = 'super-secret-token-value-123'
    tokens = tmp_path / 'tokens.json'
    tokens.write_text(json.dumps({'tokens': {'a': {'token': secret}}}))
    assert main(['mcp', '--http', '127.0.0.1:0', '--tokens', str(tokens), '--store', 'memory']) == 2
    err = capsys.readouterr().err
    assert 'exactly one of "scope"' in err and secret not in err
