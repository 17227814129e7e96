"""Every failure of a command is one line on stderr with a non-zero exit (issue 27);
TOOLISH_RAG_DEBUG=1 shows the traceback instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolish_rag.cli import main
from toolish_rag.stores.memory import InMemoryStore


@pytest.fixture
def spec(tmp_path: Path) -> str:
    docs = tmp_path / 'docs'
    docs.mkdir()
    (docs / 'a.md').write_text('# A\n\nThe refund window is thirty days.\n', encoding='utf-8')
    spec = f'memory:{tmp_path / "kb"}'
    assert main(['ingest', str(docs), '--store', spec, '--embedder', 'hashing:64', '--no-progress']) == 0
    return spec


def _failing(error: Exception):  # type: ignore[no-untyped-def]
    async def upgrade(self: InMemoryStore) -> list[str]:
        raise error

    return upgrade


def test_a_store_runtime_error_is_one_line(
    spec: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    conflict = RuntimeError('lance error: Retryable commit conflict for version 3:\n  another transaction committed')
    monkeypatch.setattr(InMemoryStore, 'upgrade', _failing(conflict))
    capsys.readouterr()
    assert main(['upgrade', '--store', spec]) == 2
    err = capsys.readouterr().err
    assert err == (
        'toolish-rag: lance error: Retryable commit conflict for version 3:; another transaction committed\n'
    )


def test_an_unexpected_error_is_one_line_and_the_debug_switch_shows_it(
    spec: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(InMemoryStore, 'upgrade', _failing(KeyError('segments')))
    capsys.readouterr()
    assert main(['upgrade', '--store', spec]) == 1
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and 'unexpected error (KeyError' in err and 'TOOLISH_RAG_DEBUG=1' in err
    monkeypatch.setenv('TOOLISH_RAG_DEBUG', '1')
    with pytest.raises(KeyError, match='segments'):
        main(['upgrade', '--store', spec])
