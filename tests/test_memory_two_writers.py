"""Two processes writing one persisted `InMemoryStore` (issue 41.4): every write kept, or a loud failure.

Each write takes the folder's writer lock (`toolish_rag.stores.lock.write_turn`) and builds on the
version another process saved since, so neither process's documents are lost (before, the last
writer's version replaced the other's, both reporting success). See docs/stores/memory.md.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.stores import InMemoryStore
from toolish_rag.stores.lock import StoreLock

WRITES = 12
_WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from toolish_rag import DocumentBuilder
    from toolish_rag.embedding import HashingEmbeddingModel
    from toolish_rag.stores import InMemoryStore

    async def main(path, name, writes):
        store = InMemoryStore(HashingEmbeddingModel(16), path=path, windows=None)
        for i in range(writes):
            b = DocumentBuilder(f'file:///{name}/{i}.md', f'{name} {i}')
            b.add_chunk(None, f'note {i} written by {name}')
            await store.upsert([b.build()])

    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
    """
)


def _writer(path: Path, name: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, '-c', _WRITER, str(path), name, str(WRITES)], stderr=subprocess.PIPE)


def test_two_processes_writing_one_store_lose_nothing(tmp_path: Path) -> None:
    writers = [_writer(tmp_path, name) for name in ('api', 'cli')]
    for writer in writers:
        _, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err.decode()[-2000:]
    titles = {d.title for d in asyncio.run(InMemoryStore(HashingEmbeddingModel(16), path=tmp_path).list_documents())}
    assert titles == {f'{name} {i}' for name in ('api', 'cli') for i in range(WRITES)}


def test_a_write_while_another_process_holds_the_lock_fails_loudly(tmp_path: Path) -> None:
    """The CLI holds the lock for a whole command: an API write waits, then raises (it does not report success)."""
    holder = subprocess.Popen(
        [
            sys.executable,
            '-c',
            f'from toolish_rag.stores.lock import StoreLock; import time\n'
            f'lock = StoreLock({str(tmp_path)!r}).acquire(); print("held", flush=True); time.sleep(60)',
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b'held'
        result = subprocess.run(
            [sys.executable, '-c', _WRITER, str(tmp_path), 'api', '1'],
            capture_output=True,
            timeout=120,
            env={**os.environ, 'TOOLISH_RAG_LOCK_TIMEOUT': '0.5'},
        )
        assert result.returncode != 0 and b'StoreLocked' in result.stderr, result.stderr[-500:]
    finally:
        holder.kill()
        holder.wait()
    StoreLock(tmp_path, timeout=1).acquire().release()  # released with its holder's process: no StoreLocked
