"""``toolish-rag ingest``: documents from files and folders into the store, idempotently."""

from __future__ import annotations

import argparse
from typing import Any

from .common import open_rag


def register(sub: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser('ingest', help='ingest files and folders into the store')
    parser.add_argument('paths', nargs='+', help='files or folders (walked recursively)')
    parser.add_argument('--sync', action='store_true', help='also remove stored documents whose files are gone')
    parser.add_argument(
        '--chunk-size', type=int, default=None, help='target chunk size (characters, or tokens with --tokenizer)'
    )
    parser.add_argument('--overlap', type=int, default=None, help='overlap between consecutive chunks of a section')
    parser.add_argument(
        '--tokenizer', default=None, help='count tokens with this tokenizer (e.g. tiktoken:cl100k_base)'
    )
    parser.add_argument('--no-progress', action='store_true', help='no progress bar')
    parser.set_defaults(run=run)
    return parser


async def run(args: argparse.Namespace) -> int:
    from ..ingest import Chunker, ingest

    store, _ = open_rag(args)
    options: dict[str, Any] = {}
    if args.chunk_size is not None:
        options['chunk_size'] = args.chunk_size
    if args.overlap is not None:
        options['overlap'] = args.overlap
    if args.tokenizer is not None:
        options['tokenizer'] = args.tokenizer
    report = await ingest(store, args.paths, chunker=Chunker(**options), sync=args.sync, progress=not args.no_progress)
    return 1 if report.failed else 0
