"""The store manifest (toolish_rag.manifest): round trip, unknown fields kept, embedder checks, atomic update."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from toolish_rag.manifest import (
    MANIFEST_FILE,
    EmbedderIdentity,
    EmbedderMismatch,
    ManifestError,
    StoreManifest,
    read_manifest,
    update_manifest,
    write_manifest,
)

MINILM = EmbedderIdentity('sentence-transformers:all-MiniLM-L6-v2', 384, normalized=True)


def test_round_trip_keeps_every_field_and_unknown_ones(tmp_path: Path) -> None:
    manifest = StoreManifest('lancedb', embedder=MINILM, language='de', scope_keys=('tenant',), languages=('de',))
    write_manifest(tmp_path, manifest)
    assert read_manifest(tmp_path) == manifest
    data = json.loads((tmp_path / MANIFEST_FILE).read_text(encoding='utf-8'))
    data['added_later'] = {'x': 1}
    (tmp_path / MANIFEST_FILE).write_text(json.dumps(data), encoding='utf-8')
    reread = read_manifest(tmp_path)
    assert reread is not None and reread.extra == {'added_later': {'x': 1}}
    write_manifest(tmp_path, dataclasses.replace(reread, language='fr'))
    assert json.loads((tmp_path / MANIFEST_FILE).read_text(encoding='utf-8'))['added_later'] == {'x': 1}
    assert [p.name for p in tmp_path.iterdir()] == [MANIFEST_FILE]  # no temporary file left


def test_missing_newer_and_broken_manifests(tmp_path: Path) -> None:
    assert read_manifest(tmp_path) is None
    (tmp_path / MANIFEST_FILE).write_text('{"format": 99, "store": "memory"}', encoding='utf-8')
    with pytest.raises(ManifestError, match='newer toolish-rag'):
        read_manifest(tmp_path)
    (tmp_path / MANIFEST_FILE).write_text('not json', encoding='utf-8')
    with pytest.raises(ManifestError, match='not valid JSON'):
        read_manifest(tmp_path)
    (tmp_path / MANIFEST_FILE).write_text('{"format": 1}', encoding='utf-8')
    with pytest.raises(ManifestError, match='not a valid store manifest'):
        read_manifest(tmp_path)


def test_embedder_identity_refuses_another_model_of_the_same_size() -> None:
    manifest = StoreManifest('memory', embedder=MINILM)
    manifest.checked_embedder(dataclasses.replace(MINILM, dimensions=None), 'kb')  # size unknown yet: same model
    manifest.checked_embedder(EmbedderIdentity('all-MiniLM-L6-v2', 384, normalized=True), 'kb')  # legacy name
    other = EmbedderIdentity('sentence-transformers:paraphrase-MiniLM-L3-v2', 384, normalized=True)
    with pytest.raises(
        EmbedderMismatch, match=r'kb holds vectors of sentence-transformers:all-MiniLM-L6-v2.*new location'
    ):
        manifest.checked_embedder(other, 'kb')
    with pytest.raises(EmbedderMismatch):
        manifest.checked_embedder(EmbedderIdentity('toolish-rag:hashing-256', 256), 'kb')
    StoreManifest('tantivy').checked_embedder(other, 'kb')  # a store without vectors takes any


def test_update_manifest_derives_from_legacy_and_refuses_another_kind(tmp_path: Path) -> None:
    legacy = StoreManifest('memory', embedder=MINILM)
    written = update_manifest(
        tmp_path, 'memory', lambda m: dataclasses.replace(m, scope_keys=('tenant',)), legacy=lambda: legacy
    )
    assert written == dataclasses.replace(legacy, scope_keys=('tenant',)) == read_manifest(tmp_path)
    with pytest.raises(ManifestError, match='holds a memory store, not a lancedb store'):
        update_manifest(tmp_path, 'lancedb', lambda m: m)
