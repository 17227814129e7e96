"""Benchmark of the LanceDB store through the agent's tools, against raw LanceDB in the same run.

    .venv/bin/python benchmarks/lancedb_bench.py                         # 5k SciFact + 100k synthetic
    .venv/bin/python benchmarks/lancedb_bench.py --sizes 100000 1000000  # + 1M synthetic
    .venv/bin/python benchmarks/lancedb_bench.py --quick                 # 20k synthetic, no SciFact
    .venv/bin/python benchmarks/lancedb_bench.py --quality               # + SciFact train nDCG@10, tool vs raw
    .venv/bin/python benchmarks/lancedb_bench.py --json-out /tmp/lance.json

Every tool is called with `ToolishRag.run_tool` (validation, scope, the store call and the
rendering an agent's call goes through) and timed end to end; the raw LanceDB query it wraps
runs on the very same table, alternating with it call by call:

* vector: the same embedder's ``embed_query``, then ``nearest_to(vec)`` with cosine distance
  and the store's ``nprobes``/``refine_factor`` once an ANN index exists;
* text: ``nearest_to_text(query)`` (LanceDB's own string query);
* hybrid: the raw vector and raw text queries at the fusion depth (100 each), no fusion;
* regex: the ``regexp_like(urtext, ...)`` scan the store runs (up to ``regex_scan_limit`` rows);
* broaden_chunk / zoom_out are lookups with no raw counterpart.

Corpora: SciFact (5,183 abstracts, all-MiniLM-L6-v2 through benchmarks/common.py's
`CachedEmbeddingModel`, cache in ``--cache-dir``: vectors of documents *and* queries come from
the cache after the first run, so latencies exclude the model) and synthetic corpora of
``--sizes`` chunks embedded with `BagOfRandomVectors` (each word a fixed random 384-d vector,
a text the normalised sum: cheap, and clustered like real embeddings). Document vectors are
computed before the clock starts; ingest time is ``store.upsert`` in 20 batches plus one
``optimize()``. Raw ingest (corpora up to 200k chunks) adds the same Arrow rows to a fresh
table and builds the same indexes.

``--quality`` runs every judged SciFact train query through the text, vector and hybrid
tools (`toolish_rag.evaluation.evaluate_dataset`, top 100) and through the raw LanceDB
queries computing the same thing on the same table (hybrid: the core's fusion of the raw
legs, since the store leaves fusion to the core; LanceDB's native RRF hybrid query is
printed for reference), scored by the same `score_run`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import platform
import random
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from pin_threads import set_thread_counts

THREADS = 2
THREAD_NOTE = set_thread_counts(THREADS, torch=False)

import lancedb  # noqa: E402
import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
from common import (  # noqa: E402
    Alternated,
    BagOfRandomVectors,
    CachedEmbeddingModel,
    bucket_of,
    cpu_model,
    data_dir,
    filtered_json,
    peak_rss_mib,
    speed_result,
    synthetic_name,
    tool_json,
    tool_latency,
    write_speed_result,
)
from lancedb.index import FTS, BTree, LabelList  # noqa: E402
from pydantic_ai.embeddings import Embedder, EmbeddingModel, EmbeddingResult, EmbeddingSettings  # noqa: E402
from pydantic_ai.embeddings.result import EmbedInputType  # noqa: E402

from toolish_rag.builder import DocumentBuilder  # noqa: E402
from toolish_rag.content import Chunk, Document  # noqa: E402
from toolish_rag.embedding import resolve_embedder  # noqa: E402
from toolish_rag.evaluation import beir_documents, evaluate_dataset, load_beir, score_run  # noqa: E402
from toolish_rag.filters import PropertyFilter as F  # noqa: E402
from toolish_rag.fusion import FusionConfig, fuse  # noqa: E402
from toolish_rag.search import SearchHit  # noqa: E402
from toolish_rag.toolset import ToolishRag  # noqa: E402
from toolish_rag_lancedb import LanceDBStore  # noqa: E402
from toolish_rag_lancedb._schema import record_table  # noqa: E402

SCIFACT = data_dir() / 'scifact'
DIMS = 384
TOP_K = 10
DEPTH = FusionConfig().candidates
RAW_INGEST_MAX = 200_000
SELECT = ['id', 'kind', 'text', 'urtext', 'payload', 'metadata_json', 'labels']
SEARCHES = ('vector_search', 'text_search', 'hybrid_search')
_WORD = re.compile(r'\w+')

SCIFACT_PATTERNS = [r'\bp53\b', r'(?i)insulin', r'[0-9]+(\.[0-9]+)? ?mg', r'IL-[0-9]+', r'CD[0-9]+\+']
SYNTHETIC_PATTERNS = [r'ERR-[0-9]{4}', r'ERR-99[0-9]{2}', r'\bw4999\b']


# -- embedders -----------------------------------------------------------------------------


class Prepared(EmbeddingModel):
    """Serves document vectors computed before the clock starts; queries go to the inner model."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.ready: dict[str, np.ndarray[Any, Any]] = {}
        super().__init__()

    @property
    def model_name(self) -> str:
        m = self.inner.model
        return m if isinstance(m, str) else m.model_name

    @property
    def system(self) -> str:
        m = self.inner.model
        return 'unknown' if isinstance(m, str) else m.system

    async def prepare(self, texts: Sequence[str]) -> float:
        """Embed these documents now (replacing the previous batch); returns the seconds taken."""
        t0 = time.perf_counter()
        self.ready = {}
        todo = list(dict.fromkeys(texts))
        for start in range(0, len(todo), 5000):
            batch = todo[start : start + 5000]
            result = await self.inner.embed_documents(batch)
            self.ready.update(zip(batch, np.asarray(result.embeddings, dtype=np.float32), strict=True))
        return time.perf_counter() - t0

    async def embed(
        self, inputs: str | Sequence[str], *, input_type: EmbedInputType, settings: EmbeddingSettings | None = None
    ) -> EmbeddingResult:
        inputs, settings = self.prepare_embed(inputs, settings)
        if input_type == 'document' and all(t in self.ready for t in inputs):
            emb: Any = np.stack([self.ready[t] for t in inputs]) if inputs else np.zeros((0, DIMS), np.float32)
        else:
            call = self.inner.embed_query if input_type == 'query' else self.inner.embed_documents
            emb = (await call(list(inputs))).embeddings
        return EmbeddingResult(
            embeddings=emb, inputs=inputs, input_type=input_type, model_name=self.model_name, provider_name=self.system
        )

    async def max_input_tokens(self) -> int | None:
        return None

    async def count_tokens(self, text: str) -> int:
        return len(_WORD.findall(text))


def minilm(cache_dir: pathlib.Path) -> Embedder:
    """all-MiniLM-L6-v2 (offline copy), vectors cached under ``cache_dir`` (outside the repo)."""
    global THREAD_NOTE
    THREAD_NOTE = set_thread_counts(THREADS, torch=True)
    base = resolve_embedder(None)
    assert isinstance(base.model, EmbeddingModel)
    return Embedder(CachedEmbeddingModel(base.model, cache_dir), settings=base._settings)  # type: ignore[attr-defined]


# -- corpora -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Corpus:
    name: str
    chunks: int
    batches: Callable[[], Iterator[list[Document]]]
    queries: list[str]
    patterns: list[str]
    embedder: Embedder
    embedder_note: str


def scifact_corpus(embedder: Embedder, n: int) -> Corpus:
    dataset = load_beir(SCIFACT, 'train')
    docs = []
    for entry in dataset.corpus:
        corpus_id = str(entry['_id'])
        title, body = str(entry.get('title') or ''), str(entry.get('text') or '')
        b = DocumentBuilder(
            f'beir://scifact/{corpus_id}',
            title or corpus_id,
            metadata={'corpus_id': corpus_id, 'bucket': bucket_of(corpus_id)},
            indexed_text=None,
        )
        b.add_chunk(None, f'{title}\n\n{body}' if title else body)
        docs.append(b.build())
    step = -(-len(docs) // 20)
    queries = [q for _, q in dataset.judged_queries][:n]
    return Corpus(
        'scifact',
        len(docs),
        lambda: (docs[i : i + step] for i in range(0, len(docs), step)),
        queries,
        SCIFACT_PATTERNS,
        embedder,
        'all-MiniLM-L6-v2 (offline copy; document and query vectors from the CachedEmbeddingModel cache)',
    )


VOCAB = [f'w{i}' for i in range(5000)]
WEIGHTS = [1 / (i + 1) ** 1.1 for i in range(len(VOCAB))]
CHUNKS_PER_DOC = 10


def synthetic_document(d: int, seed: int = 7) -> Document:
    """Document ``d`` of the synthetic corpus: ten chunks leaning on its own eight topic words."""
    rng = random.Random(seed * 1_000_003 + d)
    topic = rng.sample(VOCAB[200:], 8)
    b = DocumentBuilder(f'synthetic:{d}', f'Synthetic {d}', metadata={'bucket': d % 100, 'group': f'g{d % 7}'})
    section = b.section('Body')
    for c in range(CHUNKS_PER_DOC):
        words = rng.choices(VOCAB, WEIGHTS, k=18) + rng.choices(topic, k=10)
        code = f'ERR-{rng.randrange(10000):04d}' if rng.random() < 0.05 else ''
        b.add_chunk(section, ' '.join(words) + f' part {c} {code}')
    return b.build()


def synthetic_corpus(size: int, n: int) -> Corpus:
    n_docs = size // CHUNKS_PER_DOC
    step = max(1, -(-n_docs // 20))
    rng = random.Random(11)
    queries = []
    for _ in range(n):  # six words of a random chunk: queries that resemble the corpus, as real ones do
        chunk = rng.choice(synthetic_document(rng.randrange(n_docs)).chunks)
        queries.append(' '.join(rng.sample(chunk.urtext.split(), 6)))

    def batches() -> Iterator[list[Document]]:
        for first in range(0, n_docs, step):
            yield [synthetic_document(d) for d in range(first, min(n_docs, first + step))]

    return Corpus(
        synthetic_name(size),
        n_docs * CHUNKS_PER_DOC,
        batches,
        queries,
        SYNTHETIC_PATTERNS,
        Embedder(BagOfRandomVectors(DIMS)),
        'bag-of-random-vectors 384-d',
    )


# -- raw LanceDB ---------------------------------------------------------------------------


class RawQueries:
    """The LanceDB queries the store's tools wrap, on the store's own table."""

    def __init__(self, store: LanceDBStore, table: Any, embedder: Embedder, has_ann: bool) -> None:
        self.table = table
        self.store = store
        self.embedder = embedder
        self.has_ann = has_ann

    async def qvec(self, query: str) -> np.ndarray[Any, Any]:
        return np.asarray((await self.embedder.embed_query(query)).embeddings[0], dtype=np.float32)

    async def vector(self, query: str, k: int = TOP_K, where: str | None = None, exact: bool = False) -> Any:
        q = self.table.query().nearest_to(await self.qvec(query)).column('vector').distance_type('cosine').limit(k)
        q = q.select(SELECT)
        if where:
            q = q.where(where)
        if exact:
            q = q.bypass_vector_index()
        elif self.has_ann:
            q = q.nprobes(self.store.nprobes).refine_factor(self.store.refine_factor)
        return await q.to_arrow()

    async def text(self, query: str, k: int = TOP_K, where: str | None = None) -> Any:
        q = self.table.query().nearest_to_text(query).select(SELECT).limit(k)
        if where:
            q = q.where(where)
        try:
            return await q.to_arrow()
        except Exception:  # LanceDB's string parser rejects some model-written text
            return None

    async def hybrid(self, query: str, where: str | None = None) -> Any:
        return await asyncio.gather(self.vector(query, DEPTH, where), self.text(query, DEPTH, where))

    async def regex(self, pattern: str) -> Any:
        where = f"regexp_like(urtext, '{pattern}')"
        cols = ['id', 'kind', 'urtext', 'document_id', 'sequence_number']
        return await self.table.query().where(where).select(cols).limit(self.store.regex_scan_limit).to_arrow()

    def search(self, tool: str, where: str | None = None) -> Callable[[dict[str, Any]], Awaitable[Any]]:
        """The raw counterpart of a vector, text or hybrid search call, scoped by ``where``."""
        if tool == 'vector_search':
            return lambda a: self.vector(a['query'], where=where)
        if tool == 'text_search':
            return lambda a: self.text(a['query'], where=where)
        return lambda a: self.hybrid(a['query'], where=where)


async def raw_ingest(path: pathlib.Path, batches: list[pa.Table], vector_index: Any) -> float:
    """Seconds for plain LanceDB to hold the same rows with the same indexes."""
    t0 = time.perf_counter()
    db = await lancedb.connect_async(str(path))
    table = await db.create_table('records', data=batches[0])
    for batch in batches[1:]:
        await table.add(batch)
    for column, config in (('id', BTree()), ('document_id', BTree()), ('labels', LabelList())):
        await table.create_index(column, config=config)
    await table.create_index('text', config=FTS(with_position=True, remove_stop_words=False))
    if vector_index is not None:
        await table.create_index('vector', config=vector_index)
    await table.optimize()
    return time.perf_counter() - t0


# -- one corpus ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Loaded:
    """A corpus upserted through the store (and, up to `RAW_INGEST_MAX` chunks, into raw LanceDB)."""

    store: LanceDBStore
    prepared: Prepared
    chunks: int
    upserts: int
    embed_s: float
    """Document vectors computed before the clock started (excluded from ingest)."""
    ingest_s: float
    """``upsert`` of every batch plus the final ``optimize()``."""
    optimize_s: float
    raw_s: float | None
    """Raw LanceDB holding the same rows and indexes; ``None`` above `RAW_INGEST_MAX`."""
    stats: dict[str, Any]

    @property
    def has_ann(self) -> bool:
        return 'vector_idx' in self.stats

    def json(self) -> dict[str, Any]:
        raw_indexes = '/IVF-SQ' if self.has_ann else ''
        return {
            'seconds': round(self.ingest_s, 2),
            'chunks_per_s': round(self.chunks / self.ingest_s, 1),
            'raw_chunks_per_s': round(self.chunks / self.raw_s, 1) if self.raw_s else None,
            'raw': (
                f'create_table + add of the same Arrow rows, then the same BTree/LabelList/FTS{raw_indexes} '
                'indexes and optimize()'
                if self.raw_s
                else f'not run above {RAW_INGEST_MAX:,} chunks'
            ),
        }

    def notes(self, name: str) -> list[str]:
        raw = f'; raw LanceDB {self.raw_s:.1f} s ({self.chunks / self.raw_s:,.0f} chunks/s)' if self.raw_s else ''
        return [
            f'{name}: {self.chunks:,} chunks; {self.upserts} upserts + optimize() = {self.ingest_s:.1f} s '
            f'({self.chunks / self.ingest_s:,.0f} chunks/s; final optimize {self.optimize_s:.1f} s; document vectors '
            f'computed beforehand in {self.embed_s:.1f} s, excluded){raw}',
            f'indexes: { {k: (v["indexed_rows"], v["unindexed_rows"]) for k, v in self.stats.items()} }',
        ]


async def load(corpus: Corpus, path: pathlib.Path) -> Loaded:
    """Upsert ``corpus`` batch by batch (vectors prepared off the clock), optimize, then the same raw."""
    prepared = Prepared(corpus.embedder)
    # LanceDB's own analyzer (not the default 'auto'): the raw-library baselines query the same table's
    # FTS index on `text` with `nearest_to_text`, so both sides search one index.
    store = LanceDBStore(path / 'store', embedder=prepared, language='lancedb')
    embed_s = ingest_s = 0.0
    upserts = 0
    arrow: list[pa.Table] = []
    for docs in corpus.batches():
        texts = [c.text for d in docs for c in d.chunks]
        embed_s += await prepared.prepare(texts)
        t0 = time.perf_counter()
        await store.upsert(docs)
        ingest_s += time.perf_counter() - t0
        upserts += 1
        if corpus.chunks <= RAW_INGEST_MAX:
            records = [c for d in docs for c in d.chunks]
            vectors = np.stack([prepared.ready[c.text] for c in records])
            arrow.append(record_table(records, vectors, await (await store.records_table()).schema()))
    t0 = time.perf_counter()
    await store.optimize()
    optimize_s = time.perf_counter() - t0
    stats = await store.index_stats()
    raw_s = None
    if arrow:
        vector_index = None
        if 'vector_idx' in stats:
            from lancedb.index import IvfSq

            vector_index = IvfSq(distance_type='cosine', num_partitions=max(1, round(corpus.chunks**0.5)))
        raw_s = await raw_ingest(path / 'raw', arrow, vector_index)
        shutil.rmtree(path / 'raw', ignore_errors=True)
    del arrow
    return Loaded(store, prepared, corpus.chunks, upserts, embed_s, ingest_s + optimize_s, optimize_s, raw_s, stats)


async def warm_latency(
    rag: ToolishRag[None], tool: str, args: Sequence[dict[str, Any]], raw: Callable[[dict[str, Any]], Any] | None
) -> Alternated:
    """`tool_latency` after one untimed call of each side (the first call pays one-off costs)."""
    await rag.run_tool(tool, args[0])
    if raw is not None:
        await raw(args[0])
    return await tool_latency(rag, tool, args, raw)


async def time_tools(
    rag: ToolishRag[None], raw: RawQueries, store: LanceDBStore, corpus: Corpus, n: int
) -> list[dict[str, Any]]:
    """Every tool against the raw query it wraps; the lookups on chunks the searches found."""
    args = [{'query': q, 'top_k': TOP_K} for q in corpus.queries]
    vector_note = (
        f'embed_query + nearest_to(cosine) ANN IVF-SQ nprobes {store.nprobes} refine x{store.refine_factor}'
        if raw.has_ann
        else 'embed_query + nearest_to(cosine), exact (below ann_threshold)'
    )
    notes = {
        'vector_search': vector_note,
        'text_search': 'nearest_to_text(query string) BM25',
        'hybrid_search': f'raw vector + raw text at depth {DEPTH}, no fusion',
    }
    rows: list[dict[str, Any]] = []
    first_hits: list[str] = []
    for tool in SEARCHES:
        got = await warm_latency(rag, tool, args, raw.search(tool))
        rows.append(tool_json(tool, got.tool_ms, got.raw_ms, notes[tool]))
        first_hits.extend(h[0].id for h in got.tool_out if h)
    regex_args = [{'pattern': p, 'top_k': TOP_K} for p in corpus.patterns] * 4
    got = await warm_latency(rag, 'regex_search', regex_args, lambda a: raw.regex(a['pattern']))
    rows.append(
        tool_json('regex_search', got.tool_ms, got.raw_ms, f'where regexp_like(urtext) limit {store.regex_scan_limit}')
    )
    targets = list(dict.fromkeys(first_hits))[:n]
    lookups = {
        'broaden_chunk': [{'chunk_id': c, 'chunks_to_add': 2} for c in targets],
        'zoom_out': [{'id': c} for c in targets],
    }
    for tool, lookup_args in lookups.items():
        got = await warm_latency(rag, tool, lookup_args, None)
        rows.append(tool_json(tool, got.tool_ms, [], 'no raw counterpart (a lookup)'))
    return rows


def exact_calls(tool: str, selectivity: float, got: Alternated) -> tuple[int, str | None]:
    """Calls that returned exactly top_k hits (text: or every in-scope match), all in scope; a note on the rest."""
    limit = round(selectivity * 100)
    hits, raw_out = got.tool_out, got.raw_out
    # Exactly top_k, or every in-scope match when fewer match the words (raw LanceDB's count).
    expected = [min(TOP_K, o.num_rows) if tool == 'text_search' and o is not None else TOP_K for o in raw_out]
    exact = sum(
        len(h) == want and all(x.record.metadata['bucket'] < limit for x in h)
        for h, want in zip(hits, expected, strict=True)
    )
    if tool != 'text_search' or all(len(h) >= TOP_K for h in hits):
        return exact, None
    # Fewer than top_k can only be right when fewer in-scope records match the words.
    short = [(len(h), 0 if o is None else o.num_rows) for h, o in zip(hits, raw_out, strict=True)]
    matched = sum(n == min(TOP_K, m) for n, m in short if n < TOP_K)
    return exact, (
        f'text_search at {selectivity:.0%}: {len(hits) - exact} calls returned fewer than top_k; '
        f'{matched} of them returned every in-scope match raw LanceDB found'
    )


async def time_filtered(
    rag: ToolishRag[None], raw: RawQueries, store: LanceDBStore, queries: list[str], unfiltered: dict[str, float]
) -> tuple[list[dict[str, Any]], list[str]]:
    """Searches scoped to 1%, 10% and 50% of the chunks against the raw queries with the same ``where``."""
    args = [{'query': q, 'top_k': TOP_K} for q in queries]
    filtered: list[dict[str, Any]] = []
    short_notes: list[str] = []
    for selectivity in (0.01, 0.1, 0.5):
        scope = F.lt('bucket', round(selectivity * 100))
        where = store.filter_sql(scope)
        scoped = rag.with_metadata_filter(scope)
        for tool in SEARCHES:
            got = await warm_latency(scoped, tool, args, raw.search(tool, where))
            exact, note = exact_calls(tool, selectivity, got)
            if note is not None:
                short_notes.append(note)
            filtered.append(
                filtered_json(
                    tool,
                    selectivity,
                    got.tool_ms,
                    got.raw_ms,
                    unfiltered_p50_ms=unfiltered[tool],
                    exact_top_k=exact,
                    top_k=TOP_K,
                )
            )
    return filtered, short_notes


async def ann_recall(raw: RawQueries, queries: list[str]) -> float:
    """Mean share of the exact top 10 that the ANN query returned."""
    found = []
    for q in queries:
        ann = {x['id'] for x in (await raw.vector(q)).to_pylist()}
        exact_ids = {x['id'] for x in (await raw.vector(q, exact=True)).to_pylist()}
        found.append(len(ann & exact_ids) / max(1, len(exact_ids)))
    return sum(found) / len(found)


async def bench_corpus(corpus: Corpus, path: pathlib.Path, n: int) -> tuple[dict[str, Any], list[str]]:
    loaded = await load(corpus, path)
    store = loaded.store
    raw = RawQueries(store, await store.records_table(), loaded.prepared.inner, loaded.has_ann)
    for q in corpus.queries:  # fill the embedding cache first: no row pays for the model alone
        await loaded.prepared.inner.embed_query(q)
    rag: ToolishRag[None] = ToolishRag(store, name='bench', max_top_k=100)
    rows = await time_tools(rag, raw, store, corpus, n)
    unfiltered = {r['tool']: r['p50_ms'] for r in rows if r['tool'] in SEARCHES}
    filtered, short_notes = await time_filtered(rag, raw, store, corpus.queries, unfiltered)
    recall = await ann_recall(raw, corpus.queries[:100]) if loaded.has_ann else None
    await store.aclose()
    result = {
        'name': corpus.name,
        'chunks': corpus.chunks,
        'embedder': corpus.embedder_note,
        'ingest': loaded.json(),
        'tools': rows,
        'filtered': filtered,
    }
    notes = [*loaded.notes(corpus.name), *short_notes]
    if recall is not None:
        notes.append(f'ANN recall@10 against exact search ({min(100, len(corpus.queries))} queries): {recall:.3f}')
    return result, notes


def render(corpus: dict[str, Any], notes: list[str]) -> str:
    lines = [f'### {corpus["name"]} ({corpus["chunks"]:,} chunks, {corpus["embedder"]})', '']
    lines += [
        f'| tool (top_k={TOP_K}) | calls | tool p50 / p99 ms | raw p50 / p99 ms | p50 ratio | raw call |',
        '|---|---:|---:|---:|---:|---|',
    ]
    for r in corpus['tools']:
        raw = f'{r["raw_p50_ms"]:.2f} / {r["raw_p99_ms"]:.2f}' if r['raw_p50_ms'] is not None else '—'
        ratio = f'{r["p50_ms"] / r["raw_p50_ms"]:.2f}x' if r['raw_p50_ms'] else '—'
        lines.append(
            f'| {r["tool"]} | {r["n"]} | {r["p50_ms"]:.2f} / {r["p99_ms"]:.2f} | {raw} | {ratio} | {r["raw"]} |'
        )
    lines += [
        '',
        '| filter | tool | tool p50 / p99 ms | unfiltered p50 | raw p50 | exactly top_k |',
        '|---|---|---:|---:|---:|---:|',
    ]
    for f in corpus['filtered']:
        lines.append(
            f'| {f["selectivity"]:.0%} | {f["tool"]} | {f["p50_ms"]:.2f} / {f["p99_ms"]:.2f} | '
            f'{f["unfiltered_p50_ms"]:.2f} | {f["raw_p50_ms"]:.2f} | {f["exact_top_k"]}/{f["n"]} |'
        )
    lines += ['', *(f'- {n}' for n in notes)]
    return '\n'.join(lines)


# -- quality -------------------------------------------------------------------------------


def raw_fuse(vector: list[tuple[str, float]], text: list[tuple[str, float]], chunks: dict[str, Chunk]) -> list[str]:
    """The core's fusion (default `FusionConfig`, as the toolset uses) of the raw legs' (id, score) lists."""
    legs = [[SearchHit(chunks[i], s) for i, s in leg] for leg in (vector, text)]
    return [h.id for h in fuse(legs[0], legs[1], DEPTH, FusionConfig())]


def _ranking(ids: Sequence[str], corpus_of: dict[str, str], k: int) -> dict[str, float]:
    out: dict[str, float] = {}
    for rank, rid in enumerate(ids):
        out.setdefault(corpus_of[rid], float(k - rank))
    return out


async def quality(path: pathlib.Path, embedder: Embedder) -> tuple[dict[str, Any], list[str]]:
    dataset = load_beir(SCIFACT, 'train')
    docs = beir_documents(dataset)
    store = LanceDBStore(path, embedder=embedder, language='lancedb')  # as in `load`: the raw runs read its index
    for start in range(0, len(docs), 500):
        await store.upsert(docs[start : start + 500])
    await store.optimize()
    rag: ToolishRag[None] = ToolishRag(store, name='q', max_top_k=DEPTH)
    tool_scores = await evaluate_dataset(rag, dataset, ['text', 'vector', 'hybrid'], top_k=DEPTH)
    table = await store.records_table()
    chunks = {c.id: c for d in docs for c in d.chunks}
    corpus_of = {i: str(c.metadata['corpus_id']) for i, c in chunks.items()}
    runs: dict[str, dict[str, dict[str, float]]] = {'text': {}, 'vector': {}, 'hybrid': {}, 'lancedb-rrf': {}}
    from lancedb.rerankers import RRFReranker

    for qid, query in dataset.judged_queries:
        vec = np.asarray((await embedder.embed_query(query)).embeddings[0], dtype=np.float32)
        vrows = (
            await table.query()
            .nearest_to(vec)
            .column('vector')
            .distance_type('cosine')
            .select(['id'])
            .limit(DEPTH)
            .to_arrow()
        ).to_pylist()
        trows = (await table.query().nearest_to_text(query).select(['id']).limit(DEPTH).to_arrow()).to_pylist()
        vector = [(r['id'], 1.0 - r['_distance']) for r in vrows]
        text = [(r['id'], r['_score']) for r in trows]
        runs['vector'][qid] = _ranking([i for i, _ in vector], corpus_of, DEPTH)
        runs['text'][qid] = _ranking([i for i, _ in text], corpus_of, DEPTH)
        runs['hybrid'][qid] = _ranking(raw_fuse(vector, text, chunks), corpus_of, DEPTH)
        native = await (
            table.query()
            .nearest_to(vec)
            .distance_type('cosine')
            .nearest_to_text(query)
            .rerank(RRFReranker())
            .select(['id'])
            .limit(DEPTH)
            .to_arrow()
        )
        runs['lancedb-rrf'][qid] = _ranking(native.column('id').to_pylist(), corpus_of, DEPTH)
    raw_scores = {name: score_run(run, dataset.qrels) for name, run in runs.items()}
    await store.aclose()
    result = {
        'queries': len(dataset.judged_queries),
        'tool': {k: round(v['ndcg@10'], 4) for k, v in tool_scores.items()},
        'raw': {k: round(v['ndcg@10'], 4) for k, v in raw_scores.items()},
    }
    lines = [
        f'### SciFact train quality ({len(dataset.judged_queries)} queries, {len(docs)} abstracts, all-MiniLM-L6-v2)',
        '',
        '| nDCG@10 | through the tool | raw LanceDB, same table | raw query |',
        '|---|---:|---:|---|',
        f'| text | {tool_scores["text"]["ndcg@10"]:.4f} | {raw_scores["text"]["ndcg@10"]:.4f} | '
        '`nearest_to_text(query)` |',
        f'| vector | {tool_scores["vector"]["ndcg@10"]:.4f} | {raw_scores["vector"]["ndcg@10"]:.4f} | '
        '`nearest_to(embed_query(query)).distance_type("cosine")` |',
        f'| hybrid | {tool_scores["hybrid"]["ndcg@10"]:.4f} | {raw_scores["hybrid"]["ndcg@10"]:.4f} | '
        f"the core's fusion ({FusionConfig().method}) of the two raw legs at depth {DEPTH} |",
        f'| (LanceDB native hybrid, RRF) | — | {raw_scores["lancedb-rrf"]["ndcg@10"]:.4f} | '
        '`nearest_to(vec).nearest_to_text(query).rerank(RRFReranker())` |',
    ]
    return result, lines


# -- main ----------------------------------------------------------------------------------


def machine() -> str:
    cpu = cpu_model(platform.processor() or 'unknown CPU')
    return f'{cpu}, {os.cpu_count()} logical CPUs; Python {platform.python_version()}, lancedb {lancedb.__version__}'


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        '--sizes', type=int, nargs='*', default=[100_000], help='synthetic corpus sizes (chunks; none: skip)'
    )
    parser.add_argument('--quick', action='store_true', help='one 20k synthetic corpus, no SciFact')
    parser.add_argument('--quality', action='store_true', help='also SciFact train nDCG@10, tool vs raw')
    parser.add_argument('--no-scifact', action='store_true', help='skip the SciFact latency run')
    parser.add_argument('-n', type=int, default=100, help='queries per tool')
    parser.add_argument(
        '--cache-dir',
        type=pathlib.Path,
        default=pathlib.Path.home() / '.cache' / 'toolish-rag' / 'bench' / 'vectors',
        help='document vectors kept between runs (outside the repository)',
    )
    parser.add_argument('--json-out', type=pathlib.Path, default=None, help='write the shared speed-result JSON')
    args = parser.parse_args()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix='lancedb-bench-'))
    have_scifact = (SCIFACT / 'corpus.jsonl').exists()
    corpora: list[dict[str, Any]] = []
    out = [f'- machine: {machine()}', f'- {THREAD_NOTE}', '']
    quality_result = None
    try:
        embedder = minilm(args.cache_dir) if have_scifact and not args.quick else None
        out[1] = f'- {THREAD_NOTE}'
        plans: list[Callable[[], Corpus]] = []
        if embedder is not None and not args.no_scifact:
            plans.append(lambda: scifact_corpus(embedder, args.n))
        for size in [20_000] if args.quick else args.sizes:
            plans.append(lambda size=size: synthetic_corpus(size, args.n))
        for i, plan in enumerate(plans):
            corpus = plan()
            result, notes = await bench_corpus(corpus, tmp / f'c{i}', args.n)
            shutil.rmtree(tmp / f'c{i}', ignore_errors=True)
            corpora.append(result)
            out += [render(result, notes), '']
            print(out[-2], flush=True)
        if args.quality:
            if embedder is None:
                out.append(f'(SciFact not found under {SCIFACT}: no quality run)')
            else:
                quality_result, lines = await quality(tmp / 'quality', embedder)
                out += lines
                print('\n'.join(lines), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    peak = peak_rss_mib()
    out.append(f'\n- peak RSS {peak:,.0f} MiB')
    print('\n## Summary\n')
    print('\n'.join(out))
    if args.json_out is not None:
        write_speed_result(args.json_out, speed_result('lancedb', THREAD_NOTE, corpora))
        if quality_result is not None:  # not part of the shared speed schema: a file of its own
            args.json_out.with_suffix('.quality.json').write_text(json.dumps(quality_result, indent=2) + '\n')


if __name__ == '__main__':
    asyncio.run(main())
