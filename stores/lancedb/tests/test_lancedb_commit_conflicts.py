"""Writers into one LanceDB location take turns; a commit conflict is retried a bounded number of times.

Regressions (issue 28): two writers into one LanceDB location died with a raw `Retryable commit
conflict`, and after the first one every later write of that process failed the same way (its
table handles stayed on the old version). Then, with retries, a write was lost with both writers
reporting success (59 of 60 documents): a second writer's first write settled the first writer's
in-flight pending documents row as a crash's leftover and deleted it. Every write of a local
store now holds the folder's writer lock.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolish_rag import DocumentBuilder
from toolish_rag.content import Document
from toolish_rag.stores.lock import LOCK_FILE, StoreLock
from toolish_rag_lancedb import LanceDBStore
from toolish_rag_lancedb._writes import CONFLICT_ATTEMPTS, CommitStep, retry_conflicts

CONFLICT = 'lance error: Retryable commit conflict for version 7: This Merge transaction was preempted'


class Tables:
    def __init__(self) -> None:
        self.checkouts = 0

    async def checkout_latest(self) -> None:
        self.checkouts += 1


def test_a_conflict_is_retried_on_the_latest_versions_then_given_up() -> None:
    tables = Tables()
    calls: list[int] = []

    async def conflicts_twice() -> None:
        calls.append(1)
        if len(calls) <= 2:
            raise RuntimeError(CONFLICT)

    asyncio.run(retry_conflicts(tables, conflicts_twice))  # type: ignore[arg-type]
    assert (len(calls), tables.checkouts) == (3, 2)

    async def always() -> None:
        calls.append(1)
        raise RuntimeError(CONFLICT)

    calls.clear()
    with pytest.raises(RuntimeError, match='Retryable commit conflict'):
        asyncio.run(retry_conflicts(tables, always))  # type: ignore[arg-type]
    assert len(calls) == CONFLICT_ATTEMPTS

    async def other_error() -> None:
        calls.append(1)
        raise RuntimeError('disk full')

    calls.clear()
    with pytest.raises(RuntimeError, match='disk full'):
        asyncio.run(retry_conflicts(tables, other_error))  # type: ignore[arg-type]
    assert len(calls) == 1


def document(name: str) -> Document:
    b = DocumentBuilder(f'file:///{name}.md', name)
    b.add_chunk(b.section('S'), f'{name} text')
    return b.build()


class PausedAtRecords(LanceDBStore):
    """Stops its upsert just before the records commit (its documents row written pending) until ``go``."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.paused = asyncio.Event()
        self.go = asyncio.Event()

    async def before_commit(self, step: CommitStep) -> None:
        if step == 'records':
            self.paused.set()
            await self.go.wait()


def test_a_second_writer_waits_for_the_first_ones_commits(tmp_path: Path) -> None:
    """Two store objects on one location (as two processes would be), the first stopped in the middle of its
    upsert. Before: the second wrote at once, taking the first's pending row for a crash's leftover and
    deleting it; across processes that delete could land after the first's final row, losing a document."""
    kb = tmp_path / 'kb'

    async def scenario() -> tuple[bool, bool, int]:
        await LanceDBStore(kb, embedder='hashing').upsert([document('seed')])
        first, second = PausedAtRecords(kb, embedder='hashing'), LanceDBStore(kb, embedder='hashing')
        writing = asyncio.create_task(first.upsert([document('first')]))
        await first.paused.wait()
        other = asyncio.create_task(second.upsert([document('second')]))
        await asyncio.sleep(0.3)
        second_wrote_meanwhile = other.done()
        rows = await (await first._tables.db.open_table('documents')).query().select(['uri']).to_arrow()
        first_row_kept = 'file:///first.md' in rows.column('uri').to_pylist()
        first.go.set()
        await asyncio.gather(writing, other)
        return second_wrote_meanwhile, first_row_kept, len(await LanceDBStore(kb, embedder='hashing').list_documents())

    assert asyncio.run(scenario()) == (False, True, 3)
    assert (kb / LOCK_FILE).exists()
    with StoreLock(kb, timeout=0) as lock:  # released after the writes
        assert lock.held


def test_a_writer_opened_before_another_created_the_tables_writes_into_them(tmp_path: Path) -> None:
    """Before: the second writer created the tables again with its own schema and died with LanceDB's
    `Schema Error` (the first writer's had a metadata column more)."""
    kb = tmp_path / 'kb'

    async def scenario() -> int:
        late = LanceDBStore(kb, embedder='hashing')
        assert await late.list_documents() == []  # connected while the location was empty
        first = DocumentBuilder('file:///first.md', 'first', metadata={'team': 'a'})
        first.add_chunk(first.section('S'), 'first text')
        await LanceDBStore(kb, embedder='hashing').upsert([first.build()])
        await late.upsert([document('late')])
        return len(await LanceDBStore(kb, embedder='hashing').list_documents())

    assert asyncio.run(scenario()) == 2


WRITER = r"""
import asyncio, sys
from toolish_rag import DocumentBuilder
from toolish_rag_lancedb import LanceDBStore

async def main(location, tag):
    store = LanceDBStore(location, embedder='hashing')
    for i in range(30):
        b = DocumentBuilder(f'file:///{tag}{i}.md', f'{tag} {i}', metadata={f'k{tag}{i % 3}': i})
        b.add_chunk(b.section('S'), f'{tag} text {i}')
        await store.upsert([b.build()])

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


@pytest.mark.slow
def test_two_processes_writing_one_location_keep_every_document(tmp_path: Path) -> None:
    """Without the CLI's lock (the Python API), two writers whose commits would interleave, new columns included."""
    env = os.environ | {'HF_HUB_OFFLINE': '1'}
    for round_ in range(2):
        kb = str(tmp_path / f'kb{round_}')
        runs = [
            subprocess.Popen([sys.executable, '-c', WRITER, kb, tag], env=env, stderr=subprocess.PIPE, text=True)
            for tag in 'ab'
        ]
        errors = [run.communicate()[1] for run in runs]
        assert [run.returncode for run in runs] == [0, 0], errors
        assert len(asyncio.run(LanceDBStore(kb, embedder='hashing').list_documents())) == 60
