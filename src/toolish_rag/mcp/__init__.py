"""Serve a store's retrieval tools to any MCP client (``toolish-rag mcp``).

Needs the ``mcp`` extra: ``pip install "toolish-rag[mcp]"``. See docs/mcp.md.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # imported when first used (toolish_rag._lazy): a stdio server answers before the rest loads
    from ._limits import TokenLimits
    from ._server import HITS_META_KEY, SCOPE_KEY, BearerScopeMiddleware, build_server, http_app, serve_http
    from ._stdio import serve_stdio
    from ._tokens import TokenScope, TokenTable, load_token_table, scope_from_shorthand

__all__ = [
    'HITS_META_KEY',
    'SCOPE_KEY',
    'BearerScopeMiddleware',
    'TokenLimits',
    'TokenScope',
    'TokenTable',
    'build_server',
    'http_app',
    'load_token_table',
    'scope_from_shorthand',
    'serve_http',
    'serve_stdio',
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        '._limits': ('TokenLimits',),
        '._server': ('HITS_META_KEY', 'SCOPE_KEY', 'BearerScopeMiddleware', 'build_server', 'http_app', 'serve_http'),
        '._stdio': ('serve_stdio',),
        '._tokens': ('TokenScope', 'TokenTable', 'load_token_table', 'scope_from_shorthand'),
    },
)
