"""`create_app`: the inspector's Starlette app, one route per page, each seen through the request's `Viewer`.

See docs/inspect.md.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from ..errors import InvalidRequestError
from ..pictures import PageFiles
from ..toolset import ToolishRag
from ._access import IDLE_SECONDS, LOOPBACK_NAMES, ScopedToolsets, Sessions, Viewer, guard, viewer_for
from ._browse import chunk_page, document_page, documents_page, section_page
from ._citation_page import citation_page, page_image
from ._citations import citations_page
from ._console import console_page
from ._graph import graph_page
from ._html import layout, markup
from ._page import BadRequest, NotFound, Page
from ._quality import Quality
from ._sign_in import SignIn

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
    page_roots: Sequence[str | Path] = (),
    session_idle_seconds: float = IDLE_SECONDS,
) -> Starlette:
    """The inspector over ``rag`` (its scope, e.g. ``rag.with_metadata_filter(...)``, applies to every page).

    ``tokens``: a token file's `toolish_rag.mcp.TokenTable`: every request then signs in with a token and is
    scoped like that token's MCP session. ``eval_data``: a BEIR folder the Quality page may evaluate (into a
    new in-memory store with ``eval_embedder``, never the inspected one; not offered under tokens).
    ``ingest_report``: the last ingest's report, whose failures the Quality page lists. ``trusted_hosts``:
    the host names requests may be addressed to; default: the loopback names without tokens, any with them.
    ``session_idle_seconds``: a sign-in unused this long is signed out (each token keeps its own sessions).
    Without tokens only clients on this machine (a loopback address) are answered. ``page_roots``: the folders
    whose ingested PDFs and images a citation's page may be drawn from (docs/inspect.md#citation-pages).
    """
    quality = Quality(eval_data, eval_embedder, ingest_report) if tokens is None else None
    pages = _Pages(
        ScopedToolsets(rag),
        tokens,
        quality,
        _scope_note(rag, tokens),
        PageFiles.under(*page_roots),
        Sessions(idle_seconds=session_idle_seconds),
    )
    app = Starlette(routes=pages.routes())
    hosts = trusted_hosts if trusted_hosts is not None else (LOOPBACK_NAMES if tokens is None else None)
    app.add_middleware(_Guard, trusted_hosts=hosts, loopback_clients=tokens is None)
    return app


@dataclass
class _Pages:
    """The app's pages: each handler runs for a signed-in `Viewer` and its `Page` is laid out here."""

    toolsets: ScopedToolsets
    tokens: TokenTable | None
    quality: Quality | None
    scope_note: str
    """What the header says of the scope before the viewer's own part (no token, the app's filter)."""
    files: PageFiles = field(default_factory=PageFiles)
    """Where citation pages are drawn from."""
    sessions: Sessions = field(default_factory=Sessions)

    def routes(self) -> list[BaseRoute]:
        sign_in = SignIn(self.tokens, self.sessions)
        return [
            Route('/', self.page(self.home, 'Browse')),
            Route('/documents', self.page(documents_page, 'Browse')),
            Route('/document', self.page(document_page, 'Browse')),
            Route('/section', self.page(section_page, 'Browse')),
            Route('/chunk', self.page(chunk_page, 'Browse')),
            Route('/console', self.page(self.console, 'Tool console'), methods=['GET', 'POST']),
            Route('/graph', self.page(graph_page, 'Graph')),
            Route('/citations', self.page(self.citations, 'Citations'), methods=['GET', 'POST']),
            Route('/citation', self.page(self.citation, 'Citations')),
            Route('/page-image', self.page(self.page_image, 'Citations')),
            Route('/quality', self.page(self.quality_page, 'Quality'), methods=['GET', 'POST']),
            Route('/quality/status', self.page(self.quality_status, 'Quality')),
            Route('/login', sign_in.login, methods=['GET', 'POST']),
            Route('/logout', sign_in.logout, methods=['POST']),
            Mount('/static', StaticFiles(directory=STATIC), name='static'),
        ]

    def page(self, handler: Handler, active: str) -> Callable[[Request], Awaitable[Response]]:
        """``handler`` as an endpoint: signed in first, its missing or bad requests answered as pages."""

        async def endpoint(request: Request) -> Response:
            viewer = viewer_for(self.toolsets, self.tokens, self.sessions, request.headers, request.cookies)
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
            return self.render(outcome, viewer, active)

        return endpoint

    def render(self, page: Page, viewer: Viewer, active: str) -> HTMLResponse:
        html = layout(
            page.title,
            page.body,
            scope=viewer.describe(self.scope_note),
            active=active,
            quality=self.quality is not None,
            signed_in=viewer.signed_in,
        )
        return HTMLResponse(html, status_code=page.status)

    async def home(self, request: Request, viewer: Viewer) -> Response:
        return RedirectResponse('/documents', status_code=303)

    async def console(self, request: Request, viewer: Viewer) -> Page:
        form = {k: str(v) for k, v in (await request.form()).items()} if request.method == 'POST' else None
        return await console_page(viewer, self.tokens, self.toolsets, dict(request.query_params), form)

    async def citations(self, request: Request, viewer: Viewer) -> Page:
        form = await request.form() if request.method == 'POST' else None
        return await citations_page(viewer, form, drawn=bool(self.files.roots))

    async def citation(self, request: Request, viewer: Viewer) -> Page:
        return await citation_page(request, viewer, self.files)

    async def page_image(self, request: Request, viewer: Viewer) -> Response:
        return await page_image(request, viewer, self.files)

    async def quality_page(self, request: Request, viewer: Viewer) -> Page | Response:
        if self.quality is None or viewer.signed_in:
            raise NotFound('no quality page under a token')
        if request.method == 'POST':
            self.quality.start()
            return RedirectResponse('/quality', status_code=303)
        return self.quality.page()

    async def quality_status(self, request: Request, viewer: Viewer) -> Response:
        if self.quality is None or viewer.signed_in:
            return JSONResponse({'error': 'not found'}, status_code=404)
        return JSONResponse(self.quality.status())


def _scope_note(rag: ToolishRag[Any], tokens: TokenTable | None) -> str:
    """The header's scope words that hold for every viewer: no token, and the app's own filter."""
    note = 'no token' if tokens is None else ''
    if _narrowed(rag):
        note += " (the app's own filter applies)" if note else "the app's own filter applies"
    return note


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
