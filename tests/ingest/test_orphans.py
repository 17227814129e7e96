"""Parse workers die with the ingest run that started them, even when it is killed with SIGKILL.

A killed run's process-pool workers used to live on, blocked on their task queue (each
holds that queue's write end, so it never reaches end-of-file), and they kept the
multiprocessing resource tracker alive through the tracker pipe they inherit. These tests
run a real ingest in a subprocess, kill it, and watch ``/proc`` until every process it
started is gone.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path('/proc/self/stat').exists(), reason='reads /proc (Linux)')

DEADLINE_SECONDS = 20.0

_INGEST_DRIVER = """
import asyncio, sys

from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.ingest import ingest
from toolish_rag.stores import InMemoryStore


class StalledEmbedder(HashingEmbeddingModel):
    # Holds the run at its first write, when the parse workers are running.
    async def embed(self, inputs, *, input_type, settings=None):
        print('writing', flush=True)
        await asyncio.Event().wait()
        raise AssertionError('unreachable')


if __name__ == '__main__':  # spawned workers import this script as their __main__
    store = InMemoryStore(StalledEmbedder(64))
    asyncio.run(ingest(store, sys.argv[1], executor='process', concurrency=2, batch_chunks=1, progress=False))
"""

_WATCHDOG_DRIVER = """
import subprocess, sys

# The middle process: starts a child that watches it with the portable watchdog, then waits.
code = (
    'import os, sys, time\\n'
    'from toolish_rag.ingest._workers import watch_parent\\n'
    'watch_parent(os.getppid(), interval=0.05)\\n'
    'print("watching", flush=True)\\n'
    'time.sleep(600)\\n'
)
child = subprocess.Popen([sys.executable, '-c', code])
child.wait()
"""


def _stat(pid: int) -> tuple[str, int, int] | None:
    """``(state, ppid, starttime)`` from ``/proc/PID/stat``, or None when the process is gone."""
    try:
        raw = Path(f'/proc/{pid}/stat').read_text()
    except OSError:
        return None
    fields = raw.rsplit(')', 1)[1].split()  # the command name may hold spaces and parentheses
    return fields[0], int(fields[1]), int(fields[19])


def _descendants(root: int) -> dict[int, int]:
    """Every living descendant of ``root``: pid -> start time (to tell a reused pid apart)."""
    table: dict[int, tuple[int, int]] = {}
    for entry in Path('/proc').iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None and stat[0] not in 'ZX':
            table[int(entry.name)] = (stat[1], stat[2])
    found: dict[int, int] = {}
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, started) in table.items():
            if ppid == parent and pid not in found:
                found[pid] = started
                frontier.append(pid)
    return found


def _alive(pid: int, started: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[2] == started and stat[0] not in 'ZX'  # a zombie is dead


def _cmdline(pid: int) -> str:
    try:
        return Path(f'/proc/{pid}/cmdline').read_bytes().replace(b'\0', b' ').decode(errors='replace')
    except OSError:
        return ''


def _read_line(proc: subprocess.Popen[bytes], timeout: float) -> bytes:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    return proc.stdout.readline() if ready else b''


@dataclass(frozen=True)
class _Killed:
    started: dict[int, str]
    """Every process the driver had started when it was killed: pid -> command line."""
    survivors: list[str]
    """Those still running at the deadline."""


def _kill_when_ready(tmp_path: Path, driver: str, ready: bytes, *args: str) -> _Killed:
    """Run ``driver``; once it prints ``ready``, SIGKILL it and poll until what it started is gone."""
    script = tmp_path / 'driver.py'
    script.write_text(driver)
    env = {**os.environ, 'HF_HUB_OFFLINE': '1'}
    with (tmp_path / 'stderr.txt').open('wb') as stderr:
        proc = subprocess.Popen([sys.executable, str(script), *args], stdout=subprocess.PIPE, stderr=stderr, env=env)
    children: dict[int, int] = {}
    try:
        assert _read_line(proc, timeout=120) == ready, (tmp_path / 'stderr.txt').read_text()
        children = _descendants(proc.pid)
        started = {pid: _cmdline(pid) for pid in children}
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + DEADLINE_SECONDS
        while (alive := [pid for pid, since in children.items() if _alive(pid, since)]) and (
            time.monotonic() < deadline
        ):
            time.sleep(0.05)  # a polling interval, not a wait for something to happen
        return _Killed(started, [f'{pid}: {started[pid][:120]}' for pid in alive])
    finally:
        proc.kill()
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()
        for pid, since in children.items():
            if _alive(pid, since):
                os.kill(pid, signal.SIGKILL)


def test_parse_workers_and_resource_tracker_die_with_a_killed_ingest(tmp_path: Path) -> None:
    docs = tmp_path / 'docs'
    docs.mkdir()
    for i in range(40):
        (docs / f'doc{i}.md').write_text(f'# Document {i}\n\nBody of document {i}.\n\n## Part\n\nMore text {i}.\n')
    killed = _kill_when_ready(tmp_path, _INGEST_DRIVER, b'writing\n', str(docs))
    workers = [line for line in killed.started.values() if 'spawn_main' in line or 'forkserver' in line]
    assert len(workers) >= 2, f'no parse worker process was started: {killed.started}'  # the server, a worker
    assert not killed.survivors, (
        f'still running {DEADLINE_SECONDS:.0f} s after the ingest was killed: {killed.survivors}'
    )


def test_portable_watchdog_exits_when_its_parent_dies(tmp_path: Path) -> None:
    """The fallback where ``prctl`` is missing (macOS, BSD): a thread polling the parent pid."""
    killed = _kill_when_ready(tmp_path, _WATCHDOG_DRIVER, b'watching\n')
    assert len(killed.started) == 1
    assert not killed.survivors, (
        f'still running {DEADLINE_SECONDS:.0f} s after its parent was killed: {killed.survivors}'
    )
