"""`SignIn`: the inspector's token sign-in and sign-out pages (only under a token file).

A valid token opens a server-side session whose id goes in an HTTP-only, same-site cookie; see
docs/inspect.md#safety.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from ._access import COOKIE, Sessions
from ._html import markup

if TYPE_CHECKING:
    from ..mcp import TokenTable

__all__ = ['SignIn']

_FORM = (
    '<p class="error">{}</p><form method="post" action="/login"><label class="field">Bearer token '
    '<input type="password" name="token" autocomplete="off" id="token"></label>'
    '<button type="submit" id="sign-in">Sign in</button></form>'
)
_PAGE = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign in · toolish-rag inspect</title>'
    '<link rel="icon" href="data:,"><link rel="stylesheet" href="/static/inspect.css"></head><body><main>'
    '<h1>Sign in</h1>{}</main>'
    '</body></html>'
)


@dataclass(frozen=True)
class SignIn:
    """``/login`` and ``/logout`` over ``tokens`` (``None``: nothing to sign in to) and the app's ``sessions``."""

    tokens: TokenTable | None
    sessions: Sessions

    async def login(self, request: Request) -> Response:
        if self.tokens is None:
            return RedirectResponse('/documents', status_code=303)
        problem = ''
        if request.method == 'POST':
            form = await request.form()
            found = self.tokens.authenticate(str(form.get('token', '') or ''))
            if found is not None:
                response = RedirectResponse('/documents', status_code=303)
                response.set_cookie(
                    COOKIE,
                    self.sessions.open(found),
                    httponly=True,
                    samesite='strict',
                    path='/',
                    secure=request.url.scheme == 'https',  # behind a TLS proxy: never sent in clear
                )
                return response
            problem = 'That token is not valid.'
        html = markup(_PAGE, markup(_FORM, problem))
        return HTMLResponse(html, status_code=401 if problem else 200)

    async def logout(self, request: Request) -> Response:
        self.sessions.close(request.cookies.get(COOKIE))
        response = RedirectResponse('/login', status_code=303)
        response.delete_cookie(COOKIE, path='/')
        return response
