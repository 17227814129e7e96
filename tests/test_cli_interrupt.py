"""Ctrl-C during ``toolish-rag ingest`` (issue 27 item 5): said at once, the summary marked interrupted, exit 130
within seconds (it took 37 s more, silently, and a second Ctrl-C aborted with exit 134); a re-run resumes.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from toolish_rag.cli import main
from toolish_rag.content import Document
from toolish_rag.ingest import ingest
from toolish_rag.ingest._report import IngestInterrupted
from toolish_rag.stores import InMemoryStore

WORDS = [
    'refund',
    'warranty',
    'battery',
    'shipping',
    'parcel',
    'invoice',
    'customer',
    'order',
    'return',
    'policy',
    'days',
    'support',
    'error',
]


def _folder(root: Path, files: int) -> Path:
    docs = root / 'docs'
    docs.mkdir()
    for i in range(files):
        words = [WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(480)]
        paragraphs = [' '.join(words[k : k + 60]) for k in range(0, 480, 60)]
        (docs / f'd{i:04}.txt').write_text('\n\n'.join(paragraphs))
    return docs


class _BlockingStore(InMemoryStore):
    """Its second upsert waits until the run is cancelled: a Ctrl-C in the middle of a write."""

    def __init__(self) -> None:
        super().__init__(embedder='hashing')
        self.upserts = 0
        self.waiting = asyncio.Event()

    async def upsert(self, documents: Sequence[Document], **kwargs: Any) -> Any:
        self.upserts += 1
        if self.upserts == 2:
            self.waiting.set()
            await asyncio.Event().wait()
        return await super().upsert(documents, **kwargs)


async def test_a_cancelled_run_gives_back_what_it_did_marked_interrupted(tmp_path: Path) -> None:
    docs = _folder(tmp_path, 12)
    store = _BlockingStore()
    run = asyncio.create_task(ingest(store, docs, progress=False, batch_chunks=8, executor='thread'))
    await asyncio.wait_for(store.waiting.wait(), 30)
    run.cancel()
    with pytest.raises(IngestInterrupted) as stopped:
        await run
    report = stopped.value.report
    assert report.interrupted and len(report.added) == 1  # the first batch was written, the second cancelled
    assert report.summary().startswith('interrupted: added 1,')
    assert isinstance(stopped.value, asyncio.CancelledError)  # code that handles cancellation still does


@pytest.mark.slow
def test_ctrl_c_during_ingest_stops_within_seconds_and_a_rerun_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = _folder(tmp_path, 400)
    store = tmp_path / 'kb'
    argv = ['ingest', str(docs), '--store', f'memory:{store}', '--embedder', 'hashing']
    env = {**os.environ, 'HF_HUB_OFFLINE': '1', 'TOKENIZERS_PARALLELISM': 'false'}
    child = subprocess.Popen(
        [sys.executable, '-m', 'toolish_rag.cli', *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 120
    while not (store / 'CURRENT').exists():  # the first batch is committed: mid-run
        assert child.poll() is None and time.monotonic() < deadline, 'the run ended before it could be interrupted'
        time.sleep(0.05)
    sent = time.monotonic()
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)
    took = time.monotonic() - sent
    assert child.returncode == 130, (child.returncode, out, err)
    assert took < 5, f'{took:.1f} s from Ctrl-C to exit'
    assert 'stopping… (Ctrl-C again to abort)' in err and 'Traceback' not in err and 'terminate called' not in err
    assert out.startswith('interrupted: added ') and 'the same command again ingests the rest' in out
    done = int(out.split('added ')[1].split(',')[0])
    assert 0 < done < 400

    monkeypatch.chdir(tmp_path)
    assert main(argv) == 0  # the store is consistent: the rest is added, what was done is unchanged
    again = capsys.readouterr().out
    assert again.startswith(f'added {400 - done}, updated 0, unchanged {done},'), again


@pytest.mark.slow
def test_a_second_ctrl_c_exits_at_once_without_an_abort(tmp_path: Path) -> None:
    docs = _folder(tmp_path, 400)
    store = tmp_path / 'kb'
    env = {**os.environ, 'HF_HUB_OFFLINE': '1', 'TOKENIZERS_PARALLELISM': 'false'}
    child = subprocess.Popen(
        [sys.executable, '-m', 'toolish_rag.cli', 'ingest', str(docs), '--store', f'memory:{store}'],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 180
    while not (store / 'CURRENT').exists():  # the real model is loaded and embedding: torch threads are busy
        assert child.poll() is None and time.monotonic() < deadline, 'the run ended before it could be interrupted'
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130, (child.returncode, err)
    assert 'terminate called' not in err and 'Traceback' not in err
    assert 'stopping…' in err and ('aborted; the store is consistent' in err or 'interrupted' in err)
