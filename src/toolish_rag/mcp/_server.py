"""Serve a `ToolishRag` toolset over MCP (stdio or streamable HTTP).

Built on the official ``mcp`` SDK's low-level ``Server``, which takes tool declarations as
plain JSON schemas: ``tools/list`` returns ``rag.tool_definitions()`` verbatim and
``tools/call`` goes through ``rag.run_tool``. There is one definition of the tools (the
toolset); MCP is a second way of serving them, with the same names, descriptions,
argument schemas, validation messages and result text an in-process agent gets. (A
decorator-based server such as FastMCP derives schemas from Python signatures, which
would mean declaring every tool a second time.)

Scope: the server's own toolset may already be narrowed (``rag.with_metadata_filter``).
Over HTTP, `BearerScopeMiddleware` authenticates each request and puts the token's
filter in the ASGI scope; ``tools/call`` ANDs it in with ``with_metadata_filter``, so a
client can narrow its results (by its queries) but never widen them. The instructions
a client gets when it connects (``initialize`` / ``server/discover``) are computed for
its token's scope too, because eager searches (``rag.with_eager_search_about``) put
search results in them. A streamable-HTTP session belongs to the token that opened it:
its id presented with another token is answered like an unknown session (404). Each token
has its own `TokenLimits` (sessions, requests in flight, requests per minute, idle timeout),
enforced by `TokenLimitsMiddleware`, so no token can use up what another needs.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server

from ._limits import TokenLimits, TokenLimitsMiddleware, send_json

if TYPE_CHECKING:  # the toolset (pydantic-ai) is imported by whoever builds one: a stdio server answers first
    from ..filters import Filter
    from ..search import SearchHit
    from ..toolset import ToolishRag
    from ._tokens import TokenScope, TokenTable

__all__ = [
    'HITS_META_KEY',
    'SCOPE_KEY',
    'BearerScopeMiddleware',
    'RagSource',
    'build_server',
    'http_app',
    'lazy_server',
    'serve_http',
]

logger = logging.getLogger('toolish_rag.mcp')

SCOPE_KEY = 'toolish_rag.scope'
"""ASGI scope key holding the authenticated request's scope: ``(label, filter or None)``."""

HITS_META_KEY = 'toolish_rag/hits'
"""``_meta`` key of a tool result: the hits' ids, kinds, scores, document URIs and section paths."""

_ANNOTATIONS = types.ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)

ASGIApp = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[Any]], Callable[[MutableMapping[str, Any]], Awaitable[None]]],
    Awaitable[None],
]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version('toolish-rag-slim')
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return '0'


RagSource = Callable[[], Awaitable['ToolishRag[Any]']]
"""Where a server's handlers get the toolset: at once (`build_server`), or once it is built (`lazy_server`)."""


def _hit_meta(hit: SearchHit) -> dict[str, Any]:
    from ..content import Chunk

    record = hit.record
    out: dict[str, Any] = {'id': record.id, 'kind': record.kind, 'score': hit.score}
    if isinstance(record, Chunk):
        out['document_uri'] = record.document_uri
        out['section_path'] = list(record.section_path)
    source = getattr(hit, 'source', None)  # a federated hit's member (toolish_rag.stores.federated.SourcedHit)
    if isinstance(source, str) and source:
        out['source'] = source
    return out


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def _request_scope(ctx: ServerRequestContext[Any, Any]) -> tuple[bool, Filter | None]:
    """``(allowed, filter)`` for this request.

    No HTTP request (stdio, in-process): allowed, no extra filter. An HTTP request must
    have passed `BearerScopeMiddleware` (or the explicit anonymous one): an app mounted
    without it fails closed.
    """
    request = ctx.request
    if request is None:
        return True, None
    scope = getattr(request, 'scope', None)
    if not isinstance(scope, MutableMapping) or SCOPE_KEY not in scope:
        return False, None
    _, scope_filter = scope[SCOPE_KEY]
    return True, scope_filter


_CONNECT_METHODS = frozenset({'initialize', 'server/discover'})
"""The requests whose result carries the server's instructions (handshake era / 2026-07-28 era)."""


async def server_instructions(rag: ToolishRag[Any]) -> str | None:
    """The toolset's instructions, then its eager searches' results (MCP has no tool-result channel at connect).

    An in-process agent gets eager results as data before its prompt (`toolish_rag.capability`);
    an MCP client gets them here, computed in the connection's scope, as before.
    """
    texts = [await rag.instructions(), *(r.text for r in await rag.eager_results())]
    return '\n\n'.join(t for t in texts if t) or None


class _ScopedInstructions:
    """Server middleware: the instructions of an HTTP connection, computed for its token's scope.

    The server's instructions are not scope-free: `server_instructions` appends the results
    (chunk ids and text) of the toolset's eager searches (``rag.with_eager_search_about``).
    The SDK sends one fixed ``instructions`` string to every client, so one computed at
    start-up would show every token the results of the server's own, widest scope. This
    middleware replaces ``instructions`` in the ``initialize`` and ``server/discover``
    results of an HTTP request by ``server_instructions(rag.with_metadata_filter(token scope))``,
    computed per connection (like an in-process agent's eager search, which runs per run).
    Requests without HTTP (stdio, an in-process client) keep the fixed instructions,
    computed with the toolset's own scope. An HTTP request that did not pass
    `BearerScopeMiddleware` gets no instructions at all (fail closed, like its tool calls).
    """

    def __init__(self, rag: ToolishRag[Any]) -> None:
        self.rag = rag

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method not in _CONNECT_METHODS or ctx.request is None or not isinstance(result, dict):
            return result
        allowed, scope_filter = _request_scope(ctx)
        scoped = self.rag if scope_filter is None else self.rag.with_metadata_filter(scope_filter)
        text = await server_instructions(scoped) if allowed else None
        out = {k: v for k, v in result.items() if k != 'instructions'}
        if text is not None:
            out['instructions'] = text
        if ctx.method == 'server/discover':
            out['cacheScope'] = 'private'  # never shared across authorization contexts by a client cache
        return out


async def build_server(
    rag: ToolishRag[Any], *, name: str = 'toolish-rag', instructions: str | None = None, short_names: bool = False
) -> Server[Any]:
    """An MCP ``Server`` offering ``rag``'s tools.

    ``instructions`` default to the toolset's own (what the collection holds and how to
    search it, and the results of its eager searches). The toolset's filters (e.g.
    ``rag.with_metadata_filter(...)``) apply to every call and to those instructions;
    over HTTP each request's token scope is ANDed in on top, for the tool calls and for
    the instructions a client gets when it connects. Explicit ``instructions`` are sent
    as given to every client.

    ``short_names`` lists the tools by their short names (``hybrid_search``): an MCP client
    puts its own key for the server in front (pydantic-ai's ``load_mcp_toolsets`` with the key
    ``docs`` exposes ``docs_hybrid_search``, the name the toolset's instructions use when the key
    is its name), so nothing is named twice. See docs/mcp.md#tool-names.
    """

    async def source() -> ToolishRag[Any]:
        return rag

    text = instructions if instructions is not None else await server_instructions(rag)
    server = lazy_server(source, collection=rag.name, instructions=text, name=name, short_names=short_names)
    if instructions is None:
        server.middleware.append(_ScopedInstructions(rag))
    return server


def lazy_server(
    rag: RagSource,
    *,
    collection: str,
    instructions: str | None,
    name: str = 'toolish-rag',
    short_names: bool = False,
    calls: RagSource | None = None,
) -> Server[Any]:
    """An MCP ``Server`` whose handlers await the toolset from ``rag`` (``calls`` for tool calls, default ``rag``).

    The handshake (``initialize``, with ``instructions``) needs no toolset, so a stdio server can answer
    it before pydantic-ai, the store and the embedding model are loaded (docs/mcp.md#start-up-time).
    ``collection`` is the toolset's name (the server's title). Resources and prompts: none (empty lists).
    """
    calls = calls if calls is not None else rag

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        toolset = await rag()
        definitions = await toolset.tool_definitions()
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=_listed(d.name, toolset.name, short_names),
                    description=d.description,
                    input_schema=d.parameters_json_schema,
                    annotations=_ANNOTATIONS,
                )
                for d in definitions
            ]
        )

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        allowed, scope_filter = _request_scope(ctx)
        if not allowed:
            return _error('this request is not authenticated')
        toolset = await calls()
        return await _call(toolset, scope_filter, params, short_names)

    return Server(
        name,
        version=_version(),
        title=f'{collection} collection (toolish-rag)',
        instructions=instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=_no_resources,
        on_list_resource_templates=_no_resource_templates,
        on_list_prompts=_no_prompts,
    )


def _listed(full: str, prefix: str, short_names: bool) -> str:
    """The name a tool is listed under: its full name, or without the toolset's ``prefix_``."""
    return full.removeprefix(f'{prefix}_') if short_names else full


async def _call(
    rag: ToolishRag[Any], scope_filter: Filter | None, params: types.CallToolRequestParams, short_names: bool
) -> types.CallToolResult:
    """One ``tools/call`` through ``rag.run_tool``, narrowed by the request's scope; errors as MCP error results."""
    from pydantic_ai import ModelRetry

    scoped = rag if scope_filter is None else rag.with_metadata_filter(scope_filter)
    offered = {_listed(full, rag.name, short_names): full for full in scoped.tool_names}
    full = offered.get(params.name)
    if full is None:
        return _error(f'unknown tool {params.name!r}; this server offers {", ".join(offered)}')
    try:
        result = await scoped.run_tool(full, params.arguments or {})
    except ModelRetry as retry:
        return _error(retry.message)
    except Exception:
        logger.exception('tool %s failed', params.name)
        return _error(f'{params.name} failed with an internal error; try again or use another tool')
    hits = result.metadata.get('hits', []) if isinstance(result.metadata, dict) else []
    return types.CallToolResult(
        content=[types.TextContent(text=str(result.return_value))],
        meta={HITS_META_KEY: [_hit_meta(h) for h in hits]},
    )


async def _no_resources(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=[])


async def _no_resource_templates(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(resource_templates=[])


async def _no_prompts(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=[])


# -- HTTP ------------------------------------------------------------------------------------------


class BearerScopeMiddleware:
    """ASGI middleware: a valid ``Authorization: Bearer TOKEN`` or a 401.

    An authenticated request carries its token's scope (``scope[SCOPE_KEY]``) and its
    token's label as the SDK's ``scope["user"]`` (which binds sessions to tokens). With
    ``tokens=None`` every request is let through unscoped (``--no-auth``, for a server on
    a trusted loopback only). The token itself is never logged.
    """

    def __init__(self, app: ASGIApp, tokens: TokenTable | None) -> None:
        self.app = app
        self.tokens = tokens

    async def __call__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[Any]],
        send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
    ) -> None:
        if scope['type'] == 'lifespan':
            await self.app(scope, receive, send)
            return
        if scope['type'] != 'http':  # no websockets here: refuse rather than pass through unauthenticated
            await send({'type': 'websocket.close', 'code': 1008})
            return
        if self.tokens is None:
            scope[SCOPE_KEY] = ('anonymous', None)
            await self.app(scope, receive, send)
            return
        presented = _bearer(scope)
        found = self.tokens.authenticate(presented)
        if found is None:
            logger.info(
                'refused %s %s: %s',
                scope.get('method'),
                scope.get('path'),
                'no bearer token' if presented is None else 'unknown bearer token',
            )
            await _unauthorized(send, 'missing bearer token' if presented is None else 'invalid bearer token')
            return
        logger.debug('request authenticated as %s', found.label)
        scope[SCOPE_KEY] = (found.label, found.filter)
        scope['user'] = _session_owner(found)
        await self.app(scope, receive, send)


def _session_owner(found: TokenScope) -> AuthenticatedUser:
    """The SDK principal of a token, which binds the streamable-HTTP sessions it opens to it.

    The SDK's session manager records ``scope["user"]`` of the request that opened a
    session and answers a request with that session id but another principal exactly as
    it answers an unknown session id (404), without touching the session: another token
    can neither call tools in it, read its stream, nor DELETE it. Labels are unique per
    token table, so the label identifies the token. The token itself is not stored.
    """
    return AuthenticatedUser(AccessToken(token='', client_id=found.label, subject=found.label, scopes=[]))


def _bearer(scope: MutableMapping[str, Any]) -> str | None:
    headers: list[tuple[bytes, bytes]] = scope.get('headers', [])
    for key, value in headers:
        if key.lower() == b'authorization':
            kind, _, token = value.decode('latin-1').strip().partition(' ')
            if kind.lower() == 'bearer' and token.strip():
                return token.strip()
            return None
    return None


async def _unauthorized(send: Callable[[MutableMapping[str, Any]], Awaitable[None]], reason: str) -> None:
    challenge = f'Bearer error="invalid_token", error_description="{reason}"'.encode()
    payload = {'error': 'unauthorized', 'error_description': reason}
    await send_json(send, 401, payload, [(b'www-authenticate', challenge)])


def _per_token(tokens: TokenTable | None, limits: TokenLimits) -> dict[str, TokenLimits]:
    """Each token's limits: ``limits`` with the token file's own values for it (``anonymous`` without tokens)."""
    if tokens is None:
        return {'anonymous': limits}
    return {s.label: limits.with_overrides(s.limits) for s in tokens.scopes}


def _label_of(scope: MutableMapping[str, Any]) -> str | None:
    found = scope.get(SCOPE_KEY)
    return found[0] if found is not None else None


def _session_closer(server: Server[Any]) -> Callable[[str], Awaitable[None]]:
    """Ends one session the SDK still holds, as its own idle timeout does (the SDK has no public call for it)."""

    async def close(session_id: str) -> None:
        transport = server.session_manager._server_instances.get(session_id)
        if transport is None or transport.is_terminated:
            return
        logger.info("closing an idle MCP session (its token's idle timeout)")
        if transport.idle_scope is not None:
            transport.idle_scope.cancel()  # the SDK's idle path: its server task ends and discards the session
        else:
            await transport.terminate()

    return close


def http_app(
    server: Server[Any],
    tokens: TokenTable | None,
    *,
    host: str = '127.0.0.1',
    path: str = '/mcp',
    stateless: bool = False,
    limits: TokenLimits | None = None,
) -> Any:
    """The ASGI (Starlette) app serving ``server`` at ``path``, behind bearer-token scoping and per-token limits.

    ``tokens=None`` serves without authentication (only for a trusted loopback). ``host``
    is where the server listens: on loopback the SDK's DNS-rebinding protection is on.
    ``limits`` are every token's defaults (a token file entry's ``limits`` replaces some for its
    token). The SDK's own session cap is set to twice the sum of the tokens' session limits, so it
    never refuses a token within its own limit; its idle timeout to the longest of theirs.
    """
    default = limits if limits is not None else TokenLimits()
    per_token = _per_token(tokens, default)
    app = server.streamable_http_app(
        streamable_http_path=path,
        host=host,
        stateless_http=stateless,
        max_sessions=2 * sum(t.max_sessions for t in per_token.values()),
        session_idle_timeout=max(t.idle_timeout for t in per_token.values()),
    )
    app.add_middleware(
        TokenLimitsMiddleware,
        limits=per_token,
        default=default,
        close_session=_session_closer(server),
        stateless=stateless,
        label_of=_label_of,
    )
    app.add_middleware(BearerScopeMiddleware, tokens=tokens)  # outermost: nothing runs before it
    return app


async def serve_http(
    rag: ToolishRag[Any],
    tokens: TokenTable | None,
    *,
    host: str = '127.0.0.1',
    port: int = 8000,
    path: str = '/mcp',
    name: str = 'toolish-rag',
    stateless: bool = False,
    limits: TokenLimits | None = None,
    short_names: bool = False,
) -> None:
    """Serve ``rag`` over streamable HTTP at ``http://HOST:PORT/PATH`` until interrupted.

    ``stateless=True`` keeps no MCP session in the process: every request is answered on its
    own (with its own token's scope), so several servers behind a round-robin load balancer can
    each answer any request of a client. A session opened on one server is unknown to the others
    (404), so without it a load balancer must be sticky on the ``Mcp-Session-Id`` header.
    ``limits``: every token's `TokenLimits` (see `http_app`). ``short_names``: see `build_server`.
    """
    import uvicorn

    server = await build_server(rag, name=name, short_names=short_names)
    app = http_app(server, tokens, host=host, path=path, stateless=stateless, limits=limits)
    config = uvicorn.Config(app, host=host, port=port, log_level='warning', lifespan='on')
    await uvicorn.Server(config).serve()
