"""``toolish-rag eval``: retrieval quality of each search tool on a BEIR-layout folder."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ._common import STORE_DIR, hold_store_lock, reranking
from ._extras import EVAL, require

STORE_HELP = (
    f'default: memory; a bare NAME (memory, lancedb...) is kept under {STORE_DIR}/eval/DATASET-NAME[-LANGUAGE], '
    'one store per dataset, re-used by the next run'
)
"""``--store`` as eval reads it (`_store_spec`): its own store per dataset, never the default store."""


def register(sub: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        'eval', help='nDCG@10, recall@100 and MRR@10 of each search tool on a BEIR-layout folder'
    )
    parser.add_argument('dataset', help='folder with corpus.jsonl, queries.jsonl and qrels/<split>.tsv')
    parser.add_argument('--tool', choices=['text', 'vector', 'hybrid', 'all'], default='all')
    parser.add_argument('--split', default='test', help='qrels split (default: test)')
    parser.add_argument('--top-k', type=int, default=100, help='results per query (default: 100)')
    parser.add_argument('--json', action='store_true', help='print one JSON object with the figures, nothing else')
    parser.set_defaults(run=run)
    return parser


def _store_spec(args: argparse.Namespace, dataset_name: str) -> str:
    spec: str = args.store or 'memory'
    name, _, location = spec.partition(':')
    if location:
        return spec
    # A bare store name: keep the index next to the other stores, one per dataset, store and
    # language (an index analysed for another language would have to be rebuilt, or is refused).
    language = f'-{args.language}' if getattr(args, 'language', None) else ''
    return f'{name}:{STORE_DIR}/eval/{dataset_name}-{name}{language}'


async def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    from rich.table import Table

    from ..evaluation import beir_documents, evaluate_dataset, load_beir
    from ..ingest import ingest
    from ..stores import open_store
    from ..toolset import ToolishRag

    require(EVAL)  # before the corpus is ingested, which may take half an hour
    console = Console(stderr=True)
    dataset = load_beir(args.dataset, args.split)
    spec = _store_spec(args, dataset.name)
    hold_store_lock(spec)  # eval writes its own store: one writer at a time
    store = open_store(spec, embedder=args.embedder, language=args.language)
    # Some collections' queries are whole paragraphs (CISI's): let them through.
    longest = max((len(q) for _, q in dataset.judged_queries), default=0)
    rag: ToolishRag[Any] = ToolishRag(
        store, name='docs', max_top_k=max(args.top_k, 50), max_query_chars=max(2000, longest), **reranking(args)
    )
    offered = [t.removesuffix('_search') for t in rag.offered_tools]
    wanted = [t for t in ('text', 'vector', 'hybrid') if t in offered] if args.tool == 'all' else [args.tool]
    unavailable = [t for t in wanted if t not in offered]
    if unavailable or not wanted:
        print(f'{type(store).__name__} has no {", ".join(unavailable) or "search"} tool', file=sys.stderr)
        return 2
    bars = console.is_terminal  # progress bars on a terminal only: a pipe or a log gets the table alone
    report = await ingest(store, beir_documents(dataset), progress=console if bars else False)
    if not bars:  # the bar ends with the summary; without it, the summary alone
        print(report.summary(), file=sys.stderr)
    if report.failed:
        print(f'{len(report.failed)} corpus entries failed to index', file=sys.stderr)
        return 1
    queries = len(dataset.judged_queries)
    with Progress(
        TextColumn('[bold]eval {task.description}'),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=not bars,
    ) as progress:
        task = progress.add_task(', '.join(wanted), total=queries * len(wanted))
        results = await evaluate_dataset(
            rag, dataset, wanted, top_k=args.top_k, on_query=lambda: progress.advance(task)
        )
    if args.json:
        print(json.dumps({tool: {k: round(v, 4) for k, v in m.items()} for tool, m in results.items()}))
        return 0
    table = Table(title=f'{dataset.name} ({args.split}, {queries} judged queries) via {type(store).__name__}')
    for column in ('tool', 'nDCG@10', 'recall@100', 'MRR@10'):
        table.add_column(column, justify='right' if column != 'tool' else 'left')
    for tool, m in results.items():
        table.add_row(tool, f'{m["ndcg@10"]:.4f}', f'{m["recall@100"]:.4f}', f'{m["mrr@10"]:.4f}')
    Console().print(table)
    return 0
