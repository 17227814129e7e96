"""Federated search against one store: SciFact split in three members by a hash of the document id.

    .venv/bin/python benchmarks/federation_bench.py [--embedder hashing|default] [--queries N]
    .venv/bin/python benchmarks/federation_bench.py --speed [--copies 3] [--queries 200]

``--vectors FILE.npz`` keeps the document vectors between runs (the default embedder takes minutes).

Quality: the same corpus goes into one `InMemoryStore` and into a `Federated` of three members
(memory, LanceDB, memory; `ByHash` routing), all with the same embedder. Every judged query runs,
in the same process, through the single store's hybrid search and the federation's: text hits
re-scored with one BM25 over the members' records (``text='corpus'``), or each leg merged by the
members' own scores (the default), by per-member z-score, by RRF; then through a federation whose
middle member is a text-only Tantivy index (reported, no target) and one of three memory members.
Prints nDCG@10 and the p50 latency of each, and each member's own p50.

Speed (``--speed``): SciFact repeated ``--copies`` times under new ids (3: about 5,200 one-chunk
documents per member), the federation's hybrid p50 and CPU time per query against each member's own
(the fan-out is concurrent: the federation should stay near its slowest member); the ``RATIO`` lines
give federated p50 / slowest member p50, the issue's target being 1.5. See docs/federation.md#fusion.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pin_threads import set_thread_counts

THREADS = set_thread_counts(2)

import numpy as np  # noqa: E402
from common import build_documents, data_dir, hit_doc_ids, load_beir, ndcg_at_10  # noqa: E402
from pydantic_ai.embeddings import Embedder, EmbeddingModel, EmbeddingResult, EmbeddingSettings  # noqa: E402
from pydantic_ai.embeddings.result import EmbedInputType  # noqa: E402

from toolish_rag.content import Document  # noqa: E402
from toolish_rag.embedding import HashingEmbeddingModel, resolve_embedder  # noqa: E402
from toolish_rag.retriever import Retriever  # noqa: E402
from toolish_rag.search import SearchHit  # noqa: E402
from toolish_rag.stores import Federated, InMemoryStore  # noqa: E402
from toolish_rag.stores.federated import MemberFusion  # noqa: E402
from toolish_rag_lancedb import LanceDBStore  # noqa: E402
from toolish_rag_tantivy import TantivyStore  # noqa: E402

Search = Callable[[str], Awaitable[Sequence[SearchHit]]]


async def measure(queries: dict[str, str], search: Search) -> tuple[dict[str, list[str]], float]:
    """Each query's top-10 document ids, and the p50 latency in milliseconds."""
    rankings: dict[str, list[str]] = {}
    times: list[float] = []
    for qid, text in queries.items():
        start = time.perf_counter()
        hits = await search(text)
        times.append((time.perf_counter() - start) * 1000)
        rankings[qid] = hit_doc_ids(hits)[:10]
    return rankings, statistics.median(times)


def hybrid(store: Any) -> Search:
    return lambda q: Retriever(store).hybrid_search(q, 10)


class EmbedOnce(EmbeddingModel):
    """``model`` with each document text embedded once per run: the single store, the members and the
    variants of one run reuse the vectors (queries are embedded per search, as in use, so latencies stay honest)."""

    def __init__(self, model: EmbeddingModel, saved: Path | None = None) -> None:
        super().__init__(settings=model.settings)
        self._model = model
        self._vectors: dict[str, Sequence[float]] = {}
        self._saved = saved
        if saved is not None and saved.is_file():
            with np.load(saved) as found:
                self._vectors = dict(zip(found['texts'].tolist(), found['vectors'].tolist(), strict=True))

    def save(self) -> None:
        """Keep the document vectors in ``saved`` for the next run (``--vectors``)."""
        if self._saved is not None and self._vectors:
            texts = list(self._vectors)
            np.savez(self._saved, texts=np.array(texts), vectors=np.array([self._vectors[t] for t in texts]))

    @property
    def model_name(self) -> str:
        return self._model.model_name

    @property
    def system(self) -> str:
        return self._model.system

    async def embed(
        self, inputs: str | Sequence[str], *, input_type: EmbedInputType, settings: EmbeddingSettings | None = None
    ) -> EmbeddingResult:
        if input_type != 'document':
            return await self._model.embed(inputs, input_type=input_type, settings=settings)
        texts = [inputs] if isinstance(inputs, str) else list(inputs)
        new = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if new:
            found = await self._model.embed(new, input_type=input_type, settings=settings)
            self._vectors.update(zip(new, found.embeddings, strict=True))
        return EmbeddingResult(
            embeddings=[self._vectors[t] for t in texts],
            inputs=texts,
            input_type=input_type,
            model_name=self.model_name,
            provider_name=self.system,
        )

    async def max_input_tokens(self) -> int | None:
        return await self._model.max_input_tokens()

    async def count_tokens(self, text: str) -> int:
        return await self._model.count_tokens(text)


def embed_once(embedder: Embedder, saved: Path | None = None) -> Embedder:
    """``embedder`` with `EmbedOnce` around its model (its settings kept)."""
    model = embedder.model
    assert isinstance(model, EmbeddingModel)
    return Embedder(EmbedOnce(model, saved), settings=getattr(embedder, '_settings', None))


def save_vectors(embedder: Embedder) -> None:
    if isinstance(embedder.model, EmbedOnce):
        embedder.model.save()


MEMBER = MemberFusion(text='member')
"""Each leg merged by the members' own scores (`method`), text included: the fusion before one BM25."""


def _copies(documents: list[Document], copies: int) -> list[Document]:
    """``documents`` ``copies`` times, each copy under new document and chunk ids (a larger corpus of the same kind)."""
    out = list(documents)
    for n in range(1, copies):
        for d in documents:
            data = d.model_dump()
            data['id'] = f'{d.id}~{n}'
            for chunk in data['chunks']:
                chunk['id'] = f'{chunk["id"]}~{n}'
                chunk['document_id'] = data['id']
            out.append(Document.model_validate(data))
    return out


async def speed(args: argparse.Namespace, embedder: Any, documents: list[Document], queries: dict[str, str]) -> None:
    documents = _copies(documents, args.copies)
    with tempfile.TemporaryDirectory(prefix='federation-speed-') as tmp:
        members = {'a': InMemoryStore(embedder), 'b': LanceDBStore(Path(tmp) / 'b', embedder=embedder)}
        members['c'] = InMemoryStore(embedder)
        federated = Federated(members)
        start = time.perf_counter()
        await federated.upsert(documents)
        save_vectors(embedder)
        sizes = {name: len(await store.list_documents()) for name, store in members.items()}
        print(
            f'SciFact x{args.copies}: {len(documents)} one-chunk documents ({sizes}), {len(queries)} queries, '
            f'loaded in {time.perf_counter() - start:.0f} s; embedder {args.embedder}; threads {THREADS}'
        )
        census = time.perf_counter()
        await hybrid(federated)('warm the census')  # read once per member store (timed apart)
        print(f"text='corpus' census of the 3 members read in {time.perf_counter() - census:.1f} s (once)")
        rows = []
        load = os.getloadavg()
        for name, store in [
            ("federated, text='corpus' (default)", federated),
            ("federated, text='member', raw", Federated(members, fusion=MEMBER)),
            *((f'member {n} alone', s) for n, s in members.items()),
        ]:
            rows.append((name, *await timed(queries, hybrid(store))))
    print(f'load average before the runs {load[0]:.2f}, after {os.getloadavg()[0]:.2f} (1 min; 2 cores)')
    print('| run | hybrid p50 ms | CPU ms per query |\n|---|---|---|')
    for name, p50, cpu in rows:
        print(f'| {name} | {p50:.1f} | {cpu:.1f} |')
    slowest = max(p50 for name, p50, _ in rows if name.startswith('member'))
    slowest_cpu = max(cpu for name, _, cpu in rows if name.startswith('member'))
    for name, p50, cpu in rows[:2]:
        print(
            f'RATIO {name}: p50 / slowest member p50 = {p50 / slowest:.2f} (target: at most 1.5); '
            f'CPU per query / slowest member = {cpu / slowest_cpu:.2f}'
        )


async def timed(queries: dict[str, str], search: Search) -> tuple[float, float]:
    """The p50 latency and the mean CPU time (every thread of the process) per query, in ms, after 10 warm-up queries."""
    for text in list(queries.values())[:10]:
        await search(text)
    cpu = time.process_time()
    _, p50 = await measure(queries, search)
    return p50, (time.process_time() - cpu) * 1000 / len(queries)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--embedder', choices=['hashing', 'default'], default='hashing')
    parser.add_argument('--queries', type=int, default=0, help='use only the first N judged queries (0: all)')
    parser.add_argument('--speed', action='store_true', help='the latency check on a repeated corpus instead')
    parser.add_argument('--copies', type=int, default=3, help='--speed: how many copies of SciFact (default 3)')
    parser.add_argument(
        '--vectors', type=Path, help='an .npz file keeping the document vectors between runs (read if it exists)'
    )
    args = parser.parse_args()
    if not (data_dir() / 'scifact').is_dir():
        sys.exit(f'no SciFact at {data_dir() / "scifact"}')
    dataset = load_beir('scifact', 'train')
    queries = dict(list(dataset.queries.items())[: args.queries or None])
    qrels = {q: dataset.qrels[q] for q in queries}
    embedder = embed_once(
        resolve_embedder(HashingEmbeddingModel(256) if args.embedder == 'hashing' else None), args.vectors
    )
    documents = build_documents(dataset)
    if args.speed:
        await speed(args, embedder, documents, queries)
        return
    with tempfile.TemporaryDirectory(prefix='federation-bench-') as tmp:
        single = InMemoryStore(embedder)
        members = {'a': InMemoryStore(embedder), 'b': LanceDBStore(Path(tmp) / 'b', embedder=embedder)}
        members['c'] = InMemoryStore(embedder)
        federated = Federated(members)
        text_only = {'a': members['a'], 'b': TantivyStore(), 'c': members['c']}
        all_memory = {'a': members['a'], 'b': InMemoryStore(embedder), 'c': members['c']}
        start = time.perf_counter()
        for store in (single, federated):
            await store.upsert(documents)
        save_vectors(embedder)
        # The variants share members a and c; their middle member (Tantivy, memory) takes b's documents.
        in_b = [d for d in documents if federated.route(d, ['a', 'b', 'c']) == 'b']
        await text_only['b'].upsert(in_b)
        await all_memory['b'].upsert(in_b)
        print(
            f'SciFact: {len(documents)} documents, {len(queries)} judged queries, loaded in '
            f'{time.perf_counter() - start:.0f} s; embedder {args.embedder}; threads {THREADS}'
        )
        census = time.perf_counter()
        for variant in (members, text_only, all_memory):
            await hybrid(Federated(variant))('warm the census')
        print(f"text='corpus' census of the 5 member stores read in {time.perf_counter() - census:.1f} s (once)")
        rows: list[tuple[str, float, float]] = []
        runs = [
            ('one store (InMemoryStore)', hybrid(single)),
            ("federated, 3 members, text='corpus' (default)", hybrid(federated)),
            ("federated, 3 members, text='member', raw", hybrid(Federated(members, fusion=MEMBER))),
            (
                "federated, 3 members, text='member', zscore",
                hybrid(Federated(members, fusion=replace(MEMBER, method='zscore'))),
            ),
            (
                "federated, 3 members, text='member', rrf",
                hybrid(Federated(members, fusion=replace(MEMBER, method='rrf'))),
            ),
            ("federated, Tantivy text-only middle member, text='corpus'", hybrid(Federated(text_only))),
            (
                "federated, Tantivy text-only middle member, text='member', raw",
                hybrid(Federated(text_only, fusion=MEMBER)),
            ),
            ("federated, 3 memory members, text='corpus'", hybrid(Federated(all_memory))),
            ("federated, 3 memory members, text='member', raw", hybrid(Federated(all_memory, fusion=MEMBER))),
            *((f'member {name} alone', hybrid(store)) for name, store in members.items()),
        ]
        for name, search in runs:
            rankings, p50 = await measure(queries, search)
            rows.append((name, ndcg_at_10(qrels, rankings) if not name.startswith('member') else float('nan'), p50))
    print('| run | hybrid nDCG@10 | p50 ms |\n|---|---|---|')
    for name, ndcg, p50 in rows:
        print(f'| {name} | {"-" if ndcg != ndcg else f"{ndcg:.4f}"} | {p50:.1f} |')
    for name, ndcg, _ in rows[1:3]:
        print(f'{name} minus one store: {ndcg - rows[0][1]:+.4f} nDCG@10 (target: within 0.005)')
    slowest = max(p50 for name, _, p50 in rows if name.startswith('member'))
    for name, _, p50 in rows[1:3]:
        print(f'{name}: p50 / slowest member p50 = {p50 / slowest:.2f} (at SciFact size; --speed for 5k chunks)')


if __name__ == '__main__':
    asyncio.run(main())
