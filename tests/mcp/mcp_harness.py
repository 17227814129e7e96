"""The MCP server test harness: a multi-tenant corpus on disk and a live HTTP server.

Nothing is mocked: the server is the real ``mcp`` SDK app behind uvicorn on a free
127.0.0.1 port, and clients are the SDK's ``Client`` and pydantic-ai's ``MCPToolset``.
The server and its clients live on one background event loop (`Loop`), so synchronous
tests (hypothesis) can drive long-lived sessions with ``loop.run(coro)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx2
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from toolish_rag import DocumentBuilder, Filter, ToolishRag
from toolish_rag.content import Chunk, Document
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.mcp import TokenTable, build_server, http_app
from toolish_rag.stores import InMemoryStore

T = TypeVar('T')

TENANTS = ('acme', 'globex', 'initech')

TOKEN_CONFIG: dict[str, Any] = {
    'tokens': {
        'acme': {'token': 'tok-acme-0123456789abcdef', 'scope': {'tenant': 'acme'}},
        'globex': {'token': 'tok-globex-0123456789abcdef', 'scope': {'tenant': 'globex'}},
        'acme-initech': {'token': 'tok-multi-0123456789abcdef', 'scope': {'tenant': ['acme', 'initech']}},
        'recent-not-globex': {
            'token': 'tok-recent-0123456789abcdef',
            'filter': {
                'op': 'and',
                'filters': [
                    {'op': 'ne', 'key': 'tenant', 'value': 'globex'},
                    {'op': 'gte', 'key': 'year', 'value': 2024},
                ],
            },
        },
        'admin': {'token': 'tok-admin-0123456789abcdef', 'scope': {}},
    }
}
TOKENS = {label: entry['token'] for label, entry in TOKEN_CONFIG['tokens'].items()}


def corpus() -> list[Document]:
    """Per tenant: a handbook (refunds with a nested section, shipping) and a changelog, shared vocabulary."""
    docs = []
    for i, tenant in enumerate(TENANTS):
        for year in (2023, 2024):
            b = DocumentBuilder(
                f'file:///{tenant}/handbook-{year}.md',
                f'{tenant} handbook {year}',
                metadata={'tenant': tenant, 'year': year},
            )
            refunds = b.section('Refunds')
            b.add_chunk(refunds, f'{tenant} refunds are paid within {10 * (i + 1) + year % 10} days of the return.')
            b.add_chunk(refunds, f'Keep the receipt for every refund claim at {tenant}.')
            eligibility = b.section('Eligibility', parent=refunds)
            b.add_chunk(
                eligibility, f'Items must be unused. ERR-40{i}{year % 10} means the {tenant} refund window expired.'
            )
            shipping = b.section('Shipping')
            b.add_chunk(shipping, f'{tenant} ships parcels within {i + 2} working days; refund shipping is free.')
            docs.append(b.build())
    return docs


def chunk_index(docs: list[Document]) -> dict[str, Chunk]:
    return {c.id: c for d in docs for c in d.chunks}


async def build_store(path: Path | None = None) -> InMemoryStore:
    store = InMemoryStore(HashingEmbeddingModel(), path=path)
    await store.upsert(corpus())
    return store


class Loop:
    """An event loop on a background thread: ``run(coro)`` from synchronous code."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        async def cancel_the_rest() -> None:
            rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in rest:
                task.cancel()
            await asyncio.gather(*rest, return_exceptions=True)

        self.run(cancel_the_rest())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return int(s.getsockname()[1])


@dataclass
class LiveServer:
    url: str
    rag: ToolishRag[Any]
    tokens: TokenTable
    loop: Loop
    chunks: dict[str, Chunk]

    def scope_of(self, label: str) -> Filter | None:
        found = self.tokens.authenticate(TOKENS[label])
        assert found is not None
        return found.filter

    def scoped_rag(self, label: str) -> ToolishRag[Any]:
        f = self.scope_of(label)
        return self.rag if f is None else self.rag.with_metadata_filter(f)

    def client(self, label: str | None, **kwargs: Any) -> contextlib.AbstractAsyncContextManager[Client]:
        """An MCP SDK client authenticated with ``label``'s token (``None``: no token)."""
        return connect(self.url, label, **kwargs)


@contextlib.asynccontextmanager
async def connect(url: str, label: str | None, **kwargs: Any) -> AsyncIterator[Client]:
    """An MCP SDK client of the server at ``url``, authenticated with ``label``'s token (``None``: no token)."""
    headers = {'Authorization': f'Bearer {TOKENS[label]}'} if label else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), **kwargs) as client,
    ):
        yield client


@contextlib.asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    """Serve the ASGI ``app`` with uvicorn on a free loopback port (this event loop); yields its MCP URL."""
    port = free_port()
    uv, task = await _start(app, port)
    try:
        yield f'http://127.0.0.1:{port}/mcp'
    finally:
        await _stop(uv, task)


async def _start(app: Any, port: int) -> tuple[uvicorn.Server, asyncio.Task[None]]:
    server = uvicorn.Server(uvicorn.Config(app, host='127.0.0.1', port=port, log_level='warning', lifespan='on'))
    task = asyncio.ensure_future(server.serve())
    for _ in range(400):
        if server.started:
            return server, task
        if task.done():
            task.result()
        await asyncio.sleep(0.025)
    raise RuntimeError('uvicorn did not start')


async def _stop(server: uvicorn.Server, task: Awaitable[None]) -> None:
    server.should_exit = True
    await task


def start_live_server() -> tuple[LiveServer, Callable[[], None]]:
    """Start the HTTP MCP server over the tenant corpus with the `TOKEN_CONFIG` tokens; returns it and a stop function."""
    loop = Loop()
    store = loop.run(build_store())
    rag: ToolishRag[Any] = ToolishRag(store, name='docs', description='Tenant handbooks')
    tokens = TokenTable.from_mapping(TOKEN_CONFIG)
    server = loop.run(build_server(rag))
    port = free_port()
    uv, task = loop.run(_start(http_app(server, tokens), port))

    def stop() -> None:
        try:
            loop.run(_stop(uv, task))
        finally:
            loop.close()

    return LiveServer(f'http://127.0.0.1:{port}/mcp', rag, tokens, loop, chunk_index(corpus())), stop
