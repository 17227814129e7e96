"""Benchmark of the LanceDB store against raw LanceDB queries, measured in the same run.

    .venv/bin/python benchmarks/lancedb_bench.py            # 5k SciFact + 100k synthetic
    .venv/bin/python benchmarks/lancedb_bench.py --quick    # smaller synthetic scale
    .venv/bin/python benchmarks/lancedb_bench.py --quality  # + SciFact train nDCG@10 (text search)

Embeddings: SciFact uses toolish-rag's ``HashingEmbeddingModel(384)``; the synthetic scale
uses ``BagOfRandomVectors`` below (each word a fixed random 384-d vector, a text the
normalised sum), fast enough that embedding cost does not dominate, and with the
cluster structure real embeddings have (pure random vectors are a worst case for ANN).

Every store call is paired with the raw LanceDB query it wraps (same table, same limit,
same ``where``, query vector precomputed) so the ratio column is the adapter's overhead:
query parsing, filter translation, record validation and, for vector search, embedding the
query with the (cheap) benchmark embedder.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import pathlib
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np
from pydantic_ai.embeddings import EmbeddingModel, EmbeddingResult, EmbeddingSettings
from pydantic_ai.embeddings.result import EmbedInputType

from toolish_rag.builder import DocumentBuilder
from toolish_rag.content import Document
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.filters import Filter, PropertyFilter as F
from toolish_rag.search import ExpansionRequest, RegexRequest, SearchRequest
from toolish_rag_lancedb import LanceDBStore, filter_to_where

SCIFACT = pathlib.Path('/work/shared/data/scifact')
DIMS = 384
TOP_K = 10
_WORD = re.compile(r'\w+')


class BagOfRandomVectors(EmbeddingModel):
    """Each word a fixed pseudo-random unit vector; a text the normalised sum of its words."""

    def __init__(self, dimensions: int = DIMS) -> None:
        self._dims = dimensions
        self._cache: dict[str, np.ndarray[Any, Any]] = {}
        super().__init__()

    @property
    def model_name(self) -> str:
        return f'bag-of-random-vectors-{self._dims}'

    @property
    def system(self) -> str:
        return 'benchmark'

    def _word(self, word: str) -> np.ndarray[Any, Any]:
        vec = self._cache.get(word)
        if vec is None:
            seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), 'little')
            vec = np.random.default_rng(seed).standard_normal(self._dims).astype(np.float32)
            self._cache[word] = vec
        return vec

    def vectors(self, texts: Sequence[str]) -> np.ndarray[Any, Any]:
        out = np.zeros((len(texts), self._dims), dtype=np.float32)
        for i, text in enumerate(texts):
            for w in _WORD.findall(text.lower()):
                out[i] += self._word(w)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1
        return out / norms

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


class Precomputed(EmbeddingModel):
    """Serves embeddings computed before the clock starts, so load timings measure the store."""

    def __init__(self, inner: EmbeddingModel) -> None:
        self.inner = inner
        self.cache: dict[str, list[float]] = {}
        super().__init__()

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    @property
    def system(self) -> str:
        return self.inner.system

    async def warm(self, texts: Sequence[str]) -> float:
        t0 = time.perf_counter()
        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        for start in range(0, len(todo), 1000):
            batch = todo[start : start + 1000]
            result = await self.inner.embed(batch, input_type='document')
            self.cache.update(zip(batch, (list(map(float, v)) for v in result.embeddings), strict=True))
        return time.perf_counter() - t0

    async def embed(
        self, inputs: str | Sequence[str], *, input_type: EmbedInputType, settings: EmbeddingSettings | None = None
    ) -> EmbeddingResult:
        inputs, settings = self.prepare_embed(inputs, settings)
        missing = [t for t in inputs if t not in self.cache]
        if missing:
            result = await self.inner.embed(missing, input_type=input_type)
            self.cache.update(zip(missing, (list(map(float, v)) for v in result.embeddings), strict=True))
        return EmbeddingResult(
            embeddings=[self.cache[t] for t in inputs],
            inputs=inputs,
            input_type=input_type,
            model_name=self.model_name,
            provider_name=self.system,
        )

    async def max_input_tokens(self) -> int | None:
        return None

    async def count_tokens(self, text: str) -> int:
        return len(_WORD.findall(text))


# -- timing helpers ------------------------------------------------------------------------


async def timed(fn: Callable[[int], Awaitable[Any]], n: int) -> tuple[list[float], list[Any]]:
    await fn(0)  # warm-up
    times: list[float] = []
    results: list[Any] = []
    for i in range(n):
        t0 = time.perf_counter()
        results.append(await fn(i))
        times.append((time.perf_counter() - t0) * 1000)
    return times, results


def pct(times: Sequence[float], q: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


class Table:
    def __init__(self, title: str) -> None:
        self.title = title
        self.rows: list[list[str]] = []

    def add(self, op: str, store: Sequence[float], raw: Sequence[float] | None, note: str = '') -> None:
        ratio = f'{statistics.median(store) / statistics.median(raw):.2f}x' if raw else '-'
        raw_p50 = f'{pct(raw, 0.5):.2f}' if raw else '-'
        self.rows.append([op, f'{pct(store, 0.5):.2f}', f'{pct(store, 0.99):.2f}', raw_p50, ratio, note])

    def render(self) -> str:
        head = ['operation', 'store p50 ms', 'store p99 ms', 'raw p50 ms', 'store/raw', 'notes']
        lines = [f'### {self.title}', '', '| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
        lines += ['| ' + ' | '.join(r) + ' |' for r in self.rows]
        return '\n'.join(lines)


# -- corpora -------------------------------------------------------------------------------


def scifact_documents() -> list[Document]:
    docs = []
    with (SCIFACT / 'corpus.jsonl').open() as fh:
        for i, line in enumerate(fh):
            row = json.loads(line)
            b = DocumentBuilder(f'scifact:{row["_id"]}', row['title'], id=row['_id'], metadata={'bucket': i % 100})
            b.add_chunk(None, row['text'])
            docs.append(b.build())
    return docs


def synthetic_documents(n_chunks: int, chunks_per_doc: int = 10, seed: int = 7) -> list[Document]:
    rng = random.Random(seed)
    vocab = [f'w{i}' for i in range(5000)]
    weights = [1 / (i + 1) ** 1.1 for i in range(len(vocab))]
    docs = []
    for d in range(n_chunks // chunks_per_doc):
        topic = rng.sample(vocab[200:], 8)  # each document leans on its own topic words
        b = DocumentBuilder(f'synthetic:{d}', f'Synthetic {d}', metadata={'bucket': d % 100, 'group': f'g{d % 7}'})
        section = b.section('Body')
        for c in range(chunks_per_doc):
            words = rng.choices(vocab, weights, k=18) + rng.choices(topic, k=10)
            code = f'ERR-{rng.randrange(10000):04d}' if rng.random() < 0.05 else ''
            b.add_chunk(section, ' '.join(words) + f' part {c} {code}')
        docs.append(b.build())
    return docs


def synthetic_queries(docs: list[Document], n: int, seed: int = 11) -> list[str]:
    """Six words drawn from a random chunk: queries that resemble the corpus, as real ones do."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        chunk = rng.choice(rng.choice(docs).chunks)
        out.append(' '.join(rng.sample(chunk.urtext.split(), 6)))
    return out


# -- the benchmark proper -------------------------------------------------------------------


async def load(store: LanceDBStore, docs: list[Document], batch: int) -> tuple[float, int]:
    chunks = sum(len(d.chunks) for d in docs)
    t0 = time.perf_counter()
    for start in range(0, len(docs), batch):
        await store.upsert(docs[start : start + batch])
    return time.perf_counter() - t0, chunks


async def bench_scale(
    title: str, path: pathlib.Path, docs: list[Document], queries: list[str], embedder: Any, *, n: int, batch: int
) -> tuple[str, dict[str, Any]]:
    table = Table(title)
    cached = Precomputed(embedder)
    embed_s = await cached.warm([c.text for d in docs for c in d.chunks])
    store = LanceDBStore(path, embedder=cached)
    seconds, chunks = await load(store, docs, batch)
    extra: dict[str, Any] = {'chunks': chunks, 'load_s': round(seconds, 2), 'embedding_s (excluded)': round(embed_s, 2)}
    stats = await store.index_stats()
    extra['indexes'] = {k: (v['indexed_rows'], v['unindexed_rows']) for k, v in stats.items()}
    raw = store._records  # the very LanceDB table the store uses
    select = ['id', 'kind', 'text', 'urtext', 'payload', 'metadata_json', 'labels']
    qvecs = (await store._embed(queries, query=True)).astype(np.float32)
    has_ann = 'vector_idx' in stats

    def raw_vector(i: int, where: str | None = None, exact: bool = False) -> Any:
        q = raw.query().nearest_to(qvecs[i % len(qvecs)]).column('vector').distance_type('cosine').limit(TOP_K)
        q = q.select(select)
        if where:
            q = q.where(where)
        if exact:
            q = q.bypass_vector_index()
        elif has_ann:
            q = q.nprobes(store.nprobes).refine_factor(store.refine_factor)
        return q.to_arrow()

    async def store_vector(i: int, f: Filter | None = None) -> Any:
        return await store.vector_search(SearchRequest(queries[i % len(queries)], TOP_K, f))

    s, _ = await timed(store_vector, n)
    r, _ = await timed(raw_vector, n)
    table.add(
        'vector_search',
        s,
        r,
        f'ANN (IVF-SQ, nprobes {store.nprobes}, refine x{store.refine_factor})'
        if has_ann
        else 'exact (no ANN index below threshold)',
    )

    if has_ann:
        e, _ = await timed(lambda i: raw_vector(i, exact=True), max(5, n // 5))
        table.add('(raw exact vector search, for scale)', e, None, 'bypass_vector_index: what ANN saves')

    async def store_text(i: int, f: Filter | None = None) -> Any:
        return await store.text_search(SearchRequest(queries[i % len(queries)], TOP_K, f))

    async def raw_text(i: int, where: str | None = None) -> Any:
        q = raw.query().nearest_to_text(queries[i % len(queries)]).select(select).limit(TOP_K)
        if where:
            q = q.where(where)
        return await q.to_arrow()

    s, _ = await timed(store_text, n)
    r, _ = await timed(raw_text, n)
    table.add('text_search', s, r, 'BM25, native FTS index')

    for label, fraction in (('1%', 1), ('10%', 10), ('50%', 50)):
        f = F.lt('bucket', fraction)
        where = filter_to_where(f, store._columns)
        sv, vres = await timed(lambda i, f=f: store_vector(i, f), n)
        rv, _ = await timed(lambda i, w=where: raw_vector(i, w), n)
        exact = all(len(h) == TOP_K and all(x.record.metadata['bucket'] < fraction for x in h) for h in vres)
        table.add(f'vector_search, {label} filter', sv, rv, f'exactly top_k every time: {exact}')
        st, tres = await timed(lambda i, f=f: store_text(i, f), n)
        rt, rres = await timed(lambda i, w=where: raw_text(i, w), n)
        ok = all(all(x.record.metadata['bucket'] < fraction for x in h) for h in tres)
        same = sum(len(h) == r.num_rows for h, r in zip(tres, rres, strict=True))
        full = sum(len(h) == TOP_K for h in tres)
        table.add(
            f'text_search, {label} filter',
            st,
            rt,
            f'all hits in scope: {ok}; full top_k {full}/{n} (fewer = fewer matching records); '
            f'as many hits as raw {same}/{n}',
        )

    pattern = 'ERR-[0-9]{4}'

    async def store_regex(i: int) -> Any:
        return await store.regex_search(RegexRequest(pattern, TOP_K))

    async def raw_regex(i: int) -> Any:
        return await raw.query().where(f"regexp_like(urtext, '{pattern}')").select(select).limit(TOP_K).to_arrow()

    s, _ = await timed(store_regex, max(5, n // 5))
    r, _ = await timed(raw_regex, max(5, n // 5))
    table.add('regex_search', s, r, f'store ranks up to {store.regex_scan_limit} matches by count; raw stops at top_k')

    rng = random.Random(3)
    ids = [c.id for d in docs for c in d.chunks]

    async def store_get(i: int) -> Any:
        return await store.get_records(rng.sample(ids, 10))

    async def raw_get(i: int) -> Any:
        chosen = ', '.join(f"'{x}'" for x in rng.sample(ids, 10))
        return await raw.query().where(f'id IN ({chosen})').select(select).to_arrow()

    s, _ = await timed(store_get, n)
    r, _ = await timed(raw_get, n)
    table.add('get_records (10 ids)', s, r, '')

    async def store_expand(i: int) -> Any:
        d = docs[rng.randrange(len(docs))]
        return await store.expand(ExpansionRequest(document_id=d.id, first=2, last=6))

    async def raw_expand(i: int) -> Any:
        d = docs[rng.randrange(len(docs))]
        where = f"kind = 'chunk' AND document_id = '{d.id}' AND sequence_number >= 2 AND sequence_number <= 6"
        return await raw.query().where(where).select(select).limit(200).to_arrow()

    s, _ = await timed(store_expand, n)
    r, _ = await timed(raw_expand, n)
    table.add('expand (sequence range)', s, r, '')

    # Replacing one document at this scale (merge_insert with the scoped delete).
    async def store_replace(i: int) -> Any:
        return await store.upsert([docs[rng.randrange(len(docs))]])

    s, _ = await timed(store_replace, max(5, n // 5))
    table.add('upsert: replace 1 document', s, None, 'merge_insert + scoped delete, one commit')
    table.rows.append(
        [
            'bulk load',
            '-',
            '-',
            '-',
            '-',
            f'{chunks} chunks in {seconds:.1f}s = {chunks / seconds:,.0f} chunks/s (batches of {batch} docs; '
            f'embeddings precomputed in {embed_s:.1f}s, excluded)',
        ]
    )

    if has_ann:
        recalls = []
        for i in range(min(n, 100)):
            ann = {r['id'] for r in (await raw_vector(i)).to_pylist()}
            exact_ids = {r['id'] for r in (await raw_vector(i, exact=True)).to_pylist()}
            recalls.append(len(ann & exact_ids) / TOP_K)
        extra['ann_recall_at_10'] = statistics.mean(recalls)
    return table.render(), extra


async def quality(path: pathlib.Path) -> str:
    docs = scifact_documents()
    queries = {}
    with (SCIFACT / 'queries.jsonl').open() as fh:
        for line in fh:
            row = json.loads(line)
            queries[row['_id']] = row['text']
    qrels: dict[str, dict[str, int]] = {}
    with (SCIFACT / 'qrels' / 'train.tsv').open() as fh:
        next(fh)
        for line in fh:
            qid, did, score = line.split()
            qrels.setdefault(qid, {})[did] = int(score)
    store = LanceDBStore(path, embedder=BagOfRandomVectors())  # text search only: any embedder will do
    for start in range(0, len(docs), 1000):
        await store.upsert(docs[start : start + 1000])
    raw = store._records

    def ndcg(ranked: list[str], rel: dict[str, int]) -> float:
        dcg = sum(rel.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
        ideal = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(rel.values(), reverse=True)[:10]))
        return dcg / ideal if ideal else 0.0

    ours, theirs = [], []
    for qid, rel in qrels.items():
        q = queries[qid]
        hits = await store.text_search(SearchRequest(q, 10))
        ours.append(ndcg([h.record.document_id for h in hits], rel))  # type: ignore[union-attr]
        try:
            rows = (await raw.query().nearest_to_text(q).select(['document_id']).limit(10).to_arrow()).to_pylist()
        except Exception:
            rows = []
        theirs.append(ndcg([r['document_id'] for r in rows], rel))
    return (
        f'SciFact train ({len(qrels)} queries, {len(docs)} abstracts), text search nDCG@10: '
        f'store {statistics.mean(ours):.4f} vs raw LanceDB FTS string query {statistics.mean(theirs):.4f}'
    )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('--quick', action='store_true', help='20k synthetic chunks instead of 100k')
    parser.add_argument('--quality', action='store_true', help='also SciFact train nDCG@10')
    parser.add_argument('-n', type=int, default=100, help='queries per operation')
    args = parser.parse_args()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix='lancedb-bench-'))
    out: list[str] = []
    try:
        if (SCIFACT / 'corpus.jsonl').exists():
            docs = scifact_documents()
            qs = []
            with (SCIFACT / 'queries.jsonl').open() as fh:
                qs = [json.loads(line)['text'] for line in fh][: args.n]
            text, extra = await bench_scale(
                f'SciFact {len(docs):,} chunks (HashingEmbeddingModel 384-d)',
                tmp / 'scifact',
                docs,
                qs,
                HashingEmbeddingModel(DIMS),
                n=args.n,
                batch=500,
            )
            out += [text, '', f'load: {extra}', '']
            print('\n'.join(out[-4:]), flush=True)
        else:
            out.append(f'(SciFact not found under {SCIFACT}: skipped the 5k run)')
        size = 20_000 if args.quick else 100_000
        docs = synthetic_documents(size)
        text, extra = await bench_scale(
            f'Synthetic {size:,} chunks (bag-of-random-vectors 384-d)',
            tmp / 'synthetic',
            docs,
            synthetic_queries(docs, args.n),
            BagOfRandomVectors(),
            n=args.n,
            batch=1000,
        )
        out += [text, '', f'load: {extra}', '']
        print('\n'.join(out[-4:]), flush=True)
        if 'ann_recall_at_10' in extra:
            out.append(f'ANN recall@10 vs exact search at {size:,} chunks: {extra["ann_recall_at_10"]:.3f}')
        if args.quality and (SCIFACT / 'corpus.jsonl').exists():
            out.append(await quality(tmp / 'quality'))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print('\n## Summary\n')
    print('\n'.join(out))


if __name__ == '__main__':
    sys.exit(asyncio.run(main()))
