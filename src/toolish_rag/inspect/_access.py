"""Who is looking, and in which scope: sign-in with a bearer token, sessions, and the headers every answer carries.

Without a token file the inspector answers only requests addressed to a loopback name (no DNS
rebinding) and sees the whole toolset. With one, every request presents a token (an
``Authorization: Bearer`` header, or the session cookie a sign-in set) and is narrowed by that
token's scope exactly as its MCP session is (``rag.with_metadata_filter``). See docs/inspect.md#safety.
"""

from __future__ import annotations

import ipaddress
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..filters import Filter
from ..toolset import ToolishRag

if TYPE_CHECKING:
    from ..mcp import TokenScope, TokenTable

__all__ = [
    'COOKIE',
    'IDLE_SECONDS',
    'LOOPBACK_NAMES',
    'SESSIONS_PER_TOKEN',
    'ScopedToolsets',
    'Sessions',
    'Viewer',
    'guard',
    'security_headers',
    'viewer_for',
]

COOKIE = 'toolish_inspect'
LOOPBACK_NAMES = frozenset({'127.0.0.1', 'localhost', '::1', '[::1]'})

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
"""No inline script or style, nothing from elsewhere: text from a document can never run in the page."""

_HEADERS = [
    (b'content-security-policy', CSP.encode()),
    (b'x-content-type-options', b'nosniff'),
    (b'referrer-policy', b'same-origin'),  # no-referrer would make a browser send `Origin: null`
    (b'x-frame-options', b'DENY'),
    (b'cache-control', b'no-store'),
]

ASGIApp = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[Any]], Callable[[MutableMapping[str, Any]], Awaitable[None]]],
    Awaitable[None],
]


@dataclass(frozen=True)
class Viewer:
    """A request's view: the toolset narrowed to its token's scope (``label`` ``None`` without tokens)."""

    rag: ToolishRag[Any]
    label: str | None
    scope: Filter | None
    """The token's own filter (``None``: the token, or the app, has no scope of its own)."""

    @property
    def signed_in(self) -> bool:
        return self.label is not None

    @property
    def unscoped(self) -> bool:
        """No token narrows this view (no token file, or a token with an empty scope): it may preview tokens."""
        return self.scope is None

    def describe(self, base: str) -> str:
        who = f'token {self.label!r}' if self.label is not None else base
        return who if self.scope is None else f'{who}, filtered'


SESSIONS_PER_TOKEN = 32
"""Signed-in browsers one token may hold; its own least recently used is signed out past it."""
IDLE_SECONDS = 3600.0
"""A session unused this long is signed out (`create_app`'s ``session_idle_seconds``)."""


class Sessions:
    """Signed-in browsers: a random session id (the cookie) -> its token's scope, kept per token.

    Each token holds at most ``per_token`` sessions, its least recently used dropped first, so
    signing in again and again with one token signs out no one else; a session unused for
    ``idle_seconds`` is gone. Sessions are at most the token file's tokens x ``per_token``.
    """

    def __init__(self, per_token: int = SESSIONS_PER_TOKEN, idle_seconds: float = IDLE_SECONDS) -> None:
        if per_token < 1 or idle_seconds <= 0:
            raise ValueError('sessions need per_token >= 1 and idle_seconds > 0')
        self._per_token, self._idle = per_token, idle_seconds
        self._by_token: dict[str, OrderedDict[str, tuple[TokenScope, float]]] = {}
        """Token label -> its sessions (id -> scope, last use), least recently used first."""
        self._label_of: dict[str, str] = {}

    def open(self, scope: TokenScope) -> str:
        now = time.monotonic()
        self._expire(now)
        session = secrets.token_urlsafe(32)
        held = self._by_token.setdefault(scope.label, OrderedDict())
        held[session] = (scope, now)
        self._label_of[session] = scope.label
        while len(held) > self._per_token:
            self._label_of.pop(held.popitem(last=False)[0], None)
        return session

    def get(self, session: str | None) -> TokenScope | None:
        """The session's scope (its idle clock restarted), or ``None``: unknown, closed or idle too long."""
        label = self._label_of.get(session) if session else None
        if label is None or session is None:
            return None
        held = self._by_token[label]
        scope, used = held[session]
        now = time.monotonic()
        if now - used > self._idle:
            self.close(session)
            return None
        held[session] = (scope, now)
        held.move_to_end(session)
        return scope

    def close(self, session: str | None) -> None:
        label = self._label_of.pop(session, None) if session else None
        if label is not None and session is not None:
            self._by_token[label].pop(session, None)

    def _expire(self, now: float) -> None:
        for held in self._by_token.values():
            while held and now - next(iter(held.values()))[1] > self._idle:
                self._label_of.pop(held.popitem(last=False)[0], None)


def bearer(headers: Any) -> str | None:
    kind, _, token = (headers.get('authorization') or '').strip().partition(' ')
    return token.strip() or None if kind.lower() == 'bearer' else None


class ScopedToolsets:
    """``rag`` narrowed by each token's scope, built once per token (a toolset builds its tools when made)."""

    def __init__(self, rag: ToolishRag[Any]) -> None:
        self.rag = rag
        self._by_label: dict[str, ToolishRag[Any]] = {}

    def of(self, token: TokenScope) -> ToolishRag[Any]:
        if token.filter is None:
            return self.rag
        found = self._by_label.get(token.label)
        if found is None:
            found = self._by_label[token.label] = self.rag.with_metadata_filter(token.filter)
        return found


def viewer_for(
    toolsets: ScopedToolsets, tokens: TokenTable | None, sessions: Sessions, headers: Any, cookies: Any
) -> Viewer | None:
    """The request's `Viewer`, or ``None`` when a token file is configured and the request has no valid token."""
    if tokens is None:
        return Viewer(toolsets.rag, None, None)
    presented = bearer(headers)
    found = tokens.authenticate(presented) if presented else sessions.get(cookies.get(COOKIE))
    if found is None:
        return None
    return Viewer(toolsets.of(found), found.label, found.filter)


def _host_of(value: str) -> str:
    """``127.0.0.1:8765`` -> ``127.0.0.1``; ``[::1]:8765`` -> ``[::1]``; a bare name as it is."""
    if value.startswith('['):
        return value[: value.find(']') + 1] if ']' in value else value
    return value.rpartition(':')[0] if value.count(':') == 1 else value


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            return value.decode('latin-1').strip()
    return None


def guard(app: ASGIApp, *, trusted_hosts: frozenset[str] | None, loopback_clients: bool) -> ASGIApp:
    """ASGI middleware: the security headers on every answer; with ``trusted_hosts`` only requests addressed
    to one of those names (a DNS-rebinding page cannot reach a loopback inspector); with ``loopback_clients``
    only requests from this machine (an app without tokens mounted on a public address still answers no one
    else); a form posted from another origin refused."""

    async def guarded(
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[Any]],
        send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
    ) -> None:
        if scope['type'] != 'http':
            await app(scope, receive, send)
            return
        headers: list[tuple[bytes, bytes]] = scope.get('headers', [])
        host = _header(headers, b'host') or ''
        if trusted_hosts is not None and _host_of(host).lower() not in trusted_hosts:
            await _refuse(send, 421, 'this inspector answers requests to a loopback address only')
            return
        if loopback_clients and not _loopback_client(scope.get('client')):
            await _refuse(send, 403, 'without tokens this inspector answers its own machine only')
            return
        if scope.get('method') == 'POST' and not _same_origin(headers, host, str(scope.get('scheme') or 'http')):
            await _refuse(send, 403, 'a form from another origin is refused')
            return

        async def with_headers(message: MutableMapping[str, Any]) -> None:
            if message['type'] == 'http.response.start':
                message['headers'] = [*message.get('headers', []), *_HEADERS]
            await send(message)

        await app(scope, receive, with_headers)

    return guarded


def _loopback_client(client: Any) -> bool:
    if not client:
        return False
    try:
        return ipaddress.ip_address(str(client[0])).is_loopback
    except ValueError:
        return False


def _same_origin(headers: list[tuple[bytes, bytes]], host: str, scheme: str) -> bool:
    """Whether a POST comes from this app's own pages (a browser's ``Sec-Fetch-Site``, else its ``Origin``:
    scheme and host, ``http://`` posting to ``https://`` is another origin); a request with neither (a
    script, a test client) is let through: the cookie is ``SameSite=Strict``."""
    site = _header(headers, b'sec-fetch-site')
    if site is not None:
        return site in ('same-origin', 'none')
    origin = _header(headers, b'origin')
    return origin is None or origin.lower() == f'{scheme}://{host}'.lower()


async def _refuse(send: Callable[[MutableMapping[str, Any]], Awaitable[None]], status: int, reason: str) -> None:
    body = reason.encode()
    headers = [(b'content-type', b'text/plain; charset=utf-8'), (b'content-length', str(len(body)).encode())]
    await send({'type': 'http.response.start', 'status': status, 'headers': [*headers, *_HEADERS]})
    await send({'type': 'http.response.body', 'body': body})


def security_headers() -> dict[str, str]:
    return {k.decode(): v.decode() for k, v in _HEADERS}
