"""Who is looking, and in which scope: sign-in with a bearer token, sessions, and the headers every answer carries.

Without a token file the inspector answers only requests addressed to a loopback name (no DNS
rebinding) and sees the whole toolset. With one, every request presents a token (an
``Authorization: Bearer`` header, or the session cookie a sign-in set) and is narrowed by that
token's scope exactly as its MCP session is (``rag.with_metadata_filter``). See docs/inspect.md#safety.
"""

from __future__ import annotations

import ipaddress
import secrets
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
    'LOOPBACK_NAMES',
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


class Sessions:
    """Signed-in browsers: a random session id (the cookie) -> the token's scope; at most ``limit``, oldest dropped."""

    def __init__(self, limit: int = 1000) -> None:
        self._by_id: OrderedDict[str, TokenScope] = OrderedDict()
        self._limit = limit

    def open(self, scope: TokenScope) -> str:
        session = secrets.token_urlsafe(32)
        self._by_id[session] = scope
        while len(self._by_id) > self._limit:
            self._by_id.popitem(last=False)
        return session

    def get(self, session: str | None) -> TokenScope | None:
        return self._by_id.get(session) if session else None

    def close(self, session: str | None) -> None:
        if session:
            self._by_id.pop(session, None)


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
        if scope.get('method') == 'POST' and not _same_origin(headers, host):
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


def _same_origin(headers: list[tuple[bytes, bytes]], host: str) -> bool:
    """Whether a POST comes from this app's own pages (a browser's ``Sec-Fetch-Site``, else its ``Origin``);
    a request with neither (a script, a test client) is let through: the cookie is ``SameSite=Strict``."""
    site = _header(headers, b'sec-fetch-site')
    if site is not None:
        return site in ('same-origin', 'none')
    origin = _header(headers, b'origin')
    return origin is None or origin.partition('://')[2] == host


async def _refuse(send: Callable[[MutableMapping[str, Any]], Awaitable[None]], status: int, reason: str) -> None:
    body = reason.encode()
    headers = [(b'content-type', b'text/plain; charset=utf-8'), (b'content-length', str(len(body)).encode())]
    await send({'type': 'http.response.start', 'status': status, 'headers': [*headers, *_HEADERS]})
    await send({'type': 'http.response.body', 'body': body})


def security_headers() -> dict[str, str]:
    return {k.decode(): v.decode() for k, v in _HEADERS}
