"""Writes documents into a PostgresStore until killed (test_postgres_writes.py kills it with SIGKILL)."""

from __future__ import annotations

import asyncio
import sys

from toolish_rag import DocumentBuilder
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag_postgres import PostgresStore


async def main(uri: str, schema: str) -> None:
    store = PostgresStore(uri, schema=schema, embedder=HashingEmbeddingModel(32))
    i = 0
    while True:
        b = DocumentBuilder(f'file:///killed/{i % 7}.md', f'Doc {i}')
        for j in range(40 + i % 13):
            b.add_chunk(None, f'version {i} chunk {j} of a document rewritten while the writer is killed')
        await store.upsert([b.build()])
        print(i, flush=True)
        i += 1


if __name__ == '__main__':
    asyncio.run(main(sys.argv[1], sys.argv[2]))
