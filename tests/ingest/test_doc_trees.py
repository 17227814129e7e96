"""Real documentation trees (issue 40): what is read, what a near-empty file does, what a stopped run keeps.

The issue ingested FastAPI's docs: every image OCR'd with no way to leave them out, a Jinja
template whose only text is ``Item ID: {{ id }}`` failing every run, Ctrl-C 45 s in keeping
nothing, a timeout not naming ``--max-seconds``, an empty folder saying only "added 0".
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Sequence
from pathlib import Path

import pytest

from toolish_rag.cli import main
from toolish_rag.content import Chunk
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.ingest import IngestInterrupted, IngestLimits, ParseJob, file_uri, ingest, walk_paths
from toolish_rag.ingest._parse import Parsed, parse_file
from toolish_rag.ingest._report import naming_the_limit
from toolish_rag.ingest._walk import Found
from toolish_rag.stores import InMemoryStore


def _store() -> InMemoryStore:
    return InMemoryStore(HashingEmbeddingModel(64))


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding='utf-8')


async def _chunks(store: InMemoryStore) -> list[Chunk]:
    """Every chunk of the store, by id (``{document id}-{sequence}``)."""
    ids = [f'{info.id}-{n}' for info in await store.list_documents() for n in range(info.chunk_count)]
    return [r for r in await store.get_records(ids) if isinstance(r, Chunk)]


def _names(found: Sequence[Found]) -> list[str]:
    return sorted(f.relative_path for f in found if f.reason is None)


# -- what is read: --exclude and .gitignore --------------------------------------------------


def _repo(tmp_path: Path) -> Path:
    """A git work tree whose docs folder has ignored build output, an ignored-then-kept file and images."""
    repo = tmp_path / 'repo'
    (repo / '.git').mkdir(parents=True)
    _write(
        repo,
        {
            '.gitignore': 'site/\n*.log.md\n',
            'docs/.gitignore': '!keep.log.md\ndrafts/\n',
            'docs/index.md': '# Home\n\nWelcome.\n',
            'docs/keep.log.md': '# Kept\n\nA changelog kept by a negation.\n',
            'docs/debug.log.md': '# Debug\n\nIgnored by the top .gitignore.\n',
            'docs/site/index.md': '# Built\n\nBuild output.\n',
            'docs/drafts/wip.md': '# Draft\n\nNot yet.\n',
            'docs/img/logo.png': 'not really a picture',
            'docs/guide/img/shot.png': 'not really a picture',
            'docs/guide/intro.md': '# Intro\n\nThe guide.\n',
        },
    )
    return repo


def test_gitignore_files_of_the_tree_and_of_its_work_tree_are_honoured(tmp_path: Path) -> None:
    docs = _repo(tmp_path) / 'docs'
    assert _names(list(walk_paths([docs]))) == [
        'guide/img/shot.png',
        'guide/intro.md',
        'img/logo.png',
        'index.md',
        'keep.log.md',
    ]
    everything = _names(list(walk_paths([docs], gitignore=False)))
    assert {'debug.log.md', 'site/index.md', 'drafts/wip.md'} <= set(everything)


def test_exclude_globs_match_like_gitignore_under_each_given_folder(tmp_path: Path) -> None:
    docs = _repo(tmp_path) / 'docs'
    assert _names(list(walk_paths([docs], exclude=['*.png']))) == ['guide/intro.md', 'index.md', 'keep.log.md']
    assert _names(list(walk_paths([docs], exclude=['/img/', 'guide/**/*.md']))) == [
        'guide/img/shot.png',
        'index.md',
        'keep.log.md',
    ]
    # an exclude wins over a .gitignore negation; a named file is matched by its name
    assert 'keep.log.md' not in _names(list(walk_paths([docs], exclude=['keep.*'])))
    assert _names(list(walk_paths([docs / 'index.md'], exclude=['*.md']))) == []


def test_the_cli_takes_exclude_and_no_ignore(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = _repo(tmp_path) / 'docs'
    base = ['ingest', str(docs), '--embedder', 'hashing', '--json', '--ocr', 'never']
    assert main([*base, '--store', f'memory:{tmp_path / "kb1"}', '--exclude', '*.png', '--exclude', 'guide/']) == 0
    added = json.loads(capsys.readouterr().out)['added']
    assert sorted(Path(u).name for u in added) == ['index.md', 'keep.log.md']
    assert main([*base, '--store', f'memory:{tmp_path / "kb2"}', '--exclude', '*.png', '--no-ignore']) == 0
    added = json.loads(capsys.readouterr().out)['added']
    assert {'debug.log.md', 'wip.md'} <= {Path(u).name for u in added}


async def test_an_empty_folder_says_no_supported_files(tmp_path: Path) -> None:
    empty, other = tmp_path / 'empty', tmp_path / 'only-logs'
    empty.mkdir()
    _write(other, {'a.log': 'x', 'b.doc': 'y'})
    report = await ingest(_store(), [empty, other], progress=False)
    assert [w.reason for w in report.warnings] == [
        f'no supported files under {empty}',
        f'no supported files under {other}',
    ]
    assert report.ok


# -- files with little or no text -----------------------------------------------------------------

TEMPLATE = """<html>
<head>
    <link href="{{ url_for('static', path='/styles.css') }}" rel="stylesheet">
</head>
<body>
    <h1><a href="{{ url_for('read_item', id=id) }}">Item ID: {{ id }}</a></h1>
</body>
</html>
"""


async def test_a_file_of_headings_or_a_title_only_is_stored_and_one_without_text_skipped(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            'item.html': TEMPLATE,
            'headings.md': '# Only a heading\n\n## And another\n',
            'titled.html': '<html><head><title>Just a title</title></head><body></body></html>',
            'script.html': '<html><body><script>var x = 1;</script></body></html>',
        },
    )
    store = _store()
    report = await ingest(store, tmp_path, progress=False)
    assert report.ok, report.failed  # the template no longer fails every run
    assert sorted(Path(u).name for u in report.added) == ['headings.md', 'item.html', 'titled.html']
    assert [(Path(i.path).name, i.reason) for i in report.skipped] == [
        ('script.html', 'no text to index (only markup, whitespace or pictures)')
    ]
    texts = {Path(c.document_uri).name: c.urtext for c in await _chunks(store)}
    assert texts == {
        'item.html': 'Item ID: {{ id }}',
        'headings.md': '# Only a heading\n\n## And another',
        'titled.html': 'Just a title',
    }
    again = await ingest(store, tmp_path, progress=False)  # unchanged re-runs are clean too
    assert again.ok and len(again.unchanged) == 3


# -- limits name their flag -------------------------------------------------------------------------


async def test_a_file_over_a_limit_names_the_option_that_raises_it(tmp_path: Path) -> None:
    _write(tmp_path, {'long.md': '# Long\n\n' + 'word ' * 400})
    report = await ingest(_store(), tmp_path, progress=False, limits=IngestLimits(text_chars=1000))
    assert [i.reason for i in report.failed] == [
        'more than the 1,000-character limit of text (raise it with IngestLimits(text_chars=...))'
    ]


@pytest.mark.parametrize(
    ('reason', 'flag'),
    [
        ('stopped: took longer than the 120-second limit per file', '--max-seconds S'),
        ('took longer than the 0.5-second limit per file', '--max-seconds S'),
        ('OCR took longer than the 120-second limit per file', '--max-seconds S'),
        ('stopped: used more than the 2,147,483,648-byte memory limit per file', '--max-memory MIB'),
        ('a DOCX unpacks to more than the 100,000-byte limit (a zip bomb?)', 'unpacked_bytes'),
    ],
)
def test_limit_messages_get_their_flag(reason: str, flag: str) -> None:
    named = naming_the_limit(reason)
    assert named.startswith(reason) and flag in named
    assert naming_the_limit('the file is encrypted') == 'the file is encrypted'


# -- a stopped run keeps what it finished -------------------------------------------------------------


class _StopsAfter:
    """A parse executor (the public `IngestExecutor` extension point) that parses ``count`` files, then hangs
    as a slow PDF would, until the run is cancelled (Ctrl-C)."""

    embeds = False

    def __init__(self, count: int) -> None:
        self.count = count

    async def parse(self, files: Sequence[Found], job: ParseJob, embedding: object) -> AsyncGenerator[Parsed, None]:
        for found in files[: self.count]:
            yield parse_file(str(found.path), job, found.relative_path)
        await asyncio.Event().wait()


@pytest.mark.parametrize('finished', [7, 2])
async def test_an_interrupted_ingest_keeps_the_documents_it_finished(tmp_path: Path, finished: int) -> None:
    """7: batches of 1, 2 and 4 documents are written as they fill; 2: the second document, alone in its
    batch while the next file takes long, is written once it has waited MAX_WAIT_SECONDS (5 s)."""
    _write(tmp_path, {f'page{i:02}.md': f'# Page {i}\n\nText of page {i}.\n' for i in range(50)})
    store = _store()
    run = asyncio.create_task(ingest(store, tmp_path, progress=False, executor=_StopsAfter(finished)))
    for _ in range(1500):
        if len(await store.list_documents()) >= finished:
            break
        await asyncio.sleep(0.01)
    run.cancel()
    with pytest.raises(IngestInterrupted) as stopped:
        await run
    kept = sorted(info.uri for info in await store.list_documents())
    assert kept == sorted(file_uri(tmp_path / f'page{i:02}.md') for i in range(finished))
    assert stopped.value.report.interrupted and sorted(stopped.value.report.added) == kept
