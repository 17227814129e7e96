"""``--store NAME=SPEC`` several times: tools, search and mcp serve the members as one federation.

``ingest`` (and every other command that writes or reads one store) takes exactly one store; a member
that does not exist is refused when the federation is opened, like any missing store. See docs/federation.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolish_rag.cli import build_parser, main
from toolish_rag.cli._common import open_rag
from toolish_rag.stores.federated import Federated

DOCS = Path(__file__).resolve().parents[1] / 'examples' / 'docs'
MEMBERS = ['--store', 'docs=memory:./docs', '--store', 'code=tantivy:./code']


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv('TOOLISH_RAG_STORE', raising=False)
    (tmp_path / 'src').mkdir()
    (tmp_path / 'src' / 'refund.py').write_text('def refund(order):\n    """Refund window: 30 days."""\n')
    assert main(['ingest', str(DOCS), '--store', 'memory:./docs', '--embedder', 'hashing']) == 0
    assert main(['ingest', str(tmp_path / 'src'), '--store', 'tantivy:./code']) == 0
    return tmp_path


def test_tools_and_search_serve_the_federation(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(['tools', *MEMBERS, '--embedder', 'hashing']) == 0
    tools = capsys.readouterr().out
    assert 'sources' in tools and 'docs' in tools and 'code' in tools
    assert main(['search', 'refund window', '--tool', 'text', '--top-k', '10', *MEMBERS, '--embedder', 'hashing']) == 0
    shown = capsys.readouterr().out
    assert '| source: docs' in shown and '| source: code' in shown
    assert main(['search', 'refund', '--json', '--tool', 'hybrid', *MEMBERS, '--embedder', 'hashing']) == 0
    hits = json.loads(capsys.readouterr().out)
    assert {h['source'] for h in hits} <= {'docs', 'code'} and hits and all(h['source'] for h in hits)


def test_mcp_opens_the_federation(here: Path) -> None:
    args = build_parser().parse_args(['mcp', *MEMBERS, '--embedder', 'hashing'])
    store, rag = open_rag(args)
    assert isinstance(store, Federated) and list(store.members) == ['docs', 'code']
    assert 'kb' not in rag.offered_tools and 'hybrid_search' in rag.offered_tools


def refused(argv: list[str]) -> str:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code not in (0, None)
    return str(stopped.value.code)


def test_a_missing_member_is_refused_at_open_and_nothing_is_created(here: Path) -> None:
    before = sorted(p.name for p in here.iterdir())
    message = refused(['search', 'refund', '--store', 'docs=memory:./docs', '--store', 'code=lancedb:./nope'])
    assert message.startswith('toolish-rag: --store code=: no store at ') and '\n' not in message
    assert sorted(p.name for p in here.iterdir()) == before


def test_several_stores_must_be_named_once_each(here: Path) -> None:
    assert 'name each store' in refused(['tools', '--store', 'memory:./docs', '--store', 'code=tantivy:./code'])
    assert "names member 'docs' twice" in refused(['tools', '--store', 'docs=memory:./docs', '--store', 'docs=x:y'])


def test_ingest_takes_exactly_one_store(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert refused(['ingest', str(DOCS), *MEMBERS]) == '2'
    assert 'ingest takes exactly one --store' in capsys.readouterr().err
    message = refused(['ingest', str(DOCS), '--store', 'docs=memory:./docs', '--embedder', 'hashing'])
    assert 'ingest takes one store as NAME[:LOCATION]' in message
