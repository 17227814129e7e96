"""Ingestion records each file's ``path`` (under the ingested root) and ``uri`` as metadata (issue #13, item 3)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import pytest

from toolish_rag import Retriever
from toolish_rag.builder import DocumentBuilder
from toolish_rag.content import Chunk, Document, document_id_for
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.filters import PropertyFilter as F
from toolish_rag.ingest import Chunker, file_uri, fingerprint, ingest, parse_path, read_file
from toolish_rag.protocols import DocumentInfo
from toolish_rag.stores import InMemoryStore

TREE = {
    'api/v1/auth.md': '# Auth\n\nTokens expire after an hour.\n\n## Refresh\n\nRefresh tokens last a day.\n',
    'api/errors.txt': 'Every token error has a code.\n\nERR-4012 means the token expired.\n',
    'guide/intro.md': '# Intro\n\nA token is a string you keep secret.\n',
    'top.md': '# Top\n\nThe token guide starts here.\n',
}


def _write(root: Path, files: dict[str, str] = TREE) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _store() -> InMemoryStore:
    return InMemoryStore(HashingEmbeddingModel(64))


async def _chunks(store: InMemoryStore) -> list[Chunk]:
    """Every stored chunk, read back by id from the listing (a chunk is ``{document id}-{n}``)."""
    ids = [f'{info.id}-{n}' for info in await store.list_documents() for n in range(info.chunk_count)]
    records = await store.get_records(ids)
    assert len(records) == len(ids)
    return [r for r in records if isinstance(r, Chunk)]


async def test_nested_paths_are_relative_posix_on_every_chunk(tmp_path: Path) -> None:
    _write(tmp_path)
    store = _store()
    await ingest(store, tmp_path, progress=False)
    by_uri = {file_uri(tmp_path / rel): rel for rel in TREE}
    infos = await store.list_documents()
    assert {i.uri: i.metadata['path'] for i in infos} == by_uri
    assert all(i.metadata['uri'] == i.uri for i in infos)
    chunks = await _chunks(store)
    assert {c.metadata['path'] for c in chunks} == set(TREE)  # every file has chunks
    for chunk in chunks:
        uri = next(i.uri for i in infos if i.id == chunk.document_id)
        assert chunk.metadata['path'] == by_uri[uri] and chunk.metadata['uri'] == uri


async def test_relative_root_and_a_file_named_directly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path)
    monkeypatch.chdir(tmp_path)
    store = _store()
    await ingest(store, ['./api', 'top.md'], progress=False)  # a relative root; a file named itself
    paths = {i.metadata['path'] for i in await store.list_documents()}
    assert paths == {'v1/auth.md', 'errors.txt', 'top.md'}
    assert parse_path(Path('api') / 'v1' / 'auth.md').metadata['path'] == 'auth.md'


async def test_starts_with_path_filter_returns_only_that_folder(tmp_path: Path) -> None:
    _write(tmp_path)
    store = _store()
    await ingest(store, tmp_path, progress=False)
    everything = await Retriever(store).text_search('token', 50)
    assert {h.record.metadata['path'] for h in everything} == set(TREE)  # the word is in every file
    hits = await Retriever(store, F.starts_with('path', 'api/')).text_search('token', 50)
    assert {h.record.metadata['path'] for h in hits} == {'api/v1/auth.md', 'api/errors.txt'}


async def test_unchanged_files_stay_unchanged(tmp_path: Path) -> None:
    _write(tmp_path)
    store = _store()
    first = await ingest(store, tmp_path, sync=True, progress=False)
    assert len(first.added) == len(TREE)
    again = await ingest(store, tmp_path, sync=True, progress=False)
    assert len(again.unchanged) == len(TREE)
    assert not (again.added or again.updated or again.removed or again.failed)


async def test_uri_metadata_is_the_document_uri(tmp_path: Path) -> None:
    _write(tmp_path)
    doc = parse_path(tmp_path / 'api' / 'v1' / 'auth.md')
    assert doc.metadata['uri'] == doc.uri == file_uri(tmp_path / 'api' / 'v1' / 'auth.md')
    assert doc.chunks and all(c.metadata['uri'] == doc.uri for c in doc.chunks)


async def test_documents_stored_without_the_keys_are_rewritten_once(tmp_path: Path) -> None:
    """A store filled before ingestion recorded ``path``/``uri``: their fingerprints match, yet
    a ``path`` filter would silently miss them, so the next run rewrites each once."""
    _write(tmp_path)
    target = tmp_path / 'api' / 'errors.txt'
    chunker = Chunker()
    old = chunker.build(  # what ingestion wrote before: same fingerprint, no path/uri
        read_file(target),
        file_uri(target),
        fingerprint=fingerprint(target.read_bytes(), chunker.config_key()),
        metadata={'source_format': 'text', 'file_name': target.name},
    )
    assert 'path' not in old.metadata
    store = _store()
    await store.upsert([old])
    report = await ingest(store, tmp_path / 'api', progress=False)
    assert report.updated == [file_uri(target)] and not report.unchanged
    [info] = [i for i in await store.list_documents() if i.uri == file_uri(target)]
    assert info.fingerprint == old.fingerprint and info.metadata['path'] == 'errors.txt'
    again = await ingest(store, tmp_path / 'api', progress=False)
    assert len(again.unchanged) == 2 and not again.updated


async def test_another_root_rewrites_paths_relative_to_it(tmp_path: Path) -> None:
    _write(tmp_path)
    store = _store()
    await ingest(store, tmp_path, progress=False)
    report = await ingest(store, tmp_path / 'api', progress=False)
    assert len(report.updated) == 2 and not report.unchanged
    uri = file_uri(tmp_path / 'api' / 'v1' / 'auth.md')
    [info] = [i for i in await store.list_documents() if i.uri == uri]
    assert info.metadata['path'] == 'v1/auth.md'


async def test_store_listing_no_metadata_is_trusted_on_the_fingerprint(tmp_path: Path) -> None:
    """A store whose listing reports no metadata must not make every run rewrite every file."""

    class NoMetadataListing(InMemoryStore):
        async def list_documents(self) -> Sequence[DocumentInfo]:
            return [dataclasses.replace(info, metadata={}) for info in await super().list_documents()]

    _write(tmp_path)
    store = NoMetadataListing(HashingEmbeddingModel(64))
    await ingest(store, tmp_path, progress=False)
    again = await ingest(store, tmp_path, progress=False)
    assert len(again.unchanged) == len(TREE) and not again.updated


async def test_front_matter_path_and_uri_are_replaced_with_a_warning(tmp_path: Path) -> None:
    _write(tmp_path, {'blog/post.md': '---\npath: /blog/my-post\nuri: https://example.com/p\n---\n\n# Post\n\nHi.\n'})
    store = _store()
    report = await ingest(store, tmp_path, progress=False)
    [info] = await store.list_documents()
    assert info.metadata['path'] == 'blog/post.md' and info.metadata['uri'] == info.uri
    messages = [w.reason for w in report.warnings]
    assert any("'path'" in m and '/blog/my-post' in m for m in messages)
    assert any("'uri'" in m and 'https://example.com/p' in m for m in messages)


async def test_front_matter_with_the_same_values_warns_nothing(tmp_path: Path) -> None:
    target = tmp_path / 'a.md'
    target.write_text(f'---\npath: a.md\nuri: {file_uri(target)}\n---\n\n# A\n\nText.\n')
    report = await ingest(_store(), tmp_path, progress=False)
    assert len(report.added) == 1 and not report.warnings


@pytest.mark.parametrize('key', ['path', 'uri'])
async def test_caller_metadata_may_not_set_the_keys(tmp_path: Path, key: str) -> None:
    _write(tmp_path)
    store = _store()
    with pytest.raises(ValueError, match=f"'{key}'"):
        await ingest(store, tmp_path, metadata={key: 'x', 'team': 'docs'}, progress=False)
    assert not await store.list_documents()  # refused before anything was written
    with pytest.raises(ValueError, match=f"'{key}'"):
        parse_path(tmp_path / 'top.md', metadata={key: 'x'})
    doc = parse_path(tmp_path / 'top.md', metadata={'team': 'docs'})
    assert doc.metadata['team'] == 'docs' and doc.metadata['path'] == 'top.md'


async def test_ready_made_documents_are_stored_as_built(tmp_path: Path) -> None:
    builder = DocumentBuilder('https://example.com/faq', 'FAQ', metadata={'team': 'support'})
    builder.add_chunk(None, 'Tokens expire after an hour.')
    document: Document = builder.build()
    store = _store()
    await ingest(store, document, progress=False)
    [info] = await store.list_documents()
    assert info.id == document_id_for('https://example.com/faq')
    assert info.metadata == {'team': 'support'}
