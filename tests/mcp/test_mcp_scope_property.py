"""Property: over HTTP, every token's calls return exactly what its scoped toolset returns, and nothing outside it.

Random tokens (tenant, multi-tenant, compound filter, unscoped), tools, queries,
patterns, ``top_k`` (valid or not) and record ids (any tenant's chunks and sections, or
junk) go through long-lived MCP SDK sessions, one per token. For each call:

* the result (text, error flag, hit ids) equals ``rag.with_metadata_filter(token
  scope).run_tool(...)`` (or its ``ModelRetry`` message);
* no hit, and no chunk id in the text other than the one asked for, lies outside the
  token's scope (reference semantics, `toolish_rag.filters.matches`): 0 leaks.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Iterator
from contextlib import AsyncExitStack
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st
from mcp import Client
from mcp_harness import TOKENS, LiveServer
from pydantic_ai import ModelRetry

from toolish_rag import matches
from toolish_rag.mcp import HITS_META_KEY

WORDS = ['refund', 'refunds', 'receipt', 'shipping', 'parcels', 'unused', 'window', 'acme', 'globex', 'initech', 'days']
PATTERNS = ['globex', 'acme', 'initech', 'ERR-40[0-9]{2}', '(?i)REFUND', 'ships parcels', '[', 'days? of']
CHUNK_ID = re.compile(r'\b[0-9a-f]{16}-\d+\b')


@pytest.fixture(scope='module')
def sessions(live_server: LiveServer) -> Iterator[dict[str, Client]]:
    """One open MCP session per token, held by a task on the server's background loop."""
    clients: dict[str, Client] = {}
    ready = threading.Event()
    stop: list[asyncio.Event] = []

    async def hold() -> None:
        stop.append(asyncio.Event())
        async with AsyncExitStack() as stack:
            for label in TOKENS:
                clients[label] = await stack.enter_async_context(live_server.client(label))
            ready.set()
            await stop[0].wait()

    holder = asyncio.run_coroutine_threadsafe(hold(), live_server.loop.loop)
    if not ready.wait(60):
        holder.result(1)
    try:
        yield clients
    finally:
        live_server.loop.loop.call_soon_threadsafe(stop[0].set)
        holder.result(30)


def _ids(live_server: LiveServer) -> list[str]:
    chunks = list(live_server.chunks.values())
    return [*sorted({c.id for c in chunks} | {s for c in chunks for s in c.section_ids}), 'nope', 'acme-s0', '']


@st.composite
def calls(draw: st.DrawFn, ids: list[str]) -> tuple[str, str, dict[str, Any]]:
    label = draw(st.sampled_from(sorted(TOKENS)))
    tool = draw(st.sampled_from(['vector', 'text', 'hybrid', 'regex', 'broaden', 'zoom']))
    top_k = draw(st.integers(0, 60))
    if tool in ('vector', 'text', 'hybrid'):
        query = ' '.join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4)))
        return label, f'docs_{tool}_search', {'query': query, 'top_k': top_k}
    if tool == 'regex':
        return label, 'docs_regex_search', {'pattern': draw(st.sampled_from(PATTERNS)), 'top_k': top_k}
    if tool == 'broaden':
        return (
            label,
            'docs_broaden_chunk',
            {'chunk_id': draw(st.sampled_from(ids)), 'chunks_to_add': draw(st.integers(0, 3))},
        )
    return label, 'docs_zoom_out', {'id': draw(st.sampled_from(ids))}


def test_no_token_ever_sees_outside_its_scope(live_server: LiveServer, sessions: dict[str, Client]) -> None:
    leaks: list[str] = []
    seen_hits = [0]

    async def check(label: str, tool: str, arguments: dict[str, Any]) -> str:
        scope = live_server.scope_of(label)
        try:
            want = await live_server.scoped_rag(label).run_tool(tool, arguments)
            want_text, want_error, want_ids = (
                str(want.return_value),
                False,
                [h.record.id for h in want.metadata['hits']],
            )
        except ModelRetry as retry:
            want_text, want_error, want_ids = retry.message, True, []
        got = await sessions[label].call_tool(tool, arguments)
        text = got.content[0].text  # type: ignore[union-attr]
        got_ids = [h['id'] for h in (got.meta or {}).get(HITS_META_KEY, [])]
        assert (text, got.is_error, got_ids) == (want_text, want_error, want_ids), (label, tool, arguments)
        asked = set(arguments.values())
        shown = set(got_ids) | {i for i in CHUNK_ID.findall(text) if i not in asked}
        for chunk_id in shown:
            chunk = live_server.chunks[chunk_id]
            if scope is not None and not matches(scope, chunk):
                leaks.append(f'{label} saw {chunk_id} ({chunk.metadata}) via {tool}({arguments})')
        seen_hits[0] += len(got_ids)
        return f'{tool} {"error" if got.is_error else "hits" if got_ids else "empty"}'

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(call=calls(_ids(live_server)))
    def run(call: tuple[str, str, dict[str, Any]]) -> None:
        event(live_server.loop.run(check(*call)))

    run()
    assert leaks == []
    assert seen_hits[0] > 100  # the property was exercised on real results, not only on errors
