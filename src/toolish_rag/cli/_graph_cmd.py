"""``toolish-rag graph build`` and ``toolish-rag graph show ID``: write the graph, and walk it as the model would.

See docs/graph.md#from-the-command-line.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..manifest import ManifestError, read_manifest, update_manifest
from ._common import MODEL_ENV, open_rag, store_spec
from ._filter_arg import add_filter_argument, scoped as scoped_rag
from ._terminal import terminal_safe

if TYPE_CHECKING:  # the builders and pydantic-ai are imported when a graph command runs (a light `toolish-rag`)
    from ..graph_builders import BuildReport, GraphBuilder

__all__ = ['LINKS', 'register', 'run']

LINKS = ('structure', 'code', 'extract', 'exact', 'vector')
"""The builders ``--link`` names, in the order they run: those that create entities (code, extract) before the
linkers that match them (exact, vector), so one run is complete and a second writes nothing."""

_DEFAULT_LINKS = ('structure', 'exact')


def register(sub: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        'graph',
        help='build the graph (graph build) or walk it from a node as the model would (graph show ID)',
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument('action', choices=['build', 'show'], help='build the graph, or show the walk from a node')
    parser.add_argument(
        'id', nargs='?', default=None, help='show: the node to walk from (chunk, section, document or entity id)'
    )
    build = parser.add_argument_group('build')
    build.add_argument(
        '--link',
        action='append',
        choices=LINKS,
        default=None,
        help='a builder to run (repeatable; default: structure and exact)',
    )
    build.add_argument(
        '--scope-key',
        action='append',
        default=[],
        metavar='KEY',
        help='metadata key relations and entities inherit from their documents, and that separates merging '
        "(repeatable, e.g. --scope-key tenant); scope never depends on it: derived records carry their chunk's metadata"
        '; recorded with the store, so later builds use it without being told',
    )
    build.add_argument(
        '--merge-across',
        action='append',
        default=None,
        metavar='KEY',
        help='extract: a metadata key whose values may differ between mentions merged into one entity (repeatable; '
        'default: the per-file keys ingestion records, path, uri, file_name...); every other key keeps entities apart',
    )
    build.add_argument('--case-insensitive', action='store_true', help='exact: match names ignoring case')
    build.add_argument('--model', '-m', default=None, help=f'extract: the pydantic-ai model (default: ${MODEL_ENV})')
    build.add_argument('--json', action='store_true', help='print the build reports as JSON')
    show = parser.add_argument_group('show')
    show.add_argument('--hops', type=int, default=1, help='how far to walk (1-3, default 1)')
    show.add_argument(
        '--edge-type', action='append', default=None, metavar='TYPE', help='edge types to follow (repeatable)'
    )
    show.add_argument('--direction', choices=['out', 'in', 'both'], default='both')
    show.add_argument('--max-nodes', type=int, default=50)
    add_filter_argument(show, 'a scope the walk cannot leave')
    parser.set_defaults(run=run)
    return parser


def builders_for(args: argparse.Namespace, scope_keys: Sequence[str] | None = None) -> list[GraphBuilder]:
    """The builders ``--link`` asked for, configured from the other options, in `LINKS` order.

    ``scope_keys``: the keys to build with (default: ``--scope-key``'s).
    """
    from ..graph_builders import CodeGraphBuilder, ExactNameLinker, ExtractionBuilder, StructureBuilder, VectorLinker

    links = args.link or list(_DEFAULT_LINKS)
    scope = tuple(args.scope_key if scope_keys is None else scope_keys)
    chosen: list[GraphBuilder] = []
    for link in LINKS:
        if link not in links:
            continue
        if link == 'structure':
            chosen.append(StructureBuilder(scope_keys=scope))
        elif link == 'exact':
            chosen.append(ExactNameLinker(scope_keys=scope, case_sensitive=not args.case_insensitive))
        elif link == 'vector':
            chosen.append(VectorLinker(scope_keys=scope))
        elif link == 'code':
            chosen.append(CodeGraphBuilder(scope_keys=scope))
        else:
            model = args.model or os.environ.get(MODEL_ENV)
            if not model:
                raise SystemExit(f'--link extract needs a model: pass --model or set ${MODEL_ENV}')
            if args.merge_across is None:
                chosen.append(ExtractionBuilder(model))
            else:
                chosen.append(ExtractionBuilder(model, merge_across=tuple(args.merge_across)))
    return chosen


def _store_folder(spec: str) -> tuple[str, Path] | None:
    """``(kind, folder)`` of a store spec naming a local folder; ``None`` for an unsaved or remote store."""
    kind, _, location = spec.partition(':')
    return None if not location or '://' in location else (kind, Path(location))


def _recorded_scope_keys(folder: tuple[str, Path] | None) -> tuple[str, ...]:
    """The scope keys the store's manifest records (docs/graph.md, Scope keys); none without a manifest."""
    if folder is None:
        return ()
    try:
        manifest = read_manifest(folder[1])
    except ManifestError as e:
        raise SystemExit(str(e)) from None
    if manifest is None or not manifest.scope_keys:
        return ()
    print(f'graph build: scope keys {", ".join(manifest.scope_keys)} (recorded with the store)', file=sys.stderr)
    return manifest.scope_keys


def _record_scope_keys(folder: tuple[str, Path] | None, scope_keys: tuple[str, ...]) -> None:
    """Record ``--scope-key``'s keys in the store's manifest, so later builds use them without being told."""
    if not scope_keys:
        return
    try:
        # Only into a manifest the store wrote itself (with its embedder): never one that would hide an older store's.
        if folder is None or read_manifest(folder[1]) is None:
            print('graph build: scope keys not recorded (this store keeps no manifest)', file=sys.stderr)
            return
        update_manifest(folder[1], folder[0], lambda m: dataclasses.replace(m, scope_keys=scope_keys))
    except ManifestError as e:
        raise SystemExit(str(e)) from None


def report_line(report: BuildReport) -> str:
    line = (
        f'{report.builder}: {report.documents_built} of {report.documents_seen} documents built, '
        f'{report.relations_written} relations written, {report.relations_deleted} deleted, '
        f'{report.entities_written} entities written'
    )
    if report.model_calls:
        line += f', {report.model_calls} model calls'
    if report.failures:
        line += f', {len(report.failures)} failed:' + ''.join(f'\n  {failure}' for failure in report.failures)
    return line


async def run(args: argparse.Namespace) -> int:
    from pydantic_ai import ModelRetry

    from ..graph_builders import GraphBuildStore, build_graph

    store, rag = open_rag(args, write=args.action == 'build')
    if args.action == 'build':
        if args.id is not None:
            print('toolish-rag graph build takes no id', file=sys.stderr)
            return 2
        if not isinstance(store, GraphBuildStore):
            print(f'this store ({type(store).__name__}) holds no graph; use memory or lancedb', file=sys.stderr)
            return 2
        folder = _store_folder(store_spec(args))
        scope_keys = tuple(args.scope_key) or _recorded_scope_keys(folder)
        reports = await build_graph(store, *builders_for(args, scope_keys))
        _record_scope_keys(folder, tuple(args.scope_key))
        if args.json:
            print(json.dumps([asdict(r) for r in reports], indent=2))
        else:
            for report in reports:
                print(report_line(report))
        return 1 if any(r.failures for r in reports) else 0
    if args.id is None:
        print('toolish-rag graph show needs a node id', file=sys.stderr)
        return 2
    rag = scoped_rag(rag, args.filter)
    if 'graph_context' not in rag.offered_tools:
        built = rag.store_features.graph and not rag.store_features.graph_built
        why = 'has no graph built yet: run toolish-rag graph build first' if built else 'offers no graph_context tool'
        print(f'this store ({type(store).__name__}) {why}', file=sys.stderr)
        return 2
    arguments: dict[str, Any] = {
        'ids': [args.id],
        'hops': args.hops,
        'direction': args.direction,
        'max_nodes': args.max_nodes,
    }
    if args.edge_type:
        arguments['edge_types'] = args.edge_type
    try:
        result = await rag.run_tool('graph_context', arguments)
    except ModelRetry as retry:
        print(terminal_safe(f'rejected: {retry}'))
        return 2
    print(terminal_safe(str(result.return_value)))
    return 0
