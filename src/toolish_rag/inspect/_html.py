"""Server-rendered HTML with every value escaped: `Html` marks markup this package wrote, everything else is text.

A record's title, text, metadata or uri is never markup: `esc` turns it into text, and no record
field ever becomes an ``href`` (links are built from ids by `url`). See docs/inspect.md#safety.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlencode

__all__ = ['Html', 'counted', 'esc', 'join', 'layout', 'markup', 'url']


class Html(str):
    """Markup this package wrote (safe to put in a page as it is)."""

    __slots__ = ()


def esc(value: object) -> Html:
    """``value`` as text in a page: markup is passed through, anything else is escaped (quotes too)."""
    if isinstance(value, Html):
        return value
    return Html(html.escape(value if isinstance(value, str) else str(value), quote=True))


def counted(n: int, noun: str) -> str:
    """``1 chunk``, ``2 chunks``, ``0 chunks`` (``noun`` singular; the plural adds an s)."""
    return f'{n} {noun}' if n == 1 else f'{n} {noun}s'


def markup(template: str, *values: object) -> Html:
    """``template`` (markup) with each ``{}`` replaced by a value escaped with `esc`."""
    return Html(template.format(*(esc(v) for v in values)))


def join(parts: Iterable[object], sep: str = '') -> Html:
    return Html(sep.join(esc(p) for p in parts))


def url(path: str, **params: object) -> str:
    """An internal link: ``path`` (one of this app's) with its query parameters encoded (``None`` left out)."""
    query = urlencode({k: v for k, v in params.items() if v is not None and v != ''})
    return f'{path}?{query}' if query else path


def pretty(value: Any) -> str:
    """A JSON value as readable text (metadata, arguments)."""
    return json.dumps(value, ensure_ascii=False, indent=2, default=str, sort_keys=True)


def table(headers: Iterable[str], rows: Iterable[Iterable[object]], *, css: str = '') -> Html:
    head = join(markup('<th>{}</th>', h) for h in headers)
    body = join(markup('<tr>{}</tr>', join(markup('<td>{}</td>', c) for c in row)) for row in rows)
    return markup('<table class="{}"><thead><tr>{}</tr></thead><tbody>{}</tbody></table>', css, head, body)


def definitions(items: Mapping[str, object]) -> Html:
    return markup('<dl>{}</dl>', join(markup('<dt>{}</dt><dd>{}</dd>', k, v) for k, v in items.items()))


_PAGES = (('Browse', '/documents'), ('Tool console', '/console'), ('Graph', '/graph'), ('Citations', '/citations'))


def layout(title: str, body: Html, *, scope: str, active: str, quality: bool = True, signed_in: bool = False) -> Html:
    """A whole page: the navigation bar, the scope this page is seen in, and ``body``."""
    pages = [*_PAGES, ('Quality', '/quality')] if quality else list(_PAGES)
    links = join(
        markup('<a href="{}" class="{}">{}</a>', path, 'active' if name == active else '', name) for name, path in pages
    )
    logout = (
        markup('<form method="post" action="/logout" class="logout"><button type="submit">Sign out</button></form>')
        if signed_in
        else Html('')
    )
    return markup(
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<title>{} · toolish-rag inspect</title><link rel="icon" href="data:,">'
        '<link rel="stylesheet" href="/static/inspect.css">'
        '<script src="/static/inspect.js" defer></script></head><body>'
        '<header><strong>toolish-rag inspect</strong><nav>{}</nav><span class="scope">scope: {}</span>{}</header>'
        '<main><h1>{}</h1>{}</main></body></html>',
        title,
        links,
        scope,
        logout,
        title,
        body,
    )
