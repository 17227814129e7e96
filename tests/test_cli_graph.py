"""``toolish-rag graph build`` / ``graph show``: the graph a deployment serves, built and walked from the shell.

Real files ingested into a persisted memory store, the real builders, and ``show`` through the same
``graph_context`` tool an agent calls, so the printed walk is what a model would read.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from toolish_rag.cli import main
from toolish_rag.manifest import StoreManifest, write_manifest
from toolish_rag.stores import InMemoryStore

STORE = ['--store', 'memory:./kb', '--embedder', 'hashing']


def _write(folder: Path) -> None:
    folder.mkdir()
    (folder / 'alpha.md').write_text(
        '---\ntenant: a\n---\n# Alpha Handbook\n\nNew staff read the Beta Guide first. See [the guide](beta.md).\n'
    )
    (folder / 'beta.md').write_text('---\ntenant: a\n---\n# Beta Guide\n\nOnboarding takes two weeks.\n')
    (folder / 'gamma.md').write_text('---\ntenant: b\n---\n# Gamma Notes\n\nTenant b also reads the Beta Guide.\n')


def _ids(root: Path) -> dict[str, str]:
    store = InMemoryStore(embedder='hashing', path=root / 'kb')
    return {info.title: info.id for info in asyncio.run(store.list_documents())}


@pytest.fixture
def built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / 'docs')
    assert main(['ingest', 'docs', *STORE]) == 0
    capsys.readouterr()
    assert main(['graph', 'build', '--scope-key', 'tenant', *STORE]) == 0
    first = capsys.readouterr().out
    assert 'structure: 3 of 3 documents built' in first
    assert 'exact: 3 of 3 documents built' in first
    return _ids(tmp_path)


def test_a_second_build_writes_nothing(built: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(['graph', 'build', '--scope-key', 'tenant', '--json', *STORE]) == 0
    reports = json.loads(capsys.readouterr().out)
    assert [r['builder'] for r in reports] == ['structure', 'exact']
    for report in reports:
        assert report['documents_seen'] == 3
        assert (report['documents_built'], report['relations_written'], report['relations_deleted']) == (0, 0, 0)
        assert report['entities_written'] == 0


def test_show_walks_mentions_and_links(built: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    beta = built['Beta Guide']
    assert main(['graph', 'show', beta, '--hops', '2', *STORE]) == 0
    out = capsys.readouterr().out
    assert 'Alpha Handbook' in out  # its paragraph names the Beta Guide and links to it
    assert 'MENTIONS' in out and 'LINKS_TO' in out
    assert 'Gamma Notes' not in out  # same words, other tenant: the builder never links across scopes


def test_show_under_a_scope_answers_a_foreign_id_like_a_missing_one(
    built: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    scope = ['--filter', json.dumps({'op': 'eq', 'key': 'tenant', 'value': 'b'})]
    assert main(['graph', 'show', built['Alpha Handbook'], *scope, *STORE]) == 2
    foreign = capsys.readouterr().out
    assert main(['graph', 'show', 'no-such-node', *scope, *STORE]) == 2
    missing = capsys.readouterr().out
    assert foreign.startswith('rejected: ') and 'was not found' in foreign
    assert foreign == missing.replace('no-such-node', built['Alpha Handbook'])
    assert 'Alpha' not in foreign
    assert main(['graph', 'show', built['Gamma Notes'], *scope, *STORE]) == 0  # its own document walks
    assert 'Gamma Notes' in capsys.readouterr().out


def test_usage_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    write_manifest(tmp_path / 'kb', StoreManifest('memory'))  # an empty store (a read command refuses a missing one)
    assert main(['graph', 'show', *STORE]) == 2
    assert 'needs a node id' in capsys.readouterr().err
    monkeypatch.delenv('TOOLISH_RAG_MODEL', raising=False)
    with pytest.raises(SystemExit, match='needs a model'):
        main(['graph', 'build', '--link', 'extract', *STORE])


def test_builders_that_make_entities_run_before_the_linkers() -> None:
    """Regression: exact ran before extract, so the second build linked the first build's new entities."""
    import argparse

    from toolish_rag.cli._graph_cmd import builders_for

    args = argparse.Namespace(
        link=['vector', 'exact', 'extract', 'code', 'structure'],
        scope_key=[],
        case_insensitive=False,
        model='test',
        merge_across=None,
    )
    assert [b.name for b in builders_for(args)] == ['structure', 'code', 'extract', 'exact', 'vector']
