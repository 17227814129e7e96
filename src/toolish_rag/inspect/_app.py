"""`create_app`: the inspector's Starlette app, one route per page, each seen through the request's `Viewer`.

See docs/inspect.md.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..errors import InvalidRequestError
from ..toolset import ToolishRag
from ._access import COOKIE, LOOPBACK_NAMES, ScopedToolsets, Sessions, Viewer, guard, viewer_for
from ._browse import chunk_page, document_page, documents_page, section_page
from ._citations import citations_page
from ._console import console_page
from ._graph import graph_page
from ._html import layout, markup
from ._page import BadRequest, NotFound, Page
from ._quality import Quality

if TYPE_CHECKING:
    from ..ingest import IngestReport
    from ..mcp import TokenTable

__all__ = ['create_app']

logger = logging.getLogger('toolish_rag.inspect')

STATIC = Path(__file__).with_name('static')

Handler = Callable[[Request, Viewer], Awaitable[Page | Response]]


def create_app(
    rag: ToolishRag[Any],
    *,
    tokens: TokenTable | None = None,
    eval_data: str | Path | None = None,
    eval_embedder: Any = None,
    ingest_report: IngestReport | None = None,
    trusted_hosts: frozenset[str] | None = None,
) -> Starlette:
    """The inspector over ``rag`` (its scope, e.g. ``rag.with_metadata_filter(...)``, applies to every page).

    ``tokens``: a token file's `toolish_rag.mcp.TokenTable`: every request then signs in with a token and is
    scoped like that token's MCP session. ``eval_data``: a BEIR folder the Quality page may evaluate (into a
    new in-memory store with ``eval_embedder``, never the inspected one; not offered under tokens).
    ``ingest_report``: the last ingest's report, whose failures the Quality page lists. ``trusted_hosts``:
    the host names requests may be addressed to; default: the loopback names without tokens, any with them.
    Without tokens only clients on this machine (a loopback address) are answered.
    """
    sessions = Sessions()
    toolsets = ScopedToolsets(rag)
    quality = Quality(eval_data, eval_embedder, ingest_report) if tokens is None else None
    hosts = trusted_hosts if trusted_hosts is not None else (LOOPBACK_NAMES if tokens is None else None)
    base = 'no token' if tokens is None else ''
    if _narrowed(rag):
        base += " (the app's own filter applies)" if base else "the app's own filter applies"

    def viewer_of(request: Request) -> Viewer | None:
        return viewer_for(toolsets, tokens, sessions, request.headers, request.cookies)

    def render(page: Page, viewer: Viewer, active: str) -> HTMLResponse:
        html = layout(
            page.title,
            page.body,
            scope=viewer.describe(base),
            active=active,
            quality=quality is not None,
            signed_in=viewer.signed_in,
        )
        return HTMLResponse(html, status_code=page.status)

    def page(handler: Handler, active: str) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            viewer = viewer_of(request)
            if viewer is None:
                if request.method == 'GET' and 'authorization' not in request.headers:
                    return RedirectResponse('/login', status_code=303)
                return HTMLResponse('sign in with a token', status_code=401)
            try:
                outcome = await handler(request, viewer)
            except NotFound as e:
                outcome = Page('Not found', markup('<p class="missing">{} in this scope.</p>', str(e)), 404)
            except (BadRequest, InvalidRequestError) as e:
                outcome = Page('Bad request', markup('<p class="error">{}</p>', str(e)), 400)
            if isinstance(outcome, Response):
                return outcome
            return render(outcome, viewer, active)

        return endpoint

    async def console(request: Request, viewer: Viewer) -> Page:
        form = {k: str(v) for k, v in (await request.form()).items()} if request.method == 'POST' else None
        return await console_page(viewer, tokens, toolsets, dict(request.query_params), form)

    async def citations(request: Request, viewer: Viewer) -> Page:
        form = await request.form() if request.method == 'POST' else None
        return await citations_page(viewer, form)

    async def graph(request: Request, viewer: Viewer) -> Page:
        return await graph_page(request, viewer)

    async def quality_page(request: Request, viewer: Viewer) -> Page | Response:
        if quality is None or viewer.signed_in:
            raise NotFound('no quality page under a token')
        if request.method == 'POST':
            quality.start()
            return RedirectResponse('/quality', status_code=303)
        return quality.page()

    async def quality_status(request: Request, viewer: Viewer) -> Response:
        if quality is None or viewer.signed_in:
            return JSONResponse({'error': 'not found'}, status_code=404)
        return JSONResponse(quality.status())

    async def home(request: Request, viewer: Viewer) -> Response:
        return RedirectResponse('/documents', status_code=303)

    async def login(request: Request) -> Response:
        if tokens is None:
            return RedirectResponse('/documents', status_code=303)
        problem = ''
        if request.method == 'POST':
            form = await request.form()
            found = tokens.authenticate(str(form.get('token', '') or ''))
            if found is not None:
                response = RedirectResponse('/documents', status_code=303)
                response.set_cookie(
                    COOKIE,
                    sessions.open(found),
                    httponly=True,
                    samesite='strict',
                    path='/',
                    secure=request.url.scheme == 'https',  # behind a TLS proxy: never sent in clear
                )
                return response
            problem = 'That token is not valid.'
        body = markup(
            '<p class="error">{}</p><form method="post" action="/login"><label class="field">Bearer token '
            '<input type="password" name="token" autocomplete="off" id="token"></label>'
            '<button type="submit" id="sign-in">Sign in</button></form>',
            problem,
        )
        html = markup(
            '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign in · toolish-rag inspect</title>'
            '<link rel="icon" href="data:,"><link rel="stylesheet" href="/static/inspect.css"></head><body><main>'
            '<h1>Sign in</h1>{}</main>'
            '</body></html>',
            body,
        )
        return HTMLResponse(html, status_code=401 if problem else 200)

    async def logout(request: Request) -> Response:
        sessions.close(request.cookies.get(COOKIE))
        response = RedirectResponse('/login', status_code=303)
        response.delete_cookie(COOKIE, path='/')
        return response

    routes = [
        Route('/', page(home, 'Browse')),
        Route('/documents', page(documents_page, 'Browse')),
        Route('/document', page(document_page, 'Browse')),
        Route('/section', page(section_page, 'Browse')),
        Route('/chunk', page(chunk_page, 'Browse')),
        Route('/console', page(console, 'Tool console'), methods=['GET', 'POST']),
        Route('/graph', page(graph, 'Graph')),
        Route('/citations', page(citations, 'Citations'), methods=['GET', 'POST']),
        Route('/quality', page(quality_page, 'Quality'), methods=['GET', 'POST']),
        Route('/quality/status', page(quality_status, 'Quality')),
        Route('/login', login, methods=['GET', 'POST']),
        Route('/logout', logout, methods=['POST']),
        Mount('/static', StaticFiles(directory=STATIC), name='static'),
    ]
    app = Starlette(routes=routes)
    app.add_middleware(_Guard, trusted_hosts=hosts, loopback_clients=tokens is None)
    return app


def _narrowed(rag: ToolishRag[Any]) -> bool:
    """Whether ``rag`` carries a scope of its own (``--filter``), which the page header mentions."""
    try:
        return rag.retriever().filter is not None
    except ValueError:  # a per-run filter (a function of the run context): a scope too
        return True


class _Guard:
    """`guard` as a Starlette middleware class (outermost: every answer, errors included, gets the headers)."""

    def __init__(self, app: Any, trusted_hosts: frozenset[str] | None, loopback_clients: bool) -> None:
        self._app = guard(app, trusted_hosts=trusted_hosts, loopback_clients=loopback_clients)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self._app(scope, receive, send)
