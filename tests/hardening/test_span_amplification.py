"""Tables whose merged cells or width would multiply the text (issue 41 item 6): the work stays bounded by the file.

Before the fix a 1 KB DOCX of ``gridSpan=1000`` + ``vMerge`` cells became 104 MB of indexed text
(python-docx repeats a cell once per grid column it spans, and each piece of the split table
repeated a 10,000-column header) and a 1.3 KB HTML of ``colspan="1000"`` cells 775 MB; the
``text_chars`` limit counted the source only. Each file is built here, small.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ingest import _hostile as hostile
from toolish_rag._record_text import chunk_body
from toolish_rag.content import Document
from toolish_rag.ingest import Chunker, IngestLimits, parse_path
from toolish_rag.ingest._model import OutlineBuilder, ParsedDocument
from toolish_rag.ingest._parse import ParseJob, parse_file
from toolish_rag.ingest._readers._tables import SpanCell, add_table, span_grid


def _indexed(document: Document) -> int:
    return sum(len(chunk.text) for chunk in document.chunks)


def _docx_cell(text: str, span: int, merge: str) -> str:
    vmerge = '<w:vMerge w:val="restart"/>' if merge == 'restart' else '<w:vMerge/>'
    return f'<w:tc><w:tcPr><w:gridSpan w:val="{span}"/>{vmerge}</w:tcPr><w:p><w:r><w:t>{text}</w:t></w:r></w:p></w:tc>'


def test_a_docx_of_wide_merged_cells_is_read_by_the_cells_written(tmp_path: Path) -> None:
    rows = [
        '<w:tr>'
        + ''.join(_docx_cell(f'head{c}', 1000, 'restart' if r == 0 else 'continue') for c in range(10))
        + '</w:tr>'
        for r in range(5)
    ]
    body = '<w:tbl><w:tr>' + ''.join(_docx_cell(f'top{c}', 1000, 'none') for c in range(10)) + '</w:tr>'
    data = hostile.docx((body + ''.join(rows) + '</w:tbl>').encode())
    assert len(data) < 1500
    (tmp_path / 'span.docx').write_bytes(data)
    document = parse_path(tmp_path / 'span.docx')
    assert _indexed(document) < 5_000  # was 104,319,626
    text = '\n'.join(chunk.urtext for chunk in document.chunks)
    assert all(f'top{c}' in text and f'head{c}' in text for c in range(10))


def test_an_html_table_of_colspans_is_as_wide_as_its_cells(tmp_path: Path) -> None:
    head = b'<tr>' + b''.join(b'<th colspan="1000">h%d</th>' % c for c in range(10)) + b'</tr>'
    data = b'<table>' + head + b'<tr><td colspan="1000">x</td></tr>' * 30 + b'</table>'
    (tmp_path / 'span.html').write_bytes(data)
    document = parse_path(tmp_path / 'span.html')
    assert _indexed(document) < 5_000  # was 774,992,970
    (table,) = [c.urtext for c in document.chunks if c.urtext.startswith('| h0')]
    assert table.splitlines()[0] == '| ' + ' | '.join(f'h{c}' for c in range(10)) + ' |'


def test_merged_cells_repeat_their_text_within_a_budget() -> None:
    """One long cell down 200 rows: repeated while the repeats stay within 4x the table's text + 64 KB."""
    long = 'w' * 10_000
    grid = span_grid([[SpanCell(long, 3, 200)], *([] for _ in range(199))])
    assert grid is not None and len(grid) == 200 and grid[0] == [long]  # 3 columns no other cell parts: one
    filled = sum(len(cell) for row in grid for cell in row)
    assert 10 * 10_000 < filled <= 10_000 + 4 * 10_000 + 65_536  # 2 MB without the budget


def test_a_staircase_table_is_read_as_rows_of_text(tmp_path: Path) -> None:
    """Each row starting one column further: the grid would be rows x rows positions, so its cells become lines."""
    rows = b''.join(b'<tr><td colspan="%d"></td><td>step%d</td></tr>' % (r + 1, r) for r in range(400))
    (tmp_path / 'stairs.html').write_bytes(b'<table>' + rows + b'</table>')
    document = parse_path(tmp_path / 'stairs.html')
    text = '\n'.join(chunk.urtext for chunk in document.chunks)
    assert all(f'step{r}' in text for r in range(400))
    assert _indexed(document) < 40_000  # the grid: 400 rows of 401 cells, 480 KB of bars and blanks


def test_a_wide_header_is_repeated_by_its_first_columns_and_kept_whole_once() -> None:
    columns = 300
    outline = OutlineBuilder()
    header = [f'column{c}' for c in range(columns)]
    add_table(outline, [header, *([f'r{r}c{c}' for c in range(columns)] for r in range(20))], 1)
    parsed = ParsedDocument(source=outline.text(), title='t', root=outline.root, format='html')
    document = Chunker(chunk_size=500).build(parsed, 'file:///t')
    assert _indexed(document) < 4 * len(parsed.source)  # every piece repeated the 3 KB header: 16x
    urtext = '\n'.join(chunk.urtext for chunk in document.chunks)
    assert all(f'column{c} |' in urtext for c in range(columns))  # the whole header, once
    continued = [chunk for chunk in document.chunks if chunk.urtext.startswith('| r')]
    assert continued
    for chunk in continued:
        shown = chunk_body(chunk)  # read as a table: a header of its first columns, its rule, then rows
        lines = shown.splitlines()
        assert lines[0].startswith('| column0 | column1 |') and set(lines[1]) <= set('|- ')
        assert lines[0].count('|') == lines[1].count('|') and len(lines[0]) + len(lines[1]) < 380


def test_indexed_text_counts_against_the_text_limit(tmp_path: Path) -> None:
    """A long heading is repeated in the indexed text of every chunk under it: that counts, not the source alone."""
    heading = 'heading ' * 500
    body = '\n\n'.join(f'Paragraph {n} says something about refunds and returns.' for n in range(400))
    path = tmp_path / 'long.md'
    path.write_text(f'# {heading}\n\n{body}\n')
    source_chars = len(path.read_text())
    limits = IngestLimits(text_chars=source_chars * 2)
    result = parse_file(str(path), ParseJob(Chunker(chunk_size=200), {}, (), limits))
    assert result.document is None and result.reason is not None
    assert 'limit of text to index' in result.reason
    assert parse_file(str(path), ParseJob(Chunker(chunk_size=200), {}, ())).document is not None  # within the default


@pytest.mark.parametrize('bad', [0, -3])
def test_a_nonsense_span_counts_as_one(bad: int) -> None:
    assert span_grid([[SpanCell('a', bad, bad), SpanCell('b')], [SpanCell('c'), SpanCell('d')]]) == [
        ['a', 'b'],
        ['c', 'd'],
    ]


def test_a_header_of_only_a_long_caption_is_kept_once() -> None:
    outline = OutlineBuilder()
    add_table(outline, [[f'a{r}', 'b'] for r in range(60)], 0, caption='caption ' * 100)
    parsed = ParsedDocument(source=outline.text(), title='t', root=outline.root, format='html')
    document = Chunker(chunk_size=200).build(parsed, 'file:///t')
    assert sum(c.urtext.count('caption') for c in document.chunks) == 100
    assert _indexed(document) < 2 * len(parsed.source)
