"""Eager search over MCP: the preloaded results a client gets in its instructions are those of its own scope.

``rag.with_eager_search_about(...)`` puts search results (chunk ids and text) in the
toolset's instructions, which MCP sends to a client when it connects. Over HTTP they must
be computed for the connecting token's scope, ANDed with the server's own; over stdio or
in-process (no tokens) for the server's own scope. Regression: they used to be computed
once at start-up, with the server's scope only, and sent to every token.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from mcp import Client
from mcp_harness import TOKEN_CONFIG, build_store, chunk_index, connect, corpus, serving

from toolish_rag import PropertyFilter as F, ToolishRag
from toolish_rag.mcp import TokenTable, build_server, http_app
from toolish_rag.mcp._server import server_instructions

CHUNK_ID = re.compile(r'\b[0-9a-f]{16}-\d+\b')
CHUNKS = chunk_index(corpus())
SERVER_SCOPE = F.ne('tenant', 'initech')  # the server's own scope (`--filter`): initech is never served


async def eager_rag() -> ToolishRag[Any]:
    rag: ToolishRag[Any] = ToolishRag(await build_store(), name='docs', description='Tenant handbooks')
    return rag.with_metadata_filter(SERVER_SCOPE).with_eager_search_about('refunds are paid within days', top_k=12)


def tenants_in(instructions: str | None) -> set[str]:
    assert instructions and 'Preloaded search results' in instructions
    ids = CHUNK_ID.findall(instructions)
    assert ids, instructions
    return {str(CHUNKS[i].metadata['tenant']) for i in ids}


@pytest.mark.parametrize('mode', ['auto', 'legacy'])  # 2026-07-28 `server/discover`, and the `initialize` handshake
async def test_each_token_gets_the_eager_results_of_its_own_scope(mode: str) -> None:
    rag = await eager_rag()
    assert tenants_in(await server_instructions(rag)) == {'acme', 'globex'}  # the unscoped results mix tenants
    tokens = TokenTable.from_mapping(TOKEN_CONFIG)
    async with serving(http_app(await build_server(rag), tokens)) as url:
        for label, tenants in [('acme', {'acme'}), ('globex', {'globex'}), ('admin', {'acme', 'globex'})]:
            scope = tokens.authenticate(TOKEN_CONFIG['tokens'][label]['token'])
            assert scope is not None
            expected = await server_instructions(
                rag if scope.filter is None else rag.with_metadata_filter(scope.filter)
            )
            async with connect(url, label, mode=mode) as client:
                got = client.instructions
            assert got == expected
            assert tenants_in(got) == tenants, label
            for other in {'acme', 'globex', 'initech'} - tenants:
                assert other not in (got or ''), (label, other)


async def test_without_tokens_the_eager_results_are_the_servers_own_scope() -> None:
    """In-process (as over stdio) there is no token: the toolset's own scope applies."""
    rag = await eager_rag()
    async with Client(await build_server(rag)) as client:
        assert client.instructions == await server_instructions(rag)
        assert tenants_in(client.instructions) == {'acme', 'globex'}


async def test_an_app_mounted_without_the_token_middleware_sends_no_eager_results() -> None:
    rag = await eager_rag()
    bare = (await build_server(rag)).streamable_http_app()  # the SDK app alone: no token scope
    async with serving(bare) as url, connect(url, None) as client:
        assert client.instructions is None


async def test_explicit_instructions_are_sent_as_given() -> None:
    rag = await eager_rag()
    tokens = TokenTable.from_mapping(TOKEN_CONFIG)
    server = await build_server(rag, instructions='Search the handbooks.')
    async with serving(http_app(server, tokens)) as url, connect(url, 'acme') as client:
        assert client.instructions == 'Search the handbooks.'
