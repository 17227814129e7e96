"""Per-token limits of the HTTP MCP server (issue 28 item 3): one token can never lock out another.

Regression: 10,000 sessions from one token, and the next tenant's ``initialize`` got ``503 Too many
open sessions`` (the SDK's global cap, 30-minute idle timeout, no per-token limit). Now every token
has its own quota, over which it alone gets a 429 naming its limit. Real server (uvicorn on a free
127.0.0.1 port), raw HTTP requests; every loop is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
from mcp_harness import build_store, serving

from toolish_rag import ToolishRag
from toolish_rag.mcp import TokenLimits, TokenTable, build_server, http_app, load_token_table

ACCEPT = 'application/json, text/event-stream'
TOKENS = {'a': 'tok-a-0123456789abcdef', 'b': 'tok-b-0123456789abcdef'}
INIT = {
    'jsonrpc': '2.0',
    'id': 1,
    'method': 'initialize',
    'params': {'protocolVersion': '2025-06-18', 'capabilities': {}, 'clientInfo': {'name': 'raw', 'version': '1'}},
}
LIST = {'jsonrpc': '2.0', 'id': 2, 'method': 'tools/list', 'params': {}}


def token_table(a_limits: dict[str, Any]) -> TokenTable:
    entries = {
        'a': {'token': TOKENS['a'], 'scope': {'tenant': 'acme'}, 'limits': a_limits},
        'b': {'token': TOKENS['b'], 'scope': {'tenant': 'globex'}},
    }
    return TokenTable.from_mapping({'tokens': entries})


@contextlib.asynccontextmanager
async def server_url(tokens: TokenTable, limits: TokenLimits, **kwargs: Any) -> AsyncIterator[str]:
    rag = ToolishRag(await build_store(), name='docs')
    async with serving(http_app(await build_server(rag), tokens, limits=limits, **kwargs)) as url:
        yield url


def headers(label: str, session: str | None = None) -> dict[str, str]:
    out = {'Accept': ACCEPT, 'Content-Type': 'application/json', 'Authorization': f'Bearer {TOKENS[label]}'}
    if session is not None:
        out |= {'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18'}
    return out


async def initialize(http: httpx2.AsyncClient, url: str, label: str) -> httpx2.Response:
    return await http.post(url, headers=headers(label), json=INIT)


def reason(response: httpx2.Response) -> str:
    return str(json.loads(response.text)['error']['message'])


async def test_a_token_at_its_session_limit_is_refused_and_another_still_connects() -> None:
    limits = TokenLimits(max_sessions=8, idle_timeout=60)
    async with server_url(token_table({'max_sessions': 3}), limits) as url, httpx2.AsyncClient(timeout=15) as http:
        opened = [await initialize(http, url, 'a') for _ in range(3)]
        assert [r.status_code for r in opened] == [200, 200, 200], opened[-1].text
        refused = await initialize(http, url, 'a')
        assert refused.status_code == 429, refused.text
        assert '3 open MCP sessions (its limit)' in reason(refused)
        assert 'b' not in refused.headers.get('mcp-session-id', '') and 'globex' not in refused.text
        for _ in range(4):  # b has its own quota (default 8): a's full quota takes nothing from it
            assert (await initialize(http, url, 'b')).status_code == 200
        session = opened[0].headers['mcp-session-id']
        ended = await http.delete(url, headers=headers('a', session))
        assert ended.status_code in (200, 204)
        assert (await initialize(http, url, 'a')).status_code == 200  # room again after a DELETE
        assert (await initialize(http, url, 'a')).status_code == 429


async def test_idle_sessions_expire_and_free_their_slots() -> None:
    limits = TokenLimits(max_sessions=2, idle_timeout=0.3)
    async with server_url(token_table({}), limits) as url, httpx2.AsyncClient(timeout=15) as http:
        first = [(await initialize(http, url, 'a')).headers['mcp-session-id'] for _ in range(2)]
        assert (await initialize(http, url, 'a')).status_code == 429
        await asyncio.sleep(0.5)
        assert (await initialize(http, url, 'a')).status_code == 200  # the idle two were closed
        for _ in range(40):  # the SDK forgets a closed session promptly: bounded wait
            if (await http.post(url, headers=headers('a', first[0]), json=LIST)).status_code == 404:
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError('an expired session still answers')


async def test_request_rate_is_limited_per_token() -> None:
    limits = TokenLimits(requests_per_minute=60)
    served = server_url(token_table({'requests_per_minute': 3}), limits, stateless=True)
    async with served as url, httpx2.AsyncClient(timeout=15) as http:
        statuses = [(await http.post(url, headers=headers('a'), json=LIST)).status_code for _ in range(4)]
        assert statuses == [200, 200, 200, 429]
        refused = await http.post(url, headers=headers('a'), json=LIST)
        assert '3 requests per minute' in reason(refused) and int(refused.headers['retry-after']) >= 1
        assert (await http.post(url, headers=headers('b'), json=LIST)).status_code == 200


async def test_requests_in_flight_are_limited_per_token() -> None:
    limits = TokenLimits(max_concurrent=2)
    async with server_url(token_table({}), limits, stateless=True) as url, httpx2.AsyncClient(timeout=15) as http:
        gate = asyncio.Event()

        async def held_body() -> AsyncIterator[bytes]:  # a request in flight until the gate opens
            await gate.wait()
            yield json.dumps(LIST).encode()

        def hold() -> asyncio.Future[httpx2.Response]:
            return asyncio.ensure_future(http.post(url, headers=headers('a'), content=held_body()))

        held = [hold(), hold()]
        for _ in range(100):  # until the server has both in flight: bounded
            await asyncio.sleep(0.02)
            # A held request that arrived while a probe was being served was refused: send it again.
            held = [hold() if h.done() else h for h in held]
            third = await http.post(url, headers=headers('a'), json=LIST)
            if third.status_code == 429 and not any(h.done() for h in held):
                break
        assert third.status_code == 429 and '2 requests in flight (its limit)' in reason(third)
        assert (await http.post(url, headers=headers('b'), json=LIST)).status_code == 200
        gate.set()
        assert [(await r).status_code for r in held] == [200, 200]
        assert (await http.post(url, headers=headers('a'), json=LIST)).status_code == 200


def test_the_token_file_sets_limits_per_token(tmp_path: Any) -> None:
    path = tmp_path / 'tokens.toml'
    path.write_text(
        f'[tokens.a]\ntoken = "{TOKENS["a"]}"\nscope = {{}}\nlimits = {{ max_sessions = 2, idle_timeout = 30 }}\n'
    )
    table = load_token_table(path)
    assert TokenLimits().with_overrides(table.scopes[0].limits) == TokenLimits(max_sessions=2, idle_timeout=30)
    for bad, message in [('{ sessions = 2 }', 'unknown limits'), ('{ max_sessions = 0 }', 'positive')]:
        path.write_text(f'[tokens.a]\ntoken = "{TOKENS["a"]}"\nscope = {{}}\nlimits = {bad}\n')
        with pytest.raises(ValueError, match=message):
            load_token_table(path)


@pytest.mark.slow
async def test_a_flood_of_sessions_from_one_token_leaves_the_others_alone() -> None:
    limits = TokenLimits(max_sessions=200, idle_timeout=60, max_concurrent=32, requests_per_minute=100_000)
    async with server_url(token_table({}), limits) as url, httpx2.AsyncClient(timeout=30) as http:
        for batch in range(25):  # 250 attempts in batches of 10: 200 open, 50 refused
            got = await asyncio.gather(*(initialize(http, url, 'a') for _ in range(10)))
            assert {r.status_code for r in got} <= {200, 429}, batch
        assert (await initialize(http, url, 'a')).status_code == 429
        assert [(await initialize(http, url, 'b')).status_code for _ in range(20)] == [200] * 20


async def test_a_repeated_session_header_is_refused_so_no_session_escapes_its_tokens_limit() -> None:
    """Regression (issue 41): ``Mcp-Protocol-Version`` sent twice, a handshake version first and an unknown one
    last. The SDK read the first and opened a session; the limits read the last and did not count it, so one
    token opened sessions past its limit up to the SDK's global cap (503 for every token)."""
    limits = TokenLimits(max_sessions=2, idle_timeout=60)
    async with server_url(token_table({}), limits) as url, httpx2.AsyncClient(timeout=15) as http:
        auth = [(k, v) for k, v in headers('a').items()]
        doubled = [*auth, ('mcp-protocol-version', '2025-06-18'), ('mcp-protocol-version', '1999-01-01')]
        answers = [await http.post(url, headers=doubled, json=INIT) for _ in range(3)]
        assert [r.status_code for r in answers] == [400, 400, 400], answers[-1].text
        assert 'Mcp-Protocol-Version header sent twice' in reason(answers[0])
        assert 'mcp-session-id' not in answers[0].headers
        two_ids = [*auth, ('mcp-session-id', 'one'), ('mcp-session-id', 'two')]
        assert (await http.post(url, headers=two_ids, json=LIST)).status_code == 400
        assert [(await initialize(http, url, 'a')).status_code for _ in range(3)] == [200, 200, 429]
        assert (await initialize(http, url, 'b')).status_code == 200
