"""What a page handler returns, and the two ways a page says no (nothing found, a bad request)."""

from __future__ import annotations

from dataclasses import dataclass

from ._html import Html

__all__ = ['BadRequest', 'NotFound', 'Page']


@dataclass(frozen=True)
class Page:
    """A page's title and body (the layout adds the navigation and the scope)."""

    title: str
    body: Html
    status: int = 200


class NotFound(Exception):
    """Nothing with this id in the viewer's scope: a foreign id is answered exactly like a missing one."""


class BadRequest(Exception):
    """A parameter the page cannot use; the message is shown (escaped)."""
