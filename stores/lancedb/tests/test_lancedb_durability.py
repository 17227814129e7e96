"""Persistence across processes, kill -9 during writes, concurrent readers and writers."""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import signal
import subprocess
import sys
import time
from datetime import timedelta
from typing import Any

import lancedb
import pytest
from lancedb_worker import DOCS, _plain, dump, open_store, versioned_docs

from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.search import ExpansionRequest, SearchRequest
from toolish_rag.testing import conformance_corpus, conformance_entities
from toolish_rag_lancedb import LanceDBStore
from toolish_rag_lancedb._writes import CommitStep

WORKER = str(pathlib.Path(__file__).with_name('lancedb_worker.py'))


def _run_worker(*args: str) -> str:
    done = subprocess.run([sys.executable, WORKER, *args], capture_output=True, text=True, timeout=120, check=True)
    return done.stdout


async def test_reopen_in_a_new_process_is_identical(tmp_path: pathlib.Path) -> None:
    path = str(tmp_path / 'kb')
    store = LanceDBStore(path, embedder=HashingEmbeddingModel(64))
    await store.upsert([*conformance_corpus(), *conformance_entities()])
    here = json.loads(json.dumps(await dump(path)))
    there = json.loads(_run_worker('dump', path))
    assert there == here
    # Parent links, urtext and metadata types came back exactly.
    originals = {d.id: d for d in conformance_corpus()}
    for doc in there['full_documents']:
        original = _plain(originals[doc['id']])
        assert doc == original
    assert there['types']['ent-acme'] == {'tenant': 'str', 'n': 'int', 'tags': 'list'}
    assert any(t.get('ratio') == 'float' for t in there['types'].values())
    assert any(t.get('ratio') == 'int' for t in there['types'].values())
    assert there['regex'] and there['vector'] and there['text']


async def _assert_consistent(store: LanceDBStore, *, one_version: bool = True) -> int:
    """Every document's chunks belong to one version, complete; returns that version."""
    versions = set()
    for k in range(DOCS):
        doc_id = versioned_docs(0)[k].id
        chunks = await store.expand(ExpansionRequest(document_id=doc_id))
        assert chunks, f'document {k} lost its chunks'
        seen = {c.metadata['version'] for c in chunks}
        assert len(seen) == 1, f'document {k} mixes versions {seen}'
        version = seen.pop()
        assert isinstance(version, int)
        assert [c.sequence_number for c in chunks] == list(range(3 + version % 4))
        versions.add(version)
    if one_version:  # (separate reads may straddle a concurrent write)
        assert len(versions) == 1, f'one upsert call wrote all documents, yet versions differ: {versions}'
    return max(versions)


async def _assert_listing_agrees(store: LanceDBStore, version: int) -> None:
    infos = await store.list_documents()
    assert [i.fingerprint for i in infos] == [f'v{version}'] * DOCS
    assert [i.chunk_count for i in infos] == [3 + version % 4] * DOCS
    for info in infos:
        doc = await store.get_document(info.id)
        assert doc is not None and doc.fingerprint == f'v{version}'
        assert [c.metadata['version'] for c in doc.chunks] == [version] * info.chunk_count


class CrashingStore(LanceDBStore):
    """Dies (raises) just before one commit of an upsert, as a kill -9 there would leave the tables."""

    crash: CommitStep | None = None
    reached: list[CommitStep]

    async def before_commit(self, step: CommitStep) -> None:
        self.reached.append(step)
        if step == self.crash:
            raise KeyboardInterrupt(f'killed before the {step} commit')


@pytest.mark.parametrize(('crash', 'survives'), [('pending-documents', 1), ('records', 1), ('final-documents', 2)])
async def test_a_crash_at_any_point_of_an_upsert_leaves_listing_and_records_in_step(
    tmp_path: pathlib.Path, crash: CommitStep, survives: int
) -> None:
    path = str(tmp_path / 'kb')
    await open_store(path).upsert(versioned_docs(1))
    crashing = CrashingStore(path, embedder=HashingEmbeddingModel(64), ann_threshold=None)
    crashing.crash = crash
    crashing.reached = []
    new_doc = versioned_docs(2)[0].model_copy(update={'id': 'brand-new'})
    with pytest.raises(KeyboardInterrupt):
        await crashing.upsert([*versioned_docs(2), new_doc])
    steps: list[CommitStep] = ['pending-documents', 'records', 'final-documents']
    assert crashing.reached == steps[: steps.index(crash) + 1]
    for reader in (open_store(path), crashing):  # a fresh process, and the crashed object itself
        assert await _assert_consistent(reader) == survives
        listed = {i.id: i.fingerprint for i in await reader.list_documents()}
        assert {listed[d.id] for d in versioned_docs(1)} == {f'v{survives}'}
        assert ('brand-new' in listed) == (survives == 2)
        assert await reader.get_document('brand-new') is None or survives == 2
    # The next writer settles the pending rows for good, whatever it writes; the crashed
    # object (had the process survived) settles them too before its own next write.
    writer = open_store(path) if crash != 'records' else crashing
    crashing.crash = None
    await writer.delete_entities(['nothing'])
    table = await (await lancedb.connect_async(path)).open_table('documents')
    assert await table.count_rows('pending_version IS NOT NULL') == 0
    assert await _assert_consistent(open_store(path)) == survives
    assert {i.fingerprint for i in await open_store(path).list_documents()} >= {f'v{survives}'}
    # And re-running the interrupted write brings everything to the new version.
    await writer.upsert([*versioned_docs(2), new_doc])
    assert await _assert_consistent(open_store(path)) == 2
    assert {i.fingerprint for i in await open_store(path).list_documents()} == {'v2'}


async def test_a_store_written_before_pending_columns_is_migrated(tmp_path: pathlib.Path) -> None:
    path = str(tmp_path / 'kb')
    await open_store(path).upsert(versioned_docs(1))
    table = await (await lancedb.connect_async(path)).open_table('documents')
    await table.drop_columns(['pending_version', 'previous_json'])
    old = open_store(path)
    assert {i.fingerprint for i in await old.list_documents()} == {'v1'}
    await old.upsert(versioned_docs(2))
    await _assert_listing_agrees(open_store(path), 2)


async def test_kill_9_during_upserts_then_reopen(tmp_path: pathlib.Path) -> None:
    path = str(tmp_path / 'kb')
    proc = subprocess.Popen([sys.executable, WORKER, 'upsert-loop', path], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    try:
        committed = 0
        deadline = time.monotonic() + 60
        while committed < 6 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if line.strip():
                committed = int(line)
        assert committed >= 6, 'the writer did not get going'
        time.sleep(0.05 * (os.getpid() % 7))  # land somewhere inside a later write
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    store = open_store(path)
    version = await _assert_consistent(store)
    assert version >= committed
    # The listing agrees with the records whatever instant the kill hit (pending rows resolve).
    await _assert_listing_agrees(store, version)
    # Re-running the last write is idempotent and brings everything in line.
    for _ in range(2):
        await open_store(path).upsert(versioned_docs(version))
        reopened = open_store(path)
        assert await _assert_consistent(reopened) == version
        assert {i.fingerprint for i in await reopened.list_documents()} == {f'v{version}'}
        assert await reopened.count() == DOCS * (3 + version % 4)


async def test_readers_never_see_half_a_document(tmp_path: pathlib.Path) -> None:
    path = tmp_path / 'kb'
    writer = open_store(str(path))
    await writer.upsert(versioned_docs(1))
    other_process_like = LanceDBStore(path, embedder=HashingEmbeddingModel(64), read_consistency_interval=timedelta(0))
    stop = asyncio.Event()
    observed: list[int] = []

    async def write() -> None:
        for version in range(2, 14):
            await writer.upsert(versioned_docs(version))
        stop.set()

    async def read(store: LanceDBStore) -> None:
        while not stop.is_set():
            observed.append(await _assert_consistent(store, one_version=False))
            hits = await store.text_search(SearchRequest('common version', 50))
            by_doc: dict[str, set[Any]] = {}
            for h in hits:
                by_doc.setdefault(h.record.document_id, set()).add(h.record.metadata['version'])  # type: ignore[union-attr]
            assert all(len(v) == 1 for v in by_doc.values()), by_doc
            await asyncio.sleep(0)

    await asyncio.gather(write(), read(writer), read(other_process_like))
    assert len(observed) >= 4
    assert await _assert_consistent(other_process_like) == 13


async def test_concurrent_writers_are_serialised(tmp_path: pathlib.Path) -> None:
    store = LanceDBStore(tmp_path / 'kb', embedder=HashingEmbeddingModel(64))
    docs = conformance_corpus()
    await asyncio.gather(*(store.upsert([d]) for d in docs), store.upsert(conformance_entities()))
    await asyncio.gather(*(store.upsert([d]) for d in docs))
    assert {i.id for i in await store.list_documents()} == {d.id for d in docs}
    assert await store.count() == sum(len(d.chunks) for d in docs) + len(conformance_entities())


async def test_a_table_left_without_its_indexes_is_repaired(tmp_path: pathlib.Path) -> None:
    # As if a writer died between creating the table and creating its indexes.
    path = tmp_path / 'kb'
    store = open_store(str(path))
    await store.upsert(versioned_docs(1))
    table = await (await lancedb.connect_async(str(path))).open_table('records')
    for name in ('words_idx', 'labels_idx'):  # a new store's text index is on its analysed words
        await table.drop_index(name)
    reader = open_store(str(path))
    hits = await reader.text_search(SearchRequest('version', 3))
    assert len(hits) == 3  # answered by a scan while the index is missing
    await reader.upsert(versioned_docs(2))
    assert {'words_idx', 'labels_idx'} <= set(await reader.index_stats())
    assert await _assert_consistent(reader) == 2
