"""The ingest pipeline against the real InMemoryStore with a real (hashing) embedder."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import InnerWrites
from toolish_rag.content import Chunk, Document, Entity, document_id_for
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.ingest import Chunker, file_uri, format_report, ingest, parse_path
from toolish_rag.protocols import DocumentStore
from toolish_rag.stores import InMemoryStore


def _write_tree(root: Path) -> None:
    (root / 'guide').mkdir(parents=True)
    (root / 'guide' / 'refunds.md').write_text(
        '---\ntitle: Refund policy\nowner: billing\nversion: 3\n---\n\n# Refunds\n\nRefunds within 30 days.\n\n'
        '## Exceptions\n\nGift cards are final.\n\n```sh\n# not a heading\nrefund --id 42\n```\n'
    )
    (root / 'guide' / 'shipping.txt').write_text('We ship worldwide.\n\nExpress takes two days.\n')
    (root / 'notes.html').write_text(
        '<html><body><nav>Home | About</nav><main><h1>Notes</h1><p>First note.</p>'
        '<h2>Later</h2><p>Second note.</p></main><footer>(c) us</footer></body></html>'
    )
    (root / '.git').mkdir()
    (root / '.git' / 'HEAD.md').write_text('# hidden\n\nnever ingested')
    (root / 'node_modules').mkdir()
    (root / 'node_modules' / 'pkg.md').write_text('# vendor\n\nnever ingested')


async def test_ingest_then_reingest_costs_only_hashes(tmp_path: Path, counting: Any) -> None:
    _write_tree(tmp_path)
    store = InMemoryStore(counting)
    first = await ingest(store, tmp_path, progress=False)
    assert len(first.added) == 3 and not first.failed
    assert counting.texts == first.chunks > 0
    infos = {i.uri: i for i in await store.list_documents()}
    assert all(i.fingerprint and i.fingerprint.startswith('sha256:') for i in infos.values())
    assert not any('node_modules' in u or '.git' in u for u in infos)
    refunds = infos[file_uri(tmp_path / 'guide' / 'refunds.md')]
    assert refunds.title == 'Refund policy' and refunds.metadata['version'] == 3

    calls = counting.calls
    second = await ingest(store, tmp_path, progress=False)
    assert len(second.unchanged) == 3 and not second.added and not second.updated
    assert counting.calls == calls  # no embedding at all


async def test_changed_file_replaced_whole(tmp_path: Path, counting: Any) -> None:
    _write_tree(tmp_path)
    store = InMemoryStore(counting)
    await ingest(store, tmp_path, progress=False)
    target = tmp_path / 'guide' / 'refunds.md'
    target.write_text('# Returns\n\nReturns are accepted for 14 days.\n')
    report = await ingest(store, tmp_path, progress=False)
    assert report.updated == [file_uri(target)] and len(report.unchanged) == 2
    doc_id = document_id_for(file_uri(target))
    records = await store.get_records([f'{doc_id}-{i}' for i in range(20)])
    assert [r.section_path for r in records if isinstance(r, Chunk)] == [('Returns',)]
    assert all('Refunds' not in r.text for r in records)


async def test_sync_removes_documents_of_deleted_files(tmp_path: Path) -> None:
    _write_tree(tmp_path)
    other = tmp_path.parent / f'{tmp_path.name}-other'
    other.mkdir()
    (other / 'keep.md').write_text('# Keep\n\nother folder')
    store = InMemoryStore(HashingEmbeddingModel(64))
    await ingest(store, [tmp_path, other], progress=False)
    (tmp_path / 'guide' / 'shipping.txt').unlink()
    report = await ingest(store, tmp_path, sync=True, progress=False)
    assert report.removed == [file_uri(tmp_path / 'guide' / 'shipping.txt')]
    uris = {i.uri for i in await store.list_documents()}
    assert file_uri(other / 'keep.md') in uris  # outside the synced folder: untouched
    assert len(uris) == 3


async def test_edge_cases(tmp_path: Path) -> None:
    deep = tmp_path / 'deep.md'
    deep.write_text(''.join(f'{"#" * min(level, 6)} Level {level}\n\ntext {level}\n\n' for level in range(1, 9)))
    (tmp_path / 'empty.md').write_text('')
    (tmp_path / '__init__.py').write_text('\n\n')  # blank lines only: skipped like an empty file, not failed
    (tmp_path / 'binary.txt').write_bytes(bytes(range(256)) * 20)
    (tmp_path / 'latin1.txt').write_bytes('Café crème à la carte, déjà vu.'.encode('latin-1'))
    (tmp_path / 'utf16.txt').write_bytes('Grüße aus Köln\n\nzweiter Absatz'.encode('utf-16'))
    (tmp_path / 'image.bmp').write_bytes(b'\x89PNG\r\n\x1a\n' + b'\x00' * 64)
    (tmp_path / 'old.doc').write_bytes(b'\xd0\xcf\x11\xe0' + b'\x00' * 64)
    loop_dir = tmp_path / 'loop'
    loop_dir.mkdir()
    (loop_dir / 'inner.md').write_text('# Inner\n\nreached once')
    os.symlink(tmp_path, loop_dir / 'back', target_is_directory=True)
    store = InMemoryStore(HashingEmbeddingModel(64))
    report = await ingest(store, tmp_path, progress=False)
    added = {Path(u).name for u in report.added}
    assert added == {'deep.md', 'latin1.txt', 'utf16.txt', 'inner.md'}
    assert {Path(f.path).name: f.reason for f in report.failed} == {'binary.txt': 'binary file (NUL bytes): not text'}
    skipped = {Path(s.path).name: s.reason for s in report.skipped}
    assert skipped['empty.md'] == 'empty file' and skipped['__init__.py'] == 'empty file'
    assert 'unsupported' in skipped['image.bmp'] and 'legacy binary Word' in skipped['old.doc']
    text = format_report(report, verbose=True)
    assert 'binary.txt' in text and 'failed 1' in text

    doc = parse_path(deep)
    by_title = {s.title: s for s in doc.sections}
    assert by_title['Level 8'].parent_id == by_title['Level 6'].parent_id  # h6 caps the depth: siblings
    assert by_title['Level 6'].level == 6
    latin = parse_path(tmp_path / 'latin1.txt')
    assert 'Café crème' in latin.chunks[0].urtext
    utf16 = parse_path(tmp_path / 'utf16.txt')
    assert 'Grüße aus Köln' in utf16.chunks[0].urtext


class _CrashingStore(InnerWrites):
    """A DocumentStore that commits through InMemoryStore and dies on its n-th upsert."""

    def __init__(self, inner: InMemoryStore, crash_on: int) -> None:
        self.inner = inner
        self.crash_on = crash_on
        self.upserts = 0

    async def upsert(self, items: Iterable[Document | Entity]) -> None:
        self.upserts += 1
        if self.upserts == self.crash_on:
            raise RuntimeError('power cut')
        await self.inner.upsert(items)


async def test_crash_mid_run_loses_nothing_committed(tmp_path: Path) -> None:
    for i in range(6):
        (tmp_path / f'doc{i}.md').write_text(f'# Doc {i}\n\nbody {i}\n')
    inner = InMemoryStore(HashingEmbeddingModel(64))
    crashing = _CrashingStore(inner, crash_on=3)
    assert isinstance(crashing, DocumentStore)
    with pytest.raises(RuntimeError, match='power cut'):
        await ingest(crashing, tmp_path, batch_chunks=1, progress=False, concurrency=1)
    committed = len(await inner.list_documents())
    assert committed == 2
    rerun = await ingest(inner, tmp_path, batch_chunks=1, progress=False)
    assert len(rerun.unchanged) == committed and len(rerun.added) == 6 - committed


async def test_document_objects_are_idempotent_too(tmp_path: Path, counting: Any) -> None:
    (tmp_path / 'a.md').write_text('# A\n\nalpha')
    doc = parse_path(tmp_path / 'a.md', Chunker(chunk_size=200))
    bare = doc.model_copy(update={'fingerprint': None})
    store = InMemoryStore(counting)
    assert (await ingest(store, [bare], progress=False)).added == [doc.uri]
    calls = counting.calls
    assert (await ingest(store, [bare], progress=False)).unchanged == [doc.uri]
    assert counting.calls == calls


async def test_explicit_missing_and_unsupported_paths_fail(tmp_path: Path) -> None:
    (tmp_path / 'x.xyz').write_text('hello')
    report = await ingest(
        InMemoryStore(HashingEmbeddingModel(64)), [tmp_path / 'x.xyz', tmp_path / 'nope.md'], progress=False
    )
    reasons = {Path(f.path).name: f.reason for f in report.failed}
    assert 'unsupported' in reasons['x.xyz'] and reasons['nope.md'] == 'no such file or directory'


@pytest.mark.shared_data
async def test_shared_documents_folder(documents_dir: Path) -> None:
    store = InMemoryStore(HashingEmbeddingModel(64))
    report = await ingest(store, documents_dir, progress=False, chunker=Chunker(chunk_size=1500))
    failed = {Path(f.path).name for f in report.failed}
    unreadable = {
        'docx_truncated62886.docx',
        'pdf_encrypted_libreoffice_pw-openpassword.pdf',
        'pdf_malformed_invalid.pdf',
    }
    scanned = 'pdf_scanned_linn_brochure.pdf'  # OCR'd where Tesseract is installed, else failed naming it
    assert failed == unreadable | ({scanned} if shutil.which('tesseract') is None else set())
    assert len(report.added) == 21 - len(failed - unreadable)  # the readable documents + SOURCES.md
    assert all(f.reason for f in report.failed)
