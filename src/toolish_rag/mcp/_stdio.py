"""Serving over stdio, and answering the handshake before the toolset exists.

A desktop client launches ``toolish-rag mcp`` and waits a few seconds for ``initialize``
(pydantic-ai's ``init_timeout``: 5 s). Importing pydantic-ai, opening the store and loading the
embedding model take longer than that on a busy machine, and the handshake needs none of them:
only the instructions. `serve_stdio_lazily` answers it with instructions known beforehand and
builds the toolset in a thread once the client has finished the handshake (``notifications/initialized``,
or its first request); ``tools/list`` waits for the toolset, ``tools/call`` also for the warm-up
(the embedding model loaded). See docs/mcp.md#start-up-time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server

from ._server import build_server, lazy_server

if TYPE_CHECKING:
    from ..toolset import ToolishRag

__all__ = ['Startup', 'serve_stdio', 'serve_stdio_lazily']


async def serve_stdio(rag: ToolishRag[Any], *, name: str = 'toolish-rag', short_names: bool = False) -> None:
    """Serve ``rag`` over stdin/stdout until the client closes the connection (``short_names``: see `build_server`)."""
    await _run(await build_server(rag, name=name, short_names=short_names))


async def _run(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


@dataclass
class Startup:
    """The toolset of a stdio server, built in the background once the handshake is done.

    ``build`` (blocking: imports, opens the store) runs in a thread; ``warm`` then runs on the event
    loop before the first tool call is served (e.g. loading the embedding model in a thread).
    """

    build: Callable[[], ToolishRag[Any]]
    warm: Callable[[ToolishRag[Any]], Awaitable[None]] | None = None
    _built: asyncio.Future[ToolishRag[Any]] | None = field(default=None, init=False)
    _warmed: asyncio.Future[ToolishRag[Any]] | None = field(default=None, init=False)
    _started: asyncio.Event = field(default_factory=asyncio.Event, init=False)

    def start(self) -> None:
        """Start building (once)."""
        if self._built is None:
            self._built = asyncio.ensure_future(asyncio.to_thread(self.build))
            self._warmed = asyncio.ensure_future(self._warm(self._built))
            self._started.set()

    async def _warm(self, built: asyncio.Future[ToolishRag[Any]]) -> ToolishRag[Any]:
        rag = await built
        if self.warm is not None:
            await self.warm(rag)
        return rag

    async def toolset(self) -> ToolishRag[Any]:
        """The toolset, once built."""
        self.start()
        assert self._built is not None
        return await asyncio.shield(self._built)

    async def warmed(self) -> ToolishRag[Any]:
        """The toolset, once built and warmed up."""
        self.start()
        assert self._warmed is not None
        return await asyncio.shield(self._warmed)

    async def failure(self) -> BaseException | None:
        """Once started and finished: why the build or the warm-up failed (``None``: they did not)."""
        await self._started.wait()
        assert self._warmed is not None
        try:
            await asyncio.shield(self._warmed)
        except Exception as e:
            return e
        return None


class _StartAfterHandshake:
    """Server middleware: start building the toolset when the client has finished the handshake."""

    def __init__(self, startup: Startup) -> None:
        self.startup = startup

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method not in ('initialize', 'server/discover'):  # after the answer to the handshake, not before
            self.startup.start()
        return result


async def serve_stdio_lazily(
    startup: Startup,
    *,
    collection: str,
    instructions: str | None,
    name: str = 'toolish-rag',
    short_names: bool = False,
) -> None:
    """Serve over stdio, answering the handshake with ``instructions`` before the toolset is built.

    ``instructions`` must be what the toolset's own would be (``await rag.instructions()``): the
    caller knows them beforehand (`toolish_rag.cli` keeps them from the last start). A build that
    fails ends the server with its error.
    """
    server = lazy_server(
        startup.toolset,
        calls=startup.warmed,
        collection=collection,
        instructions=instructions,
        name=name,
        short_names=short_names,
    )
    server.middleware.append(_StartAfterHandshake(startup))
    serving = asyncio.ensure_future(_run(server))
    failed = asyncio.ensure_future(startup.failure())
    try:
        await asyncio.wait({serving, failed}, return_when=asyncio.FIRST_COMPLETED)
        if failed.done() and failed.result() is not None:
            raise failed.result()  # type: ignore[misc]
        await serving
    finally:
        for task in (serving, failed):
            task.cancel()
        await asyncio.gather(serving, failed, return_exceptions=True)
