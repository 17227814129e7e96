"""Scope keys are declared once (``graph build --scope-key tenant``) and recorded in the
store's manifest, so a later ``graph build`` without the option builds with them (and finds nothing to do).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolish_rag.cli import main
from toolish_rag.manifest import read_manifest

STORE = ['--store', 'memory:./kb', '--embedder', 'hashing']


def test_scope_keys_given_once_are_used_by_later_builds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    docs = tmp_path / 'docs'
    docs.mkdir()
    (docs / 'beta.md').write_text('---\ntenant: a\n---\n# Beta Guide\n\nOnboarding takes two weeks.\n')
    (docs / 'gamma.md').write_text('---\ntenant: b\n---\n# Gamma Notes\n\nTenant b also reads the Beta Guide.\n')
    assert main(['ingest', 'docs', *STORE]) == 0
    assert main(['graph', 'build', '--scope-key', 'tenant', *STORE]) == 0
    manifest = read_manifest(tmp_path / 'kb')
    assert manifest is not None and manifest.scope_keys == ('tenant',)
    capsys.readouterr()
    # No --scope-key: the recorded keys are used, so the graph is the one built, and nothing is rewritten.
    assert main(['graph', 'build', '--json', *STORE]) == 0
    captured = capsys.readouterr()
    assert 'scope keys tenant (recorded with the store)' in captured.err
    reports = json.loads(captured.out)
    assert [(r['builder'], r['documents_built'], r['relations_written']) for r in reports] == [
        ('structure', 0, 0),
        ('exact', 0, 0),
    ]
