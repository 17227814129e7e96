"""Serve a store's retrieval tools to any MCP client (``toolish-rag mcp``).

Needs the ``mcp`` extra: ``pip install "toolish-rag[mcp]"``. See docs/mcp.md.
"""

from ._limits import TokenLimits
from ._server import HITS_META_KEY, SCOPE_KEY, BearerScopeMiddleware, build_server, http_app, serve_http, serve_stdio
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
