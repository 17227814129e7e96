"""A builder isolates a file it cannot handle, as ingestion does: reported in one line, the rest built.

The hostile file is generated here (``x = 1 + 1 + ...``, deep enough that `ast` gives up with a
RecursionError while a parser-accepted file, small on disk); ingestion stores it like any ``.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest

from toolish_rag.cli import main
from toolish_rag.content import Document, Relation
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.graph_builders import CodeGraphBuilder
from toolish_rag.ingest import Chunker
from toolish_rag.ingest._parse import file_uri
from toolish_rag.ingest._readers.text import read_text
from toolish_rag.stores import InMemoryStore

TERMS = 20_000
"""``1 + 1 + ...`` this long nests deeper than `ast` builds (it fails from ~3,000): ~80 KB on disk."""

FILES = {
    'lib.py': 'def helper():\n    return 1\n',
    'app.py': 'import lib\n\n\ndef run():\n    return lib.helper()\n',
    'hostile.py': 'x = ' + ' + '.join(['1'] * TERMS) + '\n',
}


def _write(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in FILES.items():
        (root / name).write_text(text, encoding='utf-8')


def _document(path: Path) -> Document:
    return Chunker(chunk_size=2000, overlap=0).build(read_text(path.read_bytes(), path), file_uri(path))


def _edges(relations: Sequence[Relation], names: dict[str, str]) -> set[tuple[str, str, str]]:
    return {(names[r.source], r.type, names[r.target]) for r in relations if r.type in ('CALLS', 'IMPORTS')}


@pytest.mark.asyncio
async def test_code_graph_reports_a_file_ast_cannot_build_and_builds_the_others(tmp_path: Path) -> None:
    _write(tmp_path)
    store = InMemoryStore(HashingEmbeddingModel(64))
    await store.upsert([_document(tmp_path / name) for name in sorted(FILES)])
    report = await CodeGraphBuilder().build(store)
    assert len(report.failures) == 1
    failure = report.failures[0]
    assert 'hostile.py' in failure and 'RecursionError' in failure and '\n' not in failure
    assert (report.documents_seen, report.documents_built) == (3, 2)
    names = {e.id: e.name for e in await store.list_entities()}
    assert _edges(await store.list_relations(origin='code'), names) == {
        ('app', 'IMPORTS', 'lib'),
        ('app.run', 'CALLS', 'lib.helper'),
    }
    again = await CodeGraphBuilder().build(store)  # the good modules are done; the bad one is retried, reported
    assert (again.writes, again.failures) == (0, report.failures)
    # A file that keeps failing does not keep the others' deleted entities alive.
    lib = next(d.id for d in await store.list_documents() if d.uri.endswith('/lib.py'))
    await store.delete_documents([lib])
    assert (await CodeGraphBuilder().build(store)).failures == report.failures
    assert {e.name for e in await store.list_entities()} == {'app', 'app.run'}


def test_graph_build_link_code_reports_the_file_and_exits_non_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / 'src')
    store = ['--store', 'memory:./kb', '--embedder', 'hashing']
    assert main(['ingest', 'src', *store]) == 0
    capsys.readouterr()
    assert main(['graph', 'build', '--link', 'code', *store]) == 1
    out = capsys.readouterr().out
    assert 'code: 2 of 3 documents built' in out and '1 failed:' in out
    failure = [line for line in out.splitlines() if 'hostile.py' in line]
    assert len(failure) == 1 and 'RecursionError' in failure[0]
    reopened = InMemoryStore(embedder='hashing', path=tmp_path / 'kb')
    assert {e.name for e in asyncio.run(reopened.list_entities())} >= {'app.run', 'lib.helper'}
