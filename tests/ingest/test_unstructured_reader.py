"""``reader='unstructured'``: the library's partitioners, offline, mapped onto sections, tables and lists.

Everything that needs the library runs in one subprocess with the network blocked (sockets
refused and logged, proxies at a closed port, an empty HOME and NLTK_DATA), which reports
what it read and ingested; the tests below check that report (the library is imported once:
it costs seconds). docs/ingestion.md#the-unstructured-backend.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.ingest import _hostile as hostile
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.ingest import file_uri, ingest
from toolish_rag.stores import InMemoryStore

FIDELITY = Path(__file__).resolve().parents[3] / 'shared' / 'data' / 'fidelity' / 'docs'

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec('unstructured') is None,
        reason='unstructured is not installed: pip install "toolish-rag[unstructured]"',
    ),
]

_NO_NETWORK = """
import socket
_LOG = {log!r}
def _refuse(*args, **kwargs):
    with open(_LOG, 'a') as f:
        f.write(repr(args[:2]) + '\\n')
    raise OSError('network blocked by the test')
socket.socket.connect = _refuse
socket.socket.connect_ex = _refuse
socket.create_connection = _refuse
socket.getaddrinfo = _refuse
"""

_CHILD = """
import asyncio, json, sys
from pathlib import Path
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.ingest import IngestLimits, ingest
from toolish_rag.ingest._readers.unstructured import read_unstructured
from toolish_rag.stores import InMemoryStore

files, docs, hostile = [Path(p) for p in json.loads(sys.argv[1])], Path(sys.argv[2]), Path(sys.argv[3])
out = {'read': {}}
for p in files:
    doc = read_unstructured(p.read_bytes(), p)
    blocks = [(b.kind, doc.source[b.start:b.end]) for s in doc.root.walk() for b in s.blocks]
    out['read'][p.name] = {'headings': doc.headings(), 'blocks': blocks, 'format': doc.format}

def summary(report):
    return {'added': report.added, 'updated': report.updated, 'unchanged': report.unchanged,
            'failed': {Path(f.path).name: f.reason for f in report.failed}}

async def runs():
    store = InMemoryStore(HashingEmbeddingModel(64))
    kw = dict(progress=False, executor='thread')
    out['first'] = summary(await ingest(store, docs, reader='unstructured', **kw))
    out['formats'] = {Path(i.uri).name: i.metadata['source_format'] for i in await store.list_documents()}
    out['again'] = summary(await ingest(store, docs, reader='unstructured', **kw))
    out['back'] = summary(await ingest(store, docs, **kw))
    limits = IngestLimits(unpacked_bytes=1_000_000, elements=5_000)
    other = InMemoryStore(HashingEmbeddingModel(64))
    out['hostile'] = summary(await ingest(other, hostile, reader='unstructured', limits=limits, **kw))

asyncio.run(runs())
import spacy
out['model_installed'] = spacy.util.is_package('en_core_web_sm')
out['nltk_imported'] = 'nltk' in sys.modules
print(json.dumps(out))
"""


@pytest.fixture(scope='module')
def offline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What the offline subprocess read and ingested (see the module docstring), and where."""
    if not (FIDELITY / 'docling_word_sample.docx').is_file():
        pytest.skip(f'fidelity documents not found at {FIDELITY} (../shared/data is absent)')
    root = tmp_path_factory.mktemp('unstructured')
    site = root / 'site'
    site.mkdir()
    log = root / 'connections.log'
    (site / 'sitecustomize.py').write_text(_NO_NETWORK.format(log=str(log)))
    docs = root / 'docs'
    docs.mkdir()
    shutil.copy(FIDELITY / 'docling_word_sample.docx', docs)
    (docs / 'notes.md').write_text('# Notes\n\nRotate the key every ninety days.\n\n- one\n- two\n')
    (docs / 'tool.py').write_text('def rotate() -> None:\n    """Rotate the key."""\n')
    bad = root / 'hostile'
    bad.mkdir()
    (bad / 'bomb.xlsx').write_bytes(hostile.xlsx_comment_bomb(2))
    (bad / 'broken.docx').write_bytes(b'PK\x03\x04 not a zip after all')
    (bad / 'flat.html').write_bytes(b'<p>x</p>' * 6_000)
    (bad / 'fine.md').write_text('# Fine\n\nStill read.\n')
    closed = 'http://127.0.0.1:9'
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(('SCARF_', 'DO_NOT_TRACK', 'UNSTRUCTURED_'))},
        'PYTHONPATH': os.pathsep.join([str(site), os.environ.get('PYTHONPATH', '')]),
        'HTTP_PROXY': closed,
        'HTTPS_PROXY': closed,
        'NLTK_DATA': str(root / 'nltk_data'),
        'HOME': str(root / 'home'),
    }
    files = [str(FIDELITY / n) for n in ('docling_word_sample.docx', 'docling_example_03.html', 'docling_xlsx_01.xlsx')]
    done = subprocess.run(
        [sys.executable, '-c', _CHILD, json.dumps(files), str(docs), str(bad)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    out['connections'] = log.read_text() if log.exists() else ''
    out['nltk_data_made'] = (root / 'nltk_data').exists()
    out['docs'] = str(docs)
    out['hostile_dir'] = str(bad)
    return out


def test_nothing_is_fetched(offline: dict[str, Any]) -> None:
    assert offline['connections'] == '', f'a connection was attempted: {offline["connections"]}'
    assert offline['model_installed'] is False and offline['nltk_imported'] is False
    assert not offline['nltk_data_made']


def test_elements_become_sections_tables_and_lists(offline: dict[str, Any]) -> None:
    word = offline['read']['docling_word_sample.docx']
    assert word['format'] == 'docx'
    assert {'Summer activities', 'Swimming in the lake', 'Let\u2019s swim!'} <= set(word['headings'])
    tables = [text for kind, text in word['blocks'] if kind == 'table']
    assert tables and all(t.startswith('| ') and '| --- |' in t for t in tables)
    lists = [text for kind, text in word['blocks'] if kind == 'list']
    assert any('- Paddle about' in text for text in lists)

    page = offline['read']['docling_example_03.html']
    assert page['headings'][:3] == ['Example Document', 'Introduction', 'Background']
    nested = next(text for kind, text in page['blocks'] if kind == 'list')
    assert '\n  - Nested item 1' in nested  # depth kept as indentation, the shallowest item at the margin

    sheets = offline['read']['docling_xlsx_01.xlsx']
    assert [h for h in sheets['headings'] if h.startswith('Sheet')] == ['Sheet1', 'Sheet2', 'Sheet3', 'Sheet4']
    assert sum(kind == 'table' for kind, _ in sheets['blocks']) >= 4


def test_ingest_with_the_backend_and_back(offline: dict[str, Any]) -> None:
    """Its formats read by unstructured (named in the fingerprint), the others by the default readers;
    switching backends re-reads exactly the files the backend reads."""
    docs = Path(offline['docs'])
    first, again, back = offline['first'], offline['again'], offline['back']
    assert len(first['added']) == 3 and not first['failed']
    assert offline['formats'] == {'docling_word_sample.docx': 'docx', 'notes.md': 'markdown', 'tool.py': 'python'}
    assert (again['added'], again['updated'], len(again['unchanged'])) == ([], [], 3)
    assert sorted(back['updated']) == sorted([file_uri(docs / 'docling_word_sample.docx'), file_uri(docs / 'notes.md')])
    assert back['unchanged'] == [file_uri(docs / 'tool.py')]


def test_a_hostile_or_broken_file_fails_alone(offline: dict[str, Any]) -> None:
    """The container and markup bounds of the default readers apply before unstructured sees the bytes."""
    report = offline['hostile']
    assert '1,000,000-byte limit' in report['failed']['bomb.xlsx']
    assert report['failed']['broken.docx'].startswith('corrupt DOCX')
    assert '5,000-element limit' in report['failed']['flat.html']
    assert report['added'] == [file_uri(Path(offline['hostile_dir']) / 'fine.md')]


async def test_a_missing_library_fails_before_any_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from toolish_rag.ingest._readers import unstructured as backend

    (tmp_path / 'a.md').write_text('# A\n\ntext\n')
    store = InMemoryStore(HashingEmbeddingModel(64))
    backend._partitioners.cache_clear()
    monkeypatch.setitem(sys.modules, 'unstructured', None)  # as if not installed: its import fails
    try:
        with pytest.raises(RuntimeError, match=r'pip install "toolish-rag-slim\[unstructured\]"'):
            await ingest(store, tmp_path, progress=False, reader='unstructured')
    finally:
        backend._partitioners.cache_clear()
    assert await store.list_documents() == []
    with pytest.raises(ValueError, match='reader must be one of'):
        await ingest(store, tmp_path, progress=False, reader='pandoc')  # type: ignore[arg-type]


def test_the_cli_names_the_extra_before_opening_the_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from toolish_rag.cli import main
    from toolish_rag.ingest._readers import unstructured as backend

    docs = tmp_path / 'docs'
    docs.mkdir()
    (docs / 'a.md').write_text('# A\n\ntext\n')
    backend._partitioners.cache_clear()
    monkeypatch.setitem(sys.modules, 'unstructured', None)
    argv = ['ingest', str(docs), '--reader', 'unstructured', '--store', f'lancedb:{tmp_path / "kb"}', '--no-progress']
    try:
        with pytest.raises(
            SystemExit, match=r'--reader unstructured: .*pip install "toolish-rag-slim\[unstructured\]"'
        ):
            main(argv)
    finally:
        backend._partitioners.cache_clear()
    assert not (tmp_path / 'kb').exists()
