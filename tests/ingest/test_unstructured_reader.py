"""``reader='unstructured'``: the library's partitioners, offline, mapped onto sections, tables and lists.

docs/ingestion.md#the-unstructured-backend.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.ingest import _hostile as hostile
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.ingest import IngestLimits, file_uri, ingest
from toolish_rag.stores import InMemoryStore

FIDELITY = Path(__file__).resolve().parents[3] / 'shared' / 'data' / 'fidelity' / 'docs'

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec('unstructured') is None,
        reason='unstructured is not installed: pip install "toolish-rag[unstructured]"',
    ),
]


@pytest.fixture
def fidelity() -> Path:
    if not (FIDELITY / 'docling_word_sample.docx').is_file():
        pytest.skip(f'fidelity documents not found at {FIDELITY} (../shared/data is absent)')
    return FIDELITY


_NO_NETWORK = """
import socket, sys
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

_PARTITION = """
import json, sys
from pathlib import Path
from toolish_rag.ingest._readers.unstructured import read_unstructured
out = {}
for name in sys.argv[1:]:
    p = Path(name)
    doc = read_unstructured(p.read_bytes(), p)
    blocks = [(b.kind, doc.source[b.start:b.end]) for s in doc.root.walk() for b in s.blocks]
    out[p.name] = {'headings': doc.headings(), 'blocks': blocks, 'format': doc.format}
import spacy
out['model_installed'] = spacy.util.is_package('en_core_web_sm')
out['nltk_imported'] = 'nltk' in sys.modules
print(json.dumps(out))
"""


def test_partitions_offline_into_sections_tables_and_lists(fidelity: Path, tmp_path: Path) -> None:
    """Network blocked (sockets refused, proxies at a closed port), no HOME cache: nothing is fetched."""
    site = tmp_path / 'site'
    site.mkdir()
    log = tmp_path / 'connections.log'
    (site / 'sitecustomize.py').write_text(_NO_NETWORK.format(log=str(log)))
    closed = 'http://127.0.0.1:9'
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(('SCARF_', 'DO_NOT_TRACK', 'UNSTRUCTURED_'))},
        'PYTHONPATH': os.pathsep.join([str(site), os.environ.get('PYTHONPATH', '')]),
        'HTTP_PROXY': closed,
        'HTTPS_PROXY': closed,
        'NLTK_DATA': str(tmp_path / 'nltk_data'),
        'HOME': str(tmp_path / 'home'),
    }
    files = [
        fidelity / name for name in ('docling_word_sample.docx', 'docling_example_03.html', 'docling_xlsx_01.xlsx')
    ]
    done = subprocess.run(
        [sys.executable, '-c', _PARTITION, *map(str, files)], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert not log.exists(), f'a connection was attempted: {log.read_text()}'
    assert out['model_installed'] is False and out['nltk_imported'] is False
    assert not (tmp_path / 'nltk_data').exists()

    word = out['docling_word_sample.docx']
    assert word['format'] == 'docx'
    assert {'Summer activities', 'Swimming in the lake', 'Let\u2019s swim!'} <= set(word['headings'])
    tables = [text for kind, text in word['blocks'] if kind == 'table']
    assert tables and all(t.startswith('| ') and '| --- |' in t for t in tables)
    lists = [text for kind, text in word['blocks'] if kind == 'list']
    assert any('- Paddle about' in text for text in lists)

    page = out['docling_example_03.html']
    assert page['headings'][:3] == ['Example Document', 'Introduction', 'Background']
    nested = next(text for kind, text in page['blocks'] if kind == 'list')
    assert '\n  - Nested item 1' in nested  # depth kept as indentation

    sheets = out['docling_xlsx_01.xlsx']
    assert [h for h in sheets['headings'] if h.startswith('Sheet')] == ['Sheet1', 'Sheet2', 'Sheet3', 'Sheet4']
    assert sum(kind == 'table' for kind, _ in sheets['blocks']) >= 4


async def test_ingest_with_the_backend_and_back(fidelity: Path, tmp_path: Path) -> None:
    """Its formats read by unstructured (named in the fingerprint), the others by the default readers;
    switching backends re-reads exactly the files the backend reads."""
    docs = tmp_path / 'docs'
    docs.mkdir()
    shutil.copy(fidelity / 'docling_word_sample.docx', docs)
    (docs / 'notes.md').write_text('# Notes\n\nRotate the key every ninety days.\n\n- one\n- two\n')
    (docs / 'tool.py').write_text('def rotate() -> None:\n    """Rotate the key."""\n')
    store = InMemoryStore(HashingEmbeddingModel(64))

    first = await ingest(store, docs, progress=False, executor='thread', reader='unstructured')
    assert len(first.added) == 3 and not first.failed
    infos = {Path(i.uri).name: i for i in await store.list_documents()}
    assert infos['notes.md'].metadata['source_format'] == 'markdown'  # the default readers' format names
    assert infos['tool.py'].metadata['source_format'] == 'python'  # read by the default reader

    again = await ingest(store, docs, progress=False, executor='thread', reader='unstructured')
    assert (again.added, again.updated, len(again.unchanged)) == ([], [], 3)

    back = await ingest(store, docs, progress=False, executor='thread')
    assert sorted(back.updated) == sorted([file_uri(docs / 'docling_word_sample.docx'), file_uri(docs / 'notes.md')])
    assert back.unchanged == [file_uri(docs / 'tool.py')]


async def test_a_hostile_or_broken_file_fails_alone(tmp_path: Path) -> None:
    """The container and markup bounds of the default readers apply before unstructured sees the bytes."""
    docs = tmp_path / 'docs'
    docs.mkdir()
    (docs / 'bomb.xlsx').write_bytes(hostile.xlsx_comment_bomb(2))
    (docs / 'broken.docx').write_bytes(b'PK\x03\x04 not a zip after all')
    (docs / 'flat.html').write_bytes(b'<p>x</p>' * 6_000)
    (docs / 'fine.md').write_text('# Fine\n\nStill read.\n')
    limits = IngestLimits(unpacked_bytes=1_000_000, elements=5_000)
    store = InMemoryStore(HashingEmbeddingModel(64))
    report = await ingest(store, docs, progress=False, executor='thread', reader='unstructured', limits=limits)
    reasons = {Path(f.path).name: f.reason for f in report.failed}
    assert '1,000,000-byte limit' in reasons['bomb.xlsx']
    assert reasons['broken.docx'].startswith('corrupt DOCX')
    assert '5,000-element limit' in reasons['flat.html']
    assert report.added == [file_uri(docs / 'fine.md')]


async def test_a_missing_library_fails_before_any_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from toolish_rag.ingest._readers import unstructured as backend

    (tmp_path / 'a.md').write_text('# A\n\ntext\n')
    store = InMemoryStore(HashingEmbeddingModel(64))
    backend._partitioners.cache_clear()
    monkeypatch.setitem(sys.modules, 'unstructured', None)  # as if not installed: its import fails
    try:
        with pytest.raises(RuntimeError, match=r'pip install "toolish-rag\[unstructured\]"'):
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
        with pytest.raises(SystemExit, match=r'--reader unstructured: .*pip install "toolish-rag\[unstructured\]"'):
            main(argv)
    finally:
        backend._partitioners.cache_clear()
    assert not (tmp_path / 'kb').exists()
