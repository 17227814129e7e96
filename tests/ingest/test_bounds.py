"""Ingestion within bounds per file (issue 28 item 2): hostile files fail alone, quickly, and the rest is stored.

Each hostile file is built here, small (see ``_hostile``); the default run scales the bombs
down, ``pytest -m slow`` runs them full size (docs/testing.md). Before the fix: the huge
dimension XLSX ran for minutes, the nested divs were quadratic then a RecursionError, the
repeated-chapter EPUB grew to 834 MB, and the comment bombs and the ``<w:p/>`` DOCX used
gigabytes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.ingest import _hostile as hostile
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.ingest import Chunker, IngestLimits, IngestReport, ReadError, ingest, parse_path
from toolish_rag.ingest._parse import ParseJob, parse_file
from toolish_rag.ingest._supervised import supervised_parse
from toolish_rag.stores import InMemoryStore

GOOD = '# Good\n\nThe refund policy allows returns within thirty days.\n'

REFUSED: dict[str, tuple[Callable[[], bytes], str]] = {
    'comment.xlsx': (lambda: hostile.xlsx_comment_bomb(8), 'over the 200x limit'),
    'paragraphs.docx': (lambda: hostile.docx_empty_paragraphs(8), 'over the 200x limit'),
    'comment.epub': (lambda: hostile.epub_comment_bomb(8), 'over the 200x limit'),
    'nested.html': (lambda: hostile.nested_divs(100_000), 'nested deeper than the 400-level limit'),
}


async def _batch(folder: Path, name: str, data: bytes, **options: object) -> tuple[IngestReport, InMemoryStore, float]:
    folder.mkdir(exist_ok=True)
    (folder / 'a_good.md').write_text(GOOD)
    hostile.write(folder, name, data)
    (folder / 'z_good.md').write_text(GOOD.replace('Good', 'Also good'))
    store = InMemoryStore(HashingEmbeddingModel(64))
    started = time.perf_counter()
    report = await ingest(store, folder, progress=False, **options)  # type: ignore[arg-type]
    return report, store, time.perf_counter() - started


@pytest.mark.parametrize('name', sorted(REFUSED))
async def test_hostile_file_fails_alone_with_its_reason(name: str, tmp_path: Path) -> None:
    build, reason = REFUSED[name]
    report, store, _ = await _batch(tmp_path / 'docs', name, build())
    assert [(Path(i.path).name, reason in i.reason) for i in report.failed] == [(name, True)], report.failed
    assert len(report.added) == 2
    assert len(await store.list_documents()) == 2


async def test_huge_declared_dimension_is_read_by_its_cells(tmp_path: Path) -> None:
    """1.5 KB declaring ``A1:XFD1048576``: read from the two cells present, not 16,384 columns a row."""
    data = hostile.xlsx_huge_dimension()
    assert len(data) < 2000
    report, store, _ = await _batch(tmp_path / 'docs', 'wide.xlsx', data)
    assert report.failed == [] and len(report.added) == 3
    (sheet,) = [d for d in await store.list_documents() if d.uri.endswith('wide.xlsx')]
    document = parse_path(tmp_path / 'docs' / 'wide.xlsx')
    assert 'hello' in document.chunks[0].text and 'world' in document.chunks[0].text
    assert len(document.chunks) == 1 and sheet.chunk_count == 1
    # No timing here: padded to 16,384 columns a row it would pass the default 120-second limit per file (failed above).


async def test_repeated_spine_chapter_is_read_once(tmp_path: Path) -> None:
    """A spine listing one chapter 128 times: the chapter is read once (it was 128 copies, 834 MB full size)."""
    once = parse_path(hostile.write(tmp_path, 'once.epub', hostile.epub_repeated_chapter(1, 64)))
    report, _, _ = await _batch(tmp_path / 'docs', 'book.epub', hostile.epub_repeated_chapter(128, 64))
    assert report.failed == [] and len(report.added) == 3
    book = parse_path(tmp_path / 'docs' / 'book.epub')
    assert [c.text for c in book.chunks] == [c.text for c in once.chunks]


@pytest.mark.parametrize(
    ('limits', 'name', 'data', 'reason'),
    [
        (IngestLimits(unpacked_bytes=100_000), 'book.epub', lambda: hostile.epub_repeated_chapter(1, 200), '100,000-byte limit'),
        (IngestLimits(elements=5_000), 'flat.html', lambda: b'<p>x</p>' * 6_000, '5,000-element limit'),
        (IngestLimits(depth=50), 'deep.html', lambda: hostile.nested_divs(60), '50-level limit'),
        (IngestLimits(text_chars=50_000), 'book.epub', lambda: hostile.epub_repeated_chapter(1, 200), '50,000-character limit'),
        (IngestLimits(seconds=0), 'wide.xlsx', hostile.xlsx_huge_dimension, 'longer than the 0-second limit'),  # threads: checkpoints
    ],
)  # fmt: skip
def test_each_limit_is_configurable(
    limits: IngestLimits, name: str, data: Callable[[], bytes], reason: str, tmp_path: Path
) -> None:
    path = hostile.write(tmp_path, name, data())
    result = parse_file(str(path), ParseJob(Chunker(), {}, (), limits))
    assert result.document is None and reason in (result.reason or ''), result.reason
    assert parse_file(str(path), ParseJob(Chunker(), {}, ())).document is not None  # within the defaults


def test_xlsx_rows_and_cells_count_against_the_element_limit(tmp_path: Path) -> None:
    """Two cells 200,000 rows apart: the rows between them count (few XML tags, many rows read)."""
    sheet = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
        '<row r="1"><c r="A1" t="inlineStr"><is><t>top</t></is></c></row>'
        '<row r="200000"><c r="A200000" t="inlineStr"><is><t>bottom</t></is></c></row>'
        '</sheetData></worksheet>'
    )
    path = hostile.write(tmp_path, 'rows.xlsx', hostile._xlsx(sheet))
    result = parse_file(str(path), ParseJob(Chunker(), {}, (), IngestLimits(elements=100_000)))
    assert result.reason is not None and 'rows and cells' in result.reason, result.reason
    assert parse_file(str(path), ParseJob(Chunker(), {}, ())).document is not None
    bad = bytearray(hostile._xlsx(sheet))
    at = bad.find(b'xl/worksheets/sheet1.xml') + 60  # inside that member's compressed data
    bad[at : at + 8] = b'\xff' * 8
    with pytest.raises(ReadError, match='corrupt XLSX'):  # a damaged member is still named as before
        parse_path(hostile.write(tmp_path, 'bad.xlsx', bytes(bad)))


async def test_process_workers_over_time_or_memory_are_killed_and_replaced(tmp_path: Path) -> None:
    """One worker process: a file that hangs and one that eats memory are stopped, the files around them parsed."""
    names = ['a.md', 'slow.md', 'b.md', 'hungry.md', 'c.md', 'crash.md', 'd.md']
    for name in names:
        (tmp_path / name).write_text(f'# {name}\n\ntext of {name}\n')
    limits = IngestLimits(seconds=2, memory_bytes=400 * 2**20)
    jobs = [(str(tmp_path / n), ParseJob(Chunker(), {}, (), limits), n) for n in names]
    started = time.perf_counter()
    results = {Path(r.path).name: r async for r in supervised_parse(jobs, hostile.misbehaving_parse, limits, 1, 2)}
    assert time.perf_counter() - started < 40
    assert {n for n, r in results.items() if r.document is not None} == {'a.md', 'b.md', 'c.md', 'd.md'}
    assert results['slow.md'].reason == 'stopped: took longer than the 2-second limit per file'
    assert results['hungry.md'].reason == 'stopped: used more than the 419,430,400-byte memory limit per file'
    assert results['crash.md'].reason == 'the parse worker died (exit code 3)'


async def test_process_executor_stores_the_good_files_around_a_bomb(tmp_path: Path) -> None:
    report, store, _ = await _batch(
        tmp_path / 'docs', 'comment.xlsx', hostile.xlsx_comment_bomb(8), executor='process', concurrency=1
    )
    assert [Path(i.path).name for i in report.failed] == ['comment.xlsx']
    assert len(await store.list_documents()) == 2


@pytest.mark.slow
@pytest.mark.parametrize(
    ('name', 'build', 'reason'),
    [
        ('comment.xlsx', lambda: hostile.xlsx_comment_bomb(256), 'byte limit (a zip bomb?)'),
        ('paragraphs.docx', lambda: hostile.docx_empty_paragraphs(256), 'byte limit (a zip bomb?)'),
        ('comment.epub', lambda: hostile.epub_comment_bomb(256), 'byte limit (a zip bomb?)'),
        ('book.epub', lambda: hostile.epub_repeated_chapter(128, 1100), None),
    ],
)
async def test_full_size_bombs(name: str, build: Callable[[], bytes], reason: str | None, tmp_path: Path) -> None:
    """The sizes of the issue (256 KB -> 256 MB, a 4 KB spine listing 1.1 MB 128 times), in worker processes.

    The time bound is the library's own per-file limit (60 s here), not a timer in the test: a bomb that read
    too long would fail with the time limit's reason instead of its own, and the book would fail at all.
    """
    limits = IngestLimits(seconds=60)
    report, store, _ = await _batch(tmp_path / 'docs', name, build(), executor='process', concurrency=1, limits=limits)
    failed = [(Path(i.path).name, reason is not None and reason in i.reason, i.reason) for i in report.failed]
    assert [f[:2] for f in failed] == ([(name, True)] if reason else []), failed
    assert len(await store.list_documents()) == (2 if reason else 3)


@pytest.mark.parametrize(
    'bad', [{'seconds': -1}, {'memory_bytes': 0}, {'elements': 0}, {'depth': 0}, {'compression_ratio': 0.5}]
)
def test_nonsense_limits_are_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError, match='IngestLimits'):
        IngestLimits(**bad)  # type: ignore[arg-type]
