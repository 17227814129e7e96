"""Chunk size / overlap sweep on XQuAD-en: question -> paragraph retrieval through real chunks.

Articles are rebuilt from ``corpus.jsonl`` (paragraphs in ``paragraph_index`` order, joined
by blank lines), chunked by `toolish_rag.ingest.Chunker`, stored in `InMemoryStore` with the
default MiniLM embedder and searched with the core's hybrid search. A question counts as hit
at rank k when one of the top-k chunks overlaps its gold paragraph's character span.

    python benchmarks/ingest_chunk_sizes.py [--data ../shared/data/xquad-en] [--limit N]
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import time
from collections import defaultdict
from pathlib import Path

from toolish_rag.embedding import resolve_embedder
from toolish_rag.ingest import Chunker
from toolish_rag.ingest._model import OutlineBuilder, ParsedDocument
from toolish_rag.ingest._readers.text import paragraph_spans
from toolish_rag.retriever import Retriever
from toolish_rag.stores import InMemoryStore

CONFIGS = [
    Chunker(chunk_size=300, overlap=0),
    Chunker(chunk_size=500, overlap=0),
    Chunker(chunk_size=1000, overlap=0),
    Chunker(chunk_size=1000, overlap=150),
    Chunker(chunk_size=2000, overlap=0),
    Chunker(chunk_size=256, overlap=0, tokenizer='minilm'),
]


def load(data: Path) -> tuple[list[ParsedDocument], dict[str, tuple[str, int, int]], list[tuple[str, str]]]:
    paragraphs: dict[str, list[tuple[int, str, str]]] = defaultdict(list)
    with (data / 'corpus.jsonl').open() as f:
        for line in f:
            row = json.loads(line)
            meta = row.get('metadata', {})
            paragraphs[meta['article']].append((int(meta['paragraph_index']), row['_id'], row['text']))
    docs: list[ParsedDocument] = []
    spans: dict[str, tuple[str, int, int]] = {}
    for article, paras in sorted(paragraphs.items()):
        paras.sort()
        source, pos = [], 0
        for _, pid, text in paras:
            spans[pid] = (article, pos, pos + len(text))
            source.append(text)
            pos += len(text) + 2
        text = '\n\n'.join(source)
        outline = OutlineBuilder()
        for s, e in paragraph_spans(text):
            outline.add_span(s, e)
        docs.append(ParsedDocument(source=text, title=article.replace('_', ' '), root=outline.root, format='text'))
    queries = {}
    with (data / 'queries.jsonl').open() as f:
        for line in f:
            row = json.loads(line)
            queries[row['_id']] = row['text']
    qrels = []
    with (data / 'qrels' / 'test.tsv').open() as f:
        for row in csv.reader(f, delimiter='\t'):
            if row[0] in queries and row[1] in spans:
                qrels.append((queries[row[0]], row[1]))
    return docs, spans, qrels


async def evaluate(chunker: Chunker, docs: list[ParsedDocument], spans: dict[str, tuple[str, int, int]],
                   qrels: list[tuple[str, str]], embedder: object) -> dict[str, float]:  # fmt: skip
    store = InMemoryStore(embedder)  # type: ignore[arg-type]
    built = [chunker.build(d, f'xquad:{d.title}') for d in docs]
    t = time.perf_counter()
    await store.upsert(built)
    ingest_s = time.perf_counter() - t
    retriever = Retriever(store)
    hits1 = hits5 = 0
    rr = 0.0
    for question, pid in qrels:
        article, lo, hi = spans[pid]
        results = await retriever.hybrid_search(question, 10)
        rank = next(
            (i for i, h in enumerate(results)
             if h.record.document_uri == f'xquad:{article.replace("_", " ")}'  # type: ignore[union-attr]
             and h.record.start_char < hi and h.record.end_char > lo),  # type: ignore[union-attr, operator]
            None,
        )  # fmt: skip
        if rank is not None:
            hits1 += rank == 0
            hits5 += rank < 5
            rr += 1 / (rank + 1)
    chunks = [c for d in built for c in d.chunks]
    n = len(qrels)
    return {
        'chunks': len(chunks),
        'mean_chars': sum(len(c.urtext) for c in chunks) / len(chunks),
        'hit@1': hits1 / n,
        'hit@5': hits5 / n,
        'mrr@10': rr / n,
        'embed_s': ingest_s,
    }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('--data', type=Path, default=Path(__file__).resolve().parents[2] / 'shared/data/xquad-en')
    parser.add_argument('--limit', type=int, default=0, help='questions to use (0: all)')
    parser.add_argument('--configs', default='', help='e.g. "1000:0,1000:150,256t:0" (default: the built-in sweep)')
    args = parser.parse_args()
    configs = CONFIGS
    if args.configs:
        configs = []
        for item in args.configs.split(','):
            size, overlap = item.split(':')
            tokens = size.endswith('t')
            configs.append(
                Chunker(chunk_size=int(size.rstrip('t')), overlap=int(overlap), tokenizer='minilm' if tokens else None)
            )
    docs, spans, qrels = load(args.data)
    if args.limit:
        qrels = qrels[: args.limit]
    embedder = resolve_embedder(None)
    print(f'{len(docs)} articles, {len(qrels)} questions')
    print('| chunk size | overlap | chunks | mean chars | hit@1 | hit@5 | MRR@10 |')
    print('|---|---|---|---|---|---|---|')
    for chunker in configs:
        r = await evaluate(chunker, docs, spans, qrels, embedder)
        unit = ' tokens' if chunker.tokenizer else ''
        print(
            f'| {chunker.chunk_size}{unit} | {chunker.overlap} | {r["chunks"]} | {r["mean_chars"]:.0f} | '
            f'{r["hit@1"]:.3f} | {r["hit@5"]:.3f} | {r["mrr@10"]:.3f} |',
            flush=True,
        )


if __name__ == '__main__':
    asyncio.run(main())
