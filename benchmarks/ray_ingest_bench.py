"""Ingestion throughput in-process vs on Ray (issue 17), and the cluster size for 10M documents a day.

    .venv/bin/python benchmarks/ray_ingest_bench.py            # 400 SciFact documents (a few minutes: MiniLM)
    .venv/bin/python benchmarks/ray_ingest_bench.py --quick    # 48 documents, a smoke run; writes no page
    .venv/bin/python benchmarks/ray_ingest_bench.py --no-write --json-out /tmp/ray.json

* Data: the first N records of ``../shared/data/scifact/corpus.jsonl``, each written as a
  Markdown file (``# title`` + abstract), as benchmarks/ingest_bench.py does. Chunked by the
  default `Chunker` (500 characters).
* Model: the default, all-MiniLM-L6-v2 (the offline package), everywhere.
* Per-core embedding rate: every chunk text of the N documents (`parse_path`, the chunks
  ingestion embeds) through the store's embedder, ``embed_documents`` in calls of 256 texts,
  with torch on ONE thread (``torch.set_num_threads(1)``, as each Ray actor runs: one CPU), model
  loaded and warmed first. Also on two threads (this machine's in-process ceiling).
* In-process: `ingest` into a fresh `LanceDBStore`, ``executor='auto'`` (parse in a process pool,
  embed in the driver on two threads), the store's model loaded beforehand.
* Ray: ``ray.init(num_cpus=2)`` timed on its own; then `ingest(..., executor=RayExecutor())`
  (2 actors of 1 CPU, one model each, 16 documents per batch) into a fresh LanceDBStore, twice:
  a warm-up run on 8 other documents (its wall time is the per-run fixed cost: actor start,
  model load, pipeline start) and the measured run on the N documents. The steady rate is
  ``(N - 8) / (measured - warm-up)``.
* Single writer: the N parsed documents upserted into a fresh LanceDBStore, 256 chunks a batch
  as `ingest` does, their vectors handed over from a `VectorCache` with `upsert_with_vectors` (what the driver does on Ray;
  random unit vectors of the model's size: what they hold does not change the cost): the
  writes alone, the ceiling of one driver.
* Sizing: 10M documents in 24 h is 10,000,000 / 86,400 = 115.7 documents/s. Cores = that /
  (per-core rate x efficiency), where efficiency is what Ray achieved here per actor against the
  per-core rate (2 actors sharing 2 cores with the driver: a pessimistic bound; 1.0 the ideal).

Every figure is measured in the run; the machine is shared (load average printed). Prints
markdown; a full run rewrites the results block of docs/benchmarks-ray.md (``--no-write`` to
skip); ``--quick`` never does.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pin_threads import set_thread_counts

THREAD_NOTE = set_thread_counts(2)

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from dataclasses import asdict, dataclass  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from common import cpu_model, data_dir, memory_gib, peak_rss_mib  # noqa: E402

from toolish_rag.content import Document  # noqa: E402
from toolish_rag.ingest import Chunker, RayExecutor, StoreEmbedding, VectorCache, ingest, parse_path  # noqa: E402  # noqa: E402
from toolish_rag_lancedb import LanceDBStore  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DOC_PAGE = ROOT / 'docs' / 'benchmarks-ray.md'
START, END = '<!-- ray-ingest:start -->', '<!-- ray-ingest:end -->'
FULL_DOCS, QUICK_DOCS, WARMUP_DOCS = 400, 48, 8
TARGET_DOCS, DAY_SECONDS = 10_000_000, 86_400
CPUS = 2


@dataclass
class Figures:
    documents: int
    chunks: int
    embed_1_thread_chunks_s: float
    embed_2_threads_chunks_s: float
    in_process_s: float
    ray_init_s: float
    ray_warmup_s: float
    ray_s: float
    writer_s: float
    load_start: float
    load_end: float = 0.0

    @property
    def chunks_per_doc(self) -> float:
        return self.chunks / self.documents

    @property
    def per_core_docs_s(self) -> float:
        return self.embed_1_thread_chunks_s / self.chunks_per_doc

    @property
    def in_process_docs_s(self) -> float:
        return self.documents / self.in_process_s

    @property
    def ray_docs_s(self) -> float:
        return self.documents / self.ray_s

    @property
    def ray_steady_docs_s(self) -> float:
        return (self.documents - WARMUP_DOCS) / max(self.ray_s - self.ray_warmup_s, 1e-9)

    @property
    def efficiency(self) -> float:
        """Ray's steady rate per actor against one core's embedding rate."""
        return self.ray_steady_docs_s / (CPUS * self.per_core_docs_s)

    @property
    def writer_docs_s(self) -> float:
        return self.documents / self.writer_s


def write_corpus(folder: Path, rows: list[dict[str, Any]]) -> None:
    for r in rows:
        (folder / f'{r["_id"]}.md').write_text(f'# {r.get("title") or r["_id"]}\n\n{r["text"]}\n', encoding='utf-8')


async def embed_rate(store: LanceDBStore, texts: list[str], threads: int) -> float:
    """Chunk texts per second through the store's embedder with torch on ``threads`` threads."""
    torch.set_num_threads(threads)
    try:
        await store.embedder.embed_documents(texts[:32])  # warm: first calls pay allocations
        started = time.perf_counter()
        for start in range(0, len(texts), 256):
            await store.embedder.embed_documents(texts[start : start + 256])
        return len(texts) / (time.perf_counter() - started)
    finally:
        torch.set_num_threads(CPUS)


async def single_writer(folder: Path, documents: list[Document], vectors: list[list[list[float]]]) -> float:
    """Seconds to upsert ``documents`` with their vectors from a cache (`upsert_with_vectors`): the driver's own work on Ray."""
    store = LanceDBStore(str(folder))
    embedding = await StoreEmbedding.of(store)
    assert embedding is not None
    cache = VectorCache(embedding)
    started = time.perf_counter()
    batch: list[Document] = []
    for document, vecs in zip(documents, vectors, strict=True):
        cache.add(document, vecs)
        batch.append(document)
        if sum(len(d.chunks) for d in batch) >= 256:
            await store.upsert_with_vectors(batch, cache.for_documents(batch))
            for _ in batch:
                cache.settled()
            batch = []
    if batch:
        await store.upsert_with_vectors(batch, cache.for_documents(batch))
    return time.perf_counter() - started


async def measure(n: int) -> Figures:
    import ray

    corpus = data_dir() / 'scifact' / 'corpus.jsonl'
    if not corpus.is_file():
        sys.exit(f'ray_ingest_bench: {corpus} not found (../shared/data is absent)')
    with corpus.open(encoding='utf-8') as f:
        rows = [json.loads(line) for _, line in zip(range(n + WARMUP_DOCS), f, strict=False)]
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        docs, warm = base / 'docs', base / 'warm'
        docs.mkdir()
        warm.mkdir()
        write_corpus(docs, rows[:n])
        write_corpus(warm, rows[n:])
        documents = [parse_path(p, Chunker()) for p in sorted(docs.iterdir())]
        texts = [c.text for d in documents for c in d.chunks]
        print(f'{len(documents)} documents, {len(texts)} chunks', flush=True)

        local = LanceDBStore(str(base / 'local'))
        one = await embed_rate(local, texts, 1)
        two = await embed_rate(local, texts, CPUS)
        print(f'embedding: {one:.1f} chunks/s on 1 thread, {two:.1f} on {CPUS}', flush=True)

        started = time.perf_counter()
        report = await ingest(local, docs, progress=False)
        in_process_s = time.perf_counter() - started
        assert report.ok and len(report.added) == n, report.summary()
        print(f'in-process: {in_process_s:.1f} s', flush=True)

        started = time.perf_counter()
        ray.init(num_cpus=CPUS, include_dashboard=False, log_to_driver=False)
        ray_init_s = time.perf_counter() - started
        try:
            executor = RayExecutor()
            started = time.perf_counter()
            await ingest(LanceDBStore(str(base / 'ray-warm')), warm, progress=False, executor=executor)
            ray_warmup_s = time.perf_counter() - started
            remote = LanceDBStore(str(base / 'ray'))
            started = time.perf_counter()
            report = await ingest(remote, docs, progress=False, executor=executor)
            ray_s = time.perf_counter() - started
            assert report.ok and len(report.added) == n, report.summary()
        finally:
            ray.shutdown()
        print(f'ray: init {ray_init_s:.1f} s, warm-up run {ray_warmup_s:.1f} s, run {ray_s:.1f} s', flush=True)

        # What the vectors hold does not change the cost of writing them: unit vectors of the model's size.
        dims = len((await local.embedder.embed_documents(['size'])).embeddings[0])
        rng = np.random.default_rng(0)
        vectors = [[_unit(rng, dims) for _ in d.chunks] for d in documents]
        writer_s = await single_writer(base / 'writer', documents, vectors)
        print(f'single writer: {writer_s:.1f} s', flush=True)
    return Figures(
        n, len(texts), one, two, in_process_s, ray_init_s, ray_warmup_s, ray_s, writer_s, load_start, os.getloadavg()[0]
    )


def render(f: Figures, command: str) -> str:
    target = TARGET_DOCS / DAY_SECONDS
    ideal = math.ceil(target / f.per_core_docs_s)
    measured = math.ceil(target / (f.per_core_docs_s * f.efficiency))
    gib = memory_gib()
    lines = [
        f'`{command}` — {time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}',
        '',
        f'- machine: {cpu_model(platform.processor() or "unknown CPU")}, {os.cpu_count()} logical CPUs'
        f'{"" if gib is None else f", {gib:.0f} GiB RAM"}; {platform.system()} {platform.release()}; '
        f'load average {f.load_start:.1f} at the start, {f.load_end:.1f} at the end (shared machine)',
        f'- Python {platform.python_version()}, torch {torch.__version__}, ray {_ray_version()}; {THREAD_NOTE}',
        f'- corpus: {f.documents} SciFact abstracts as Markdown, {f.chunks} chunks ({f.chunks_per_doc:.2f} per '
        'document, default `Chunker`); model all-MiniLM-L6-v2',
        '',
        '| measure | seconds | documents/s | chunks/s |',
        '|---|---:|---:|---:|',
        f'| embedding only, 1 thread (one core) | {f.chunks / f.embed_1_thread_chunks_s:.1f} | '
        f'{f.per_core_docs_s:.1f} | {f.embed_1_thread_chunks_s:.1f} |',
        f'| embedding only, {CPUS} threads | {f.chunks / f.embed_2_threads_chunks_s:.1f} | '
        f'{f.embed_2_threads_chunks_s / f.chunks_per_doc:.1f} | {f.embed_2_threads_chunks_s:.1f} |',
        f"| `ingest`, in-process (`executor='auto'`) | {f.in_process_s:.1f} | {f.in_process_docs_s:.1f} | "
        f'{f.chunks / f.in_process_s:.1f} |',
        f'| `ingest`, `RayExecutor()` ({CPUS} actors), whole run | {f.ray_s:.1f} | {f.ray_docs_s:.1f} | '
        f'{f.chunks / f.ray_s:.1f} |',
        f'| `ingest`, `RayExecutor()`, steady (run minus the {WARMUP_DOCS}-document warm-up run) | '
        f'{f.ray_s - f.ray_warmup_s:.1f} | {f.ray_steady_docs_s:.1f} | — |',
        f'| driver alone: upserts with vectors served (one writer, LanceDB) | {f.writer_s:.1f} | '
        f'{f.writer_docs_s:.1f} | {f.chunks / f.writer_s:.1f} |',
        '',
        f'- Ray overhead on this machine: `ray.init` {f.ray_init_s:.1f} s once per process; each run '
        f'{f.ray_warmup_s:.1f} s for its first {WARMUP_DOCS} documents (its actors start and each loads the '
        f'model: the fixed cost of a run). The whole Ray run took {f.ray_s / f.in_process_s:.2f}x the in-process '
        f'time for {f.documents} documents. On {CPUS} cores the driver (writes, full-text indexing) and the '
        f'{CPUS} actors share the same cores; Ray is for adding cores, which one machine cannot show.',
        f'- Ray efficiency here: steady {f.ray_steady_docs_s:.1f} documents/s over {CPUS} actors = '
        f'{f.efficiency:.0%} of {CPUS} x the one-core rate.',
        *(
            [
                f'- {CPUS} torch threads embed no faster than 1 here ({f.embed_2_threads_chunks_s:.1f} against '
                f'{f.embed_1_thread_chunks_s:.1f} chunks/s), while {CPUS} processes (the actors) reach '
                f'{f.ray_steady_docs_s / f.per_core_docs_s:.1f}x one core: on this machine the model scales '
                "by processes, not by torch's threads, and in-process ingestion embeds in one process."
            ]
            if f.embed_2_threads_chunks_s < 1.3 * f.embed_1_thread_chunks_s
            else []
        ),
        '',
        '**10M documents in a day** (documents like these; scale by chunks per document for longer ones):',
        '',
        f'- target: {TARGET_DOCS:,} / {DAY_SECONDS:,} s = {target:.1f} documents/s '
        f'= {target * f.chunks_per_doc:.0f} chunks/s',
        f'- one core embeds {f.embed_1_thread_chunks_s:.1f} chunks/s = {f.per_core_docs_s:.2f} documents/s',
        f'- ideal: {target:.1f} / {f.per_core_docs_s:.2f} = **{ideal} cores** (actors of 1 CPU) = {_nodes(ideal)}',
        f'- at the efficiency measured here ({f.efficiency:.0%}): {target:.1f} / ({f.per_core_docs_s:.2f} x '
        f'{f.efficiency:.2f}) = **{measured} cores** = {_nodes(measured)}',
        f'- the single writer: {f.writer_docs_s:.0f} documents/s measured '
        f'({"above" if f.writer_docs_s >= target else "BELOW"} the {target:.1f} needed), on a driver doing '
        'nothing else',
        f'- peak RSS of this process: {peak_rss_mib():.0f} MiB',
    ]
    return '\n'.join(lines)


def _nodes(cores: int, per_node: int = 16) -> str:
    nodes = math.ceil(cores / per_node)
    return f'{nodes} node{"" if nodes == 1 else "s"} of {per_node} cores (plus the driver)'


def _unit(rng: np.random.Generator, dims: int) -> list[float]:
    v = rng.standard_normal(dims)
    return [float(x) for x in v / np.linalg.norm(v)]


def _ray_version() -> str:
    import ray

    return str(ray.__version__)


def write_page(block: str) -> None:
    page = DOC_PAGE.read_text(encoding='utf-8')
    head, rest = page.split(START, 1)
    _, tail = rest.split(END, 1)
    DOC_PAGE.write_text(f'{head}{START}\n{block}\n{END}{tail}', encoding='utf-8')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--quick', action='store_true', help=f'{QUICK_DOCS} documents; writes no page')
    parser.add_argument('--docs', type=int, default=None, help=f'documents (default {FULL_DOCS})')
    parser.add_argument('--no-write', action='store_true', help=f'do not update {DOC_PAGE.relative_to(ROOT)}')
    parser.add_argument('--json-out', type=Path, help='also write the figures as JSON here')
    a = parser.parse_args()
    n = a.docs or (QUICK_DOCS if a.quick else FULL_DOCS)
    command = ' '.join(['.venv/bin/python', 'benchmarks/ray_ingest_bench.py', *sys.argv[1:]])
    figures = asyncio.run(measure(n))
    block = render(figures, command)
    print('\n' + block)
    if a.json_out is not None:
        data = {**asdict(figures), 'per_core_docs_s': figures.per_core_docs_s, 'efficiency': figures.efficiency}
        a.json_out.write_text(json.dumps(data, indent=2) + '\n', encoding='utf-8')
    if not a.quick and not a.no_write:
        write_page(block)
        print(f'\nwritten to {DOC_PAGE.relative_to(ROOT)}')


if __name__ == '__main__':
    main()
