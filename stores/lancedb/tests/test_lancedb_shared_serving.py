"""Many stateless servers on one shared store, proven with real processes (issue 17, item 2).

One writer process ingests Markdown files into LanceDB on an S3 server on loopback (moto)
while two ``toolish-rag mcp --http`` processes serve that location to two tokens scoped to
different tenants. Both servers start before anything is written (a cold start on an empty
location). Then, round by round, the writer ingests one new document per tenant and compacts
(``optimize``), and the test checks over MCP that:

* every server shows each token the round's new document within the servers'
  ``read_consistency_interval`` (polled until a deadline, never a fixed sleep);
* no request fails while the writer writes and compacts (clients call the tools without pause
  on both servers the whole time);
* each token sees only its own tenant's documents, on both servers.

The servers read the interval from ``$TOOLISH_RAG_LANCEDB_READ_CONSISTENCY`` and the S3
credentials and endpoint from the usual ``AWS_*`` variables, exactly as docs/deploy.md tells
an operator to run them. Run as a script, this module is the writer (see `_writer`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip('mcp', reason='needs the mcp extra: pip install "toolish-rag[mcp]"')
pytest.importorskip('uvicorn', reason='needs the mcp extra: pip install "toolish-rag[mcp]"')

import httpx2

INTERVAL = 1.0
"""The servers' read_consistency_interval, in seconds."""

SLACK = 20.0
"""How long past INTERVAL a round's polling may go on (queries are slow on two shared, busy cores)."""

ROUNDS = 3
TENANTS = ('acme', 'globex')
TOKENS = {tenant: f'tok-{tenant}-0123456789abcdef' for tenant in TENANTS}
HITS = 'toolish_rag/hits'
BUCKET = 'toolish-kb'


# -- the writer process ----------------------------------------------------------------------------


def _document(tenant: str, round_: int) -> str:
    return (
        f'---\ntenant: {tenant}\n---\n# {tenant} round {round_} notice\n\n'
        f'{tenant} notice sm{round_}{tenant}: refunds of round {round_} are paid within {round_ + 2} days.\n'
    )


async def _writer(uri: str, folder: str) -> None:
    """Ingest one new document per tenant, then compact, once per ``round N`` line on stdin.

    It opens the store the way ``toolish-rag ingest --store lancedb:URI`` does and ingests with
    the normal pipeline. Per round it prints two JSON lines: the ingestion counts with the
    wall-clock time of the commit, then the time ``optimize`` (compaction and index refresh)
    finished, so the readers are queried while it runs.
    """
    from toolish_rag.ingest import ingest
    from toolish_rag.stores import open_store

    store = open_store(f'lancedb:{uri}', embedder='hashing')
    for line in sys.stdin:
        round_ = int(line.split()[1])
        for tenant in TENANTS:
            path = Path(folder) / tenant / f'round-{round_}.md'
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(_document(tenant, round_))
        report = await ingest(store, [folder], progress=False, executor='thread')
        counts = {'added': len(report.added), 'failed': len(report.failed)}
        print(json.dumps({'round': round_, 'committed': time.time(), **counts}), flush=True)
        await store.optimize()  # while the readers look for the round's documents
        print(json.dumps({'round': round_, 'optimized': time.time()}), flush=True)


# -- processes -----------------------------------------------------------------------------------


@pytest.fixture
def s3_endpoint() -> Iterator[str]:
    """An S3 server on a free loopback port with an empty bucket (as in test_lancedb_remote)."""
    moto_server = pytest.importorskip('moto.server', reason='moto[server] is not installed')
    boto3 = pytest.importorskip('boto3', reason='boto3 is not installed')
    server = moto_server.ThreadedMotoServer(ip_address='127.0.0.1', port=0, verbose=False)
    server.start()
    quiet = logging.getLogger('werkzeug')  # one log line per S3 request would bury a failure's report
    level = quiet.level
    quiet.setLevel(logging.WARNING)
    try:
        host, port = server.get_host_and_port()
        endpoint = f'http://{host}:{port}'
        boto3.client(
            's3', endpoint_url=endpoint, aws_access_key_id='test', aws_secret_access_key='test', region_name='us-east-1'
        ).create_bucket(Bucket=BUCKET)
        yield endpoint
    finally:
        quiet.setLevel(level)
        server.stop()


def _environment(endpoint: str) -> dict[str, str]:
    """This environment without any AWS setting of the machine's, plus the loopback server's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith('AWS_')}
    return env | {
        'AWS_ACCESS_KEY_ID': 'test',
        'AWS_SECRET_ACCESS_KEY': 'test',
        'AWS_REGION': 'us-east-1',
        'AWS_ENDPOINT': endpoint,
        'AWS_ALLOW_HTTP': 'true',
        'HF_HUB_OFFLINE': '1',
        'TOOLISH_RAG_LANCEDB_READ_CONSISTENCY': str(INTERVAL),
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """A ``toolish-rag mcp --http`` process; its stderr goes to a file, shown when a check fails."""

    process: subprocess.Popen[bytes]
    url: str
    log: Path

    def tail(self) -> str:
        return self.log.read_text(errors='replace')[-2000:]


async def _wait_until_listening(server: Server, deadline: float) -> bool:
    """``True`` once the server answers HTTP (401 without a token), ``False`` if the process exited."""
    async with httpx2.AsyncClient(timeout=5) as http:
        while time.monotonic() < deadline:
            if server.process.poll() is not None:
                return False
            with contextlib.suppress(httpx2.TransportError):
                if (await http.post(server.url, json={})).status_code == 401:
                    return True
            await asyncio.sleep(0.1)
    raise AssertionError(f'{server.url} did not start in time:\n{server.tail()}')


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


@contextlib.asynccontextmanager
async def _servers(count: int, uri: str, env: dict[str, str], tmp_path: Path) -> AsyncIterator[list[Server]]:
    """Start ``count`` servers at once on free ports (a port taken meanwhile: retried on another)."""
    tokens = tmp_path / 'tokens.json'
    tokens.write_text(json.dumps({'tokens': {t: {'token': TOKENS[t], 'scope': {'tenant': t}} for t in TENANTS}}))
    running: list[Server] = []

    def start(n: int, attempt: int) -> Server:
        port = _free_port()
        log = tmp_path / f'server-{n}-{attempt}.log'
        argv = [sys.executable, '-m', 'toolish_rag.cli', 'mcp', '--http', f'127.0.0.1:{port}', '--tokens', str(tokens)]
        argv += ['--stateless', '--store', f'lancedb:{uri}', '--embedder', 'hashing', '--name', 'docs']
        with log.open('wb') as err:
            process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=err)
        running.append(Server(process, f'http://127.0.0.1:{port}/mcp', log))
        return running[-1]

    try:
        servers = [start(n, 0) for n in range(count)]
        deadline = time.monotonic() + 90
        for n in range(count):
            for attempt in range(1, 4):
                if await _wait_until_listening(servers[n], deadline):
                    break
                servers[n] = start(n, attempt)
            else:
                raise AssertionError(f'server {n} kept exiting:\n{servers[n].tail()}')
        yield servers
    finally:
        for server in running:
            _stop(server.process)


@contextlib.asynccontextmanager
async def _writer_process(uri: str, folder: Path, env: dict[str, str]) -> AsyncIterator[asyncio.subprocess.Process]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, __file__, uri, str(folder), env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()


async def _next_line(writer: asyncio.subprocess.Process, round_: int) -> dict[str, Any]:
    assert writer.stdout is not None
    line = await asyncio.wait_for(writer.stdout.readline(), 120)
    assert line, f'the writer exited (code {writer.returncode}) in round {round_}'
    done: dict[str, Any] = json.loads(line)
    return done


async def _write_round(writer: asyncio.subprocess.Process, round_: int) -> float:
    """Start a round; returns when its documents were committed (the writer goes on to compact)."""
    assert writer.stdin is not None
    writer.stdin.write(f'round {round_}\n'.encode())
    await writer.stdin.drain()
    done = await _next_line(writer, round_)
    assert done == {'round': round_, 'committed': done['committed'], 'added': 2, 'failed': 0}
    return float(done['committed'])


# -- clients ---------------------------------------------------------------------------------------


class RoundRobin(httpx2.AsyncBaseTransport):
    """A round-robin load balancer in front of the servers, on the client's side.

    An httpx transport sending each HTTP request to the next server in turn, as a load
    balancer without session affinity does: one MCP client's requests (initialize, then every
    tool call) land on different servers. ``sent`` counts the requests each server got.
    """

    def __init__(self, urls: list[str]) -> None:
        self.targets = [httpx2.URL(u) for u in urls]
        self.sent = [0] * len(urls)
        self._turn = 0
        self._inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        n = self._turn % len(self.targets)
        self._turn += 1
        target = self.targets[n]
        request.url = request.url.copy_with(host=target.host, port=target.port)
        request.headers['host'] = f'{target.host}:{target.port}'
        self.sent[n] += 1
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


@contextlib.asynccontextmanager
async def _client(url: str, tenant: str, balancer: RoundRobin | None = None, mode: str = 'auto') -> AsyncIterator[Any]:
    """An MCP client with ``tenant``'s token: of the server at ``url``, or of every server through ``balancer``.

    ``mode='legacy'`` speaks the handshake-era protocol (an ``initialize`` opening a session,
    as most deployed clients still do); ``'auto'`` the current one, which has no sessions.
    """
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {'Authorization': f'Bearer {TOKENS[tenant]}'}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60, transport=balancer) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client


def _uris(result: Any) -> set[str]:
    return {h['document_uri'] for h in (result.meta or {}).get(HITS, [])}


def _foreign(uris: set[str], tenant: str) -> set[str]:
    return {u for u in uris if f'/{tenant}/' not in u}


@dataclass
class Traffic:
    """Tool calls made without pause by one token on one server, and what went wrong in them."""

    tenant: str
    calls: int = 0
    failures: list[str] = field(default_factory=list)


async def _keep_calling(client: Any, traffic: Traffic, stop: asyncio.Event) -> None:
    calls = [
        ('hybrid_search', {'query': 'notice refunds paid within days', 'top_k': 10}),
        ('text_search', {'query': 'refunds round', 'top_k': 10}),
        ('regex_search', {'pattern': 'sm[0-9]+[a-z]+', 'top_k': 50}),
        ('list_documents', {}),
    ]
    while not stop.is_set():
        tool, args = calls[traffic.calls % len(calls)]
        traffic.calls += 1
        try:
            result = await client.call_tool(tool, args)
        except Exception as e:  # any failure is what this test is about: record it, keep going
            traffic.failures.append(f'{tool}: {e!r}')
            await asyncio.sleep(0.05)
            continue
        text = result.content[0].text if result.content else ''
        other = next(t for t in TENANTS if t != traffic.tenant)
        if result.is_error or _foreign(_uris(result), traffic.tenant) or other in text:
            traffic.failures.append(f'{tool}: {text[:300]}')


async def _seen_at(client: Any, tenant: str, round_: int, committed: float) -> float:
    """When this token first saw its round's document (and only its tenant's), polling until a deadline.

    The bound is strict: a query sent ``INTERVAL`` or more after the commit must see it (the
    server then either checked for new versions since the commit or checks now). ``SLACK``
    only bounds how long the polling may go on, for queries slowed down by a busy machine.
    """
    expected = {f'/{tenant}/round-{round_}.md'}
    while time.time() < committed + INTERVAL + SLACK:
        sent = time.time()
        result = await client.call_tool('regex_search', {'pattern': f'sm{round_}[a-z]+', 'top_k': 10})
        assert not result.is_error, result.content[0].text
        uris = _uris(result)
        assert not _foreign(uris, tenant), uris
        if {u[u.rindex(f'/{tenant}/') :] for u in uris} == expected:
            return time.time()
        assert sent < committed + INTERVAL, f'{tenant}: round {round_} unseen {sent - committed:.2f} s after its commit'
        await asyncio.sleep(0.05)
    raise AssertionError(f'{tenant} did not see round {round_} by the deadline')


# -- the test ----------------------------------------------------------------------------------------


async def _rounds(writer: asyncio.subprocess.Process, pollers: list[Any], tenants: list[str]) -> list[float]:
    """Write every round; per round, how long after its commit the slowest token x server pair saw it."""
    lags = []
    for round_ in range(1, ROUNDS + 1):
        committed = await _write_round(writer, round_)
        seen = await asyncio.gather(*(_seen_at(c, t, round_, committed) for c, t in zip(pollers, tenants, strict=True)))
        lags.append(max(seen) - committed)
        assert 'optimized' in await _next_line(writer, round_)
    return lags


async def _check_everything_in_scope(client: Any, tenant: str) -> None:
    """Once every round is visible: the token lists and finds all its tenant's documents, no other's."""
    listing = (await client.call_tool('list_documents', {})).content[0].text
    assert all(f'{tenant} round {r} notice' in listing for r in range(1, ROUNDS + 1)), listing
    assert next(t for t in TENANTS if t != tenant) not in listing
    everything = await client.call_tool('regex_search', {'pattern': 'sm[0-9]+[a-z]+', 'top_k': 50})
    assert len(_uris(everything)) == ROUNDS and not _foreign(_uris(everything), tenant)


async def _serve_while_writing(servers: list[Server], writer: asyncio.subprocess.Process) -> None:
    """Pollers ask each server directly for each round; callers go through a load balancer without pause."""
    pairs = [(s.url, t) for s in servers for t in TENANTS]
    tenants = [t for _, t in pairs]
    balanced = [(t, mode) for t in TENANTS for mode in ('legacy', 'auto')]
    balancers = [RoundRobin([s.url for s in servers]) for _ in balanced]
    async with contextlib.AsyncExitStack() as clients:
        pollers = [await clients.enter_async_context(_client(url, t)) for url, t in pairs]
        callers = [
            await clients.enter_async_context(_client(servers[0].url, t, lb, mode))
            for (t, mode), lb in zip(balanced, balancers, strict=True)
        ]
        traffic = [Traffic(t) for t, _ in balanced]
        stop = asyncio.Event()
        busy = [asyncio.create_task(_keep_calling(c, tr, stop)) for c, tr in zip(callers, traffic, strict=True)]
        before = [tr.calls for tr in traffic]
        try:
            lags = await _rounds(writer, pollers, tenants)
        finally:
            stop.set()
            await asyncio.gather(*busy)
        during = [tr.calls - n for tr, n in zip(traffic, before, strict=True)]
        print(f'visible after (s; per round, slowest of the token x server pairs): {[round(x, 2) for x in lags]}')
        print(f'tool calls made during the writes, per load-balanced client: {during}')
        for tr, calls in zip(traffic, during, strict=True):
            assert tr.failures == [] and calls >= ROUNDS, (tr.tenant, calls, tr.failures[:5])
        assert all(min(lb.sent) >= ROUNDS for lb in balancers), [lb.sent for lb in balancers]
        for client, tenant in zip(pollers, tenants, strict=True):
            await _check_everything_in_scope(client, tenant)


async def test_two_servers_serve_a_store_another_process_writes(s3_endpoint: str, tmp_path: Path) -> None:
    uri = f's3://{BUCKET}/{uuid.uuid4().hex}'
    env = _environment(s3_endpoint)
    failure: Exception | None = None
    async with _writer_process(uri, tmp_path / 'docs', env) as writer, _servers(2, uri, env, tmp_path) as servers:
        try:
            await _serve_while_writing(servers, writer)
        except Exception as e:  # raised below, once the processes are gone, unwrapped from the clients' task groups
            failure = e
            while isinstance(failure, ExceptionGroup) and len(failure.exceptions) == 1:
                failure = failure.exceptions[0]  # type: ignore[assignment]
            logs = '\n'.join(f'--- {s.url}\n{s.tail()}' for s in servers)
    if failure is not None:
        raise AssertionError(f'{failure!r}\n{logs}') from failure


if __name__ == '__main__':
    asyncio.run(_writer(*sys.argv[1:]))
