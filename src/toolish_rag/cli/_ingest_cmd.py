"""``toolish-rag ingest``: documents from files and folders into the store, idempotently.

What it prints (terminal, pipe, ``--json``) and ``--watch``/``--ray``: see docs/ingestion.md.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ._common import open_store_for, release_store_locks
from ._extras import RAY, TOKENS, WATCH, require
from ._interrupt import abort, interruptible
from ._reembed import add_reembed_flag, reembedded_store

if TYPE_CHECKING:
    from rich.console import Console

    from ..ingest import IngestLimits, IngestOptions, IngestReport


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
        '-v', '--verbose', action='store_true', help='list every skipped file and warning (default: the first 10)'
    )
    parser.add_argument(
        '--json',
        action='store_true',
        help='print the report as JSON on stdout (added, updated, unchanged, removed, failed, skipped, '
        'warnings, chunks, seconds, ok); no progress bar',
    )
    parser.add_argument(
        '--watch',
        action='store_true',
        help='then keep watching: re-ingest changed files and remove deleted ones as they happen, until Ctrl-C '
        '(needs toolish-rag[watch])',
    )
    parser.add_argument(
        '--ray',
        nargs='?',
        const=True,
        default=None,
        metavar='ADDRESS',
        help='parse, chunk and embed on Ray (needs toolish-rag[ray]): ADDRESS of a cluster (e.g. auto, '
        'ray://head:10001), or none for $RAY_ADDRESS, else a local one; put it after the paths',
    )
    parser.add_argument(
        '--follow-symlinks',
        action='store_true',
        help='also ingest files that symlinks lead to outside the given folders (skipped and reported by default)',
    )
    parser.add_argument(
        '--reader',
        choices=('default', 'unstructured'),
        default='default',
        help='unstructured: read DOCX, PPTX, XLSX, HTML, Markdown and text with the unstructured library '
        '(needs toolish-rag[unstructured]; the default readers read the rest; docs/ingestion.md)',
    )
    _walk_flags(parser)
    _ocr_flags(parser)
    _limit_flags(parser)
    add_reembed_flag(parser)
    parser.set_defaults(run=run)
    return parser


def _walk_flags(parser: argparse.ArgumentParser) -> None:
    """``--exclude`` and ``--no-ignore``: which files of the walked folders are read (docs/ingestion.md#what-is-read)."""
    parser.add_argument(
        '--exclude',
        action='append',
        default=[],
        metavar='GLOB',
        help="leave out files and folders matching GLOB, as in .gitignore ('*.png', 'img/', 'docs/**/drafts'), "
        'matched against the path under each given folder (repeatable)',
    )
    parser.add_argument(
        '--no-ignore',
        action='store_true',
        help="also read what the tree's .gitignore files ignore (honoured by default)",
    )


def _ocr_flags(parser: argparse.ArgumentParser) -> None:
    """``--ocr`` and ``--ocr-language`` (docs/ingestion.md#ocr)."""
    parser.add_argument(
        '--ocr',
        choices=('never', 'auto', 'always'),
        default='auto',
        help='read scanned PDF pages and images (PNG, JPEG, TIFF) with Tesseract: auto (default) where a page '
        'has no usable text layer, always every page, never',
    )
    parser.add_argument(
        '--ocr-language',
        action='append',
        default=None,
        metavar='LANG',
        help='OCR language (de, deu, deu+eng; repeatable; default: --language), among the installed Tesseract '
        'data (tesseract --list-langs); English when none is installed',
    )


def _limit_flags(parser: argparse.ArgumentParser) -> None:
    """The per-file bounds most worth changing; the others keep `IngestLimits`' defaults (docs/ingestion.md)."""
    parser.add_argument(
        '--max-seconds',
        type=float,
        default=None,
        metavar='S',
        help='wall time to parse one file before it fails (default 120; 0: no limit)',
    )
    parser.add_argument(
        '--max-memory',
        type=int,
        default=None,
        metavar='MIB',
        help='memory of a parse worker process per file, in MiB (default 2048; 0: no limit)',
    )
    parser.add_argument(
        '--executor',
        choices=('process', 'thread', 'auto'),
        default=None,
        help='where files are parsed: process (the default while --max-seconds or --max-memory is on: a file '
        "over either is killed with its worker), thread (the bounds hold only at the readers' checkpoints, "
        'memory not at all), auto (processes from 64 files)',
    )


async def run(args: argparse.Namespace) -> int:
    from ..ingest import Chunker, IngestLimits, IngestOptions, ingest
    from ..ingest._report import IngestInterrupted

    _require_extras(args)
    store = await reembedded_store(args) if args.reembed else open_store_for(args, write=True)
    options: dict[str, Any] = {}
    if args.chunk_size is not None:
        options['chunk_size'] = args.chunk_size
    if args.overlap is not None:
        options['overlap'] = args.overlap
    if args.tokenizer is not None:
        options['tokenizer'] = args.tokenizer
    interactive = sys.stdout.isatty() and not args.json
    bar = interactive and not args.no_progress  # the bar ends with the summary and the failure table
    limits = IngestLimits()
    if args.max_seconds is not None:
        limits = replace(limits, seconds=args.max_seconds or None)
    if args.max_memory is not None:
        limits = replace(limits, memory_bytes=args.max_memory * 2**20 or None)
    if args.ray is not None:
        from ..ingest import RayExecutor

        executor: Any = RayExecutor(None if args.ray is True else args.ray)
    else:
        executor = executor_for(args.executor, limits)
    settings = IngestOptions(
        chunker=Chunker(**options),
        sync=args.sync,
        progress=bar,
        executor=executor,
        limits=limits,
        follow_symlinks=args.follow_symlinks,
        reader=args.reader,
        ocr=args.ocr,
        ocr_languages=args.ocr_language,
        exclude=tuple(args.exclude),
        gitignore=not args.no_ignore,
    )
    printer = _ReportPrinter(args.json, interactive, bar, watching=args.watch, verbose=args.verbose)
    if args.watch:
        return await _watch(store, args.paths, settings, printer)
    with interruptible(release_store_locks) as interrupt:
        try:
            report = await ingest(store, args.paths, settings)
        except IngestInterrupted as stopped:  # Ctrl-C: what was done, then exit 130 at once
            printer(stopped.report)
            interrupt.stopped()
        except asyncio.CancelledError:
            if interrupt.requested:  # before any file was settled
                interrupt.stopped()
            raise
    printer(report)
    return 1 if report.failed else 0


def executor_for(chosen: str | None, limits: IngestLimits) -> str:
    """``--executor``, else processes whenever a time or memory bound applies (the defaults do): only a
    worker process can be stopped mid-file and have its memory measured (docs/security.md#untrusted-trees)."""
    if chosen is not None:
        return chosen
    return 'process' if limits.seconds is not None or limits.memory_bytes is not None else 'auto'


def _require_extras(args: argparse.Namespace) -> None:
    """Name the extra to install, before any work, when an option lacks its library."""
    needs = [WATCH] if args.watch else []
    needs += [RAY] if args.ray is not None else []
    needs += [TOKENS] if (args.tokenizer or '').startswith('tiktoken:') else []
    require(*needs)
    if args.ocr == 'always':
        from ..ingest._readers._ocr import INSTALL_TESSERACT, tesseract_path

        if tesseract_path() is None:
            raise SystemExit(f'toolish-rag: --ocr always: {INSTALL_TESSERACT}')
    if args.reader == 'unstructured':
        from ..ingest._readers.unstructured import require_unstructured

        try:
            require_unstructured()
        except RuntimeError as exc:
            raise SystemExit(f'toolish-rag: --reader unstructured: {exc}') from None


async def _watch(store: Any, paths: list[str], settings: IngestOptions, printer: _ReportPrinter) -> int:
    """The initial run, then the change batches, each printed as it comes; a summary once stopped."""
    from rich.console import Console

    from ..ingest._watch import watch

    stop = asyncio.Event()
    console = Console(stderr=True)
    with _stopping_on_signals(stop, console):
        total = await watch(store, paths, settings, stop_event=stop, on_report=printer)
    console.print(
        f'watch stopped after {printer.printed - 1} change batch(es): {total.summary()}',
        highlight=False,
        soft_wrap=True,
    )
    return 0


@dataclass(slots=True)
class _ReportPrinter:
    """Prints each report where ``toolish-rag ingest`` prints one (see docs/ingestion.md#reports).

    On a terminal with the progress bar, the first report (the run's) is already printed
    under the bar; with ``watching``, the later ones (change batches) get a time stamp, and
    ``--json`` prints one object a line, so that the stream stays line-delimited JSON.
    """

    as_json: bool
    interactive: bool
    bar: bool
    watching: bool = False
    verbose: bool = False
    printed: int = 0

    def __call__(self, report: IngestReport) -> None:
        from rich.console import Console

        from ..ingest._report import SHOWN, format_lines, render_report

        first = self.printed == 0
        self.printed += 1
        if self.as_json:
            print(report.to_json(indent=None if self.watching else 2), flush=True)
        elif not self.interactive:
            sys.stdout.write(format_lines(report, verbose=self.verbose))
            sys.stdout.flush()
        elif not (first and self.bar):
            console = Console(stderr=True)
            if not first:
                console.print(f'[dim]{time.strftime("%H:%M:%S")}[/] ', end='')
            console.print(render_report(report, verbose=self.verbose))
        elif self.verbose and max(len(report.skipped), len(report.warnings)) > SHOWN:  # the bar's lists were cut
            Console(stderr=True).print(render_report(report, verbose=True))
        if first and self.watching:
            Console(stderr=True).print('[dim]watching for changes (Ctrl-C to stop)[/]')


@contextmanager
def _stopping_on_signals(stop: asyncio.Event, console: Console) -> Iterator[None]:
    """Ctrl-C (or SIGTERM) sets ``stop``; a second one aborts at once (`abort`: one line, exit 130).

    Stopping finishes the batch in progress, which may take a while on a big one; aborting it
    is safe too (ingestion commits whole documents; the next run finishes the rest).
    """
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []

    def first(sig: signal.Signals) -> None:
        stop.set()
        signal.signal(sig, lambda signum, frame: abort(release_store_locks))
        console.print('[dim]stopping after the batch in progress (Ctrl-C again to abort)[/]')

    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, first, sig)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals here
            continue
        installed.append(sig)
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
