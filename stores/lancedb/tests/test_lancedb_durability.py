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
from lancedb_worker import DOCS, _plain, dump, open_store, versioned_docs

from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.search import ExpansionRequest, SearchRequest
from toolish_rag.testing import conformance_corpus, conformance_entities
from toolish_rag_lancedb import LanceDBStore

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
    infos = await store.list_documents()
    # The documents table is written after the records: it is current or one write behind.
    assert {i.fingerprint for i in infos} <= {f'v{version}', f'v{version - 1}'}
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
    for name in ('text_idx', 'labels_idx'):
        await table.drop_index(name)
    reader = open_store(str(path))
    hits = await reader.text_search(SearchRequest('version', 3))
    assert len(hits) == 3  # answered by a scan while the index is missing
    await reader.upsert(versioned_docs(2))
    assert {'text_idx', 'labels_idx'} <= set(await reader.index_stats())
    assert await _assert_consistent(reader) == 2
