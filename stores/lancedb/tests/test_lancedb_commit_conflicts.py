"""Another process's commit in the middle of an upsert is retried on the latest versions, a bounded number of times.

Regression (issue 28): two writers into one LanceDB location died with a raw `Retryable commit
conflict`, and after the first one every later write of that process failed the same way (its
table handles stayed on the old version).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolish_rag_lancedb._writes import CONFLICT_ATTEMPTS, retry_conflicts

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
    """Without the CLI's lock (the Python API), two writers whose commits interleave, new columns included."""
    from toolish_rag_lancedb import LanceDBStore

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
