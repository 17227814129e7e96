"""Core latency benchmark: every tool of `ToolishRag` over an `InMemoryStore`, against raw libraries.

    .venv/bin/python benchmarks/core_bench.py                  # SciFact (5,183 chunks), all-MiniLM-L6-v2
    .venv/bin/python benchmarks/core_bench.py --sizes 100000 1000000 --cache-dir /tmp/emb --json-out r.json
    .venv/bin/python benchmarks/core_bench.py --quick          # 1,000 synthetic chunks, seconds

Each tool is called with `ToolishRag.run_tool` -- the same validation, `Retriever`, store
call and rendering an agent's tool call goes through, minus the model round trip -- and
timed end to end. In the same run, on the same data, the raw library call is timed:

* vector: the same query embedding call, then numpy ``matrix @ q`` and ``argpartition``
  over the very matrix the store holds;
* text: ``bm25s.tokenize`` (same stop words and stemmer), ``BM25.get_scores``, ``argpartition``;
* regex: ``re2.compile`` and a ``finditer`` scan of every chunk's text;
* hybrid: the raw vector and raw text calls above at the fusion depth (100 per leg);
* broaden_chunk / zoom_out have no raw counterpart (they are lookups), so no ratio.

Raw and tool calls alternate query by query, so load from other processes hits both alike.
Filtered searches (metadata ``bucket < n``: 1%, 10%, 50% of chunks) check that every call
returns exactly ``top_k`` hits whenever that many in-scope matches exist, and are compared
with numpy / bm25s masked by a precomputed boolean array.

Corpora: SciFact embedded with all-MiniLM-L6-v2, and ``--sizes`` synthetic corpora (Zipf
vocabulary of 20,000 pseudo-words, 60 words and one ``ERR-nnnn`` code per chunk, 10 chunks in
two sections per document, ``bucket`` = document number mod 100) embedded with
`BagOfRandomVectors` (benchmarks/common.py): each word a fixed random 384-d vector, a text the
normalised sum.
It is cheap (MiniLM would take hours at 1M chunks), so query embedding costs microseconds and
the tool/raw ratio isolates our layer.

The full run rewrites the results block of docs/benchmarks-core.md (``--no-write`` to skip);
``--json-out`` writes the benchmark suite's speed-result JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pin_threads import set_thread_counts

THREADS = 2
THREAD_NOTE = set_thread_counts(THREADS, torch=False)

import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402
from common import (  # noqa: E402
    BagOfRandomVectors,
    BeirDataset,
    CachedEmbeddingModel,
    PseudoWords,
    bucket_of,
    chunk_text,
    cpu_model,
    data_dir,
    filtered_json,
    load_beir,
    memory_gib,
    pct,
    peak_rss_mib,
    speed_result,
    synthetic_name,
    timed,
    tool_json,
    tool_latency,
    write_speed_result,
)
from pydantic_ai.embeddings import Embedder, EmbeddingModel  # noqa: E402

from toolish_rag import DocumentBuilder, PropertyFilter  # noqa: E402
from toolish_rag.content import Document  # noqa: E402
from toolish_rag.embedding import resolve_embedder  # noqa: E402
from toolish_rag.search import SearchHit  # noqa: E402
from toolish_rag.stores import InMemoryStore  # noqa: E402
from toolish_rag.toolset import ToolishRag  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DOC_PAGE = ROOT / 'docs' / 'benchmarks-core.md'
START, END = '<!-- results:start -->', '<!-- results:end -->'
TOP_K = 10
HYBRID_DEPTH = 100
EMBED_BATCH = 256  # the store's embedding batch (toolish_rag.stores.memory._store._EMBED_BATCH)
SELECTIVITIES = (1, 10, 50)
SEARCHES = ('vector_search', 'text_search', 'hybrid_search')

SCIFACT_PATTERNS = [
    r'\bp53\b',
    r'(?i)insulin',
    r'[0-9]+(\.[0-9]+)? ?mg',
    r'IL-[0-9]+',
    r'(?i)randomi[sz]ed controlled trial',
    r'\b[A-Z]{2,}[0-9]+\b',
    r'(?i)mitochondri',
    r'CD[0-9]+\+',
    r'(?i)\bhiv\b',
    r'[0-9]+%',
]
SYNTHETIC_PATTERNS = [
    r'ERR-12[0-9]{2}',  # about 1% of chunks
    r'ERR-[0-9]{3}7\b',  # about 10%
    r'(?i)\bba[a-z][0-9]{2}\b',  # a few common pseudo-words
    r'\b[kz]e[a-z]1[0-9]{3}\b',  # rarer pseudo-words
]


# -- corpora ------------------------------------------------------------------------------


@dataclass
class Corpus:
    name: str
    """Display name; ``key`` is the name in the JSON."""
    key: str
    documents: list[Document]
    queries: list[str]
    patterns: list[str]
    embedder: str = ''
    texts: list[str] = field(default_factory=list)
    """Indexed text of every chunk, in upsert order."""
    urtexts: list[str] = field(default_factory=list)
    buckets: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    positions: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        buckets: list[int] = []
        for d in self.documents:
            for c in d.chunks:
                self.positions[c.id] = len(self.texts)
                self.texts.append(c.text)
                self.urtexts.append(c.urtext)
                bucket = c.metadata['bucket']
                assert isinstance(bucket, int)
                buckets.append(bucket)
        self.buckets = np.asarray(buckets, dtype=np.int64)


def scifact_corpus(dataset: BeirDataset, n_queries: int) -> Corpus:
    documents = []
    for doc_id, (title, text) in dataset.corpus.items():
        b = DocumentBuilder(
            f'beir://scifact/{doc_id}', title, id=doc_id, indexed_text=None, metadata={'bucket': bucket_of(doc_id)}
        )
        full = chunk_text(title, text)
        b.add_chunk(None, full, text=full)
        documents.append(b.build())
    queries = list(dataset.queries.values())[: 2 * n_queries]
    return Corpus('SciFact', 'scifact', documents, queries, SCIFACT_PATTERNS)


def synthetic_corpus(n_chunks: int, n_queries: int, seed: int = 1) -> Corpus:
    """Zipf-distributed pseudo-words, one error code per chunk, 10 chunks in two sections per document."""
    rng = random.Random(seed)
    words = PseudoWords.draw(rng)
    per_doc, per_section = 10, 5
    documents = []
    for d in range((n_chunks + per_doc - 1) // per_doc):
        b = DocumentBuilder(f'synthetic://{d}', f'Manual {d}', metadata={'bucket': d % 100})
        for s in range(per_doc // per_section):
            section = b.section(f'Part {s} {rng.choice(words.vocab[:200])}')
            for _ in range(per_section):
                b.add_chunk(section, words.chunk(rng))
        documents.append(b.build())
    queries = [words.query(rng) for _ in range(2 * n_queries)]
    name = synthetic_name(n_chunks)
    return Corpus(name, name, documents, queries, SYNTHETIC_PATTERNS)


async def batch_size_sweep(model: EmbeddingModel, texts: list[str], sizes: Sequence[int]) -> dict[int, float]:
    """Documents per second for each sentence-transformers batch size (interleaved, best of 2)."""
    best: dict[int, float] = {}
    await model.embed(texts[:8], input_type='document')  # load the model
    for _ in range(2):
        for size in sizes:
            settings: Any = {'sentence_transformers_batch_size': size}
            start = time.perf_counter()
            await model.embed(texts, input_type='document', settings=settings)
            best[size] = max(best.get(size, 0.0), len(texts) / (time.perf_counter() - start))
    return best


# -- raw baselines --------------------------------------------------------------------------


def _top(scores: npt.NDArray[Any], k: int) -> npt.NDArray[np.intp]:
    part = np.argpartition(-scores, k - 1)[:k]
    return part[np.argsort(-scores[part], kind='stable')]


class Raw:
    def __init__(self, embedder: Embedder, matrix: npt.NDArray[np.float32], corpus: Corpus) -> None:
        import bm25s
        import Stemmer

        self.embedder = embedder
        self.matrix = matrix
        self.stemmer = Stemmer.Stemmer('english')
        start = time.perf_counter()
        self.bm25 = bm25s.BM25()
        self.bm25.index(
            bm25s.tokenize(corpus.texts, stopwords='en', stemmer=self.stemmer, show_progress=False), show_progress=False
        )
        self.bm25_build_s = time.perf_counter() - start
        self.urtexts = corpus.urtexts
        self.query_vectors: dict[str, npt.NDArray[np.float32]] = {}

    async def vector(self, query: str, k: int = TOP_K) -> npt.NDArray[np.intp]:
        result = await self.embedder.embed_query(query)
        q = np.asarray(result.embeddings[0], dtype=np.float32)
        q /= np.linalg.norm(q) or 1.0
        self.query_vectors[query] = q
        return _top(self.matrix @ q, k)

    async def vector_known(
        self, query: str, k: int = TOP_K, mask: npt.NDArray[np.bool_] | None = None
    ) -> npt.NDArray[np.intp]:
        """numpy alone: the query vector is already known (as in the store's query cache)."""
        scores = self.matrix @ self.query_vectors[query]
        if mask is not None:
            scores = np.where(mask, scores, np.float32(-np.inf))
        return _top(scores, k)

    def text_scores(self, query: str) -> npt.NDArray[np.float64]:
        import bm25s

        tokens = bm25s.tokenize([query], stopwords='en', stemmer=self.stemmer, return_ids=False, show_progress=False)[0]
        tokens = [t for t in tokens if t in self.bm25.vocab_dict]
        if not tokens:
            return np.zeros(len(self.urtexts))
        return np.asarray(self.bm25.get_scores(tokens), dtype=np.float64)

    async def text(self, query: str, k: int = TOP_K, mask: npt.NDArray[np.bool_] | None = None) -> npt.NDArray[np.intp]:
        scores = self.text_scores(query)
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        return _top(scores, k)

    async def hybrid(self, query: str) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
        return await self.vector(query, HYBRID_DEPTH), await self.text(query, HYBRID_DEPTH)

    async def hybrid_known(
        self, query: str, mask: npt.NDArray[np.bool_] | None = None
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
        return await self.vector_known(query, HYBRID_DEPTH, mask), await self.text(query, HYBRID_DEPTH, mask)

    async def regex(self, pattern: str) -> list[int]:
        import re2

        compiled = re2.compile(pattern)
        counts = [(i, sum(1 for _ in compiled.finditer(t))) for i, t in enumerate(self.urtexts)]
        found = sorted((-n, i) for i, n in counts if n)
        return [i for _, i in found[:TOP_K]]

    def masked(self, tool: str, mask: npt.NDArray[np.bool_] | None) -> Callable[[dict[str, Any]], Awaitable[Any]]:
        """The raw counterpart of a (filtered) search with a known query vector, masked by ``mask``."""

        async def call(a: dict[str, Any]) -> Any:
            if tool == 'vector_search':
                return await self.vector_known(a['query'], TOP_K, mask)
            if tool == 'text_search':
                return await self.text(a['query'], TOP_K, mask)
            return await self.hybrid_known(a['query'], mask)

        return call


# -- rows ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One line of a corpus's tool table: a tool's timings beside its raw call's."""

    tool: str
    label: str
    tool_ms: list[float]
    raw_ms: list[float]
    raw: str = ''
    note: str = ''

    @property
    def p50(self) -> float:
        return pct(self.tool_ms, 50)

    @property
    def raw_p50(self) -> float | None:
        return pct(self.raw_ms, 50) if self.raw_ms else None

    def cells(self) -> str:
        raw = f'{self.raw_p50:.2f} / {pct(self.raw_ms, 99):.2f}' if self.raw_p50 is not None else '—'
        ratio = f'{self.p50 / self.raw_p50:.2f}x' if self.raw_p50 else '—'
        p99 = pct(self.tool_ms, 99)
        return f'| {self.label} | {len(self.tool_ms)} | {self.p50:.2f} / {p99:.2f} | {raw} | {ratio} | {self.note} |'

    def json(self) -> dict[str, Any]:
        return tool_json(self.tool, self.tool_ms, self.raw_ms, self.raw)


@dataclass(frozen=True)
class Phase:
    """One tool timed over one query set beside its raw call."""

    tool: str
    label: str
    args: list[dict[str, Any]]
    raw_call: Callable[[dict[str, Any]], Awaitable[Any]] | None
    raw: str
    note: str = ''


# -- machine -----------------------------------------------------------------------------------


def machine() -> list[str]:
    cpu = cpu_model(platform.processor() or 'unknown CPU')
    gib = memory_gib()
    mem = '' if gib is None else f', {gib:.0f} GiB RAM'
    import bm25s

    torch = sys.modules.get('torch')
    versions = f'numpy {np.__version__}, bm25s {bm25s.__version__}' + (f', torch {torch.__version__}' if torch else '')
    return [
        f'- machine: {cpu}, {os.cpu_count()} logical CPUs{mem}; {platform.system()} {platform.release()}',
        f'- Python {platform.python_version()}, {versions}',
        f'- {THREAD_NOTE}',
    ]


def import_time(runs: int) -> tuple[float, bool]:
    """Median seconds for ``import toolish_rag`` in a fresh interpreter; whether torch came with it."""
    code = (
        'import sys, time; t = time.perf_counter(); import toolish_rag; '
        "print(time.perf_counter() - t, 'torch' in sys.modules)"
    )
    times: list[float] = []
    torch_loaded = False
    for _ in range(runs):
        out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout.split()
        times.append(float(out[0]))
        torch_loaded = out[1] == 'True'
    return statistics.median(times), torch_loaded


# -- one corpus ----------------------------------------------------------------------------------


@dataclass
class Setup:
    """How a corpus is embedded: the embedder the store gets, and how to time the raw embedder."""

    embedder: Embedder
    note: str
    raw_embed: Callable[[list[str]], Any] | None = None
    """Embeds a batch of texts with the raw model (numpy only), or ``None`` when not measured."""
    raw_embed_note: str = ''
    measure_bare_query: bool = False


@dataclass(frozen=True)
class Indexed:
    """A corpus in the store and, beside it, in the raw libraries; how long each took (seconds)."""

    store: InMemoryStore
    rag: ToolishRag[None]
    raw: Raw
    chunks: int
    upsert_s: float
    bm25_build_s: float
    """The store's BM25 index, built on the first text search."""
    rss_mib: float
    raw_embed_s: float | None
    """``None`` when the raw embedder was not timed (SciFact: MiniLM dominates, or a cache)."""
    raw_embed_note: str

    @property
    def seconds(self) -> float:
        return self.upsert_s + self.bm25_build_s

    @property
    def raw_seconds(self) -> float | None:
        return None if self.raw_embed_s is None else self.raw_embed_s + self.raw.bm25_build_s

    def json(self) -> dict[str, Any]:
        raw_s = self.raw_seconds
        return {
            'seconds': round(self.seconds, 3),
            'chunks_per_s': round(self.chunks / self.seconds, 1),
            'raw_chunks_per_s': None if raw_s is None else round(self.chunks / raw_s, 1),
            'raw': (
                f'{self.raw_embed_note} + bm25s tokenize and index of the same texts'
                if raw_s is not None
                else self.raw_embed_note
            ),
        }

    def lines(self) -> list[str]:
        """Rows of the corpus's "other" table."""
        lines = [
            f'| ingest: `upsert` (embedding included) | {self.upsert_s:.1f} s |',
            f'| ingest: BM25 index build (first text search) | {self.bm25_build_s:.1f} s |',
            f'| ingest total | {self.seconds:.1f} s ({self.chunks / self.seconds:,.0f} chunks/s) |',
        ]
        raw_s = self.raw_seconds
        if self.raw_embed_s is None or raw_s is None:
            return [*lines, f'| raw bm25s tokenize + index (for scale) | {self.raw.bm25_build_s:.1f} s |']
        return [
            *lines,
            f'| raw: {self.raw_embed_note} | {self.raw_embed_s:.1f} s |',
            f'| raw: bm25s tokenize + index | {self.raw.bm25_build_s:.1f} s |',
            f'| raw total | {raw_s:.1f} s ({self.chunks / raw_s:,.0f} chunks/s; '
            f'ingest/raw {self.seconds / raw_s:.2f}x) |',
        ]


async def index_corpus(corpus: Corpus, setup: Setup) -> Indexed:
    """Upsert ``corpus`` and build the BM25 index through the store, then the same work raw."""
    n_chunks = len(corpus.texts)
    print(f'{corpus.name}: {len(corpus.documents)} documents, {n_chunks} chunks; indexing', flush=True)
    start = time.perf_counter()
    store = InMemoryStore(setup.embedder)
    await store.upsert(corpus.documents)
    upsert_s = time.perf_counter() - start
    rag: ToolishRag[None] = ToolishRag(store, name='bench', max_top_k=50)
    # The BM25 index is built on the first text search: time it as part of ingest.
    start = time.perf_counter()
    await rag.run_tool('text_search', {'query': 'warm up the index', 'top_k': TOP_K})
    bm25_build_s = time.perf_counter() - start
    rss_index = peak_rss_mib()
    print(f'  upsert {upsert_s:.1f} s + BM25 build {bm25_build_s:.1f} s; peak RSS {rss_index:.0f} MiB', flush=True)

    raw_embed_s: float | None = None
    if setup.raw_embed is not None:
        start = time.perf_counter()
        for i in range(0, n_chunks, EMBED_BATCH):
            setup.raw_embed(corpus.texts[i : i + EMBED_BATCH])
        raw_embed_s = time.perf_counter() - start
    raw = Raw(setup.embedder, store._snapshot.vectors, corpus)  # the very matrix the store searches
    embed_note = 'not timed' if raw_embed_s is None else f'{raw_embed_s:.1f} s'
    print(f'  raw: embed {embed_note}, bm25s index {raw.bm25_build_s:.1f} s', flush=True)
    return Indexed(store, rag, raw, n_chunks, upsert_s, bm25_build_s, rss_index, raw_embed_s, setup.raw_embed_note)


def query_sets(corpus: Corpus) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Search arguments for query set A (vector, text) and set B (hybrid, filtered searches).

    The store keeps the vectors of recent queries (agents repeat queries, and hybrid search
    embeds once for both legs), so "new query" rows use queries it has not seen: set A for
    vector and text, set B for hybrid; the "repeated query" row re-asks set A.
    """
    half = len(corpus.queries) // 2
    return (
        [{'query': q, 'top_k': TOP_K} for q in corpus.queries[:half]],
        [{'query': q, 'top_k': TOP_K} for q in corpus.queries[half:]],
    )


async def time_tools(rag: ToolishRag[None], raw: Raw, corpus: Corpus, regex_rounds: int) -> list[Row]:
    """Every tool against its raw call (lookups: alone, on the chunks the searches found)."""
    args_a, args_b = query_sets(corpus)
    raw_vec = 'Embedder.embed_query + numpy matrix @ q + argpartition'
    raw_text = 'bm25s.tokenize + BM25.get_scores + argpartition'
    phases = [
        Phase('vector_search', 'vector_search (new query)', args_a, lambda a: raw.vector(a['query']), raw_vec),
        Phase(
            'vector_search',
            'vector_search (repeated query)',
            args_a,
            lambda a: raw.vector_known(a['query']),
            'numpy matrix @ q + argpartition',
            "query vector from the store's cache; raw = numpy only",
        ),
        Phase('text_search', 'text_search', args_a, lambda a: raw.text(a['query']), raw_text),
        Phase(
            'hybrid_search',
            'hybrid_search (new query)',
            args_b,
            lambda a: raw.hybrid(a['query']),
            'raw vector + raw text at depth 100, no fusion',
            'raw = raw vector + raw text at depth 100, no fusion',
        ),
    ]
    chunk_ids: list[str] = []
    rows: list[Row] = []
    for phase in phases:
        got = await tool_latency(rag, phase.tool, phase.args, phase.raw_call)
        chunk_ids.extend(h.id for hs in got.tool_out for h in hs[:1])
        rows.append(Row(phase.tool, phase.label, got.tool_ms, got.raw_ms, phase.raw, phase.note))
        print(f'  {phase.label}: p50 {rows[-1].p50:.2f} ms, raw {rows[-1].raw_p50:.2f} ms', flush=True)
    regex_args = [{'pattern': p, 'top_k': TOP_K} for p in corpus.patterns]
    got = await tool_latency(rag, 'regex_search', regex_args, lambda a: raw.regex(a['pattern']), regex_rounds)
    rows.append(
        Row(
            'regex_search',
            'regex_search',
            got.tool_ms,
            got.raw_ms,
            're2.compile + finditer over every chunk',
            'full scan',
        )
    )
    lookups = chunk_ids[: len(args_a)]
    lookup_args = {
        'broaden_chunk': [{'chunk_id': c, 'chunks_to_add': 2} for c in lookups],
        'zoom_out': [{'id': c} for c in lookups],
    }
    for tool, args in lookup_args.items():
        got = await tool_latency(rag, tool, args, None)
        rows.append(Row(tool, tool, got.tool_ms, [], 'no raw counterpart (a lookup)', 'no raw'))
    return rows


def exact_calls(raw: Raw, corpus: Corpus, tool: str, hits: Sequence[list[SearchHit]], percent: int) -> int:
    """Calls of a filtered search that returned exactly min(top_k, in-scope matches) hits, all in scope."""
    in_scope = corpus.buckets < percent
    exact = 0
    for q, hs in zip(corpus.queries[len(corpus.queries) // 2 :], hits, strict=True):
        if tool == 'text_search':
            available = int(np.count_nonzero((raw.text_scores(q) > 0) & in_scope))
        else:
            available = int(np.count_nonzero(in_scope))
        exact += len(hs) == min(TOP_K, available) and all(corpus.buckets[corpus.positions[h.id]] < percent for h in hs)
    return exact


async def time_filtered(rag: ToolishRag[None], raw: Raw, corpus: Corpus) -> tuple[list[str], list[dict[str, Any]]]:
    """Filtered searches over set B against numpy / bm25s masked alike; table lines and JSON entries.

    Set B's vectors are in the store's query cache by now, so these time scoring and
    filtering; the unfiltered pass gives the reference p50.
    """
    _, args_b = query_sets(corpus)
    unfiltered: dict[str, float] = {}
    for tool in SEARCHES:
        unfiltered[tool] = pct((await tool_latency(rag, tool, args_b, raw.masked(tool, None))).tool_ms, 50)
    lines: list[str] = []
    entries: list[dict[str, Any]] = []
    for percent in SELECTIVITIES:
        in_scope = corpus.buckets < percent
        scoped = rag.with_metadata_filter(PropertyFilter.lt('bucket', percent))
        for tool in SEARCHES:
            got = await tool_latency(scoped, tool, args_b, raw.masked(tool, in_scope))
            t_ms, r_ms = got.tool_ms, got.raw_ms
            exact = exact_calls(raw, corpus, tool, got.tool_out, percent)
            lines.append(
                f'| {percent}% ({int(in_scope.sum())} chunks) | {tool} | {len(t_ms)} '
                f'| {pct(t_ms, 50):.2f} / {pct(t_ms, 99):.2f} | {unfiltered[tool]:.2f} | {pct(r_ms, 50):.2f} '
                f'| {exact}/{len(got.tool_out)} |'
            )
            entries.append(
                filtered_json(
                    tool,
                    percent / 100,
                    t_ms,
                    r_ms,
                    unfiltered_p50_ms=unfiltered[tool],
                    exact_top_k=exact,
                    top_k=TOP_K,
                )
            )
    return lines, entries


async def bare_query_ms(setup: Setup, corpus: Corpus) -> list[float]:
    """The per-query embedding cost alone, in this process (compare with the vector rows)."""
    if not setup.measure_bare_query:
        return []
    return [(await timed(setup.embedder.embed_query(f'{q} (bare)')))[0] for q in corpus.queries[:30]]


async def bench_corpus(corpus: Corpus, setup: Setup, regex_rounds: int) -> tuple[list[str], dict[str, Any]]:
    """Index ``corpus``, time every tool against its raw call; markdown lines and the JSON entry."""
    load_start = os.getloadavg()
    indexed = await index_corpus(corpus, setup)
    rag, raw = indexed.rag, indexed.raw
    await rag.run_tool('vector_search', {'query': 'warm up the model', 'top_k': TOP_K})
    await raw.vector('warm up the raw path')
    bare_ms = await bare_query_ms(setup, corpus)
    rows = await time_tools(rag, raw, corpus, regex_rounds)
    print('  tools done', flush=True)
    filtered_lines, filtered = await time_filtered(rag, raw, corpus)
    print('  filtered done', flush=True)
    # One incremental write at this size (the same document again: its vectors are reused).
    replace_ms, _ = await timed(indexed.store.upsert([corpus.documents[len(corpus.documents) // 2]]))
    load_end = os.getloadavg()

    entry = {
        'name': corpus.key,
        'chunks': indexed.chunks,
        'embedder': corpus.embedder,
        'ingest': indexed.json(),
        'tools': [r.json() for r in rows if r.label != 'vector_search (repeated query)'],
        'filtered': filtered,
    }
    lines = [
        f'### {corpus.name}: {indexed.chunks:,} chunks',
        '',
        f'- {len(corpus.documents):,} documents; embedder {corpus.embedder}; '
        f'query sets A and B of {len(corpus.queries) // 2} queries each',
        f'- load average (1 min) at start {load_start[0]:.2f}, at end {load_end[0]:.2f} '
        f'(anything above {os.cpu_count()} means other processes shared the CPUs)',
        '',
        f'| tool (top_k={TOP_K}) | calls | tool p50 / p99 ms | raw p50 / p99 ms | p50 ratio | note |',
        '|---|---:|---:|---:|---:|---|',
        *(r.cells() for r in rows),
        '',
        '| filter `bucket < n` | tool | calls | p50 / p99 ms | unfiltered p50 ms | raw masked p50 ms | exact |',
        '|---|---|---:|---:|---:|---:|---:|',
        *filtered_lines,
        '',
        '| other | value |',
        '|---|---:|',
        *indexed.lines(),
        f'| replace one document afterwards (`upsert` of 1 document) | {replace_ms:.0f} ms |',
        f'| peak RSS after indexing (process so far) | {indexed.rss_mib:.0f} MiB |',
    ]
    if bare_ms:
        lines.append(
            f'| `Embedder.embed_query` alone in this process, p50 / p99 of {len(bare_ms)} '
            f'| {pct(bare_ms, 50):.1f} / {pct(bare_ms, 99):.1f} ms |'
        )
        print(f'  bare embed_query p50 {pct(bare_ms, 50):.1f} ms', flush=True)
    return lines, entry


# -- main --------------------------------------------------------------------------------------


def synthetic_setup() -> Setup:
    model = BagOfRandomVectors()
    # A second instance for the raw timing, so both sides start with no word vectors and
    # pay the same first-seen cost (the store's ingest runs first).
    return Setup(
        Embedder(model),
        model.model_name,
        raw_embed=BagOfRandomVectors().vectors,
        raw_embed_note=f'BagOfRandomVectors.vectors in batches of {EMBED_BATCH} (numpy, no pydantic-ai)',
    )


async def bench_scifact(
    n_queries: int, batch: int, sweep_sizes: Sequence[int], cache_dir: Path | None
) -> tuple[list[str], dict[str, Any], dict[int, float]]:
    """SciFact with all-MiniLM-L6-v2 (batch size from the sweep when one is asked for); also the sweep."""
    global THREAD_NOTE
    root = data_dir()
    if not (root / 'scifact' / 'corpus.jsonl').is_file():
        sys.exit(f'SciFact not found under {root}: pass --no-scifact (or --quick) to run without it')
    corpus = scifact_corpus(load_beir('scifact', 'train'), n_queries)
    THREAD_NOTE = set_thread_counts(THREADS, torch=True)
    base: EmbeddingModel = resolve_embedder(None).model  # type: ignore[assignment]
    corpus.embedder = f'all-MiniLM-L6-v2 (offline copy), batch size {batch}'
    sweep: dict[int, float] = {}
    if sweep_sizes:
        sample = sorted(corpus.texts, key=len)[:: max(1, len(corpus.texts) // 256)][:256]
        sweep = await batch_size_sweep(base, sample, sweep_sizes)
        batch = max(sweep, key=lambda s: sweep[s])
    raw_note = 'not measured (MiniLM embedding dominates; see docs/ingestion.md for ingest vs raw embedder)'
    if cache_dir is not None:
        base = CachedEmbeddingModel(base, cache_dir, cache_queries=False)
        corpus.embedder += '; document vectors read from a cache (ingest time is not embedding time)'
        raw_note = 'not measured (document vectors came from a cache)'
    settings: Any = {'sentence_transformers_normalize_embeddings': True, 'sentence_transformers_batch_size': batch}
    setup = Setup(Embedder(base, settings=settings), 'all-MiniLM-L6-v2', None, raw_note, measure_bare_query=True)
    lines, entry = await bench_corpus(corpus, setup, regex_rounds=3)
    return lines, entry, sweep


async def bench_synthetic(size: int, n_queries: int) -> tuple[list[str], dict[str, Any]]:
    """A synthetic corpus of ``size`` chunks embedded with `BagOfRandomVectors`."""
    start = time.perf_counter()
    per_set = n_queries if size <= 200_000 else max(20, n_queries // 4)
    corpus = synthetic_corpus(size, per_set)
    print(f'{corpus.name}: generated in {time.perf_counter() - start:.1f} s', flush=True)
    setup = synthetic_setup()
    corpus.embedder = f'{setup.note} (each word a fixed random vector, text = normalised sum)'
    return await bench_corpus(corpus, setup, regex_rounds=3 if size <= 10_000 else 1)


async def run(
    quick: bool,
    n_queries: int,
    batch: int,
    sweep_sizes: Sequence[int],
    cache_dir: Path | None,
    sizes: Sequence[int],
    scifact: bool,
    json_out: Path | None = None,
) -> tuple[str, dict[str, Any]]:
    sweep: dict[int, float] = {}
    import_runs = 1 if quick else 5
    imp_s, imp_torch = import_time(import_runs)
    blocks: list[list[str]] = []
    entries: list[dict[str, Any]] = []
    if quick:
        scifact, sizes, n_queries = False, [1000], 20
    if scifact:
        lines, entry, sweep = await bench_scifact(n_queries, batch, sweep_sizes, cache_dir)
        blocks.append(lines)
        entries.append(entry)
        write_json(json_out, entries)
        gc.collect()
    for size in sizes:
        lines, entry = await bench_synthetic(size, n_queries)
        blocks.append(lines)
        entries.append(entry)
        write_json(json_out, entries)
        gc.collect()
    page = report(blocks, entries, sweep, f'median of {import_runs}', imp_s, imp_torch)
    return page, write_json(json_out, entries)


def report(
    blocks: list[list[str]],
    entries: list[dict[str, Any]],
    sweep: dict[int, float],
    import_runs: str,
    import_s: float,
    import_torch: bool,
) -> str:
    """The results block: machine, the summary of tool/raw ratios, each corpus, the batch-size sweep."""
    peak = peak_rss_mib()
    head = [
        *machine(),
        f'- `import toolish_rag` (fresh interpreter, {import_runs}): {import_s * 1000:.0f} ms '
        f'(torch imported: {"yes" if import_torch else "no"}); peak RSS of the whole run {peak:.0f} MiB',
        '',
    ]
    summary = [
        '| corpus | chunks | ingest chunks/s | vector p50 ratio | text | hybrid | regex | vector, cached query |',
        '|---|---:|---:|---:|---:|---:|---:|---:|',
    ]
    for lines, entry in zip(blocks, entries, strict=True):
        ratios = {t['tool']: t['p50_ms'] / t['raw_p50_ms'] for t in entry['tools'] if t['raw_p50_ms']}
        cached = next(line for line in lines if line.startswith('| vector_search (repeated query)'))
        summary.append(
            f'| {entry["name"]} | {entry["chunks"]:,} | {entry["ingest"]["chunks_per_s"]:,.0f} '
            f'| {ratios["vector_search"]:.2f}x | {ratios["text_search"]:.2f}x | {ratios["hybrid_search"]:.2f}x '
            f'| {ratios["regex_search"]:.2f}x | {cached.split("|")[5].strip()} |'
        )
    body = [*head, 'Tool p50 / raw p50 (same run, same data):', '', *summary]
    for lines in blocks:
        body += ['', *lines]
    if sweep:
        body += [
            '',
            'Embedding throughput by sentence-transformers batch size (256 abstracts, best of 2):',
            '',
            '| batch size | ' + ' | '.join(str(s) for s in sweep) + ' |',
            '|---|' + '---:|' * len(sweep),
            '| chunks/s | ' + ' | '.join(f'{v:.1f}' for v in sweep.values()) + ' |',
        ]
    return '\n'.join(body)


def write_json(path: Path | None, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The speed-result JSON so far (rewritten after every corpus, so a long run leaves partial results)."""
    result = speed_result('memory', THREAD_NOTE, entries)
    write_speed_result(path, result)
    return result


def write_page(block: str) -> None:
    page = DOC_PAGE.read_text(encoding='utf-8')
    head, rest = page.split(START, 1)
    _, tail = rest.split(END, 1)
    DOC_PAGE.write_text(f'{head}{START}\n{block}\n{END}{tail}', encoding='utf-8')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--quick', action='store_true', help='1,000 synthetic chunks only, no SciFact (seconds)')
    parser.add_argument('--sizes', type=int, nargs='*', default=[], help='synthetic corpus sizes in chunks')
    parser.add_argument('--no-scifact', action='store_true', help='skip SciFact (synthetic --sizes only)')
    parser.add_argument('--queries', type=int, default=200, help='queries per query set (two sets; a quarter >200k)')
    parser.add_argument('--batch-size', type=int, default=16, help='sentence-transformers batch size for indexing')
    parser.add_argument('--sweep', default='', help='comma-separated batch sizes to compare first (e.g. 8,16,32,64)')
    parser.add_argument(
        '--cache-dir', type=Path, default=None, help='reuse SciFact document vectors (outside the repo)'
    )
    parser.add_argument('--json-out', type=Path, default=None, help='write the speed-result JSON here')
    parser.add_argument('--no-write', action='store_true', help=f'do not update {DOC_PAGE.relative_to(ROOT)}')
    args = parser.parse_args()
    sweep = [int(x) for x in args.sweep.split(',') if x]
    report, result = asyncio.run(
        run(
            args.quick,
            args.queries,
            args.batch_size,
            sweep,
            args.cache_dir,
            args.sizes,
            not args.no_scifact,
            args.json_out,
        )
    )
    print(report)
    if args.json_out is not None:
        print(f'\nJSON written to {args.json_out} (peak RSS {result["peak_rss_mib"]:.0f} MiB)')
    if not args.quick and not args.no_write:
        write_page(report)
        print(f'\nwritten to {DOC_PAGE.relative_to(ROOT)}')


if __name__ == '__main__':
    main()
