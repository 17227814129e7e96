"""``toolish-rag search``: run one tool call and print what the model would read."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from ._common import open_rag
from ._filter_arg import add_filter_argument, scoped as scoped_rag
from ._terminal import json_safe, terminal_safe

if TYPE_CHECKING:
    from ..search import SearchHit
    from ..toolset import ToolishRag


def register(sub: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser('search', help='search the store through an agent tool')
    parser.add_argument(
        'query',
        help='the query (for --tool regex: the pattern); - reads one per line from stdin and answers each in turn '
        'from one process, the store opened and the model loaded once (a warm path for repeated queries)',
    )
    parser.add_argument(
        '--tool',
        choices=['hybrid', 'vector', 'text', 'regex'],
        default=None,
        help='which search tool (default: hybrid when available, else the first search the store has)',
    )
    parser.add_argument('--top-k', type=int, default=5)
    add_filter_argument(parser, 'a scope the search cannot leave')
    parser.add_argument('--json', action='store_true', help='print structured hits as JSON instead of the model text')
    parser.set_defaults(run=run)
    return parser


def _hit_json(hit: SearchHit) -> dict[str, Any]:
    from ..content import Chunk

    record = hit.record
    out: dict[str, Any] = {'id': record.id, 'score': hit.score, 'kind': record.kind, 'metadata': record.metadata}
    if isinstance(record, Chunk):
        out.update(
            document_uri=record.document_uri,
            document_title=record.document_title,
            section_path=list(record.section_path),
            text=record.urtext,
        )
    else:
        out.update(name=record.name, labels=sorted(record.labels), text=record.text)
    source = getattr(hit, 'source', None)  # a federated hit's member (toolish_rag.stores.federated.SourcedHit)
    if isinstance(source, str) and source:
        out['source'] = source
    return out


async def run(args: argparse.Namespace) -> int:
    _, rag = open_rag(args)
    rag = scoped_rag(rag, args.filter)
    searches: list[str] = [t for t in rag.offered_tools if t.endswith('_search')]
    if not searches:
        print('this store offers no search tool')
        return 2
    tool = f'{args.tool}_search' if args.tool else ('hybrid_search' if 'hybrid_search' in searches else searches[0])
    if tool not in searches:
        print(f'{tool} is not available for this store; it offers: {", ".join(searches)}')
        return 2
    if args.query != '-':
        return await _search(rag, tool, args.query, args, indent=2)
    code = 0
    for line in sys.stdin:  # per query one JSON line (--json), or its result and a blank line; flushed at once
        if query := line.strip():
            code = max(code, await _search(rag, tool, query, args, indent=None))
            print('' if args.json else '\n', end='', flush=True)
    return code


async def _search(rag: ToolishRag[Any], tool: str, query: str, args: argparse.Namespace, *, indent: int | None) -> int:
    """One tool call, printed as the model reads it (or its hits as JSON); 2 when the call was rejected."""
    from pydantic_ai import ModelRetry

    arguments: dict[str, Any] = {'top_k': args.top_k}
    arguments['pattern' if tool == 'regex_search' else 'query'] = query
    try:
        result = await rag.run_tool(tool, arguments)
    except ModelRetry as retry:
        print(terminal_safe(f'rejected: {retry}'))
        return 2
    if args.json:
        print(json_safe(json.dumps([_hit_json(h) for h in result.metadata['hits']], indent=indent)))
    else:
        print(terminal_safe(str(result.return_value)))
    return 0
