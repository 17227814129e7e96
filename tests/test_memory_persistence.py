"""InMemoryStore(path=...): a new process sees the same data; kill -9 mid-write loses nothing committed."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from toolish_rag import ExpansionRequest
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.stores import InMemoryStore
from toolish_rag.testing import conformance_corpus

WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from toolish_rag import DocumentBuilder
    from toolish_rag.embedding import HashingEmbeddingModel
    from toolish_rag.stores import InMemoryStore

    async def main():
        store = InMemoryStore(HashingEmbeddingModel(64), path=sys.argv[1])
        for i in range(10_000):
            b = DocumentBuilder(f'file:///doc{i % 50}.md', f'Doc {i % 50}', metadata={'round': i})
            section = b.section('Body')
            for j in range(20):
                b.add_chunk(section, f'round {i} chunk {j} ' + 'filler text ' * 30)
            await store.upsert([b.build()])
            print(i, flush=True)

    asyncio.run(main())
    """
)

READER = textwrap.dedent(
    """
    import asyncio, json, sys
    from toolish_rag.embedding import HashingEmbeddingModel
    from toolish_rag.retriever import Retriever
    from toolish_rag.stores import InMemoryStore

    async def main():
        store = InMemoryStore(HashingEmbeddingModel(64), path=sys.argv[1])
        records = await store.get_records([sys.argv[2]])
        hits = await Retriever(store).text_search('warranty details', 5)
        md = records[0].metadata
        print(json.dumps({'types': {k: type(v).__name__ for k, v in md.items()}, 'hits': [h.id for h in hits]}))

    asyncio.run(main())
    """
)


async def test_a_new_process_sees_identical_data_and_types(tmp_path: Path) -> None:
    store = InMemoryStore(HashingEmbeddingModel(64), path=tmp_path)
    corpus = conformance_corpus()
    await store.upsert(corpus)
    chunk = corpus[0].chunks[1]
    from toolish_rag.retriever import Retriever

    expected_hits = [h.id for h in await Retriever(store).text_search('warranty details', 5)]
    out = subprocess.run(
        [sys.executable, '-c', READER, str(tmp_path), chunk.id], capture_output=True, text=True, check=True
    )
    seen = json.loads(out.stdout)
    assert seen['hits'] == expected_hits
    assert seen['types'] == {k: type(v).__name__ for k, v in chunk.metadata.items()}
    assert 'float' in seen['types'].values() and 'int' in seen['types'].values()


async def test_kill_9_during_writes_leaves_a_consistent_store(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, '-c', WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    deadline = time.monotonic() + 120
    committed = -1
    while committed < 8 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        committed = int(line)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert committed >= 8, 'the writer did not get going'

    store = InMemoryStore(HashingEmbeddingModel(64), path=tmp_path)
    docs = await store.list_documents()
    assert len(store) == sum(d.chunk_count for d in docs) == 20 * len(docs)
    assert len(docs) >= min(committed + 1, 50)
    # Every document is whole: its chunks all come from one round.
    for info in docs:
        chunks = await store.expand(ExpansionRequest(document_id=info.id, limit=100))
        rounds = {c.urtext.split()[1] for c in chunks}
        assert len(chunks) == 20 and len(rounds) == 1
    # No leftover half-written version is used, and writing again works.
    versions = [p for p in tmp_path.iterdir() if p.is_dir() and p.name.startswith('v')]
    assert (tmp_path / (tmp_path / 'CURRENT').read_text()).is_dir()
    assert len(versions) <= 2
    await store.upsert(conformance_corpus())
    await asyncio.sleep(0)
    reopened = InMemoryStore(HashingEmbeddingModel(64), path=tmp_path)
    assert len(reopened) == len(store)
