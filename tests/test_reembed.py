"""Re-embedding a store with another embedder (toolish-rag ingest --reembed; docs/stores/manifest.md)."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from toolish_rag.builder import DocumentBuilder
from toolish_rag.cli import main
from toolish_rag.manifest import EmbedderIdentity, EmbedderMismatch, read_manifest, write_manifest
from toolish_rag.search import SearchRequest
from toolish_rag.stores import open_store

B = EmbedderIdentity('toolish-rag:hashing-96', 96, normalized=False)


def _docs(tmp_path: Path) -> Path:
    docs = tmp_path / 'docs'
    docs.mkdir()
    (docs / 'refunds.md').write_text('# Refunds\n\nThe refund window is thirty days after delivery.\n', 'utf-8')
    (docs / 'shipping.md').write_text('# Shipping\n\nParcels ship from Lyon within two working days.\n', 'utf-8')
    return docs


def _top_uri(store: Any, query: str) -> str:
    hits = asyncio.run(store.vector_search(SearchRequest(query=query, top_k=1)))
    return str(hits[0].record.document_id)


@pytest.mark.parametrize('kind', ['memory', 'lancedb'])
def test_reembed_switches_the_store_to_the_new_embedder(tmp_path: Path, kind: str) -> None:
    if kind == 'lancedb':
        pytest.importorskip('toolish_rag_lancedb')
    docs, spec = _docs(tmp_path), f'{kind}:{tmp_path / "kb"}'
    assert main(['ingest', str(docs), '--store', spec, '--embedder', 'hashing:64', '--no-progress']) == 0
    before = _top_uri(open_store(spec), 'refund window')
    with pytest.raises(EmbedderMismatch, match='--reembed'):
        open_store(spec, embedder='hashing:96')
    argv = ['ingest', str(docs), '--store', spec, '--embedder', 'hashing:96', '--reembed', '--no-progress']
    assert main(argv) == 0
    manifest = read_manifest(tmp_path / 'kb')
    assert manifest is not None and manifest.embedder == B and manifest.reembedding is None
    store = open_store(spec, embedder='hashing:96')
    assert _top_uri(store, 'refund window') == before
    assert _top_uri(open_store(spec), 'Parcels ship from Lyon') != before  # opens with the recorded one
    with pytest.raises(EmbedderMismatch):
        open_store(spec, embedder='hashing:64')


@pytest.mark.parametrize('kind', ['memory', 'lancedb'])
def test_an_interrupted_reembed_settles_by_the_vectors_the_store_holds(tmp_path: Path, kind: str) -> None:
    """A crash before the vectors' commit leaves the old embedder; after it, before the manifest's update, the new one."""
    if kind == 'lancedb':
        pytest.importorskip('toolish_rag_lancedb')
    docs, spec, folder = _docs(tmp_path), f'{kind}:{tmp_path / "kb"}', tmp_path / 'kb'
    assert main(['ingest', str(docs), '--store', spec, '--embedder', 'hashing:64', '--no-progress']) == 0
    a = read_manifest(folder)
    assert a is not None and a.embedder is not None
    write_manifest(folder, dataclasses.replace(a, reembedding=B))  # crashed before the new vectors' commit
    open_store(spec)
    assert read_manifest(folder) == a
    store = open_store(spec)
    asyncio.run(store.reembed('hashing:96'))
    write_manifest(folder, dataclasses.replace(a, reembedding=B))  # crashed after it, before the manifest's update
    with pytest.raises(EmbedderMismatch):
        open_store(spec, embedder='hashing:64')
    settled = read_manifest(folder)
    assert settled is not None and settled.embedder is not None and settled.embedder.model == B.model


def test_reembed_needs_an_embedder_and_is_a_no_op_without_vectors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = _docs(tmp_path)
    with pytest.raises(SystemExit, match='--reembed needs --embedder'):
        main(['ingest', str(docs), '--store', f'memory:{tmp_path / "m"}', '--reembed'])
    pytest.importorskip('toolish_rag_tantivy')
    spec = f'tantivy:{tmp_path / "t"}'
    assert main(['ingest', str(docs), '--store', spec, '--embedder', 'hashing:96', '--reembed', '--no-progress']) == 0
    assert 'keeps no vectors: nothing to re-embed' in capsys.readouterr().err


@pytest.mark.parametrize('kind', ['memory', 'lancedb'])
def test_reembed_embeds_every_window_again(tmp_path: Path, kind: str) -> None:
    """A long chunk's windows are embedded again: its late passage is still found, at the new size."""
    from toolish_rag.windows import EmbeddingWindows

    windows = EmbeddingWindows(max_tokens=16, window_tokens=16, overlap=4, scoring='best')
    filler = ' '.join(f'word{i}' for i in range(120))
    text = f'{filler} the lighthouse keeper feeds seven cats at dawn'
    documents = []
    for uri, body in (('file:///long.md', text), ('file:///short.md', 'parcels ship from Lyon')):
        builder = DocumentBuilder(uri, uri)
        builder.add_chunk(builder.section('Body'), body)
        documents.append(builder.build())
    if kind == 'lancedb':
        lancedb = pytest.importorskip('toolish_rag_lancedb')

        def store(embedder: str | None) -> Any:
            return lancedb.LanceDBStore(tmp_path / 'kb', embedder=embedder, windows=windows, ann_threshold=None)
    else:
        from toolish_rag.stores.memory import InMemoryStore

        def store(embedder: str | None) -> Any:
            return InMemoryStore(embedder, path=tmp_path / 'kb', windows=windows)

    asyncio.run(store('hashing:64').upsert(documents))
    assert asyncio.run(store(None).reembed('hashing:96')) == 2
    reopened = store(None)
    assert _top_uri(reopened, 'lighthouse keeper feeds seven cats') == documents[0].id
    if kind == 'lancedb':
        table = asyncio.run(reopened.records_table())
        row = asyncio.run(table.query().where(f"document_id = '{documents[0].id}'").to_arrow()).to_pylist()[0]
        assert len(row['windows']) > 2 and {len(w) for w in row['windows']} == {96}
    else:
        assert reopened._snapshot.windows.extra > 0 and reopened._snapshot.windows.matrix.rows > 0
