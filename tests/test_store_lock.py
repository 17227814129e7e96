"""One writer at a time per store (toolish_rag.stores.lock): a second writer waits, or is refused naming the holder.

Regression (issue 28): two `toolish-rag ingest` runs into one memory store both reported their
documents added, and the store kept only one run's. See docs/deploy.md (One writer at a time).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from toolish_rag.cli import main
from toolish_rag.ingest import ingest
from toolish_rag.stores import InMemoryStore
from toolish_rag.stores.lock import LOCK_FILE, StoreLock, StoreLocked


def write_docs(folder: Path, prefix: str, count: int) -> Path:
    folder.mkdir(parents=True)
    for i in range(count):
        (folder / f'{prefix}{i}.md').write_text(f'# {prefix} {i}\n\n{prefix} document number {i}.\n', encoding='utf-8')
    return folder


async def titles(path: Path) -> set[str]:
    return {d.title for d in await InMemoryStore('hashing', path=path).list_documents()}


async def count_documents(kind: str, path: Path) -> int:
    if kind == 'memory':
        return len(await titles(path))
    from toolish_rag_lancedb import LanceDBStore

    return len(await LanceDBStore(path, embedder='hashing').list_documents())


def test_two_writers_into_one_memory_store_keep_both_runs(tmp_path: Path) -> None:
    """Two writers at once, each as the CLI's ingest writes (the lock, then the store, then ingest), in
    threads; without the lock the store kept one run's documents (3 of 3 tries)."""
    kb = tmp_path / 'kb'
    batches = [write_docs(tmp_path / name, name, 12) for name in ('alpha', 'beta')]

    def writer(batch: Path) -> None:
        with StoreLock(kb, timeout=60):
            asyncio.run(ingest(InMemoryStore('hashing', path=kb), [batch], progress=False))

    threads = [threading.Thread(target=writer, args=(b,)) for b in batches]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(asyncio.run(titles(kb))) == 24  # the second writer waited: nothing lost


def test_a_second_writer_is_refused_naming_the_holder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kb = tmp_path / 'kb'
    monkeypatch.setenv('TOOLISH_RAG_LOCK_TIMEOUT', '0.2')
    docs = write_docs(tmp_path / 'docs', 'gamma', 1)
    with StoreLock(kb, command='toolish-rag ingest big/ --watch'):
        with pytest.raises(SystemExit) as stopped:
            main(['ingest', str(docs), '--store', f'memory:{kb}', '--embedder', 'hashing'])
        message = str(stopped.value.code)
        assert message.startswith(f'toolish-rag: {kb} is being written by pid {os.getpid()} ')
        assert '(toolish-rag ingest big/ --watch) since ' in message and 'waited 0.2 s' in message
        assert 'TOOLISH_RAG_LOCK_TIMEOUT' in message
        assert not (kb / 'CURRENT').exists()  # refused before anything was written
    assert main(['ingest', str(docs), '--store', f'memory:{kb}', '--embedder', 'hashing']) == 0  # released


def test_a_dead_holders_lock_is_taken_over(tmp_path: Path) -> None:
    """The kernel releases a lock with its process; the dead holder's record is only overwritten."""
    tmp_path.joinpath(LOCK_FILE).write_text(json.dumps({'pid': 999_999_999, 'command': 'x', 'since': 0}))
    with StoreLock(tmp_path, timeout=0) as lock:
        assert lock.held
        holder = json.loads((tmp_path / LOCK_FILE).read_text(encoding='utf-8'))
        assert holder['pid'] == os.getpid()
        with pytest.raises(StoreLocked):
            StoreLock(tmp_path, timeout=0).acquire()
    assert not lock.held


@pytest.mark.slow
def test_a_killed_writer_never_blocks_the_next(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            '-c',
            'import sys, time; from toolish_rag.stores.lock import StoreLock; '
            'held = StoreLock(sys.argv[1]).acquire(); print("held", flush=True); time.sleep(60)',
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == 'held'
    with pytest.raises(StoreLocked, match=f'pid {holder.pid} '):
        StoreLock(tmp_path, timeout=0.1).acquire()
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    start = time.monotonic()
    with StoreLock(tmp_path, timeout=5):
        assert time.monotonic() - start < 1


@pytest.mark.slow
@pytest.mark.parametrize('kind', ['memory', 'lancedb'])
def test_concurrent_cli_writers_in_rounds_lose_nothing(kind: str, tmp_path: Path) -> None:
    """The issue's rounds: two `toolish-rag ingest` processes started together into one store, three times."""
    if kind == 'lancedb':
        pytest.importorskip('toolish_rag_lancedb')
    env = os.environ | {'HF_HUB_OFFLINE': '1', 'TOOLISH_RAG_LOCK_TIMEOUT': '120'}
    for round_ in range(3):
        kb = tmp_path / f'kb{round_}'
        batches = [write_docs(tmp_path / f'r{round_}{name}', name, 10 * (1 + i)) for i, name in enumerate('ab')]
        runs = [
            subprocess.Popen(
                [
                    sys.executable,
                    '-m',
                    'toolish_rag.cli',
                    'ingest',
                    str(b),
                    '--store',
                    f'{kind}:{kb}',
                    '--embedder',
                    'hashing',
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            for b in batches
        ]
        errors = [run.communicate()[1] for run in runs]
        assert [run.returncode for run in runs] == [0, 0], errors
        listed = subprocess.run(
            [sys.executable, '-m', 'toolish_rag.cli', 'tools', '--store', f'{kind}:{kb}'],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert listed.returncode == 0, listed.stderr[-2000:]
        assert asyncio.run(count_documents(kind, kb)) == 30
