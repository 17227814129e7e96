"""``toolish-rag mcp``: serve the store's tools to any MCP client (stdio, or streamable HTTP)."""

from __future__ import annotations

import argparse
import ipaddress
import sys
from typing import Any

from .._extras import install_command
from ._common import open_rag
from ._extras import MCP, MCP_HTTP, require
from ._filter_arg import add_filter_argument, scoped as scoped_rag


def register(sub: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        'mcp',
        help='serve the tools over MCP (stdio, or streamable HTTP with --http)',
        description="Serve the store's retrieval tools to MCP clients: the same tools, schemas and results an "
        'in-process agent gets. Stdio by default (for Claude Desktop and other clients that launch servers); '
        'with --http, streamable HTTP where each bearer token (--tokens) is scoped to a filter.',
    )
    parser.add_argument(
        '--http', metavar='HOST:PORT', default=None, help='serve streamable HTTP on HOST:PORT (e.g. 127.0.0.1:8765)'
    )
    parser.add_argument(
        '--tokens', metavar='FILE', default=None, help='token file (TOML or JSON) mapping bearer tokens to scopes'
    )
    parser.add_argument(
        '--no-auth', action='store_true', help='serve HTTP without tokens (only allowed on a loopback address)'
    )
    parser.add_argument('--path', default='/mcp', help='HTTP path of the MCP endpoint (default: /mcp)')
    parser.add_argument(
        '--prefixed-names',
        action='store_true',
        help='list the tools under their full names (NAME_hybrid_search) rather than their short ones '
        '(hybrid_search), for a client that does not put its key for the server in front of tool names '
        '(docs/mcp.md#tool-names)',
    )
    parser.add_argument(
        '--stateless',
        action='store_true',
        help='keep no MCP session between HTTP requests, so that any of several servers behind a load balancer '
        'can answer any request (see docs/deploy.md)',
    )
    add_filter_argument(parser, 'a scope applied to every call, for every client (and token)')
    limits = parser.add_argument_group(
        'limits per token (HTTP)', "defaults for every token; a token file entry's `limits` sets its own (docs/mcp.md)"
    )
    for flag, field, kind, what in _LIMIT_FLAGS:
        limits.add_argument(flag, dest=field, type=kind, default=None, metavar='N', help=what)
    parser.set_defaults(run=run)
    return parser


_LIMIT_FLAGS: list[tuple[str, str, type[int] | type[float], str]] = [
    ('--max-sessions-per-token', 'max_sessions', int, 'open MCP sessions per token (default: 16)'),
    ('--session-idle-timeout', 'idle_timeout', float, 'seconds before an idle session is closed (default: 600)'),
    ('--max-concurrent-per-token', 'max_concurrent', int, 'requests in flight per token (default: 8)'),
    ('--requests-per-minute', 'requests_per_minute', int, 'requests per minute per token (default: 600)'),
]


def _limits(args: argparse.Namespace) -> dict[str, int | float]:
    """The limit flags given (validated by `TokenLimits` when the server is built)."""
    return {field: getattr(args, field) for _, field, _, _ in _LIMIT_FLAGS if getattr(args, field) is not None}


def _host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(':')
    if not sep or not port.isdigit():
        raise ValueError(f'--http takes HOST:PORT (e.g. 127.0.0.1:8765), got {value!r}')
    host = host.strip('[]') or '127.0.0.1'
    return host, int(port)


def _is_loopback(host: str) -> bool:
    if host == 'localhost':
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def run(args: argparse.Namespace) -> int:
    require(MCP, *([MCP_HTTP] if args.http is not None else []))
    try:
        from ..mcp import TokenLimits  # the rest when used: a stdio start imports neither tokens nor filters
    except ImportError as e:  # pragma: no cover - depends on the installed extras
        print(f'toolish-rag mcp needs the mcp extra: {install_command("mcp")} ({e})', file=sys.stderr)
        return 2
    tokens = None
    limits = TokenLimits().with_overrides(_limits(args))
    if args.http is None:
        if args.tokens or args.no_auth or args.stateless or _limits(args):
            raise ValueError(
                '--tokens, --no-auth, --stateless and the limits per token only apply with --http (stdio has no tokens)'
            )
    else:
        host, port = _host_port(args.http)
        if args.tokens and args.no_auth:
            raise ValueError('give either --tokens or --no-auth, not both')
        if args.tokens:
            from ..mcp import load_token_table

            tokens = load_token_table(args.tokens)
        elif not args.no_auth:
            raise ValueError('--http needs --tokens FILE (see docs/mcp.md), or --no-auth on a loopback address')
        elif not _is_loopback(host):
            raise ValueError(f'--no-auth is only allowed on a loopback address, not {host!r}')
    short_names = not args.prefixed_names
    if args.http is None:
        from ._mcp_startup import serve_stdio_command

        await serve_stdio_command(args, short_names=short_names)
        return 0
    from ..mcp import serve_http

    _, rag = open_rag(args)
    rag = scoped_rag(rag, args.filter)
    count = len(tokens.labels) if tokens else 0
    scoped = f'{count} token{"" if count == 1 else "s"}' if tokens else 'no authentication'
    stateless = ', stateless' if args.stateless else ''
    print(f'toolish-rag: MCP on http://{args.http}{args.path} ({scoped}{stateless}); Ctrl-C stops', file=sys.stderr)
    await serve_http(
        rag,
        tokens,
        host=host,
        port=port,
        path=args.path,
        stateless=args.stateless,
        limits=limits,
        short_names=short_names,
    )
    return 0
