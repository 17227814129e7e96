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
`BagOfRandomVectors` below: each word a fixed random 384-d vector, a text the normalised sum.
It is cheap (MiniLM would take hours at 1M chunks), so query embedding costs microseconds and
the tool/raw ratio isolates our layer.

The full run rewrites the results block of docs/benchmarks-core.md (``--no-write`` to skip);
``--json-out`` writes the benchmark suite's speed-result JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import hashlib
import json
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import peak_rss_mib, set_thread_counts

THREADS = 2
THREAD_NOTE = set_thread_counts(THREADS, torch=False)

import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402
from common import BeirDataset, CachedEmbeddingModel, chunk_text, data_dir, load_beir  # noqa: E402
from pydantic_ai.embeddings import Embedder, EmbeddingModel, EmbeddingResult, EmbeddingSettings  # noqa: E402
from pydantic_ai.embeddings.result import EmbedInputType  # noqa: E402

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
DIMS = 384
EMBED_BATCH = 256  # the store's embedding batch (toolish_rag.stores.memory._EMBED_BATCH)
SELECTIVITIES = (1, 10, 50)

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


def _bucket(key: str) -> int:
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=4).digest(), 'little') % 100


def scifact_corpus(dataset: BeirDataset, n_queries: int) -> Corpus:
    documents = []
    for doc_id, (title, text) in dataset.corpus.items():
        b = DocumentBuilder(
            f'beir://scifact/{doc_id}', title, id=doc_id, indexed_text=None, metadata={'bucket': _bucket(doc_id)}
        )
        full = chunk_text(title, text)
        b.add_chunk(None, full, text=full)
        documents.append(b.build())
    queries = list(dataset.queries.values())[: 2 * n_queries]
    return Corpus('SciFact', 'scifact', documents, queries, SCIFACT_PATTERNS)


def synthetic_corpus(n_chunks: int, n_queries: int, seed: int = 1) -> Corpus:
    """Zipf-distributed pseudo-words, one error code per chunk, 10 chunks in two sections per document."""
    rng = random.Random(seed)
    consonants, vowels = 'bcdfghklmnprstvz', 'aeiou'
    vocab = [f'{rng.choice(consonants)}{rng.choice(vowels)}{rng.choice(consonants)}{i}' for i in range(20_000)]
    cum = list(accumulate(1 / (r + 1) for r in range(len(vocab))))
    per_doc, per_section, words_per_chunk = 10, 5, 60
    documents = []
    for d in range((n_chunks + per_doc - 1) // per_doc):
        b = DocumentBuilder(f'synthetic://{d}', f'Manual {d}', metadata={'bucket': d % 100})
        for s in range(per_doc // per_section):
            section = b.section(f'Part {s} {rng.choice(vocab[:200])}')
            for _ in range(per_section):
                words = rng.choices(vocab, cum_weights=cum, k=words_per_chunk)
                words[rng.randrange(words_per_chunk)] = f'ERR-{rng.randrange(10_000):04d}'
                b.add_chunk(section, ' '.join(words))
        documents.append(b.build())
    queries = [' '.join(rng.choices(vocab[50:5000], k=4)) for _ in range(2 * n_queries)]
    label = f'{n_chunks // 1_000_000}m' if n_chunks % 1_000_000 == 0 else f'{n_chunks // 1000}k'
    name = f'synthetic-{label}' if n_chunks >= 1000 else f'synthetic-{n_chunks}'
    return Corpus(name, name, documents, queries, SYNTHETIC_PATTERNS)


# -- embedding ----------------------------------------------------------------------------

_WORD = re.compile(r'\w+')


class BagOfRandomVectors(EmbeddingModel):
    """Each word a fixed pseudo-random vector (seeded by its hash); a text the normalised sum.

    Deterministic across processes and cheap: a dictionary lookup per word and one sparse
    matrix product per batch. The same idea as in benchmarks/lancedb_bench.py, vectorised.
    """

    def __init__(self, dimensions: int = DIMS) -> None:
        self._dims = dimensions
        self._ids: dict[str, int] = {}
        self._table = np.zeros((4096, dimensions), dtype=np.float32)
        super().__init__()

    @property
    def model_name(self) -> str:
        return f'bag-of-random-vectors-{self._dims}'

    @property
    def system(self) -> str:
        return 'benchmark'

    def _new_word(self, word: str) -> int:
        i = len(self._ids)
        if i == self._table.shape[0]:
            self._table = np.vstack([self._table, np.zeros_like(self._table)])
        seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), 'little')
        self._table[i] = np.random.default_rng(seed).standard_normal(self._dims).astype(np.float32)
        self._ids[word] = i
        return i

    def vectors(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        from scipy.sparse import csr_matrix  # type: ignore[import-untyped]

        ids: list[int] = []
        indptr = [0]
        lookup = self._ids
        for text in texts:
            for w in _WORD.findall(text.lower()):
                i = lookup.get(w)
                ids.append(self._new_word(w) if i is None else i)
            indptr.append(len(ids))
        n_words = len(self._ids)
        counts = csr_matrix(
            (np.ones(len(ids), dtype=np.float32), np.asarray(ids, dtype=np.int64), np.asarray(indptr)),
            shape=(len(texts), n_words),
        )
        out = np.asarray(counts @ self._table[:n_words], dtype=np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        out /= norms
        return out

    async def embed(
        self, inputs: str | Sequence[str], *, input_type: EmbedInputType, settings: EmbeddingSettings | None = None
    ) -> EmbeddingResult:
        inputs, settings = self.prepare_embed(inputs, settings)
        return EmbeddingResult(
            embeddings=self.vectors(inputs).tolist(),
            inputs=inputs,
            input_type=input_type,
            model_name=self.model_name,
            provider_name=self.system,
        )

    async def max_input_tokens(self) -> int | None:
        return None

    async def count_tokens(self, text: str) -> int:
        return len(_WORD.findall(text))


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


# -- timing ------------------------------------------------------------------------------------


def pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


async def timed(call: Awaitable[Any]) -> tuple[float, Any]:
    """Milliseconds to await ``call`` (a coroutine does no work until awaited) and its result."""
    start = time.perf_counter()
    result = await call
    return (time.perf_counter() - start) * 1000, result


@dataclass
class Row:
    tool: str
    label: str
    calls: int
    p50: float
    p99: float
    raw_p50: float | None = None
    raw_p99: float | None = None
    raw: str = ''
    note: str = ''

    def cells(self) -> str:
        raw = f'{self.raw_p50:.2f} / {self.raw_p99:.2f}' if self.raw_p50 is not None else '—'
        ratio = f'{self.p50 / self.raw_p50:.2f}x' if self.raw_p50 else '—'
        return f'| {self.label} | {self.calls} | {self.p50:.2f} / {self.p99:.2f} | {raw} | {ratio} | {self.note} |'

    def json(self) -> dict[str, Any]:
        return {
            'tool': self.tool,
            'n': self.calls,
            'p50_ms': round(self.p50, 4),
            'p99_ms': round(self.p99, 4),
            'raw_p50_ms': None if self.raw_p50 is None else round(self.raw_p50, 4),
            'raw_p99_ms': None if self.raw_p99 is None else round(self.raw_p99, 4),
            'raw': self.raw,
        }


def make_row(tool: str, label: str, t_ms: list[float], r_ms: list[float], raw: str = '', note: str = '') -> Row:
    if r_ms:
        return Row(tool, label, len(t_ms), pct(t_ms, 50), pct(t_ms, 99), pct(r_ms, 50), pct(r_ms, 99), raw, note)
    return Row(tool, label, len(t_ms), pct(t_ms, 50), pct(t_ms, 99), raw=raw, note=note)


async def tool_latency(
    rag: ToolishRag[None],
    tool: str,
    args: Sequence[dict[str, Any]],
    raw: Callable[[dict[str, Any]], Awaitable[Any]] | None,
    rounds: int,
) -> tuple[list[float], list[float], list[list[SearchHit]]]:
    tool_ms: list[float] = []
    raw_ms: list[float] = []
    hits: list[list[SearchHit]] = []
    for r in range(rounds):
        for i, a in enumerate(args):
            # Alternate which goes first, so neither always runs on a warmer cache.
            raw_first = (i + r) % 2 == 0
            if raw is not None and raw_first:
                raw_ms.append((await timed(raw(a)))[0])
            ms, result = await timed(rag.run_tool(tool, a))
            tool_ms.append(ms)
            if r == 0:
                hits.append(list(result.metadata['hits']))
            if raw is not None and not raw_first:
                raw_ms.append((await timed(raw(a)))[0])
    return tool_ms, raw_ms, hits


# -- machine -----------------------------------------------------------------------------------


def machine() -> list[str]:
    cpu = platform.processor() or 'unknown CPU'
    try:
        for line in Path('/proc/cpuinfo').read_text().splitlines():
            if line.startswith('model name'):
                cpu = line.split(':', 1)[1].strip()
                break
    except OSError:
        pass
    mem = ''
    try:
        kb = int(Path('/proc/meminfo').read_text().split()[1])
        mem = f', {kb / 1024 / 1024:.0f} GiB RAM'
    except (OSError, ValueError, IndexError):
        pass
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


async def bench_corpus(corpus: Corpus, setup: Setup, regex_rounds: int) -> tuple[list[str], dict[str, Any]]:
    """Index ``corpus``, time every tool against its raw call; markdown lines and the JSON entry."""
    load_start = os.getloadavg()
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
    ingest_s = upsert_s + bm25_build_s
    rss_index = peak_rss_mib()
    print(f'  upsert {upsert_s:.1f} s + BM25 build {bm25_build_s:.1f} s; peak RSS {rss_index:.0f} MiB', flush=True)

    raw_embed_s: float | None = None
    if setup.raw_embed is not None:
        start = time.perf_counter()
        for i in range(0, n_chunks, EMBED_BATCH):
            setup.raw_embed(corpus.texts[i : i + EMBED_BATCH])
        raw_embed_s = time.perf_counter() - start
    raw = Raw(setup.embedder, store._snapshot.vectors, corpus)  # the very matrix the store searches
    raw_ingest_s = None if raw_embed_s is None else raw_embed_s + raw.bm25_build_s
    embed_note = 'not timed' if raw_embed_s is None else f'{raw_embed_s:.1f} s'
    print(f'  raw: embed {embed_note}, bm25s index {raw.bm25_build_s:.1f} s', flush=True)

    await rag.run_tool('vector_search', {'query': 'warm up the model', 'top_k': TOP_K})
    await raw.vector('warm up the raw path')

    bare_ms: list[float] = []
    if setup.measure_bare_query:
        # The per-query embedding cost alone, in this process (compare with the vector rows).
        for q in corpus.queries[:30]:
            bare_ms.append((await timed(setup.embedder.embed_query(f'{q} (bare)')))[0])

    # The store keeps the vectors of recent queries (agents repeat queries, and hybrid search
    # embeds once for both legs), so "new query" rows use queries it has not seen: set A for
    # vector and text, set B for hybrid; the "repeated query" row re-asks set A.
    half = len(corpus.queries) // 2
    args_a = [{'query': q, 'top_k': TOP_K} for q in corpus.queries[:half]]
    args_b = [{'query': q, 'top_k': TOP_K} for q in corpus.queries[half:]]
    raw_vec = 'Embedder.embed_query + numpy matrix @ q + argpartition'
    raw_text = 'bm25s.tokenize + BM25.get_scores + argpartition'
    chunk_ids: list[str] = []
    rows: list[Row] = []
    phases: list[tuple[str, str, list[dict[str, Any]], Callable[[dict[str, Any]], Awaitable[Any]], str, str]] = [
        ('vector_search', 'vector_search (new query)', args_a, lambda a: raw.vector(a['query']), raw_vec, ''),
        (
            'vector_search',
            'vector_search (repeated query)',
            args_a,
            lambda a: raw.vector_known(a['query']),
            'numpy matrix @ q + argpartition',
            "query vector from the store's cache; raw = numpy only",
        ),
        ('text_search', 'text_search', args_a, lambda a: raw.text(a['query']), raw_text, ''),
        (
            'hybrid_search',
            'hybrid_search (new query)',
            args_b,
            lambda a: raw.hybrid(a['query']),
            'raw vector + raw text at depth 100, no fusion',
            'raw = raw vector + raw text at depth 100, no fusion',
        ),
    ]
    for tool, label, tool_args, call, raw_note, note in phases:
        t_ms, r_ms, hits = await tool_latency(rag, tool, tool_args, call, 1)
        chunk_ids.extend(h.id for hs in hits for h in hs[:1])
        rows.append(make_row(tool, label, t_ms, r_ms, raw_note, note))
        print(f'  {label}: p50 {rows[-1].p50:.2f} ms, raw {rows[-1].raw_p50:.2f} ms', flush=True)
    regex_args = [{'pattern': p, 'top_k': TOP_K} for p in corpus.patterns]
    t_ms, r_ms, _ = await tool_latency(rag, 'regex_search', regex_args, lambda a: raw.regex(a['pattern']), regex_rounds)
    rows.append(
        make_row('regex_search', 'regex_search', t_ms, r_ms, 're2.compile + finditer over every chunk', 'full scan')
    )
    broaden_args = [{'chunk_id': c, 'chunks_to_add': 2} for c in chunk_ids[:half]]
    t_ms, _, _ = await tool_latency(rag, 'broaden_chunk', broaden_args, None, 1)
    rows.append(make_row('broaden_chunk', 'broaden_chunk', t_ms, [], 'no raw counterpart (a lookup)', 'no raw'))
    zoom_args = [{'id': c} for c in chunk_ids[:half]]
    t_ms, _, _ = await tool_latency(rag, 'zoom_out', zoom_args, None, 1)
    rows.append(make_row('zoom_out', 'zoom_out', t_ms, [], 'no raw counterpart (a lookup)', 'no raw'))
    print('  tools done', flush=True)

    # Filtered searches over set B (their vectors are in the store's query cache by now, so
    # these time scoring and filtering); the unfiltered pass gives the reference p50.
    unfiltered: dict[str, float] = {}
    filtered_lines: list[str] = []
    filtered_json: list[dict[str, Any]] = []
    for percent in (None, *SELECTIVITIES):
        in_scope = None if percent is None else corpus.buckets < percent
        scoped = rag if percent is None else rag.with_metadata_filter(PropertyFilter.lt('bucket', percent))
        raw_calls = {tool: masked(raw, tool, in_scope) for tool in ('vector_search', 'text_search', 'hybrid_search')}
        for tool, raw_call in raw_calls.items():
            t_ms, r_ms, hits = await tool_latency(scoped, tool, args_b, raw_call, 1)
            if percent is None or in_scope is None:
                unfiltered[tool] = pct(t_ms, 50)
                continue
            exact = 0
            for q, hs in zip(corpus.queries[half:], hits, strict=True):
                if tool == 'text_search':
                    available = int(np.count_nonzero((raw.text_scores(q) > 0) & in_scope))
                else:
                    available = int(np.count_nonzero(in_scope))
                exact += len(hs) == min(TOP_K, available) and all(
                    corpus.buckets[corpus.positions[h.id]] < percent for h in hs
                )
            filtered_lines.append(
                f'| {percent}% ({int(in_scope.sum())} chunks) | {tool} | {len(t_ms)} '
                f'| {pct(t_ms, 50):.2f} / {pct(t_ms, 99):.2f} | {unfiltered[tool]:.2f} | {pct(r_ms, 50):.2f} '
                f'| {exact}/{len(hits)} |'
            )
            filtered_json.append(
                {
                    'tool': tool,
                    'selectivity': percent / 100,
                    'n': len(t_ms),
                    'p50_ms': round(pct(t_ms, 50), 4),
                    'p99_ms': round(pct(t_ms, 99), 4),
                    'unfiltered_p50_ms': round(unfiltered[tool], 4),
                    'raw_p50_ms': round(pct(r_ms, 50), 4),
                    'exact_top_k': exact,
                    'top_k': TOP_K,
                }
            )
    print('  filtered done', flush=True)

    # One incremental write at this size: replacing a document rebuilds the snapshot.
    doc = corpus.documents[len(corpus.documents) // 2]
    replace_ms, _ = await timed(store.upsert([doc]))

    load_end = os.getloadavg()
    raw_cps = None if raw_ingest_s is None else n_chunks / raw_ingest_s
    ingest = {
        'seconds': round(ingest_s, 3),
        'chunks_per_s': round(n_chunks / ingest_s, 1),
        'raw_chunks_per_s': None if raw_cps is None else round(raw_cps, 1),
        'raw': (
            f'{setup.raw_embed_note} + bm25s tokenize and index of the same texts'
            if raw_ingest_s is not None
            else setup.raw_embed_note
        ),
    }
    entry = {
        'name': corpus.key,
        'chunks': n_chunks,
        'embedder': corpus.embedder,
        'ingest': ingest,
        'tools': [r.json() for r in rows if r.label != 'vector_search (repeated query)'],
        'filtered': filtered_json,
    }
    lines = [
        f'### {corpus.name}: {n_chunks:,} chunks',
        '',
        f'- {len(corpus.documents):,} documents; embedder {corpus.embedder}; query sets A and B of {half} queries each',
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
        f'| ingest: `upsert` (embedding included) | {upsert_s:.1f} s |',
        f'| ingest: BM25 index build (first text search) | {bm25_build_s:.1f} s |',
        f'| ingest total | {ingest_s:.1f} s ({n_chunks / ingest_s:,.0f} chunks/s) |',
    ]
    if raw_embed_s is not None and raw_cps is not None and raw_ingest_s is not None:
        lines += [
            f'| raw: {setup.raw_embed_note} | {raw_embed_s:.1f} s |',
            f'| raw: bm25s tokenize + index | {raw.bm25_build_s:.1f} s |',
            f'| raw total | {raw_ingest_s:.1f} s ({raw_cps:,.0f} chunks/s; ingest/raw {ingest_s / raw_ingest_s:.2f}x) |',
        ]
    else:
        lines.append(f'| raw bm25s tokenize + index (for scale) | {raw.bm25_build_s:.1f} s |')
    lines += [
        f'| replace one document afterwards (`upsert` of 1 document) | {replace_ms:.0f} ms |',
        f'| peak RSS after indexing (process so far) | {rss_index:.0f} MiB |',
    ]
    if bare_ms:
        lines.append(
            f'| `Embedder.embed_query` alone in this process, p50 / p99 of {len(bare_ms)} '
            f'| {pct(bare_ms, 50):.1f} / {pct(bare_ms, 99):.1f} ms |'
        )
        print(f'  bare embed_query p50 {pct(bare_ms, 50):.1f} ms', flush=True)
    return lines, entry


def masked(raw: Raw, tool: str, mask: npt.NDArray[np.bool_] | None) -> Callable[[dict[str, Any]], Awaitable[Any]]:
    """The raw counterpart of a (filtered) search with a known query vector, masked by ``mask``."""

    async def call(a: dict[str, Any]) -> Any:
        if tool == 'vector_search':
            return await raw.vector_known(a['query'], TOP_K, mask)
        if tool == 'text_search':
            return await raw.text(a['query'], TOP_K, mask)
        return await raw.hybrid_known(a['query'], mask)

    return call


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
    global THREAD_NOTE
    sweep: dict[int, float] = {}
    imp_s, imp_torch = import_time(1 if quick else 5)
    blocks: list[list[str]] = []
    entries: list[dict[str, Any]] = []

    if quick:
        scifact, sizes, n_queries = False, [1000], 20
    if scifact:
        root = data_dir()
        if not (root / 'scifact' / 'corpus.jsonl').is_file():
            sys.exit(f'SciFact not found under {root}: pass --no-scifact (or --quick) to run without it')
        corpus = scifact_corpus(load_beir('scifact', 'train'), n_queries)
        THREAD_NOTE = set_thread_counts(THREADS, torch=True)
        base: EmbeddingModel = resolve_embedder(None).model  # type: ignore[assignment]
        corpus.embedder = f'all-MiniLM-L6-v2 (offline copy), batch size {batch}'
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
        blocks.append(lines)
        entries.append(entry)
        write_json(json_out, entries)
        del corpus
        gc.collect()
    for size in sizes:
        start = time.perf_counter()
        per_set = n_queries if size <= 200_000 else max(20, n_queries // 4)
        corpus = synthetic_corpus(size, per_set)
        print(f'{corpus.name}: generated in {time.perf_counter() - start:.1f} s', flush=True)
        setup = synthetic_setup()
        corpus.embedder = f'{setup.note} (each word a fixed random vector, text = normalised sum)'
        lines, entry = await bench_corpus(corpus, setup, regex_rounds=3 if size <= 10_000 else 1)
        blocks.append(lines)
        entries.append(entry)
        write_json(json_out, entries)
        del corpus, setup
        gc.collect()

    peak = peak_rss_mib()
    head = [
        *machine(),
        f'- `import toolish_rag` (fresh interpreter, median of {1 if quick else 5}): {imp_s * 1000:.0f} ms '
        f'(torch imported: {"yes" if imp_torch else "no"}); peak RSS of the whole run {peak:.0f} MiB',
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
    return '\n'.join(body), write_json(json_out, entries)


def write_json(path: Path | None, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The speed-result JSON so far (rewritten after every corpus, so a long run leaves partial results)."""
    result = {'store': 'memory', 'threads': THREAD_NOTE, 'peak_rss_mib': round(peak_rss_mib(), 1), 'corpora': entries}
    if path is not None:
        path.write_text(json.dumps(result, indent=2) + '\n', encoding='utf-8')
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
