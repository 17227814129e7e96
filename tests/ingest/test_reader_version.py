"""The reader's version in each file's fingerprint: a bump re-reads exactly that reader's files.

docs/ingestion.md#reader-versions.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.ingest import Chunker, file_uri, fingerprint, ingest
from toolish_rag.ingest._readers import READERS, markdown as markdown_reader, pdf as pdf_reader
from toolish_rag.ingest._readers._ocr import OcrOptions
from toolish_rag.ingest._readers._versions import reader_key, reader_version
from toolish_rag.stores import InMemoryStore


def _folder(root: Path) -> Path:
    docs = root / 'docs'
    docs.mkdir()
    (docs / 'guide.md').write_text('# Guide\n\nRotate the API key every ninety days.\n')
    (docs / 'notes.txt').write_text('Refunds take five working days.\n')
    (docs / 'page.html').write_text('<html><body><h1>Status</h1><p>All systems normal.</p></body></html>')
    return docs


async def _run(store: InMemoryStore, docs: Path):  # type: ignore[no-untyped-def]
    return await ingest(store, docs, progress=False, executor='thread')


async def test_a_bumped_reader_re_reads_only_its_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    docs = _folder(tmp_path)
    store = InMemoryStore(HashingEmbeddingModel(64))
    first = await _run(store, docs)
    assert len(first.added) == 3

    again = await _run(store, docs)
    assert (again.added, again.updated, len(again.unchanged)) == ([], [], 3)

    monkeypatch.setattr(markdown_reader, 'VERSION', markdown_reader.VERSION + 1)
    bumped = await _run(store, docs)
    assert bumped.updated == [file_uri(docs / 'guide.md')]
    assert sorted(bumped.unchanged) == sorted([file_uri(docs / 'notes.txt'), file_uri(docs / 'page.html')])

    settled = await _run(store, docs)
    assert (settled.added, settled.updated, len(settled.unchanged)) == ([], [], 3)


async def test_fingerprints_from_before_versions_still_match_a_version_0_reader(tmp_path: Path) -> None:
    """An existing store keeps its files while their reader is at version 0; a bump re-reads them once."""
    docs = _folder(tmp_path)
    store = InMemoryStore(HashingEmbeddingModel(64))
    await _run(store, docs)
    stored = {info.uri: info.fingerprint for info in await store.list_documents()}
    data = (docs / 'notes.txt').read_bytes()
    assert reader_version(READERS['.txt']) == 0
    assert stored[file_uri(docs / 'notes.txt')] == fingerprint(data, Chunker().config_key())


def test_every_reader_declares_a_version() -> None:
    for suffix, reader in READERS.items():
        assert isinstance(reader_version(reader), int), suffix


def test_ocr_settings_are_in_the_key_only_where_they_change_the_text(monkeypatch: pytest.MonkeyPatch) -> None:
    never = OcrOptions('never')
    german = OcrOptions('auto', ('de',))
    assert reader_key(Path('a.pdf'), ocr=never) != reader_key(Path('a.pdf'))
    assert reader_key(Path('a.pdf'), ocr=german) not in (
        reader_key(Path('a.pdf')),
        reader_key(Path('a.pdf'), ocr=never),
    )
    assert reader_key(Path('a.txt'), ocr=never) == reader_key(Path('a.txt')) == ''
    monkeypatch.setattr(pdf_reader, 'VERSION', 7)
    assert 'pdf/7' in reader_key(Path('scan.PDF'))


def test_the_backend_is_in_the_key() -> None:
    default, other = reader_key(Path('a.docx')), reader_key(Path('a.docx'), 'unstructured')
    assert other.startswith(' reader=unstructured/') and other != default
    assert reader_key(Path('a.py'), 'unstructured') == reader_key(Path('a.py'))  # read by the default reader
