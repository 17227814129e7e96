"""``toolish-rag ingest``: documents from files and folders into the store, idempotently.

What it prints depends on where its output goes. On a terminal: a progress bar, then the
summary and a table of failures (on stderr, as the bar). Otherwise (a pipe, a file, CI
logs): the summary and one ``failed: PATH: REASON`` line per failure on stdout, full
paths unwrapped, so ``grep failed:`` works. ``--json`` prints the whole report as JSON
instead (every `IngestReport` field), for scripts.
"""

from __future__ import annotations

import argparse
import sys
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
    parser.add_argument(
        '--json',
        action='store_true',
        help='print the report as JSON on stdout (added, updated, unchanged, removed, failed, skipped, '
        'warnings, chunks, seconds, ok); no progress bar',
    )
    parser.set_defaults(run=run)
    return parser


async def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from ..ingest import Chunker, ingest
    from ..ingest.report import format_lines, render_report

    store, _ = open_rag(args)
    options: dict[str, Any] = {}
    if args.chunk_size is not None:
        options['chunk_size'] = args.chunk_size
    if args.overlap is not None:
        options['overlap'] = args.overlap
    if args.tokenizer is not None:
        options['tokenizer'] = args.tokenizer
    interactive = sys.stdout.isatty() and not args.json
    bar = interactive and not args.no_progress  # the bar ends with the summary and the failure table
    report = await ingest(store, args.paths, chunker=Chunker(**options), sync=args.sync, progress=bar)
    if args.json:
        print(report.to_json())
    elif not interactive:
        sys.stdout.write(format_lines(report))
    elif not bar:
        Console(stderr=True).print(render_report(report))
    return 1 if report.failed else 0
