"""Symlinks leaving the ingested folder (issue 28 item 7) and file names that are not UTF-8 (item 8).

Before the fix ``docs/notes.txt -> <outside>/secret.txt`` was ingested and searchable, and a
file named with the Latin-1 bytes ``caf\\xe9.txt`` failed with a raw pydantic dump while
``ingest --json`` wrote bytes that are not UTF-8.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from toolish_rag.cli import main
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.ingest import file_uri, ingest
from toolish_rag.stores import InMemoryStore

pytestmark = pytest.mark.skipif(sys.platform == 'win32', reason='POSIX symlinks and byte file names')


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    outside = tmp_path / 'outside'
    outside.mkdir()
    (outside / 'secret.txt').write_text('the secret outside the ingested folder\n')
    (outside / 'folder').mkdir()
    (outside / 'folder' / 'more.txt').write_text('more secret text\n')
    docs = tmp_path / 'docs'
    (docs / 'sub').mkdir(parents=True)
    (docs / 'readme.txt').write_text('the readme inside the folder\n')
    (docs / 'sub' / 'inner.txt').write_text('an inner file\n')
    (docs / 'notes.txt').symlink_to(outside / 'secret.txt')
    (docs / 'linked').symlink_to(outside / 'folder')
    (docs / 'alias.txt').symlink_to(docs / 'sub' / 'inner.txt')  # inside: fine (one document)
    (docs / 'sub2').symlink_to(docs / 'sub')  # inside too
    return docs, outside


async def test_symlinks_out_of_the_folder_are_skipped_and_reported(tmp_path: Path) -> None:
    docs, outside = _tree(tmp_path)
    store = InMemoryStore(HashingEmbeddingModel(64))
    report = await ingest(store, docs, progress=False)
    stored = sorted(info.uri for info in await store.list_documents())
    assert stored == sorted([file_uri(docs / 'readme.txt'), file_uri(docs / 'sub' / 'inner.txt')])
    skipped = {Path(i.path).name: i.reason for i in report.skipped}
    assert skipped == {
        'linked': f'symlink leaving the ingested folder (to {outside / "folder"}): not followed',
        'notes.txt': f'symlink leaving the ingested folder (to {outside / "secret.txt"}): not followed',
    }
    assert report.failed == []


async def test_follow_symlinks_ingests_them_and_sync_keeps_them_with_a_warning(tmp_path: Path) -> None:
    docs, outside = _tree(tmp_path)
    store = InMemoryStore(HashingEmbeddingModel(64))
    followed = await ingest(store, docs, progress=False, follow_symlinks=True)
    assert sorted(followed.added) == sorted(
        file_uri(p) for p in (docs / 'readme.txt', docs / 'sub' / 'inner.txt', outside / 'secret.txt', outside / 'folder' / 'more.txt')
    )  # fmt: skip
    again = await ingest(store, docs, progress=False, sync=True)
    assert again.removed == []
    assert len(await store.list_documents()) == 4  # kept: never removed without saying so
    warned = {Path(w.path).name: w.reason for w in again.warnings}
    assert warned == {
        'notes.txt': 'kept the document an earlier run ingested through this symlink, which leaves the ingested '
        'folder: delete it, or ingest with follow_symlinks=True (--follow-symlinks) to update it',
        'linked': 'kept the document an earlier run ingested through this symlink, which leaves the ingested '
        'folder: delete it, or ingest with follow_symlinks=True (--follow-symlinks) to update it',
    }


async def test_a_named_symlink_is_followed(tmp_path: Path) -> None:
    """A link given on the command line is the caller's choice: followed."""
    docs, outside = _tree(tmp_path)
    store = InMemoryStore(HashingEmbeddingModel(64))
    report = await ingest(store, docs / 'notes.txt', progress=False)
    assert report.added == [file_uri(outside / 'secret.txt')]


def test_a_file_name_that_is_not_utf8_is_ingested_and_json_stays_utf8(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / 'docs'
    docs.mkdir()
    raw = os.fsencode(docs) + b'/caf\xe9.txt'
    with open(raw, 'wb') as f:
        f.write(b'a note whose name is Latin-1\n')
    (docs / 'empty.txt').write_bytes(b'')
    os.symlink(b'/nonexistent/\xff', os.fsencode(docs) + b'/broken\xff.txt')  # a reported path, not UTF-8 either
    kb = tmp_path / 'kb'
    argv = ['ingest', str(docs), '--store', f'memory:{kb}', '--embedder', 'hashing', '--json']
    assert main(argv) == 0
    out = capsys.readouterr().out
    report = json.loads(out.encode('utf-8'))  # strict: a lone surrogate would not encode
    assert report['added'] == ['file://' + str(docs) + '/caf%E9.txt']
    assert [i['path'] for i in report['skipped']] == [str(docs) + '/broken\\xff.txt', str(docs) + '/empty.txt']
    assert main(argv) == 0  # the second run: unchanged, not rewritten
    again = json.loads(capsys.readouterr().out.encode('utf-8'))
    assert again['unchanged'] == report['added'] and again['added'] == []
    (info,) = asyncio.run(InMemoryStore(HashingEmbeddingModel(256), path=kb).list_documents())
    assert info.metadata['path'] == 'caf\\xe9.txt'  # the name's bytes, escaped: what a filter on path matches


def test_the_cli_skips_links_out_unless_follow_symlinks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs, outside = _tree(tmp_path)
    base = ['ingest', str(docs), '--embedder', 'hashing', '--json', '--max-seconds', '30', '--max-memory', '1024']
    assert main([*base, '--store', f'memory:{tmp_path / "kb1"}']) == 0
    skipped = json.loads(capsys.readouterr().out)['skipped']
    assert sorted(Path(i['path']).name for i in skipped) == ['linked', 'notes.txt']
    assert main([*base, '--store', f'memory:{tmp_path / "kb2"}', '--follow-symlinks']) == 0
    added = json.loads(capsys.readouterr().out)['added']
    assert file_uri(outside / 'secret.txt') in added and len(added) == 4
