"""Per-token fairness for the HTTP MCP server: sessions, concurrency, request rate and idle timeout per token.

One token can never take what another needs: each has its own quota, answered with a scoped
HTTP 429 when spent, and the SDK's global session cap is set above the sum of the quotas.
See docs/mcp.md#limits-per-token and docs/security.md.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

__all__ = ['TokenLimits', 'TokenLimitsMiddleware', 'limit_overrides', 'send_json']

logger = logging.getLogger('toolish_rag.mcp')

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Any]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass(frozen=True)
class TokenLimits:
    """What one bearer token may use of an HTTP MCP server; every token has its own.

    Args:
        max_sessions: open MCP sessions at once (streamable HTTP, stateful); one more is refused (429)
            until one ends (``DELETE``) or expires.
        idle_timeout: seconds a session may go without a request in flight before it is closed.
        max_concurrent: requests in flight at once (not counting a session's open ``GET`` event stream).
        requests_per_minute: requests per minute, as a token bucket holding a minute's worth.
    """

    max_sessions: int = 16
    idle_timeout: float = 600.0
    max_concurrent: int = 8
    requests_per_minute: int = 600

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not (math.isfinite(value) and value > 0)
            ):
                raise ValueError(f'{f.name} must be a positive number, got {value!r}')
            if f.name != 'idle_timeout' and not isinstance(value, int):
                raise ValueError(f'{f.name} must be a whole number, got {value!r}')

    def with_overrides(self, overrides: Mapping[str, int | float]) -> TokenLimits:
        """These limits with some replaced (a token file entry's ``limits`` table)."""
        given: dict[str, Any] = dict(overrides)
        return replace(self, **given) if given else self


_LIMIT_NAMES = frozenset(f.name for f in fields(TokenLimits))


def limit_overrides(table: Any) -> dict[str, int | float]:
    """A token file entry's ``limits`` table, checked: known names, positive numbers."""
    if not isinstance(table, Mapping):
        raise ValueError('limits must be a table, e.g. limits = {max_sessions = 4}')
    unknown = set(table) - _LIMIT_NAMES
    if unknown:
        raise ValueError(f'unknown limits {sorted(unknown)}; known: {sorted(_LIMIT_NAMES)}')
    overrides = dict(table)
    TokenLimits().with_overrides(overrides)  # validates the values
    return overrides


@dataclass
class _Session:
    last_active: float
    in_flight: int = 0


@dataclass
class _Tenant:
    """One token's use: its sessions, the sessions being opened, requests in flight, its rate bucket."""

    limits: TokenLimits
    sessions: dict[str, _Session] = field(default_factory=dict)
    opening: int = 0
    in_flight: int = 0
    bucket: float = 0.0
    refilled: float = 0.0

    def take_request(self, now: float) -> bool:
        per_second = self.limits.requests_per_minute / 60
        self.bucket = min(self.limits.requests_per_minute, self.bucket + (now - self.refilled) * per_second)
        self.refilled = now
        if self.bucket < 1:
            return False
        self.bucket -= 1
        return True

    def expired(self, now: float) -> list[str]:
        timeout = self.limits.idle_timeout
        return [sid for sid, s in self.sessions.items() if not s.in_flight and now - s.last_active >= timeout]


_SESSION_HEADER = b'mcp-session-id'
_VERSION_HEADER = b'mcp-protocol-version'
_SWEEP_EVERY = 1.0
"""Seconds between sweeps of every token's idle sessions (a token's own are swept at each of its requests)."""


class TokenLimitsMiddleware:
    """ASGI middleware inside `BearerScopeMiddleware`: each token's requests within its `TokenLimits`.

    ``limits`` maps a token label to its limits (``default`` for any other label, e.g. ``anonymous``
    under ``--no-auth``). ``close_session(session_id)`` ends a session the server still holds (an idle
    one past its token's timeout). A refusal is HTTP 429 with a JSON-RPC error naming the limit;
    it says nothing of other tokens.
    """

    def __init__(
        self,
        app: ASGIApp,
        limits: Mapping[str, TokenLimits],
        default: TokenLimits,
        close_session: Callable[[str], Awaitable[None]],
        *,
        stateless: bool = False,
        label_of: Callable[[Scope], str | None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app = app
        self.limits = dict(limits)
        self.default = default
        self.close_session = close_session
        self.stateless = stateless
        self.label_of = label_of
        self.clock = clock
        self._tenants: dict[str, _Tenant] = {}
        self._swept = 0.0

    def _tenant(self, label: str, now: float) -> _Tenant:
        tenant = self._tenants.get(label)
        if tenant is None:
            limits = self.limits.get(label, self.default)
            tenant = self._tenants[label] = _Tenant(limits, bucket=limits.requests_per_minute, refilled=now)
        return tenant

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        label = self.label_of(scope) if scope['type'] == 'http' else None
        if label is None:
            await self.app(scope, receive, send)
            return
        repeated = _repeated_header(scope)
        if repeated is not None:
            logger.info('refused a request of token %s: %s sent more than once', label, repeated)
            payload = {'jsonrpc': '2.0', 'id': None, 'error': {'code': -32600, 'message': f'{repeated} sent twice'}}
            await send_json(send, 400, payload, [])
            return
        now = self.clock()
        tenant = self._tenant(label, now)
        await self._sweep(tenant, now)
        headers = dict(scope.get('headers', []))  # each header at most once (checked above)
        session_id = headers.get(_SESSION_HEADER, b'').decode('latin-1') or None
        method = scope.get('method', '')
        refusal = self._refusal(tenant, now, method, session_id, headers.get(_VERSION_HEADER))
        if refusal is not None:
            logger.info('refused a request of token %s: %s', label, refusal)
            await _too_many(send, refusal, tenant.limits)
            return
        await self._serve(tenant, scope, receive, send, session_id)

    def _refusal(
        self, tenant: _Tenant, now: float, method: str, session_id: str | None, version: bytes | None
    ) -> str | None:
        limits = tenant.limits
        if not tenant.take_request(now):
            return f'this token may make {limits.requests_per_minute} requests per minute; slow down and retry'
        if method != 'GET' and tenant.in_flight >= limits.max_concurrent:
            return f'this token already has {limits.max_concurrent} requests in flight (its limit); retry when one ends'
        if self._opens_session(method, session_id, version) and len(tenant.sessions) + tenant.opening >= (
            limits.max_sessions
        ):
            return (
                f'this token already has {limits.max_sessions} open MCP sessions (its limit); end one (HTTP DELETE '
                f'with its Mcp-Session-Id) or wait for an idle one to expire ({limits.idle_timeout:g} s)'
            )
        return None

    def _opens_session(self, method: str, session_id: str | None, version: bytes | None) -> bool:
        """Whether the SDK would open a session for this request (stateful, POST, no id, a handshake version)."""
        if self.stateless or method != 'POST' or session_id is not None:
            return False
        return version is None or version.decode('latin-1') in HANDSHAKE_PROTOCOL_VERSIONS

    async def _serve(self, tenant: _Tenant, scope: Scope, receive: Receive, send: Send, session_id: str | None) -> None:
        """Serve the request, counted from its start until its response is complete (or the app returns).

        Released at the response's last byte rather than when the app returns: the SDK's handler may
        still be winding down when the client, its answer complete, sends its next request.
        """
        method = scope.get('method', '')
        counted = method != 'GET'
        opening = self._opens_session(method, session_id, dict(scope.get('headers', [])).get(_VERSION_HEADER))
        session = tenant.sessions.get(session_id) if session_id is not None else None
        status = 0
        held = True

        def release() -> None:
            nonlocal held
            if held:
                held = False
                tenant.in_flight -= counted
                tenant.opening -= opening
                if session is not None:
                    session.in_flight -= 1
                    session.last_active = self.clock()

        async def watch(message: MutableMapping[str, Any]) -> None:
            nonlocal status, session
            if message['type'] == 'http.response.start':
                status = int(message['status'])
                named = dict(message.get('headers', [])).get(_SESSION_HEADER)
                opened = named.decode('latin-1') if named else None
                if status < 400 and opened is not None and opened not in tenant.sessions:
                    # Counted when the response names a new session, whatever the request looked like: what
                    # the SDK opened is what counts, not what this middleware predicted from the headers.
                    session = tenant.sessions[opened] = _Session(self.clock(), in_flight=1)
            await send(message)
            if message['type'] == 'http.response.body' and not message.get('more_body', False):
                release()

        tenant.in_flight += counted
        tenant.opening += opening
        if session is not None:
            session.in_flight += 1
        try:
            await self.app(scope, receive, watch)
        finally:
            release()
            if session_id is not None and session_id in tenant.sessions and _ended(method, status):
                del tenant.sessions[session_id]  # ended by the client, or already unknown to the server

    async def _sweep(self, tenant: _Tenant, now: float) -> None:
        """Close the idle sessions past their token's timeout: this token's always, every token's now and then."""
        tenants = [tenant]
        if now - self._swept >= _SWEEP_EVERY:
            self._swept = now
            tenants = list(self._tenants.values())
        for t in tenants:
            for session_id in t.expired(now):
                del t.sessions[session_id]
                await self.close_session(session_id)


_SINGLE_HEADERS = {_SESSION_HEADER: 'the Mcp-Session-Id header', _VERSION_HEADER: 'the Mcp-Protocol-Version header'}


def _repeated_header(scope: Scope) -> str | None:
    """The name of a session header the request sends more than once, else ``None``.

    The SDK reads the first value of a repeated header and a dict of the headers the last one; a
    request whose headers mean one thing to the limits and another to the SDK could open sessions
    its token's limit never counts. Refused (400) rather than read one way or the other.
    """
    seen: set[bytes] = set()
    for key, _ in scope.get('headers', []):
        name = key.lower()
        if name in _SINGLE_HEADERS:
            if name in seen:
                return _SINGLE_HEADERS[name]
            seen.add(name)
    return None


def _ended(method: str, status: int) -> bool:
    return (method == 'DELETE' and 200 <= status < 300) or status == 404


async def _too_many(send: Send, reason: str, limits: TokenLimits) -> None:
    payload = {'jsonrpc': '2.0', 'id': None, 'error': {'code': -32000, 'message': reason}}
    retry = max(1, math.ceil(60 / limits.requests_per_minute))
    await send_json(send, 429, payload, [(b'retry-after', str(retry).encode())])


async def send_json(send: Send, status: int, payload: Any, headers: list[tuple[bytes, bytes]]) -> None:
    """A complete JSON response (the server's own refusals: 401, 429)."""
    body = json.dumps(payload).encode()
    start = [(b'content-type', b'application/json'), (b'content-length', str(len(body)).encode()), *headers]
    await send({'type': 'http.response.start', 'status': status, 'headers': start})
    await send({'type': 'http.response.body', 'body': body})
