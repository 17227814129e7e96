"""No reader drops text silently (issue 41 items 3 and 11): what a file holds is indexed, or the file fails with why.

Before the fix, ``--reader unstructured`` made each line it labels ``Title`` a section title only
(with spaCy's blank pipeline that is every line of a .txt): its text was not indexed, a trailing
one vanished, a one-line .txt failed "no extractable text"; markup nested past lxml's 256 levels
read as nothing; and a valid DOCX of 300 nested tables was "corrupt". Files are built here, small.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.ingest import _hostile as hostile
from toolish_rag.content import Document
from toolish_rag.ingest import Chunker, ReadError, parse_path


def _texts(document: Document) -> str:
    return '\n'.join(chunk.urtext for chunk in document.chunks)


def test_a_one_line_text_file_is_read(tmp_path: Path) -> None:
    (tmp_path / 'one.txt').write_text('Refund Policy\n')
    document = parse_path(tmp_path / 'one.txt', reader='unstructured')
    assert 'Refund Policy' in _texts(document)


def test_every_line_labelled_title_is_indexed_in_its_section(tmp_path: Path) -> None:
    lines = ['Refund Policy', 'Returns are accepted within thirty days with a receipt.', 'Shipping Costs']
    (tmp_path / 'titles.txt').write_text('\n\n'.join(lines) + '\n')
    document = parse_path(tmp_path / 'titles.txt', reader='unstructured')
    for line in lines:  # the last one too: a section with no body used to vanish
        (chunk,) = [c for c in document.chunks if line in c.urtext]
        assert line in chunk.text


def test_a_trailing_markdown_heading_is_kept(tmp_path: Path) -> None:
    (tmp_path / 'notes.md').write_text('# Refunds\n\nReturns within thirty days.\n\n## Appendix Zeta\n')
    document = parse_path(tmp_path / 'notes.md', reader='unstructured')
    assert 'Appendix Zeta' in _texts(document) and 'Returns within thirty days.' in _texts(document)
    apart = parse_path(tmp_path / 'notes.md', Chunker(combine_sections=False), reader='unstructured')
    assert [c.urtext for c in apart.chunks if c.section_path == ('Refunds', 'Appendix Zeta')] == ['Appendix Zeta']


@pytest.mark.parametrize(
    ('name', 'data', 'what'),
    [
        ('deep.html', b'<div>' * 300 + b'deep text here' + b'</div>' * 300, 'HTML'),
        ('deep.md', b'>' * 300 + b' deep quoted text\n', 'Markdown (as HTML)'),
    ],
)
def test_markup_deeper_than_its_parser_reads_fails_with_the_limit(
    name: str, data: bytes, what: str, tmp_path: Path
) -> None:
    with pytest.raises(ReadError, match=re.escape(f'{what} nested deeper than the 256-level limit of lxml')):
        parse_path(hostile.write(tmp_path, name, data), reader='unstructured')


def test_markup_within_the_depth_is_read(tmp_path: Path) -> None:
    (tmp_path / 'deep.html').write_bytes(b'<div>' * 200 + b'deep text here' + b'</div>' * 200)
    assert 'deep text here' in _texts(parse_path(tmp_path / 'deep.html', reader='unstructured'))


def _nested_tables(levels: int) -> bytes:
    opening = ''.join(f'<w:tbl><w:tr><w:tc><w:p><w:r><w:t>cell{i}</w:t></w:r></w:p>' for i in range(levels))
    closing = '<w:p/>' + '</w:tc></w:tr></w:tbl>' * levels
    return hostile.docx((opening + closing + '<w:p><w:r><w:t>after</w:t></w:r></w:p>').encode())


@pytest.mark.parametrize('reader', ['default', 'unstructured'])
def test_a_docx_of_300_nested_tables_names_the_limit_it_hit(reader: str, tmp_path: Path) -> None:
    (tmp_path / 'nested.docx').write_bytes(_nested_tables(300))
    with pytest.raises(ReadError, match='DOCX nested deeper than the 256-level limit of its XML parser') as raised:
        parse_path(tmp_path / 'nested.docx', reader=reader)  # type: ignore[arg-type]
    assert 'corrupt' not in str(raised.value)


def test_tables_inside_docx_cells_are_read(tmp_path: Path) -> None:
    (tmp_path / 'nested.docx').write_bytes(_nested_tables(40))
    text = _texts(parse_path(tmp_path / 'nested.docx'))
    assert all(f'cell{i}' in text for i in range(40)) and 'after' in text
