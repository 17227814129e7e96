"""``toolish-rag inspect``: a local web inspector of what the agent sees (see docs/inspect.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ._common import open_rag
from ._extras import MCP, Extra, require
from ._filter_arg import add_filter_argument, scoped as scoped_rag
from ._mcp_cmd import _host_port, _is_loopback

WEB = Extra('starlette', 'web', 'inspect')
WEB_SERVER = Extra('uvicorn', 'web', 'inspect')
TOKENS_NEED = Extra('mcp', MCP.extra, 'inspect --tokens')


def register(sub: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        'inspect',
        help='a local web app showing what the agent sees (documents, tool results, graph, citations, quality)',
        description='Serve a web inspector of the store: browse documents and chunks, run any tool as the model '
        "would under a scope, walk the graph, check a draft answer's citations, evaluate retrieval. Binds "
        '127.0.0.1 by default; another host needs --tokens (each token sees only its scope, as over MCP).',
    )
    parser.add_argument(
        '--http', metavar='HOST:PORT', default='127.0.0.1:8765', help='where to listen (default: 127.0.0.1:8765)'
    )
    parser.add_argument(
        '--tokens',
        metavar='FILE',
        default=None,
        help='token file (TOML or JSON, as toolish-rag mcp reads it): every visitor signs in with a token and '
        'sees only its scope',
    )
    parser.add_argument(
        '--eval-data',
        metavar='DIR',
        default=None,
        help='a BEIR folder the Quality page may evaluate (into a new in-memory store; not offered with --tokens)',
    )
    parser.add_argument(
        '--ingest-report',
        metavar='FILE',
        default=None,
        help='the JSON report of the last ingest (toolish-rag ingest --json), whose failures the Quality page lists',
    )
    parser.add_argument(
        '--page-root',
        metavar='DIR',
        action='append',
        default=None,
        help='a folder whose ingested PDFs and images citation pages may be drawn from (repeatable; default: none)',
    )
    add_filter_argument(parser, 'a scope applied to every page and call, for every visitor (and token)')
    parser.set_defaults(run=run)
    return parser


def _report(path: str) -> Any:
    """The report ``toolish-rag ingest --json`` wrote, read back (its failures are what the Quality page lists)."""
    from ..ingest import IngestIssue, IngestReport

    def issues(data: dict[str, Any], key: str) -> list[IngestIssue]:
        return [IngestIssue(str(i['path']), str(i['reason'])) for i in data.get(key, [])]

    try:
        data = json.loads(Path(path).read_text(encoding='utf-8'))
        return IngestReport(
            added=list(data.get('added', [])),
            updated=list(data.get('updated', [])),
            unchanged=list(data.get('unchanged', [])),
            removed=list(data.get('removed', [])),
            failed=issues(data, 'failed'),
            skipped=issues(data, 'skipped'),
            warnings=issues(data, 'warnings'),
            chunks=int(data.get('chunks', 0)),
            seconds=float(data.get('seconds', 0.0)),
            interrupted=bool(data.get('interrupted', False)),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise ValueError(f'--ingest-report {path}: not a report of toolish-rag ingest --json ({e})') from None


async def run(args: argparse.Namespace) -> int:
    require(WEB, WEB_SERVER, *([TOKENS_NEED] if args.tokens else []))
    host, port = _host_port(args.http)
    tokens = None
    if args.tokens:
        from ..mcp import load_token_table

        tokens = load_token_table(args.tokens)
    elif not _is_loopback(host):
        raise ValueError(f'inspect on {host!r} (not a loopback address) needs --tokens FILE (see docs/inspect.md)')
    if args.eval_data and tokens is not None:
        raise ValueError('--eval-data is not offered with --tokens: evaluation runs on a loopback inspector only')
    if args.eval_data and not Path(args.eval_data).is_dir():
        raise ValueError(f'--eval-data {args.eval_data}: no such folder')
    report = _report(args.ingest_report) if args.ingest_report else None
    store, rag = open_rag(args)
    rag = scoped_rag(rag, args.filter)
    import uvicorn

    from .._store_attributes import embedder_of

    embedder = args.embedder or embedder_of(store)  # eval embeds as the inspected store does

    from ..inspect import create_app

    app = create_app(
        rag,
        tokens=tokens,
        eval_data=args.eval_data,
        eval_embedder=embedder,
        ingest_report=report,
        page_roots=args.page_root or (),
    )
    signed = f'{len(tokens.labels)} tokens' if tokens else 'loopback, no tokens'
    print(f'toolish-rag: inspector on http://{args.http}/ ({signed}); Ctrl-C stops', file=sys.stderr)
    config = uvicorn.Config(app, host=host, port=port, log_level='warning', lifespan='off')
    await uvicorn.Server(config).serve()
    return 0
