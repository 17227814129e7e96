"""`watch` (``ingest --watch``): the store follows edits, additions and deletions as they happen.

Real watchfiles on a real folder, the real InMemoryStore with the hashing embedder. Every
wait polls until a deadline; nothing sleeps a fixed time to let the watcher catch up.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sys
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from watchfiles import Change

from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.ingest import LocalExecutor, ParseJob, StoreEmbedding, file_uri, ingest
from toolish_rag.ingest._parse import Parsed
from toolish_rag.ingest._report import IngestReport
from toolish_rag.ingest._walk import Found
from toolish_rag.ingest._watch import WatchScope, watch
from toolish_rag.protocols import DocumentInfo
from toolish_rag.stores import InMemoryStore, open_store

DEADLINE_S = 15.0
DEBOUNCE_MS = 300


async def _until(what: str, check: Callable[[], Any]) -> None:
    """Poll ``check`` (sync or async) until it is truthy, or fail after `DEADLINE_S`."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        result = check()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return
        await asyncio.sleep(0.02)
    pytest.fail(f'not within {DEADLINE_S} s: {what}')


async def _stored(store: InMemoryStore) -> dict[str, DocumentInfo]:
    return {info.uri: info for info in await store.list_documents()}


def _tree(root: Path) -> None:
    (root / 'guide' / 'deep').mkdir(parents=True)
    (root / 'guide' / 'refunds.md').write_text('# Refunds\n\nRefunds within 30 days.\n')
    (root / 'guide' / 'deep' / 'faq.md').write_text('# FAQ\n\nAsk us.\n')
    (root / 'shipping.txt').write_text('We ship worldwide.\n')
    (root / 'old').mkdir()
    (root / 'old' / 'a.md').write_text('# Old A\n\nretired\n')
    (root / 'old' / 'b.md').write_text('# Old B\n\nretired\n')


@asynccontextmanager
async def _watching(store: InMemoryStore, path: Path, reports: list[IngestReport]) -> AsyncIterator[asyncio.Event]:
    """Run `watch` in a task; on exit stop it and check that it ended by itself."""
    stop = asyncio.Event()
    task = asyncio.create_task(
        watch(store, path, debounce_ms=DEBOUNCE_MS, stop_event=stop, on_report=reports.append, progress=False)
    )
    await _until('the initial run', lambda: reports or task.done())
    try:
        yield stop
    finally:
        stop.set()
        await asyncio.wait_for(task, DEADLINE_S)  # also raises what watch raised


def _mentions(reports: list[IngestReport], uri: str) -> int:
    return sum(uri in r.added + r.updated for r in reports)


async def test_the_store_follows_edits_additions_and_deletions(tmp_path: Path) -> None:
    root = tmp_path / 'kb'
    root.mkdir()
    _tree(root)
    store = InMemoryStore(HashingEmbeddingModel(64))
    reports: list[IngestReport] = []
    refunds, faq = root / 'guide' / 'refunds.md', root / 'guide' / 'deep' / 'faq.md'
    async with _watching(store, root, reports):
        assert len(reports[0].added) == 5 and not reports[0].failed  # the initial run

        # a burst of writes to one file: one re-ingest, with the last content
        for n in range(8):
            refunds.write_text(f'# Refunds\n\nRefunds within {n} days.\n')
            await asyncio.sleep(0.02)
        await _until('the edit is stored', lambda: _chunk_text(store, refunds, 'within 7 days'))
        assert _mentions(reports[1:], file_uri(refunds)) == 1  # [0]: the initial run

        # added: a file in a new subfolder; deleted: a file, and a folder moved away whole
        (root / 'guide' / 'new').mkdir()
        (root / 'guide' / 'new' / 'added.md').write_text('# Added\n\nfresh\n')
        (root / 'shipping.txt').unlink()
        (root / 'old').rename(tmp_path / 'moved-away')
        added = file_uri(root / 'guide' / 'new' / 'added.md')
        gone = {file_uri(root / 'shipping.txt'), file_uri(root / 'old' / 'a.md'), file_uri(root / 'old' / 'b.md')}

        async def followed() -> bool:
            uris = (await _stored(store)).keys()
            return added in uris and not gone & uris

        await _until('the addition and the deletions are applied', followed)

        # a bad file is reported in its batch, and watching goes on
        (root / 'broken.pdf').write_bytes(b'%PDF-1.7 not really a pdf')
        await _until('the bad file is reported', lambda: any(r.failed for r in reports))
        assert [i.path for r in reports for i in r.failed] == [str(root / 'broken.pdf')]
        faq.write_text('# FAQ\n\nAsk us anything.\n')
        shutil.rmtree(root / 'guide' / 'new')
        await _until('the next edit is stored', lambda: _chunk_text(store, faq, 'anything'))
        await _until('the deleted folder is removed', lambda: _absent(store, added))
        assert sum(len(r.failed) for r in reports) == 1  # later batches do not report the old bad file again

    # the end state is what a fresh full ingest of the folder gives (ids, fingerprints, path metadata)
    fresh = InMemoryStore(HashingEmbeddingModel(64))
    await ingest(fresh, root, progress=False)
    assert _comparable(await _stored(store)) == _comparable(await _stored(fresh))
    assert (await _stored(store))[file_uri(faq)].metadata['path'] == 'guide/deep/faq.md'


async def test_a_single_watched_file_follows_saves_by_rename(tmp_path: Path) -> None:
    note = tmp_path / 'note.md'
    note.write_text('# Note\n\nfirst\n')
    (tmp_path / 'other.md').write_text('# Other\n\nnot watched\n')
    store = InMemoryStore(HashingEmbeddingModel(64))
    reports: list[IngestReport] = []
    async with _watching(store, note, reports):
        for text in ('second', 'third'):  # as editors save: write a new file, rename it over the old one
            (tmp_path / 'other.md').write_text(f'# Other\n\n{text}, not watched\n')  # its folder is watched
            (tmp_path / '.note.md.tmp').write_text(f'# Note\n\n{text}\n')
            (tmp_path / '.note.md.tmp').replace(note)
            await _until(f'save {text!r} is stored', lambda: _chunk_text(store, note, text))  # noqa: B023
    assert list((await _stored(store)).keys()) == [file_uri(note)]
    assert (await _stored(store))[file_uri(note)].metadata['path'] == 'note.md'


def test_the_scope_ignores_what_the_walk_skips_and_editor_temporaries(tmp_path: Path) -> None:
    (tmp_path / 'docs' / 'sub').mkdir(parents=True)
    for name in ('a.md', 'a.md.swp', 'a.md~', '.#a.md', '#a.md#', '4913', 'image.bmp', '.hidden.md'):
        (tmp_path / 'docs' / name).write_text('x')
    scope = WatchScope.of(tmp_path / 'docs', include_hidden=False)

    def relevant(*parts: str, change: Change = Change.modified) -> bool:
        return scope.relevant(change, str(tmp_path.joinpath('docs', *parts)))

    assert relevant('a.md') and relevant('sub', change=Change.added)
    assert relevant('gone-folder.v2', change=Change.deleted)  # may be a folder: its documents go
    for ignored in ('a.md.swp', 'a.md~', '.#a.md', '#a.md#', '4913', 'image.bmp', '.hidden.md'):
        assert not relevant(ignored), ignored
    assert not relevant('.git', 'x.md', change=Change.deleted) and not relevant('node_modules', 'x.md')
    assert not scope.relevant(Change.modified, str(tmp_path / 'outside.md'))
    assert WatchScope.of(tmp_path / 'docs', include_hidden=True).relevant(Change.modified, str(tmp_path / 'docs' / '.hidden.md'))  # fmt: skip


async def test_a_missing_path_is_refused_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match='cannot watch'):
        await watch(InMemoryStore(HashingEmbeddingModel(64)), tmp_path / 'nope', progress=False)


async def test_the_cli_watches_until_ctrl_c_then_prints_a_summary(tmp_path: Path) -> None:
    docs, kb = tmp_path / 'docs', tmp_path / 'kb'
    docs.mkdir()
    (docs / 'a.md').write_text('# A\n\nalpha\n')
    command = ['ingest', str(docs), '--watch', '--json', '--store', f'memory:{kb}', '--embedder', 'hashing']
    process = await asyncio.create_subprocess_exec(
        sys.executable, '-m', 'toolish_rag.cli', *command,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env={**os.environ, 'HF_HUB_OFFLINE': '1'},
    )  # fmt: skip
    assert process.stdout is not None and process.stderr is not None
    try:
        initial = json.loads(await asyncio.wait_for(process.stdout.readline(), DEADLINE_S))
        assert initial['added'] == [file_uri(docs / 'a.md')]  # one JSON object a line
        (docs / 'b.md').write_text('# B\n\nbeta\n')
        batch = json.loads(await asyncio.wait_for(process.stdout.readline(), DEADLINE_S))
        assert batch['added'] == [file_uri(docs / 'b.md')] and batch['ok']
        process.send_signal(signal.SIGINT)
        code = await asyncio.wait_for(process.wait(), DEADLINE_S)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    errors = (await process.stderr.read()).decode()
    assert code == 0, errors
    assert 'watch stopped after 1 change batch(es): added 1, updated 0, unchanged 0, removed 0, failed 0' in errors
    stored = await open_store(f'memory:{kb}', embedder='hashing').list_documents()
    assert sorted(i.uri for i in stored) == [file_uri(docs / 'a.md'), file_uri(docs / 'b.md')]


async def _chunk_text(store: InMemoryStore, path: Path, needle: str) -> bool:
    hits = await store.get_records(
        [f'{info.id}-0' for info in await store.list_documents() if info.uri == file_uri(path)]
    )
    return any(needle in getattr(hit, 'text', '') for hit in hits)


async def _absent(store: InMemoryStore, uri: str) -> bool:
    return uri not in await _stored(store)


def _comparable(stored: dict[str, DocumentInfo]) -> dict[str, tuple[Any, ...]]:
    return {uri: (i.id, i.fingerprint, i.chunk_count, i.metadata) for uri, i in stored.items()}


@dataclass
class _CountingExecutor:
    """An `IngestExecutor` of our own (the public protocol a user implements): the local pool, counting its runs."""

    runs: int = 0
    inner: LocalExecutor = field(default_factory=lambda: LocalExecutor('thread'))

    @property
    def embeds(self) -> bool:
        return False

    async def parse(
        self, files: Sequence[Found], job: ParseJob, embedding: StoreEmbedding | None
    ) -> AsyncGenerator[Parsed, None]:
        self.runs += 1
        async with aclosing(self.inner.parse(files, job, embedding)) as parsed:
            async for result in parsed:
                yield result


async def test_the_executor_serves_the_initial_run_only(tmp_path: Path) -> None:
    """Regression: with --watch --ray every batch of a file or two paid Ray's start (actors, model loads: ~9 s)."""
    (tmp_path / 'a.md').write_text('# A\n\nfirst\n')
    store = InMemoryStore(HashingEmbeddingModel(64))
    executor = _CountingExecutor()
    reports: list[IngestReport] = []
    stop = asyncio.Event()
    task = asyncio.create_task(
        watch(
            store,
            tmp_path,
            debounce_ms=DEBOUNCE_MS,
            stop_event=stop,
            on_report=reports.append,
            progress=False,
            executor=executor,
        )
    )
    await _until('the initial run', lambda: reports or task.done())
    assert executor.runs == 1
    (tmp_path / 'a.md').write_text('# A\n\nsecond\n')
    await _until('the edit is stored', lambda: _chunk_text(store, tmp_path / 'a.md', 'second'))
    stop.set()
    await asyncio.wait_for(task, DEADLINE_S)
    assert executor.runs == 1  # the batch ran in process
