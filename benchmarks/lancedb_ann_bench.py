"""LanceDB ANN recall@10 against exact search, and latency, at 1M rows: index types and query settings.

    nice .venv/bin/python benchmarks/lancedb_ann_bench.py                   # the docs' 1M run (ivf_sq, ivf_pq)
    nice .venv/bin/python benchmarks/lancedb_ann_bench.py --quick           # 20k rows, a smoke run
    nice .venv/bin/python benchmarks/lancedb_ann_bench.py --rows 200000 --sets synthetic \
        --indexes ivf_sq ivf_sq_sqrt ivf_hnsw_sq --no-tool                  # the previous default, HNSW
    nice .venv/bin/python benchmarks/lancedb_ann_bench.py --replot a.json b.json   # redraw the plot

At 1M rows on 2 cores an index build takes 0.5-3.5 minutes (IVF_HNSW_SQ far longer: left out of
the docs' 1M run) and loading the synthetic store about 9; the whole docs run took ~35 minutes.

Two vector sets of ``--rows`` 384-d unit vectors:

* ``synthetic``: the synthetic corpus of ``lancedb_bench.py`` (documents of ten chunks, each
  chunk 18 words drawn with Zipf weights, exponent 1.1, from 5,000 pseudo-words plus 10 drawn
  from its document's eight topic words) embedded with `BagOfRandomVectors` (each pseudo-word a
  fixed random Gaussian 384-d vector, a text the normalised sum of its words' vectors). Queries:
  six words of a random chunk, embedded alike. The rows are a `LanceDBStore`'s (`load_store`),
  and the raw sweep runs on that store's own records table, so the tool is measured on the very
  table swept.
* ``scifact``: SciFact's 5,183 abstracts embedded with all-MiniLM-L6-v2 (the offline model,
  vectors cached under ``--cache-dir``, outside the repository), repeated up to ``--rows``:
  copy ``c > 0`` of abstract ``a`` is ``normalise(v_a + N(0, sigma^2 I))`` with sigma
  `NOISE_SIGMA` (copy 0 is the abstract itself). Queries: SciFact's query embeddings (real
  questions, not copies). Why that sigma: a copy sits at cosine ~0.86 from its abstract and
  ~0.74 from a sibling copy, still closer than two distinct abstracts usually are (the run prints
  SciFact's median nearest-other-abstract cosine, 0.68), so copies stay around their abstract as
  near neighbours do, yet are distinct points: a much smaller sigma turns each query's top 10
  into a draw among ~190 near-identical copies of one abstract, ties no index (and no reader) can
  tell apart. A plain LanceDB table (``id``, ``vector``).

For each set the exact top 10 of every query comes from numpy (brute force over the very vectors
written; a LanceDB ``bypass_vector_index`` query is checked against it on a few queries). Each
index config (`index_configs`) is built once on ``vector`` (build time measured) and every query
setting for it (nprobes, refine_factor, ef) runs the ``-n`` queries: recall@10 is the share of the
ten returned ids whose exact cosine reaches the exact 10th best (so exact ties count as found),
p50/p99 the latency of the raw query ``nearest_to(q).distance_type('cosine').limit(10)``
selecting ``id``. The table goes to stdout (and ``--json-out``), the plot (recall on y, raw p50
ms on x, one line per index config) to ``--plot``.

Last, on the synthetic store, with the store's defaults (`default_vector_index`, built by
``create_vector_index()``, and `LanceDBStore`'s ``nprobes`` and ``refine_factor``), the
``vector_search`` tool (`ToolishRag.run_tool`) is timed alternating call by call with the raw
query it wraps (same settings, the store's result columns), and both recalls are measured.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from pin_threads import set_thread_counts

THREADS = 2
THREAD_NOTE = set_thread_counts(THREADS, torch=False)

import lancedb  # noqa: E402
import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402
import pyarrow as pa  # noqa: E402
from common import BagOfRandomVectors, chunk_text, data_dir, pct, peak_rss_mib, tool_latency  # noqa: E402
from lancedb.index import HnswSq, IvfPq, IvfSq  # noqa: E402
from lancedb_bench import Prepared, machine, minilm, synthetic_corpus  # noqa: E402
from pydantic_ai.embeddings import Embedder  # noqa: E402

from toolish_rag.content import Document  # noqa: E402
from toolish_rag.toolset import ToolishRag  # noqa: E402
from toolish_rag_lancedb import LanceDBStore  # noqa: E402
from toolish_rag_lancedb._maintenance import default_vector_index  # noqa: E402
from toolish_rag_lancedb._schema import RESULT_COLUMNS, record_table  # noqa: E402

DIMS = 384
TOP_K = 10
NOISE_SIGMA = 0.03
"""Per-dimension noise of a SciFact copy: norm ~0.59, cosine ~0.86 to its abstract."""
TIE_EPS = 1e-5
"""Cosine slack for a returned id to count as one of the exact top 10 (float32 rounding)."""
EXACT_CHECKS = 5
CACHE_DIR = pathlib.Path.home() / '.cache' / 'toolish-rag' / 'bench' / 'vectors'
TARGET_RECALL = 0.95
Matrix = npt.NDArray[np.float32]


def unit(m: npt.NDArray[Any]) -> Matrix:
    """Rows scaled to length 1 (zero rows kept)."""
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.asarray(m / norms, dtype=np.float32)


def load_avg() -> str:
    """The 1/5/15-minute load averages (other jobs share the machine: figures are indicative)."""
    try:
        return ' '.join(pathlib.Path('/proc/loadavg').read_text().split()[:3])
    except OSError:
        return 'unknown'


# -- vector sets ---------------------------------------------------------------------------------


@dataclass
class VectorSet:
    """Unit-vector rows (row ``i`` of ``vectors`` is the table row with id ``ids[i]``) and queries."""

    name: str
    vectors: Matrix
    ids: list[str]
    queries: Matrix
    path: pathlib.Path
    """The LanceDB database directory holding the ``records`` table."""
    note: str
    query_texts: list[str]
    """The query strings (synthetic: what the tool is called with; empty for SciFact)."""

    def index_of(self) -> dict[str, int]:
        return {rid: i for i, rid in enumerate(self.ids)}


async def synthetic_set(rows: int, n: int, path: pathlib.Path) -> VectorSet:
    """The synthetic corpus in a `LanceDBStore`'s records table (see `load_store`)."""
    corpus = synthetic_corpus(rows, n)
    bag = BagOfRandomVectors(DIMS)
    t0 = time.perf_counter()
    ids, vectors = await load_store(path, corpus.batches(), bag)
    load_s = time.perf_counter() - t0
    note = (
        f'synthetic corpus, {rows:,} chunks of Zipf pseudo-words, BagOfRandomVectors 384-d; queries: six words '
        f'of a random chunk; loaded into a LanceDBStore in {load_s:.0f} s (load {load_avg()})'
    )
    return VectorSet('synthetic', vectors, ids, bag.vectors(corpus.queries), path, note, corpus.queries)


async def load_store(
    path: pathlib.Path, batches: Iterator[list[Document]], bag: BagOfRandomVectors
) -> tuple[list[str], Matrix]:
    """A store's records table holding every batch; the chunk ids and vectors in table order.

    The first batch goes through ``upsert`` (it creates the tables, the scalar and text indexes
    and the typed metadata columns); the others are the store's own rows (`record_table` with
    the table's schema) added to its records table directly, which skips the per-document
    bookkeeping of the ``documents`` table (vector search never reads it) and cuts a 1M load
    from about 17 minutes to a few. One ``optimize()`` at the end compacts the rows and brings
    the scalar indexes up to date, as a store that lived through its writes would be; the text
    index is dropped (see below).
    """
    prepared = Prepared(Embedder(bag))
    store = LanceDBStore(path, embedder=prepared, ann_threshold=None, optimize_every=10**9, windows=None)
    ids: list[str] = []
    parts: list[Matrix] = []
    for docs in batches:
        chunks = [c for d in docs for c in d.chunks]
        vectors = bag.vectors([c.text for c in chunks])
        if not ids:
            prepared.ready = dict(zip((c.text for c in chunks), vectors, strict=True))
            await store.upsert(docs)
        else:
            table = await store.records_table()
            await table.add(record_table(chunks, vectors, await table.schema()))
        ids.extend(c.id for c in chunks)
        parts.append(vectors)
    # Only vector search is measured: the text index goes, or every optimize() (the store runs one
    # after building the vector index) would spend minutes folding a million texts into it.
    await (await store.records_table()).drop_index('text_idx')
    await store.optimize()
    await store.aclose()
    return ids, np.vstack(parts)


async def scifact_embeddings(cache_dir: pathlib.Path) -> tuple[Matrix, Matrix]:
    """SciFact's abstracts (title, blank line, text) and queries, all-MiniLM-L6-v2 unit vectors (cached)."""
    base = data_dir() / 'scifact'
    with (base / 'corpus.jsonl').open(encoding='utf-8') as f:
        rows = [json.loads(line) for line in f]
    with (base / 'queries.jsonl').open(encoding='utf-8') as f:
        questions = [json.loads(line)['text'] for line in f]
    texts = [chunk_text(r.get('title') or '', r.get('text') or '') for r in rows]
    embedder = minilm(cache_dir)
    docs: list[Any] = []
    for start in range(0, len(texts), 256):
        docs.extend((await embedder.embed_documents(texts[start : start + 256])).embeddings)
    queries = (await embedder.embed_query(questions)).embeddings
    return unit(np.asarray(docs, dtype=np.float32)), unit(np.asarray(queries, dtype=np.float32))


def perturbed_copies(base: Matrix, rows: int, sigma: float, seed: int = 5) -> Matrix:
    """``rows`` vectors: ``base`` itself, then copies of it plus N(0, sigma^2) noise, renormalised."""
    rng = np.random.default_rng(seed)
    out = np.empty((rows, base.shape[1]), dtype=np.float32)
    out[: min(rows, len(base))] = base[:rows]
    for start in range(len(base), rows, len(base)):
        stop = min(rows, start + len(base))
        noise = rng.normal(0.0, sigma, (stop - start, base.shape[1])).astype(np.float32)
        out[start:stop] = unit(base[: stop - start] + noise)
    return out


def nearest_other_cosine(base: Matrix) -> float:
    """The median over abstracts of the cosine to their nearest other abstract."""
    sims = base @ base.T
    np.fill_diagonal(sims, -2.0)
    return float(np.median(sims.max(axis=1)))


async def write_table(path: pathlib.Path, vectors: Matrix) -> None:
    """A plain ``records`` table of ``id`` (the row number as a string) and ``vector``."""
    db = await lancedb.connect_async(str(path))
    table: Any = None
    for start in range(0, len(vectors), 100_000):
        block = vectors[start : start + 100_000]
        data = pa.table(
            {
                'id': pa.array([str(i) for i in range(start, start + len(block))]),
                'vector': pa.FixedSizeListArray.from_arrays(pa.array(block.reshape(-1)), DIMS),
            }
        )
        if table is None:
            table = await db.create_table('records', data=data)
        else:
            await table.add(data)
    assert table is not None
    await table.optimize()
    table.close()


async def scifact_set(rows: int, n: int, cache_dir: pathlib.Path, path: pathlib.Path) -> VectorSet:
    base, queries = await scifact_embeddings(cache_dir)
    vectors = perturbed_copies(base, rows, NOISE_SIGMA)
    t0 = time.perf_counter()
    await write_table(path, vectors)
    sibling = float(np.median(np.sum(vectors[: len(base)] * vectors[len(base) : 2 * len(base)], axis=1)))
    note = (
        f'SciFact {len(base):,} abstracts (all-MiniLM-L6-v2) repeated to {rows:,} rows, copies + N(0, '
        f'{NOISE_SIGMA}^2) noise renormalised (median cosine copy-abstract {sibling:.3f}; SciFact median '
        f'nearest-other-abstract cosine {nearest_other_cosine(base):.3f}); queries: {min(n, len(queries))} SciFact '
        f'query embeddings; plain table written in {time.perf_counter() - t0:.0f} s'
    )
    rng = np.random.default_rng(3)
    picked = rng.choice(len(queries), size=min(n, len(queries)), replace=False)
    return VectorSet('scifact', vectors, [str(i) for i in range(rows)], queries[picked], path, note, [])


# -- exact top 10 --------------------------------------------------------------------------------


def exact_kth(vectors: Matrix, queries: Matrix, k: int = TOP_K) -> tuple[npt.NDArray[np.int64], npt.NDArray[Any]]:
    """Per query: the row numbers of the exact top ``k`` by cosine, and the ``k``-th best cosine."""
    tops = np.empty((len(queries), k), dtype=np.int64)
    kth = np.empty(len(queries), dtype=np.float32)
    for start in range(0, len(queries), 16):
        sims = vectors @ queries[start : start + 16].T
        part = np.argpartition(-sims, k - 1, axis=0)[:k]
        for j in range(part.shape[1]):
            order = part[np.argsort(-sims[part[:, j], j]), j]
            tops[start + j] = order
            kth[start + j] = sims[order[-1], j]
    return tops, kth


@dataclass(frozen=True)
class Truth:
    vectors: Matrix
    queries: Matrix
    kth: npt.NDArray[Any]
    index: dict[str, int]

    def recall(self, q: int, ids: Sequence[str]) -> float:
        """Share of the exact top 10 found: returned ids whose exact cosine reaches the 10th best."""
        rows = [self.index[i] for i in ids]
        if not rows:
            return 0.0
        sims = self.vectors[rows] @ self.queries[q]
        return min(TOP_K, int(np.sum(sims >= self.kth[q] - TIE_EPS))) / TOP_K


# -- index configs and query settings ------------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    nprobes: int | None = None
    refine_factor: int | None = None
    ef: int | None = None
    exact: bool = False

    def label(self) -> str:
        if self.exact:
            return 'exact (bypass_vector_index)'
        parts = [f'nprobes {self.nprobes}']
        if self.ef is not None:
            parts.append(f'ef {self.ef}')
        parts.append(f'refine x{self.refine_factor}' if self.refine_factor else 'no refine')
        return ', '.join(parts)


@dataclass(frozen=True)
class IndexConfig:
    key: str
    name: str
    config: Any
    settings: Callable[[int], tuple[Setting, ...]]
    """The query settings to run, given the partition count the index ended up with."""


def shares(parts: int, fractions: Sequence[float]) -> list[int]:
    """nprobes values probing these fractions of ``parts`` partitions."""
    return sorted({max(1, min(parts, round(parts * f))) for f in fractions})


def ivf_settings(parts: int) -> tuple[Setting, ...]:
    """nprobes from a tenth of the partitions to all of them (refine x5), and refine x1/x20 at half."""
    probes = [Setting(p, 5) for p in shares(parts, (0.1, 0.2, 0.3, 0.5, 0.7, 0.85, 1.0))]
    half = shares(parts, (0.5,))[0]
    return (*probes, Setting(half, 1), Setting(half, 20))


def index_configs(rows: int) -> list[IndexConfig]:
    """What the sweep builds, each followed by ``optimize()`` as in the store.

    ``ivf_sq`` is the store's default (`default_vector_index`); ``ivf_sq_sqrt`` the previous one
    (about sqrt(rows) partitions, which LanceDB's ``optimize()`` then joins into a few large ones).
    """
    sqrt_parts = max(1, min(4096, round(rows**0.5)))
    return [
        IndexConfig('ivf_sq', 'IVF_SQ (store default)', default_vector_index(rows), ivf_settings),
        IndexConfig(
            'ivf_sq_sqrt',
            f'IVF_SQ {sqrt_parts} partitions (previous default)',
            IvfSq(distance_type='cosine', num_partitions=sqrt_parts),
            lambda parts: tuple(Setting(p, 5) for p in sorted({min(parts, 20), min(parts, 40), min(parts, 160)})),
        ),
        IndexConfig(
            'ivf_pq',
            'IVF_PQ 48 sub-vectors',
            IvfPq(distance_type='cosine', num_sub_vectors=48),
            lambda parts: tuple(Setting(p, r) for p in shares(parts, (0.3, 0.7, 1.0)) for r in (20, 50)),
        ),
        IndexConfig(
            'ivf_hnsw_sq',
            'IVF_HNSW_SQ',
            HnswSq(distance_type='cosine'),
            lambda parts: tuple(Setting(p, 5, ef) for p in shares(parts, (0.2, 0.5)) for ef in (50, 100, 200)),
        ),
    ]


async def partitions(table: Any, q: Matrix) -> int:
    """How many IVF partitions the vector index has now (what LanceDB ranks for a query)."""
    plan = await table.query().nearest_to(q).column('vector').distance_type('cosine').limit(1).nprobes(1).analyze_plan()
    found = re.findall(r'partitions_ranked=(\d+)', plan)
    return int(found[0]) if found else 0


def vector_query(table: Any, q: Matrix, setting: Setting, columns: Sequence[str] = ('id',)) -> Any:
    """The raw query: cosine nearest 10 with ``setting``, selecting ``columns`` and the distance."""
    query = table.query().nearest_to(q).column('vector').distance_type('cosine').limit(TOP_K)
    query = query.select([*columns, '_distance'])
    if setting.exact:
        return query.bypass_vector_index()
    if setting.nprobes is not None:
        query = query.nprobes(setting.nprobes)
    if setting.refine_factor:
        query = query.refine_factor(setting.refine_factor)
    if setting.ef is not None:
        query = query.ef(setting.ef)
    return query


@dataclass(frozen=True)
class Measured:
    vector_set: str
    index: str
    build_s: float | None
    """Index build plus ``optimize()``, seconds."""
    nprobes: int | None
    refine_factor: int | None
    setting: str
    recall: float
    p50_ms: float
    p99_ms: float
    load: str

    def row(self) -> str:
        build = f'{self.build_s:.0f}' if self.build_s is not None else '—'
        return (
            f'| {self.vector_set} | {self.index} | {build} | {self.setting} | {self.recall:.3f} | '
            f'{self.p50_ms:.1f} / {self.p99_ms:.1f} | {self.load} |'
        )


TABLE_HEAD = (
    '| set | index | build s | query setting | recall@10 | p50 / p99 ms | load |\n|---|---|---:|---|---:|---:|---|'
)


async def measure(table: Any, truth: Truth, setting: Setting, queries: range) -> tuple[float, list[float]]:
    """Mean recall@10 and per-query milliseconds of ``setting`` (after two untimed warm-up queries)."""
    for q in list(queries)[:2]:
        await vector_query(table, truth.queries[q], setting).to_arrow()
    recalls: list[float] = []
    ms: list[float] = []
    for q in queries:
        t0 = time.perf_counter()
        result = await vector_query(table, truth.queries[q], setting).to_arrow()
        ms.append((time.perf_counter() - t0) * 1000)
        recalls.append(truth.recall(q, result.column('id').to_pylist()))
    return float(np.mean(recalls)), ms


async def run_settings(
    table: Any, vs: VectorSet, truth: Truth, index: str, build_s: float | None, settings: Sequence[Setting]
) -> list[Measured]:
    out: list[Measured] = []
    for setting in settings:
        queries = range(min(EXACT_CHECKS, len(truth.queries))) if setting.exact else range(len(truth.queries))
        recall, ms = await measure(table, truth, setting, queries)
        out.append(
            Measured(
                vs.name,
                index,
                build_s,
                setting.nprobes,
                setting.refine_factor,
                setting.label(),
                recall,
                pct(ms, 50),
                pct(ms, 99),
                load_avg(),
            )
        )
        print(out[-1].row(), flush=True)
    return out


async def sweep_index(
    table: Any, vs: VectorSet, truth: Truth, ix: IndexConfig, build_s: float | None
) -> list[Measured]:
    """Build ``ix`` and ``optimize()`` (unless ``build_s`` says it was built), then run its settings."""
    built = None
    if build_s is None:
        t0 = time.perf_counter()
        await table.create_index('vector', config=ix.config, replace=True)
        built = await partitions(table, truth.queries[0])
        await table.optimize()
        build_s = time.perf_counter() - t0
    parts = await partitions(table, truth.queries[0])
    layout = f'{parts} partitions' if built in (None, parts) else f'{built} partitions, {parts} after optimize()'
    return await run_settings(table, vs, truth, f'{ix.name}, {layout}', build_s, ix.settings(parts))


def cheapest(rows: Sequence[Measured], target: float) -> Measured | None:
    """The lowest-p50 setting reaching ``target`` recall, if any."""
    good = [r for r in rows if r.recall >= target and r.nprobes is not None]
    return min(good, key=lambda r: r.p50_ms) if good else None


# -- the tool on the store's table ---------------------------------------------------------------


async def tool_vs_raw(vs: VectorSet, truth: Truth, nprobes: int | None) -> list[str]:
    """``vector_search`` through the store (``nprobes``: else its default) against the raw query, alternating."""
    bag = Embedder(BagOfRandomVectors(DIMS))
    store = LanceDBStore(vs.path, embedder=bag, windows=None)
    if nprobes is not None:
        store.nprobes = nprobes
    table = await store.records_table()
    setting = Setting(store.nprobes, store.refine_factor)
    rag: ToolishRag[None] = ToolishRag(store, name='bench', max_top_k=100)
    position = {text: i for i, text in enumerate(vs.query_texts)}

    async def raw(a: dict[str, Any]) -> Any:
        q = np.asarray((await bag.embed_query(a['query'])).embeddings[0], dtype=np.float32)
        return await vector_query(table, q, setting, RESULT_COLUMNS).to_arrow()

    args: list[dict[str, Any]] = [{'query': q, 'top_k': TOP_K} for q in vs.query_texts]
    await rag.run_tool('vector_search', args[0])
    await raw(args[0])
    got = await tool_latency(rag, 'vector_search', args, raw)
    tool_recall = np.mean(
        [truth.recall(position[a['query']], [h.id for h in hits]) for a, hits in zip(args, got.tool_out, strict=True)]
    )
    raw_recall = np.mean(
        [truth.recall(position[a['query']], o.column('id').to_pylist()) for a, o in zip(args, got.raw_out, strict=True)]
    )
    stats = (await store.index_stats())['vector_idx']
    await store.aclose()
    return [
        '| call | recall@10 | p50 / p99 ms | load |',
        '|---|---:|---:|---|',
        f'| vector_search tool (ToolishRag.run_tool) | {tool_recall:.3f} | '
        f'{pct(got.tool_ms, 50):.1f} / {pct(got.tool_ms, 99):.1f} | {load_avg()} |',
        f'| raw query, same settings and columns | {raw_recall:.3f} | '
        f'{pct(got.raw_ms, 50):.1f} / {pct(got.raw_ms, 99):.1f} | |',
        '',
        f'- store: default index (create_vector_index()), nprobes {store.nprobes}, refine_factor '
        f'{store.refine_factor}; {len(args)} queries, tool and raw alternating call by call; vector_idx rows '
        f'indexed/unindexed {stats["indexed_rows"]:,}/{stats["unindexed_rows"]:,}',
    ]


# -- output --------------------------------------------------------------------------------------


def plot(rows: Sequence[Measured], path: pathlib.Path, title: str) -> None:
    """Recall@10 against raw p50 ms, one panel per vector set, one line per index config and refine
    factor in nprobes order (each point labelled with its nprobes)."""
    import matplotlib

    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    sets = list(dict.fromkeys(r.vector_set for r in rows))
    fig, axes = plt.subplots(1, len(sets), figsize=(6.5 * len(sets), 6), squeeze=False)
    for ax, name in zip(axes[0], sets, strict=True):
        mine = [r for r in rows if r.vector_set == name and r.nprobes is not None]
        for line in dict.fromkeys((r.index, r.refine_factor, 'ef' in r.setting) for r in mine):
            points = sorted(
                (r for r in mine if (r.index, r.refine_factor, 'ef' in r.setting) == line),
                key=lambda r: (r.nprobes or 0, r.setting),
            )
            label = f'{line[0]}, refine x{line[1]}' if line[1] else f'{line[0]}, no refine'
            ax.plot([r.p50_ms for r in points], [r.recall for r in points], marker='o', label=label)
            for r in points:
                tag = r.setting.split(', refine')[0].replace('nprobes ', 'np ')
                ax.annotate(tag, (r.p50_ms, r.recall), textcoords='offset points', xytext=(3, -10), fontsize=6)
        ax.axhline(0.95, color='grey', linestyle='--', linewidth=0.8)
        ax.axvline(50, color='grey', linestyle=':', linewidth=0.8)
        ax.set_xscale('log')
        ax.set_xlabel('raw query p50 (ms, log scale; dotted: 50 ms)')
        ax.set_ylabel('recall@10 vs exact (dashed: 0.95)')
        ax.set_title(name)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc='upper center', bbox_to_anchor=(0.5, -0.13), ncol=2)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


async def run_set(
    name: str, args: argparse.Namespace, rows: int, work: pathlib.Path
) -> tuple[list[Measured], list[str]]:
    """One vector set: load it, the exact top 10, the sweep (and, for the synthetic store, the tool)."""
    path = work / name
    t0 = time.perf_counter()
    if name == 'synthetic':
        vs = await synthetic_set(rows, args.n, path)
    else:
        vs = await scifact_set(rows, args.n, args.cache_dir, path)
    print(f'\n## {name}: {vs.note}; vectors ready in {time.perf_counter() - t0:.0f} s\n', flush=True)
    t0 = time.perf_counter()
    _, kth = exact_kth(vs.vectors, vs.queries)
    truth = Truth(vs.vectors, vs.queries, kth, vs.index_of())
    print(f'- exact top 10 of {len(vs.queries)} queries by numpy in {time.perf_counter() - t0:.0f} s\n', flush=True)
    print(TABLE_HEAD, flush=True)
    db = await lancedb.connect_async(str(vs.path))
    table: Any = await db.open_table('records')
    measured = await run_settings(table, vs, truth, 'none (flat scan)', None, [Setting(exact=True)])
    notes = [f'### {name}', '', f'- {vs.note}']
    configs = {ix.key: ix for ix in index_configs(rows)}
    prebuilt: float | None = None
    if name == 'synthetic' and 'ivf_sq' in args.indexes:
        # The store builds its default index itself (create_vector_index: build, then optimize()).
        store = LanceDBStore(vs.path, embedder=Embedder(BagOfRandomVectors(DIMS)), windows=None)
        t0 = time.perf_counter()
        await store.create_vector_index()
        prebuilt = time.perf_counter() - t0
        await store.aclose()
        table.close()
        table = await db.open_table('records')
    for key in sorted(args.indexes, key=lambda k: k != 'ivf_sq'):  # the store's index first: it is built already
        got = await sweep_index(table, vs, truth, configs[key], prebuilt if key == 'ivf_sq' else None)
        measured += got
        if name == 'synthetic' and key == 'ivf_sq' and not args.no_tool:
            best = cheapest(got, TARGET_RECALL)
            if best is not None:
                notes.append(f'- cheapest IVF_SQ setting reaching recall {TARGET_RECALL}: {best.setting}')
            lines = await tool_vs_raw(vs, truth, args.tool_nprobes)
            print('\n'.join(lines) + '\n', flush=True)
            notes += ['', *lines]
    table.close()
    del vs, truth
    shutil.rmtree(path, ignore_errors=True)
    return measured, notes


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--rows', type=int, default=1_000_000, help='rows per vector set')
    parser.add_argument('--quick', action='store_true', help='20k rows, 50 queries: a smoke run (a minute or two)')
    parser.add_argument('-n', type=int, default=100, help='queries per setting')
    parser.add_argument('--sets', nargs='+', default=['synthetic', 'scifact'], choices=['synthetic', 'scifact'])
    parser.add_argument(
        '--indexes',
        nargs='+',
        default=['ivf_sq', 'ivf_pq'],
        choices=['ivf_sq', 'ivf_sq_sqrt', 'ivf_pq', 'ivf_hnsw_sq'],
        help='index configs to build (ivf_sq first, whatever the order: the tool runs on it; ivf_hnsw_sq takes '
        'minutes at 200k rows, far longer at 1M)',
    )
    parser.add_argument(
        '--tool-nprobes', type=int, default=None, help="nprobes for the tool run (default: the store's)"
    )
    parser.add_argument('--no-tool', action='store_true', help='skip the tool-vs-raw run on the synthetic store')
    parser.add_argument('--cache-dir', type=pathlib.Path, default=CACHE_DIR, help='MiniLM vectors (outside the repo)')
    parser.add_argument('--work-dir', type=pathlib.Path, default=None, help='where the tables go (default: a temp dir)')
    parser.add_argument(
        '--plot',
        type=pathlib.Path,
        default=pathlib.Path(__file__).resolve().parents[1] / 'docs' / 'images' / 'lancedb-ann-recall-latency.png',
        help='the recall-latency plot (PNG)',
    )
    parser.add_argument('--json-out', type=pathlib.Path, default=None, help='every measured row as JSON')
    parser.add_argument(
        '--replot', type=pathlib.Path, nargs='+', default=None, help='only redraw --plot from --json-out files'
    )
    parser.add_argument('--title', default=None, help='plot title (with --replot)')
    args = parser.parse_args()
    if args.replot:
        saved = [Measured(**m) for f in args.replot for m in json.loads(f.read_text(encoding='utf-8'))]
        plot(saved, args.plot, args.title or 'LanceDB ANN recall against latency')
        return
    rows, args.n = (20_000, min(args.n, 50)) if args.quick else (args.rows, args.n)
    work = pathlib.Path(tempfile.mkdtemp(prefix='lancedb-ann-', dir=args.work_dir))
    header = f'- machine: {machine()}; {THREAD_NOTE}; start load {load_avg()}'
    print(header, flush=True)
    measured: list[Measured] = []
    notes: list[str] = []
    try:
        for name in args.sets:
            got, more = await run_set(name, args, rows, work)
            measured += got
            notes += [*more, '']
    finally:
        shutil.rmtree(work, ignore_errors=True)
    title = f'LanceDB ANN at {rows:,} rows, top 10, {os.cpu_count()} CPUs (load {load_avg()})'
    if not args.quick or args.plot != parser.get_default('plot'):
        plot(measured, args.plot, title)
    print('\n## Summary\n')
    print(header)
    print('\n' + TABLE_HEAD)
    print('\n'.join(m.row() for m in measured))
    print('\n' + '\n'.join(notes))
    print(f'- peak RSS {peak_rss_mib():,.0f} MiB; end load {load_avg()}')
    if args.json_out is not None:
        args.json_out.write_text(json.dumps([m.__dict__ for m in measured], indent=2) + '\n', encoding='utf-8')


if __name__ == '__main__':
    asyncio.run(main())
