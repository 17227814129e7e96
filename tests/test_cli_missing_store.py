"""Read commands refuse a store that does not exist; the default store, bare names and the embedder check.

Regression (issue 27): after the demo, `toolish-rag search "refund window"` opened an empty default
store, printed "No results" with exit 0 and left an empty folder; `--store memory` ingested
"added 5" and kept nothing; a store searched with another embedder answered LanceDB's raw error,
or silently when the sizes matched.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolish_rag.cli import main
from toolish_rag.manifest import read_manifest

DOCS = Path(__file__).resolve().parents[1] / 'examples' / 'docs'


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv('TOOLISH_RAG_STORE', raising=False)
    return tmp_path


def refused(argv: list[str]) -> str:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    message = str(stopped.value.code)
    assert stopped.value.code not in (0, None) and '\n' not in message
    return message


def test_read_commands_refuse_a_missing_store_and_create_nothing(here: Path) -> None:
    message = refused(['search', 'refund window', '--embedder', 'hashing'])
    assert message.startswith('toolish-rag: no store at ') and ':.toolish-rag/store;' in message
    assert 'ingest documents first' in message
    for argv in (['tools'], ['graph', 'show', 'x'], ['search', 'x', '--store', 'lancedb:./nonexistent-kb']):
        assert 'no store at' in refused([*argv, '--embedder', 'hashing'])
    assert list(here.iterdir()) == []  # no folder created, not even .toolish-rag


def test_the_refusal_names_the_store_nearby_and_the_default_finds_what_ingest_wrote(here: Path) -> None:
    assert main(['ingest', str(DOCS), '--store', 'memory:.toolish-rag/quickstart', '--embedder', 'hashing']) == 0
    message = refused(['search', 'refund window', '--embedder', 'hashing'])
    assert 'found memory:.toolish-rag/quickstart: pass --store memory:.toolish-rag/quickstart or set' in message
    # The default location: ingest writes it, every later command finds it, of the kind it holds.
    assert main(['ingest', str(DOCS), '--store', 'memory:.toolish-rag/store', '--embedder', 'hashing']) == 0
    assert main(['search', 'refund window', '--tool', 'text']) == 0  # the embedder comes from the manifest
    os.environ['TOOLISH_RAG_STORE'] = 'memory:.toolish-rag/quickstart'
    try:
        assert main(['search', 'refund window', '--tool', 'text']) == 0
    finally:
        del os.environ['TOOLISH_RAG_STORE']


def test_a_bare_store_name_keeps_its_data(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(['ingest', str(DOCS), '--store', 'memory', '--embedder', 'hashing']) == 0
    assert (here / '.toolish-rag' / 'memory' / 'CURRENT').is_file()
    capsys.readouterr()
    assert main(['search', 'refund window', '--tool', 'text', '--store', 'memory']) == 0
    assert 'refund' in capsys.readouterr().out.lower()


def test_another_embedder_is_refused_on_search_and_on_ingest(here: Path) -> None:
    store = ['--store', 'memory:kb']
    assert main(['ingest', str(DOCS), *store, '--embedder', 'hashing']) == 0
    manifest = read_manifest(here / 'kb')
    assert manifest is not None and manifest.embedder is not None
    assert (manifest.embedder.model, manifest.embedder.dimensions) == ('toolish-rag:hashing-256', 256)
    for command in (['search', 'refund'], ['ingest', str(DOCS)]):
        message = refused([*command, *store, '--embedder', 'hashing:64'])
        assert 'kb holds vectors of toolish-rag:hashing-256, 256 dimensions, not toolish-rag:hashing-64' in message
        assert '--embedder hashing:256' in message


def test_upgrade_writes_an_older_stores_manifest_once(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert 'no store at memory:old' in refused(['upgrade', '--store', 'memory:old'])
    assert main(['ingest', str(DOCS), '--store', 'memory:old', '--embedder', 'hashing']) == 0
    (here / 'old' / 'toolish-rag.json').unlink()  # as a store written before manifests
    capsys.readouterr()
    assert main(['upgrade', '--store', 'memory:old']) == 0
    assert main(['upgrade', '--store', 'memory:old']) == 0
    assert capsys.readouterr().out.splitlines() == [
        'memory:old: wrote the manifest',
        'memory:old: already current, nothing to do',
    ]
    manifest = read_manifest(here / 'old')
    assert manifest is not None and manifest.embedder is not None and manifest.embedder.spec == 'hashing:256'


def test_lancedb_refuses_another_embedder_with_a_manifest_and_from_older_table_metadata(here: Path) -> None:
    """Regression: search answered LanceDB's raw `query dim(256) doesn't match the column vector dim(384)`."""
    pytest.importorskip('toolish_rag_lancedb')
    store = ['--store', 'lancedb:kb']
    assert main(['ingest', str(DOCS), *store, '--embedder', 'hashing:384']) == 0
    for written_before_manifests in (False, True):
        if written_before_manifests:
            (here / 'kb' / 'toolish-rag.json').unlink()
        message = refused(['search', 'refund', *store, '--embedder', 'hashing:256'])
        assert message.startswith('toolish-rag: kb holds vectors of toolish-rag:hashing-384, 384 dimensions')
        assert main(['search', 'refund', '--tool', 'vector', *store]) == 0  # the recorded embedder
