"""Core latency benchmark: every tool of `ToolishRag` over an `InMemoryStore`, against raw libraries.

    .venv/bin/python benchmarks/core_bench.py            # SciFact (5,183 chunks), all-MiniLM-L6-v2
    .venv/bin/python benchmarks/core_bench.py --quick    # tiny synthetic corpus, hashing embedder, seconds

Each tool is called with `ToolishRag.run_tool` -- the same validation, `Retriever`, store
call and rendering an agent's tool call goes through, minus the model round trip -- and
timed end to end. In the same run, on the same data, the raw library call is timed:

* vector: the same query embedding call, then numpy ``matrix @ q`` and ``argpartition``;
* text: ``bm25s.tokenize`` (same stop words and stemmer), ``BM25.get_scores``, ``argpartition``;
* regex: ``re2.compile`` and a ``finditer`` scan of every chunk's text;
* hybrid: the raw vector and raw text calls above at the fusion depth (100 per leg);
* broaden_chunk / zoom_out have no raw counterpart (they are lookups), so no ratio.

Raw and tool calls alternate query by query, so load from other processes hits both alike.
Filtered searches (metadata ``bucket < n``: 1%, 10%, 50% of chunks) check that every call
returns exactly ``top_k`` hits whenever that many in-scope matches exist.

The full run rewrites the results block of docs/benchmarks-core.md (``--no-write`` to skip).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import set_thread_counts

THREADS = 2
THREAD_NOTE = set_thread_counts(THREADS, torch=False)

import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402
from common import BeirDataset, CachedEmbeddingModel, chunk_text, data_dir, load_beir  # noqa: E402
from pydantic_ai.embeddings import Embedder, EmbeddingModel, EmbeddingResult, EmbeddingSettings  # noqa: E402
from pydantic_ai.embeddings.result import EmbedInputType  # noqa: E402

from toolish_rag import DocumentBuilder, PropertyFilter  # noqa: E402
from toolish_rag.content import Document  # noqa: E402
from toolish_rag.embedding import HashingEmbeddingModel, resolve_embedder  # noqa: E402
from toolish_rag.search import SearchHit  # noqa: E402
from toolish_rag.stores import InMemoryStore  # noqa: E402
from toolish_rag.toolset import ToolishRag  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DOC_PAGE = ROOT / 'docs' / 'benchmarks-core.md'
START, END = '<!-- results:start -->', '<!-- results:end -->'
TOP_K = 10
HYBRID_DEPTH = 100

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


# -- corpora ------------------------------------------------------------------------------


@dataclass
class Corpus:
    name: str
    documents: list[Document]
    queries: list[str]
    patterns: list[str]
    texts: list[str] = field(default_factory=list)
    """Indexed text of every chunk, in upsert order."""
    urtexts: list[str] = field(default_factory=list)
    buckets: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        for d in self.documents:
            for c in d.chunks:
                self.texts.append(c.text)
                self.urtexts.append(c.urtext)
                bucket = c.metadata['bucket']
                assert isinstance(bucket, int)
                self.buckets.append(bucket)


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
    return Corpus('SciFact', documents, list(dataset.queries.values())[: 2 * n_queries], SCIFACT_PATTERNS)


# fmt: off
WORDS = (
    'refund', 'invoice', 'shipping', 'delay', 'warranty', 'battery', 'screen', 'account', 'password', 'login',
    'error', 'timeout', 'network', 'router', 'firmware', 'update', 'backup', 'restore', 'license', 'billing',
    'subscription', 'cancel', 'upgrade', 'printer', 'driver', 'install', 'cable', 'adapter', 'charger',
    'keyboard', 'mouse', 'monitor', 'display', 'audio', 'speaker',
)
# fmt: on


def synthetic_corpus(n_docs: int = 40, chunks_per_section: int = 3) -> Corpus:
    """A small deterministic corpus with two sections per document (so expansion has work)."""
    rng = random.Random(0)
    documents = []
    for d in range(n_docs):
        b = DocumentBuilder(f'synthetic://doc{d}', f'Manual {d}', metadata={'bucket': _bucket(str(d))})
        for s in range(2):
            section = b.section(f'Part {s} {rng.choice(WORDS)}')
            for _ in range(chunks_per_section):
                words = ' '.join(rng.choice(WORDS) for _ in range(40))
                b.add_chunk(section, f'{words}. Code ERR-{rng.randrange(10000):04d}.')
        documents.append(b.build())
    queries = list(dict.fromkeys(' '.join(rng.sample(WORDS, 3)) for _ in range(80)))[:60]
    return Corpus('synthetic', documents, queries, [r'ERR-[0-9]{4}', r'(?i)refund', r'\bbattery\b', r'ERR-1[0-9]{3}'])


# -- embedding ----------------------------------------------------------------------------


class DocumentMemo(EmbeddingModel):
    """Remembers document vectors so the store and the raw baseline share one embedding pass.

    Queries always go to the wrapped model (they are what the benchmark times).
    """

    def __init__(self, inner: EmbeddingModel) -> None:
        self._inner = inner
        self.vectors: dict[str, list[float]] = {}
        super().__init__(settings=inner.settings)

    @property
    def model_name(self) -> str:
        return self._inner.model_name

    @property
    def system(self) -> str:
        return self._inner.system

    async def embed(
        self, inputs: str | Sequence[str], *, input_type: EmbedInputType, settings: EmbeddingSettings | None = None
    ) -> EmbeddingResult:
        texts = [inputs] if isinstance(inputs, str) else list(inputs)
        if input_type == 'query':
            return await self._inner.embed(texts, input_type=input_type, settings=settings)
        missing = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if missing:
            fresh = await self._inner.embed(missing, input_type=input_type, settings=settings)
            for t, v in zip(missing, fresh.embeddings, strict=True):
                self.vectors[t] = [float(x) for x in v]
        return EmbeddingResult(
            embeddings=[self.vectors[t] for t in texts],
            inputs=texts,
            input_type=input_type,
            model_name=self.model_name,
            provider_name=self.system,
        )

    async def max_input_tokens(self) -> int | None:
        return await self._inner.max_input_tokens()

    async def count_tokens(self, text: str) -> int:
        return await self._inner.count_tokens(text)


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
        self.bm25 = bm25s.BM25()
        self.bm25.index(
            bm25s.tokenize(corpus.texts, stopwords='en', stemmer=self.stemmer, show_progress=False), show_progress=False
        )
        self.urtexts = corpus.urtexts
        self.query_vectors: dict[str, npt.NDArray[np.float32]] = {}

    async def vector(self, query: str, k: int = TOP_K) -> npt.NDArray[np.intp]:
        result = await self.embedder.embed_query(query)
        q = np.asarray(result.embeddings[0], dtype=np.float32)
        q /= np.linalg.norm(q) or 1.0
        self.query_vectors[query] = q
        return _top(self.matrix @ q, k)

    async def vector_known(self, query: str, k: int = TOP_K) -> npt.NDArray[np.intp]:
        """numpy alone: the query vector is already known (as in the store's query cache)."""
        return _top(self.matrix @ self.query_vectors[query], k)

    def text_scores(self, query: str) -> npt.NDArray[np.float64]:
        import bm25s

        tokens = bm25s.tokenize([query], stopwords='en', stemmer=self.stemmer, return_ids=False, show_progress=False)[0]
        tokens = [t for t in tokens if t in self.bm25.vocab_dict]
        if not tokens:
            return np.zeros(len(self.urtexts))
        return np.asarray(self.bm25.get_scores(tokens), dtype=np.float64)

    async def text(self, query: str, k: int = TOP_K) -> npt.NDArray[np.intp]:
        return _top(self.text_scores(query), k)

    async def hybrid(self, query: str) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
        return await self.vector(query, HYBRID_DEPTH), await self.text(query, HYBRID_DEPTH)

    async def regex(self, pattern: str) -> list[int]:
        import re2

        compiled = re2.compile(pattern)
        counts = [(i, sum(1 for _ in compiled.finditer(t))) for i, t in enumerate(self.urtexts)]
        found = sorted(((-n, i) for i, n in counts if n), key=lambda x: x)
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
    calls: int
    p50: float
    p99: float
    raw_p50: float | None = None
    raw_p99: float | None = None
    note: str = ''

    def cells(self) -> str:
        raw = f'{self.raw_p50:.2f} / {self.raw_p99:.2f}' if self.raw_p50 is not None else '—'
        ratio = f'{self.p50 / self.raw_p50:.2f}x' if self.raw_p50 else '—'
        return f'| {self.tool} | {self.calls} | {self.p50:.2f} / {self.p99:.2f} | {raw} | {ratio} | {self.note} |'


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


# -- main --------------------------------------------------------------------------------------


async def run(quick: bool, n_queries: int, batch: int, sweep_sizes: Sequence[int], cache_dir: Path | None) -> str:
    global THREAD_NOTE
    sweep: dict[int, float] = {}
    load_start = os.getloadavg()
    lines: list[str] = []
    imp_s, imp_torch = import_time(1 if quick else 5)

    if quick:
        corpus = synthetic_corpus()
        base: EmbeddingModel = HashingEmbeddingModel(256)
        embed_note = 'HashingEmbeddingModel(256)'
    else:
        root = data_dir()
        if not (root / 'scifact' / 'corpus.jsonl').is_file():
            sys.exit(
                f'SciFact not found under {root}: the full benchmark needs ../shared/data (use --quick without it)'
            )
        corpus = scifact_corpus(load_beir('scifact', 'train'), n_queries)
        THREAD_NOTE = set_thread_counts(THREADS, torch=True)
        base = resolve_embedder(None).model  # type: ignore[assignment]
        embed_note = 'all-MiniLM-L6-v2 (offline copy)'
        if sweep_sizes:
            sample = sorted(corpus.texts, key=len)[:: max(1, len(corpus.texts) // 256)][:256]
            sweep = await batch_size_sweep(base, sample, sweep_sizes)
            batch = max(sweep, key=lambda s: sweep[s])
        if cache_dir is not None:
            base = CachedEmbeddingModel(base, cache_dir, cache_queries=False)
            embed_note += (
                f' (document vectors read from the {cache_dir} cache: the index time is not an embedding time)'
            )
    memo = DocumentMemo(base)
    settings: Any = {'sentence_transformers_normalize_embeddings': True, 'sentence_transformers_batch_size': batch}
    embedder = Embedder(memo, settings=settings)

    n_chunks = len(corpus.texts)
    start = time.perf_counter()
    store = InMemoryStore(embedder)
    await store.upsert(corpus.documents)
    index_s = time.perf_counter() - start
    rss_index = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    matrix = np.asarray([memo.vectors[t] for t in corpus.texts], dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    raw = Raw(embedder, matrix, corpus)
    rag: ToolishRag[None] = ToolishRag(store, name='bench', max_top_k=50)

    rows: list[Row] = []
    # Warm-up: the first text search builds the BM25 index; time it on its own.
    start = time.perf_counter()
    await rag.run_tool('text_search', {'query': 'warm up the index', 'top_k': TOP_K})
    bm25_build_s = time.perf_counter() - start
    await rag.run_tool('vector_search', {'query': 'warm up the model', 'top_k': TOP_K})
    await raw.vector('warm up the raw path')

    # The store keeps the vectors of recent queries (agents repeat queries, and hybrid search
    # embeds once for both legs), so "new query" rows use queries it has not seen: set A for
    # vector and text, set B for hybrid; the "repeated query" row re-asks set A.
    half = len(corpus.queries) // 2
    args_a = [{'query': q, 'top_k': TOP_K} for q in corpus.queries[:half]]
    args_b = [{'query': q, 'top_k': TOP_K} for q in corpus.queries[half:]]
    chunk_ids: list[str] = []
    phases: list[tuple[str, str, list[dict[str, Any]], Callable[[dict[str, Any]], Awaitable[Any]], str]] = [
        ('vector_search', 'vector_search (new query)', args_a, lambda a: raw.vector(a['query']), 'embeds the query'),
        (
            'vector_search',
            'vector_search (repeated query)',
            args_a,
            lambda a: raw.vector_known(a['query']),
            "query vector from the store's cache; raw = numpy only",
        ),
        ('text_search', 'text_search', args_a, lambda a: raw.text(a['query']), ''),
        (
            'hybrid_search',
            'hybrid_search (new query)',
            args_b,
            lambda a: raw.hybrid(a['query']),
            'raw = raw vector + raw text at depth 100, no fusion',
        ),
    ]
    for tool, label, tool_args, call, note in phases:
        t_ms, r_ms, hits = await tool_latency(rag, tool, tool_args, call, 1)
        chunk_ids.extend(h.id for hs in hits for h in hs[:1])
        rows.append(Row(label, len(t_ms), pct(t_ms, 50), pct(t_ms, 99), pct(r_ms, 50), pct(r_ms, 99), note))
    search_args = args_b
    regex_args = [{'pattern': p, 'top_k': TOP_K} for p in corpus.patterns]
    t_ms, r_ms, _ = await tool_latency(rag, 'regex_search', regex_args, lambda a: raw.regex(a['pattern']), 3)
    rows.append(
        Row(
            'regex_search',
            len(t_ms),
            pct(t_ms, 50),
            pct(t_ms, 99),
            pct(r_ms, 50),
            pct(r_ms, 99),
            'full scan of every chunk',
        )
    )
    broaden_args = [{'chunk_id': c, 'chunks_to_add': 2} for c in chunk_ids[:half]]
    t_ms, _, _ = await tool_latency(rag, 'broaden_chunk', broaden_args, None, 1)
    rows.append(Row('broaden_chunk', len(t_ms), pct(t_ms, 50), pct(t_ms, 99), note='no raw counterpart'))
    zoom_args = [{'id': c} for c in chunk_ids[:half]]
    t_ms, _, _ = await tool_latency(rag, 'zoom_out', zoom_args, None, 1)
    rows.append(Row('zoom_out', len(t_ms), pct(t_ms, 50), pct(t_ms, 99), note='no raw counterpart'))

    # Filtered searches.
    buckets = np.asarray(corpus.buckets)
    filtered: list[str] = []
    for percent in (1, 10, 50):
        scope = PropertyFilter.lt('bucket', percent)
        in_scope = buckets < percent
        scoped = rag.with_metadata_filter(scope)
        for tool in ('vector_search', 'text_search', 'hybrid_search'):
            t_ms, _, hits = await tool_latency(scoped, tool, search_args, None, 1)
            exact = 0
            for q, hs in zip(corpus.queries[half:], hits, strict=True):
                if tool == 'text_search':
                    available = int(np.count_nonzero((raw.text_scores(q) > 0) & in_scope))
                else:
                    available = int(np.count_nonzero(in_scope))
                exact += len(hs) == min(TOP_K, available) and all(
                    buckets[corpus_index(corpus, h)] < percent for h in hs
                )
            filtered.append(
                f'| {percent}% ({int(in_scope.sum())} chunks) | {tool} | {len(t_ms)} | {pct(t_ms, 50):.2f} / {pct(t_ms, 99):.2f} '
                f'| {exact}/{len(hits)} |'
            )

    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    load_end = os.getloadavg()
    lines += machine()
    lines += [
        f'- corpus: {corpus.name}, {len(corpus.documents)} documents, {n_chunks} chunks; embedder {embed_note}, '
        f'batch size {batch}; query sets A and B of {half} queries each',
        f'- load average (1 min) at start {load_start[0]:.2f}, at end {load_end[0]:.2f} '
        f'(anything above {os.cpu_count()} means other processes shared the CPUs)',
        '',
        f'| tool (top_k={TOP_K}) | calls | tool p50 / p99 ms | raw p50 / p99 ms | p50 ratio | note |',
        '|---|---:|---:|---:|---:|---|',
        *(r.cells() for r in rows),
        '',
        f'Filtered search (metadata `bucket < n`), top_k={TOP_K}, set B queries (their vectors already in the '
        'store\'s query cache, so these time scoring and filtering): "exact" counts calls that returned '
        'exactly min(top_k, in-scope matches) hits, all in scope.',
        '',
        '| selectivity | tool | calls | p50 / p99 ms | exact |',
        '|---|---|---:|---:|---:|',
        *filtered,
        '',
        '| other | value |',
        '|---|---:|',
        f'| index {n_chunks} chunks (embed + upsert) | {index_s:.1f} s ({n_chunks / index_s:.0f} chunks/s) |',
        f'| BM25 index build (first text search) | {bm25_build_s * 1000:.0f} ms |',
        f'| `import toolish_rag` (fresh interpreter, median) | {imp_s * 1000:.0f} ms (torch imported: {"yes" if imp_torch else "no"}) |',
        f'| peak RSS after indexing | {rss_index:.0f} MiB |',
        f'| peak RSS at end | {peak_mb:.0f} MiB |',
    ]
    if sweep:
        lines += [
            '',
            'Embedding throughput by sentence-transformers batch size (256 abstracts, best of 2):',
            '',
            '| batch size | ' + ' | '.join(str(s) for s in sweep) + ' |',
            '|---|' + '---:|' * len(sweep),
            '| chunks/s | ' + ' | '.join(f'{v:.1f}' for v in sweep.values()) + ' |',
        ]
    return '\n'.join(lines)


_INDEX_CACHE: dict[int, dict[str, int]] = {}


def corpus_index(corpus: Corpus, hit: SearchHit) -> int:
    key = id(corpus)
    if key not in _INDEX_CACHE:
        _INDEX_CACHE[key] = {c.id: i for i, c in enumerate(c for d in corpus.documents for c in d.chunks)}
    return _INDEX_CACHE[key][hit.id]


def write_page(block: str) -> None:
    page = DOC_PAGE.read_text(encoding='utf-8')
    head, rest = page.split(START, 1)
    _, tail = rest.split(END, 1)
    DOC_PAGE.write_text(f'{head}{START}\n{block}\n{END}{tail}', encoding='utf-8')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--quick', action='store_true', help='tiny synthetic corpus and hashing embedder (seconds)')
    parser.add_argument('--queries', type=int, default=200, help='queries per query set (full run; two sets)')
    parser.add_argument('--batch-size', type=int, default=16, help='sentence-transformers batch size for indexing')
    parser.add_argument('--sweep', default='', help='comma-separated batch sizes to compare first (e.g. 8,16,32,64)')
    parser.add_argument('--cache-dir', type=Path, default=None, help='reuse document vectors (outside the repo)')
    parser.add_argument('--no-write', action='store_true', help=f'do not update {DOC_PAGE.relative_to(ROOT)}')
    args = parser.parse_args()
    sweep = [int(x) for x in args.sweep.split(',') if x]
    report = asyncio.run(run(args.quick, args.queries, args.batch_size, sweep, args.cache_dir))
    print(report)
    if not args.quick and not args.no_write:
        write_page(report)
        print(f'\nwritten to {DOC_PAGE.relative_to(ROOT)}')


if __name__ == '__main__':
    main()
