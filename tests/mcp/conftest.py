"""Fixtures of the MCP server tests (the harness itself is `mcp_harness`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip('mcp', reason='needs the mcp extra: pip install "toolish-rag[mcp]"')
pytest.importorskip('uvicorn', reason='needs the mcp extra: pip install "toolish-rag[mcp]"')

from mcp_harness import LiveServer, start_live_server


@pytest.fixture(scope='session')
def live_server() -> Iterator[LiveServer]:
    """The HTTP MCP server over the tenant corpus, with the `TOKEN_CONFIG` tokens."""
    server, stop = start_live_server()
    try:
        yield server
    finally:
        stop()
