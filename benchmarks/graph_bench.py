"""Multi-hop retrieval on HotpotQA (issue 15): hybrid top-10 against hybrid seeds + the graph, equal budget.

    .venv/bin/python benchmarks/graph_bench.py               # 500 questions, 4,961 paragraphs (minutes: MiniLM)
    .venv/bin/python benchmarks/graph_bench.py --quick       # 60 questions, ~600 paragraphs (a smoke test)
    .venv/bin/python benchmarks/graph_bench.py --no-write --json-out /tmp/graph.json

Why this question: a bridge question ("Kieran Crichlow is a footballer from what island...?")
names one supporting paragraph; the other (Barbados) reads nothing like the question, so search
alone often misses it, while the first paragraph *names* it. The graph leg follows that name.

* Data: ``../shared/data/hotpotqa`` (its SOURCE.md: HotpotQA dev, distractor setting; 500
  questions, 2 supporting paragraphs each, 4,961 paragraphs = every question's 10 context
  paragraphs, so 8 hard distractors per question). Each paragraph is one `Document` (title =
  HotpotQA title) with one chunk, indexed as ``title + "\\n\\n" + text`` (`common.build_documents`).
  ``--quick``: the first 60 questions and the first 600 paragraphs; the corpus lists paragraphs in
  question order, at most 10 new ones per question, so those are all of the 60 questions' context
  paragraphs (plus a few of later questions').
* Store: `InMemoryStore` with the default embedder (all-MiniLM-L6-v2, the offline package),
  ingested with ``upsert``. Graph: `ExactNameLinker` (`build_graph`): a MENTIONS edge from a chunk
  to every document whose title, or title without its trailing "(...)" qualifier ("Dracula"
  for "Dracula (plant)"), occurs in the chunk's text as a whole word. Build time is reported, and
  a second build (the ledger: it must write nothing).
* Leg (a), hybrid: ``ToolishRag.run_tool('hybrid_search', {'query': q, 'top_k': 10})``, the
  agent's tool call (argument checks, the `Retriever`'s z-score fusion of MiniLM and BM25).
* Leg (b), hybrid + graph, from the same top-10 list. Each seed paragraph is walked with
  `Retriever.graph_walk`, the scoped walk the ``graph_context`` tool runs (the tool itself
  renders text for a model and returns only chunk nodes as hits, while a MENTIONS edge here ends
  at a *document* node, so the benchmark reads the walk, not the text): seeds = the paragraph's
  chunk id and document id (so both "this paragraph names X" and "X's paragraph names this one"
  are one hop), ``hops=1``, ``edge_types={MENTIONS}``, ``direction='both'``, ``max_nodes=200``.
  One walk per seed, so each neighbour is credited to its seed. A walked node's paragraph is its
  ``document_id``. Neighbours are ranked by their position in a deeper hybrid list (the same tool
  call, ``top_k=100``); neighbours outside it come after, by id.

  **Merge rule, fixed before measuring** (``seed+neighbours``, s = 5): for each of the top-s
  hybrid paragraphs in rank order, add the paragraph, then its graph neighbours in that order,
  skipping ones already listed, until 10; if the s seeds leave room, fill from the hybrid top-10
  in order. The budget is 10 paragraphs for both legs, and a question with no graph neighbours
  gets exactly the hybrid list.

  Variants, all reported (none picked after the fact): ``per seed k`` (each seed adds at most
  its k best-ranked neighbours, k = 1, 2: one seed's long neighbour list cannot push the other
  seeds out) and ``reserve r`` (keep the hybrid top-(10-r) as is; the last r places go to the
  best-ranked neighbours, not already listed, of the top-s seeds in seed order, then to the
  hybrid list: the graph can only replace hybrid's weakest places). Every rule over s = 3..7.
* Measures, per leg on the same questions: share of questions with BOTH supporting paragraphs
  in the 10 (all, bridge, comparison), recall@10 of single supporting paragraphs (mean share of
  the two found), and the graph ceiling (questions whose two supporting paragraphs share an edge).
* Speed: `walk` with ``hops=2, max_nodes=50`` (MENTIONS, both directions) seeded with the chunk
  ids of each question's hybrid top-3, beside networkx's BFS over the same graph (an undirected
  ``nx.Graph`` of every chunk and document id and the MENTIONS edges; ``nx.bfs_layers`` from the
  seeds, the multi-source form of ``single_source_shortest_path_length`` with a cutoff; the nodes
  of hops 0..2 sorted by (hop, id) and cut at 50, which is what the walk returns). Called
  alternately, call by call (`common.alternate`); the two answers are compared node by node.

Prints markdown. A full run rewrites the results block of docs/benchmarks-graph.md
(``--no-write`` to skip); ``--quick`` never does. ``--json-out`` writes every leg's figures and
question ids (the smoke test reads it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any, Protocol

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pin_threads import set_thread_counts

THREADS = 2
THREAD_NOTE = set_thread_counts(THREADS)

import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402
from common import (  # noqa: E402
    BeirDataset,
    alternate,
    build_documents,
    cpu_model,
    data_dir,
    hit_doc_ids,
    load_beir,
    memory_gib,
    pct,
    peak_rss_mib,
)

from toolish_rag.content import Document  # noqa: E402
from toolish_rag.graph.walk import GraphWalk, WalkRequest, walk  # noqa: E402
from toolish_rag.graph_builders import BuildReport, ExactNameLinker, build_graph  # noqa: E402
from toolish_rag.retriever import Retriever  # noqa: E402
from toolish_rag.stores import InMemoryStore  # noqa: E402
from toolish_rag.toolset import ToolishRag  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DOC_PAGE = ROOT / 'docs' / 'benchmarks-graph.md'
START, END = '<!-- graph-hotpotqa:start -->', '<!-- graph-hotpotqa:end -->'
DATASET = 'hotpotqa'

BUDGET = 10
"""Paragraphs in the final list, for both legs."""
DEEP = 100
"""The deeper hybrid list that ranks graph neighbours."""
PRIMARY_SEEDS = 5
SEED_RANGE = range(3, 8)
NEIGHBOUR_WALK_NODES = 200
"""``max_nodes`` of each seed's one-hop walk (the largest a walk allows); truncations are counted."""
SPEED_SEEDS = 3
SPEED_HOPS = 2
SPEED_NODES = 50
QUICK_QUESTIONS = 60
BATCH_DOCS = 500
MENTIONS = frozenset({'MENTIONS'})


# -- data ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    text: str
    type: str
    """``bridge`` or ``comparison``."""
    gold: frozenset[str]
    """The two supporting paragraphs' document ids."""


@dataclass(frozen=True, slots=True)
class HotpotQA:
    dataset: BeirDataset
    questions: tuple[Question, ...]


class MissingData(Exception):
    """``../shared/data/hotpotqa`` is not there: the benchmark cannot run (the smoke test skips)."""


def load(limit: int | None) -> HotpotQA:
    """The collection (`common.load_beir`) and each question's type; ``limit``: first questions, 10x paragraphs."""
    base = data_dir() / DATASET
    if not (base / 'corpus.jsonl').is_file():
        raise MissingData(f'HotpotQA is not at {base} (../shared/data/hotpotqa next to the repository)')
    full = load_beir(DATASET, 'test')
    types: dict[str, str] = {}
    with (base / 'queries.jsonl').open(encoding='utf-8') as f:
        for line in f:
            row = json.loads(line)
            types[str(row['_id'])] = row['metadata']['type']
    order = [q for q in types if q in full.queries][:limit]
    corpus = full.corpus if limit is None else dict(islice(full.corpus.items(), limit * 10))
    questions = tuple(Question(q, full.queries[q], types[q], frozenset(full.qrels[q])) for q in order)
    missing = [q.id for q in questions if not q.gold <= corpus.keys()]
    assert not missing, f'supporting paragraphs outside the corpus for {missing[:5]}'
    dataset = BeirDataset(
        DATASET, corpus, {q.id: q.text for q in questions}, {q.id: full.qrels[q.id] for q in questions}
    )
    return HotpotQA(dataset, questions)


# -- merge rules --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Candidates:
    """What a merge rule sees for one question: the hybrid top-10 and each seed's ranked neighbours."""

    hybrid: tuple[str, ...]
    neighbours: Mapping[str, tuple[str, ...]]
    """Seed paragraph -> its one-hop graph neighbours (paragraphs), best first (deep hybrid rank)."""


class MergeRule(Protocol):
    """Turns a question's `Candidates` into the final list of `BUDGET` paragraphs."""

    @property
    def name(self) -> str: ...

    def merge(self, c: Candidates) -> list[str]: ...


def _fill(out: list[str], items: Iterable[str], budget: int = BUDGET) -> None:
    for p in items:
        if len(out) >= budget:
            return
        if p not in out:
            out.append(p)


@dataclass(frozen=True, slots=True)
class SeedThenNeighbours:
    """Each of the top-``seeds`` paragraphs, then (up to ``per_seed`` of) its neighbours; then hybrid."""

    seeds: int
    per_seed: int | None = None

    @property
    def name(self) -> str:
        return 'seed+neighbours' if self.per_seed is None else f'seed+neighbours, per seed {self.per_seed}'

    def merge(self, c: Candidates) -> list[str]:
        out: list[str] = []
        for seed in c.hybrid[: self.seeds]:
            _fill(out, [seed])
            fresh = [p for p in c.neighbours.get(seed, ()) if p not in out]
            _fill(out, fresh[: self.per_seed])
        _fill(out, c.hybrid)
        return out


@dataclass(frozen=True, slots=True)
class ReservedSlots:
    """The hybrid top-(10 - ``slots``) untouched; the last ``slots`` places go to the seeds' best neighbours."""

    seeds: int
    slots: int

    @property
    def name(self) -> str:
        return f'reserve {self.slots}'

    def merge(self, c: Candidates) -> list[str]:
        out = list(c.hybrid[: BUDGET - self.slots])
        for seed in c.hybrid[: self.seeds]:
            _fill(out, c.neighbours.get(seed, ()))
        _fill(out, c.hybrid)
        return out


def rules() -> list[MergeRule]:
    """Every rule reported, the primary one (``seed+neighbours``) first; each over `SEED_RANGE`."""
    kinds: list[MergeRule] = []
    for make in (
        lambda s: SeedThenNeighbours(s),
        lambda s: SeedThenNeighbours(s, 1),
        lambda s: SeedThenNeighbours(s, 2),
        lambda s: ReservedSlots(s, 2),
        lambda s: ReservedSlots(s, 3),
    ):
        kinds += [make(s) for s in SEED_RANGE]
    return kinds


# -- scores -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Score:
    """One leg's figures over a set of questions."""

    questions: tuple[str, ...]
    both: float
    """Share of questions with both supporting paragraphs in the list."""
    recall: float
    """Mean share of the supporting paragraphs in the list (recall@10 of single paragraphs)."""

    @classmethod
    def of(cls, questions: Sequence[Question], lists: Mapping[str, Sequence[str]]) -> Score:
        if not questions:
            return cls((), 0.0, 0.0)
        found = [len(q.gold & set(lists[q.id][:BUDGET])) / len(q.gold) for q in questions]
        return cls(tuple(q.id for q in questions), sum(f == 1 for f in found) / len(found), sum(found) / len(found))


@dataclass(frozen=True, slots=True)
class Leg:
    """A leg's figures: all questions, then by type."""

    name: str
    seeds: int | None
    all: Score
    by_type: dict[str, Score]

    @classmethod
    def of(cls, name: str, seeds: int | None, questions: Sequence[Question], lists: Mapping[str, Sequence[str]]) -> Leg:
        types = sorted({q.type for q in questions})
        by_type = {t: Score.of([q for q in questions if q.type == t], lists) for t in types}
        return cls(name, seeds, Score.of(questions, lists), by_type)

    def json(self) -> dict[str, Any]:
        return {
            'name': self.name,
            'seeds': self.seeds,
            'questions': list(self.all.questions),
            'both_at_10': self.all.both,
            'recall_at_10': self.all.recall,
            'by_type': {t: {'n': len(s.questions), 'both_at_10': s.both} for t, s in self.by_type.items()},
        }


# -- the run ------------------------------------------------------------------------------------


@dataclass
class Graph:
    """The built graph: build reports and times, and the facts the diagnostics need."""

    report: BuildReport
    seconds: float
    second: BuildReport
    second_seconds: float
    edges: list[tuple[str, str]]
    """(source, target) of every MENTIONS relation."""


@dataclass
class Measured:
    hybrid: Leg
    legs: list[Leg]
    linked: int
    """Questions whose two supporting paragraphs share a MENTIONS edge (either way): the graph's ceiling."""
    walks: int
    truncated_walks: int
    mean_neighbours: float
    notes: list[str] = field(default_factory=list)


async def ingest(documents: list[Document]) -> tuple[InMemoryStore, float]:
    store = InMemoryStore()  # the default embedder: MiniLM, offline
    start = time.perf_counter()
    for i in range(0, len(documents), BATCH_DOCS):
        await store.upsert(documents[i : i + BATCH_DOCS])
    return store, time.perf_counter() - start


async def build(store: InMemoryStore) -> Graph:
    linker = ExactNameLinker()
    start = time.perf_counter()
    [report] = await build_graph(store, linker)
    seconds = time.perf_counter() - start
    start = time.perf_counter()
    [second] = await build_graph(store, linker)
    second_seconds = time.perf_counter() - start
    relations = await store.list_relations()
    edges = [(r.source, r.target) for r in relations if r.type in MENTIONS]
    return Graph(report, seconds, second, second_seconds, edges)


async def hybrid_lists(rag: ToolishRag[None], questions: Sequence[Question], top_k: int) -> dict[str, list[str]]:
    """Each question's hybrid paragraphs through the agent's tool call, best first."""
    out: dict[str, list[str]] = {}
    for q in questions:
        result = await rag.run_tool('hybrid_search', {'query': q.text, 'top_k': top_k})
        out[q.id] = hit_doc_ids(result.metadata['hits'])
    return out


def paragraphs_of(found: GraphWalk, exclude: str) -> list[str]:
    """The paragraphs (document ids) of a walk's hop >= 1 nodes, in walk order, without ``exclude``."""
    out: list[str] = []
    for n in found.nodes:
        p = n.node.document_id
        if n.hop >= 1 and p is not None and p != exclude and p not in out:
            out.append(p)
    return out


@dataclass
class NeighbourWalks:
    """One-hop walks from single paragraphs, each walked once however many questions seed from it."""

    retriever: Retriever
    chunk_of: Mapping[str, str]
    cache: dict[str, tuple[list[str], bool]] = field(default_factory=dict)

    async def of(self, paragraph: str) -> tuple[list[str], bool]:
        if paragraph not in self.cache:
            request = WalkRequest(
                seeds=(self.chunk_of[paragraph], paragraph),
                hops=1,
                edge_types=MENTIONS,
                direction='both',
                max_nodes=NEIGHBOUR_WALK_NODES,
            )
            found = await self.retriever.graph_walk(request)
            self.cache[paragraph] = (paragraphs_of(found, paragraph), found.truncated)
        return self.cache[paragraph]


def ranked(neighbours: Sequence[str], deep: Sequence[str]) -> tuple[str, ...]:
    """``neighbours`` by their position in the deep hybrid list; those outside it last, by id."""
    rank = {p: i for i, p in enumerate(deep)}
    return tuple(sorted(neighbours, key=lambda p: (rank.get(p, len(rank)), p)))


async def measure(
    store: InMemoryStore, documents: list[Document], data: HotpotQA, graph: Graph
) -> tuple[Measured, dict[str, list[str]]]:
    """Both legs on every question; returns the figures and each question's hybrid top-10."""
    rag: ToolishRag[None] = ToolishRag(store, name='bench', max_top_k=DEEP)
    questions = data.questions
    top10 = await hybrid_lists(rag, questions, BUDGET)
    deep = await hybrid_lists(rag, questions, DEEP)
    walks = NeighbourWalks(Retriever(store), {d.id: d.chunks[0].id for d in documents})
    candidates: dict[str, Candidates] = {}
    for q in questions:
        seeds = top10[q.id][: max(SEED_RANGE)]
        found = {s: await walks.of(s) for s in seeds}
        candidates[q.id] = Candidates(tuple(top10[q.id]), {s: ranked(n, deep[q.id]) for s, (n, _) in found.items()})
    legs = []
    for rule in rules():
        lists = {q.id: rule.merge(candidates[q.id]) for q in questions}
        assert all(len(v) <= BUDGET and len(set(v)) == len(v) for v in lists.values()), rule.name
        legs.append(Leg.of(rule.name, getattr(rule, 'seeds', None), questions, lists))
    pairs = {frozenset(e) for e in _paragraph_edges(graph.edges, documents)}
    linked = sum(q.gold in pairs for q in questions)
    cached = walks.cache.values()
    measured = Measured(
        hybrid=Leg.of('hybrid top-10', None, questions, top10),
        legs=legs,
        linked=linked,
        walks=len(cached),
        truncated_walks=sum(t for _, t in cached),
        mean_neighbours=sum(len(n) for n, _ in cached) / max(len(cached), 1),
    )
    return measured, top10


def _paragraph_edges(edges: Iterable[tuple[str, str]], documents: Sequence[Document]) -> Iterable[tuple[str, str]]:
    """MENTIONS edges as (paragraph, paragraph): a chunk id and a document id both name their paragraph."""
    paragraph = {d.id: d.id for d in documents} | {c.id: d.id for d in documents for c in d.chunks}
    for source, target in edges:
        if source in paragraph and target in paragraph and paragraph[source] != paragraph[target]:
            yield paragraph[source], paragraph[target]


# -- speed: walk beside networkx ------------------------------------------------------------------


def nx_graph(documents: Sequence[Document], edges: Iterable[tuple[str, str]]) -> nx.Graph:
    """Every chunk and document id a node, every MENTIONS relation an undirected edge (``direction='both'``)."""
    g: nx.Graph = nx.Graph()
    g.add_nodes_from(d.id for d in documents)
    g.add_nodes_from(c.id for d in documents for c in d.chunks)
    g.add_edges_from(edges)
    return g


def nx_walk(g: nx.Graph, seeds: Sequence[str]) -> list[tuple[int, str]]:
    """(hop, id) of the BFS layers 0..`SPEED_HOPS` from ``seeds``, sorted, cut at `SPEED_NODES`."""
    found = [(hop, n) for hop, layer in enumerate(islice(nx.bfs_layers(g, seeds), SPEED_HOPS + 1)) for n in layer]
    return sorted(found)[:SPEED_NODES]


@dataclass(frozen=True, slots=True)
class Speed:
    walk_ms: list[float]
    nx_ms: list[float]
    same: int
    truncated: int
    calls: int

    def line(self) -> str:
        w50, n50 = pct(self.walk_ms, 50), pct(self.nx_ms, 50)
        return (
            f'| walk(hops={SPEED_HOPS}, max_nodes={SPEED_NODES}) | {self.calls} | {w50:.3f} / {pct(self.walk_ms, 95):.3f} '
            f'| {n50:.3f} / {pct(self.nx_ms, 95):.3f} | {w50 / n50:.1f}x | {self.same}/{self.calls} | {self.truncated} |'
        )


async def speed(
    store: InMemoryStore, documents: list[Document], graph: Graph, top10: Mapping[str, Sequence[str]]
) -> Speed:
    g = nx_graph(documents, graph.edges)
    chunk_of = {d.id: d.chunks[0].id for d in documents}
    seeds = [tuple(chunk_of[p] for p in ranking[:SPEED_SEEDS]) for ranking in top10.values()]

    def request(s: tuple[str, ...]) -> WalkRequest:
        return WalkRequest(s, hops=SPEED_HOPS, edge_types=MENTIONS, direction='both', max_nodes=SPEED_NODES)

    await walk(store, request(seeds[0]))  # one untimed call each: first calls pay one-off costs
    nx_walk(g, seeds[0])
    got = await alternate(lambda s: walk(store, request(s)), lambda s: nx_walk(g, s), seeds)
    walked: list[GraphWalk] = got.tool_out
    same = sum(sorted((n.hop, n.node.id) for n in w.nodes) == bfs for w, bfs in zip(walked, got.raw_out, strict=True))
    return Speed(got.tool_ms, got.raw_ms, same, sum(w.truncated for w in walked), len(seeds))


# -- report -------------------------------------------------------------------------------------


def _row(leg: Leg, hybrid: Leg) -> str:
    types = ' | '.join(f'{leg.by_type[t].both:.3f}' for t in sorted(hybrid.by_type))
    delta = leg.all.both - hybrid.all.both
    seeds = '' if leg.seeds is None else str(leg.seeds)
    return (
        f'| {leg.name} | {seeds} | {len(leg.all.questions)} | {leg.all.both:.3f} | {delta:+.3f} | {types} '
        f'| {leg.all.recall:.3f} |'
    )


def report(m: Measured, graph: Graph, fast: Speed, head: list[str], command: str, data: HotpotQA) -> str:
    hybrid = m.hybrid
    types = sorted(hybrid.by_type)
    counts = ', '.join(f'{len(hybrid.by_type[t].questions)} {t}' for t in types)
    primary = next(leg for leg in m.legs if leg.name == 'seed+neighbours' and leg.seeds == PRIMARY_SEEDS)
    header = (
        f'| leg | seeds s | questions | both in {BUDGET} | vs hybrid | '
        + ' | '.join(f'both, {t}' for t in types)
        + f' | recall@{BUDGET} |'
    )
    rule = '|---|---:|---:|---:|---:|' + '---:|' * len(types) + '---:|'
    r = graph.report
    lines = [
        *head,
        f'- command: `{command}`',
        f'- data: {len(data.dataset.corpus):,} paragraphs, {len(data.questions)} questions ({counts}); '
        f'budget {BUDGET} paragraphs for both legs; neighbours ranked by the hybrid top-{DEEP}',
        '',
        f'Primary rule (fixed in advance): seed+neighbours, s = {PRIMARY_SEEDS}.',
        '',
        header,
        rule,
        _row(hybrid, hybrid),
        _row(primary, hybrid),
        '',
        f'Every rule, s = {SEED_RANGE.start}..{SEED_RANGE.stop - 1} (sensitivity; all reported):',
        '',
        header,
        rule,
        *[_row(leg, hybrid) for leg in m.legs],
        '',
        f'- graph: ExactNameLinker over {r.documents_seen:,} documents: {r.relations_written:,} relations, '
        f'{r.entities_written} entities, built in {graph.seconds:.1f} s; second build {graph.second_seconds:.1f} s, '
        f'{graph.second.writes} writes',
        f'- graph ceiling: {m.linked}/{len(data.questions)} questions ({m.linked / len(data.questions):.3f}) have '
        'their two supporting paragraphs joined by a MENTIONS edge (either way)',
        f'- one-hop walks: {m.walks:,} seed paragraphs walked, {m.mean_neighbours:.1f} neighbours on average, '
        f'{m.truncated_walks} truncated at max_nodes={NEIGHBOUR_WALK_NODES}',
        *[f'- {note}' for note in m.notes],
        '',
        f'Walk latency (MENTIONS, both directions, seeds = chunk ids of the hybrid top-{SPEED_SEEDS}) beside '
        f'networkx {nx.__version__} BFS (`nx.bfs_layers`, cut at {SPEED_HOPS} hops and {SPEED_NODES} nodes) on the '
        'same graph, alternating call by call; ms:',
        '',
        '| call | calls | walk p50 / p95 | networkx p50 / p95 | walk/networkx p50 | same nodes | truncated |',
        '|---|---:|---:|---:|---:|---:|---:|',
        fast.line(),
        '',
        f'- peak RSS of the whole run: {peak_rss_mib():.0f} MiB',
    ]
    return '\n'.join(lines)


def machine() -> list[str]:
    gib = memory_gib()
    mem = '' if gib is None else f', {gib:.0f} GiB RAM'
    load_avg = os.getloadavg()
    return [
        f'- machine: {cpu_model(platform.processor() or "unknown CPU")}, {os.cpu_count()} logical CPUs{mem}; '
        f'{platform.system()} {platform.release()}; load average at the start {load_avg[0]:.1f} (shared machine)',
        f'- Python {platform.python_version()}, numpy {np.__version__}, networkx {nx.__version__}',
        f'- {THREAD_NOTE}',
    ]


def write_page(block: str) -> None:
    page = DOC_PAGE.read_text(encoding='utf-8')
    head, rest = page.split(START, 1)
    _, tail = rest.split(END, 1)
    DOC_PAGE.write_text(f'{head}{START}\n{block}\n{END}{tail}', encoding='utf-8')


@dataclass(frozen=True, slots=True)
class Outcome:
    block: str
    result: dict[str, Any]


async def run(limit: int | None, head: list[str], command: str) -> Outcome:
    data = load(limit)
    documents = build_documents(data.dataset)
    print(f'{len(documents):,} paragraphs, {len(data.questions)} questions; ingesting (MiniLM)...', flush=True)
    store, ingest_s = await ingest(documents)
    print(f'ingested in {ingest_s:.1f} s; building the graph...', flush=True)
    graph = await build(store)
    print(f'graph: {graph.report.relations_written:,} relations in {graph.seconds:.1f} s; searching...', flush=True)
    measured, top10 = await measure(store, documents, data, graph)
    measured.notes.append(f'ingest (MiniLM embeddings + BM25 index): {ingest_s:.1f} s')
    fast = await speed(store, documents, graph, top10)
    block = report(measured, graph, fast, head, command, data)
    result = {
        'questions': len(data.questions),
        'paragraphs': len(documents),
        'hybrid': measured.hybrid.json(),
        'legs': [leg.json() for leg in measured.legs],
        'primary': {'name': 'seed+neighbours', 'seeds': PRIMARY_SEEDS},
        'graph': {
            'relations': graph.report.relations_written,
            'build_seconds': graph.seconds,
            'second_build_writes': graph.second.writes,
            'linked_questions': measured.linked,
        },
        'speed': {
            'walk_p50_ms': pct(fast.walk_ms, 50),
            'walk_p95_ms': pct(fast.walk_ms, 95),
            'networkx_p50_ms': pct(fast.nx_ms, 50),
            'networkx_p95_ms': pct(fast.nx_ms, 95),
            'same': fast.same,
            'calls': fast.calls,
        },
    }
    return Outcome(block, result)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        '--quick', action='store_true', help=f'{QUICK_QUESTIONS} questions and their paragraphs; writes no page'
    )
    parser.add_argument('--no-write', action='store_true', help=f'do not update {DOC_PAGE.relative_to(ROOT)}')
    parser.add_argument('--json-out', type=Path, help='also write the figures (and question ids) as JSON here')
    a = parser.parse_args()
    command = ' '.join(['.venv/bin/python', 'benchmarks/graph_bench.py', *sys.argv[1:]])
    head = machine()
    print(f'# graph_bench: HotpotQA, hybrid vs hybrid + graph{" (quick)" if a.quick else ""}')
    print('\n'.join(head), flush=True)
    try:
        outcome = asyncio.run(run(QUICK_QUESTIONS if a.quick else None, head, command))
    except MissingData as e:
        sys.exit(f'graph_bench: {e}')
    print('\n' + outcome.block)
    if a.json_out is not None:
        a.json_out.write_text(json.dumps(outcome.result, indent=2) + '\n', encoding='utf-8')
    if not a.quick and not a.no_write:
        write_page(outcome.block)
        print(f'\nwritten to {DOC_PAGE.relative_to(ROOT)}')


if __name__ == '__main__':
    main()
