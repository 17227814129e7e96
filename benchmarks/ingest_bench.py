"""Ingest throughput on SciFact beside the raw embedder, measured in the same run.

1. writes each SciFact corpus record as a Markdown file (``# title`` + abstract) in a temp dir;
2. raw: ``resolve_embedder(None).embed_documents`` over the same texts, in batches of 256;
3. ingest: `toolish_rag.ingest.ingest` of the folder into `InMemoryStore` (same embedder);
4. re-ingest of the unchanged folder (hash only: no parse, no embedding);
5. raw again, over exactly the chunk texts ingest embedded (the like-for-like baseline:
   chunking embeds more, shorter texts than one truncated text per document).

Prints docs/s for each and the ratios. Nothing is hard-coded.

    python benchmarks/ingest_bench.py [--data ../shared/data/scifact] [--limit N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pin_threads import set_thread_counts

THREADS = set_thread_counts(2)

from common import data_dir, peak_rss_mib  # noqa: E402

from toolish_rag import ExpansionRequest  # noqa: E402
from toolish_rag.embedding import resolve_embedder  # noqa: E402
from toolish_rag.ingest import ingest  # noqa: E402
from toolish_rag.stores import InMemoryStore  # noqa: E402


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('--data', type=Path, default=data_dir() / 'scifact')
    parser.add_argument('--limit', type=int, default=0, help='documents to use (0: all)')
    parser.add_argument('--embedder', default=None, help="embedder spec (default MiniLM; 'hashing' for smoke runs)")
    parser.add_argument('--json-out', type=Path, default=None, help='also write the figures as JSON here')
    args = parser.parse_args()
    rows = [json.loads(line) for line in (args.data / 'corpus.jsonl').open()]
    if args.limit:
        rows = rows[: args.limit]
    texts = [f'{r.get("title", "")}\n\n{r["text"]}'.strip() for r in rows]
    embedder = resolve_embedder(args.embedder)
    await embedder.embed_documents(['warm up'])

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for r in rows:
            (folder / f'{r["_id"]}.md').write_text(f'# {r.get("title") or r["_id"]}\n\n{r["text"]}\n', encoding='utf-8')

        t = time.perf_counter()
        for start in range(0, len(texts), 256):
            await embedder.embed_documents(texts[start : start + 256])
        raw_s = time.perf_counter() - t

        store = InMemoryStore(embedder)
        t = time.perf_counter()
        first = await ingest(store, folder, progress=False)
        ingest_s = time.perf_counter() - t

        t = time.perf_counter()
        second = await ingest(store, folder, progress=False)
        again_s = time.perf_counter() - t

        # The fair baseline: the raw embedder over exactly the chunk texts ingest embedded.
        chunk_texts = [
            c.text
            for info in await store.list_documents()
            for c in await store.expand(ExpansionRequest(document_id=info.id, limit=10_000))
        ]
        t = time.perf_counter()
        for start in range(0, len(chunk_texts), 256):
            await embedder.embed_documents(chunk_texts[start : start + 256])
        raw_chunks_s = time.perf_counter() - t

    n = len(rows)
    print(THREADS)
    print(f'documents: {n}  chunks: {first.chunks}  failed: {len(first.failed)}')
    print(f'raw embedder (embed_documents):  {n / raw_s:8.1f} docs/s  ({raw_s:.1f} s)')
    print(f'ingest (walk+hash+parse+chunk+embed+store): {n / ingest_s:8.1f} docs/s  ({ingest_s:.1f} s)')
    print(f'ingest / raw embedder throughput: {raw_s / ingest_s:.2f}')
    print(
        f'raw embedder over the same {len(chunk_texts)} chunk texts: {n / raw_chunks_s:8.1f} docs/s ({raw_chunks_s:.1f} s)'
    )
    print(f'ingest / raw embedder on the same chunks: {raw_chunks_s / ingest_s:.2f}')
    print(f're-ingest unchanged: {again_s:.2f} s = {again_s / ingest_s:.3%} of the first run '
          f'({len(second.unchanged)} unchanged, {len(second.added) + len(second.updated)} re-embedded)')  # fmt: skip
    if args.json_out:
        figures = {
            'documents': n,
            'chunks': first.chunks,
            'embedder': Path(embedder.model.model_name).name or embedder.model.model_name,
            'raw_docs_per_s': n / raw_chunks_s,
            'raw_seconds': raw_chunks_s,
            'raw_one_text_per_doc_docs_per_s': n / raw_s,
            'ingest_docs_per_s': n / ingest_s,
            'ingest_seconds': ingest_s,
            'reingest_seconds': again_s,
            'peak_rss_mib': peak_rss_mib(),
        }
        args.json_out.write_text(json.dumps(figures, indent=1), encoding='utf-8')


if __name__ == '__main__':
    asyncio.run(main())
