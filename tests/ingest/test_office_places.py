"""Where office chunks stand: a workbook's sheet and cell range, a DOCX page where the file says, a PPTX slide.

See docs/grounded.md#where-a-quote-stands and docs/ingestion.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from toolish_rag._record_text import render_record
from toolish_rag.citations import CitationSource, check_quote
from toolish_rag.citations._model import page_and_paragraph
from toolish_rag.ingest import Chunker, parse_path
from toolish_rag.ingest._model import cell_range


def _workbook(path: Path) -> Path:
    import openpyxl

    book = openpyxl.Workbook()
    first = book.active
    first.title = 'Sheet1'
    first.append(['Region', 'Quarter', 'Revenue', 'Units'])
    for n in range(40):
        first.append([f'region-{n}', f'Q{n % 4 + 1}', 1000 + n, n])
    second = book.create_sheet("Q1 'final' sales")
    second['C5'] = 'Caption above the table'
    second['C7'], second['D7'] = 'Name', 'Amount'
    second['C8'], second['D8'] = 'Widget', 12
    second['C9'], second['D9'] = 'Gadget', 30
    book.save(path)
    return path


def test_a_workbook_chunk_names_its_sheet_and_cells(tmp_path: Path) -> None:
    parsed = parse_path(_workbook(tmp_path / 'book.xlsx'), chunker=Chunker(chunk_size=300))
    chunks = list(parsed.chunks)
    assert all(c.cells for c in chunks) and len(chunks) > 3
    first = [c for c in chunks if c.page == 1]
    assert first[0].cells is not None and first[0].cells.startswith('Sheet1!A1:D')
    for chunk in first:  # each names the rows it holds: its last row's first cell is region-(row - 2)
        last = chunk.urtext.rstrip().split('\n')[-1]
        row = int(chunk.cells.rsplit(':D', 1)[1])  # type: ignore[union-attr]
        assert last.startswith(f'| region-{row - 2} |'), (chunk.cells, last)
    (other,) = [c for c in chunks if c.page == 2]
    assert other.cells == "'Q1 ''final'' sales'!C5:D9"  # the caption row above, quoted as Excel quotes it
    source = check_quote(other, 'Gadget | 30 |')
    assert isinstance(source, CitationSource) and source.cells == other.cells
    assert page_and_paragraph(source) == ", cells 'Q1 ''final'' sales'!C5:D9"
    assert ", cells 'Q1 ''final'' sales'!C5:D9\n" in render_record(other)  # as tools show it


def test_cell_ranges_are_written_as_excel_writes_them() -> None:
    assert cell_range('Sheet1', 1, 1, 20, 4) == 'Sheet1!A1:D20'
    assert cell_range('Data', 3, 27, 3, 27) == 'Data!AA3'
    assert cell_range('My sheet', 1, 702, 2, 703) == "'My sheet'!ZZ1:AAA2"


def _docx(path: Path, *, rendered: bool) -> Path:
    """Three pages of paragraphs: explicit page breaks, or (``rendered``) Word's recorded breaks only."""
    import docx
    from docx.enum.text import WD_BREAK
    from docx.oxml import OxmlElement

    document = docx.Document()
    for page in range(1, 4):
        paragraph = document.add_paragraph(f'Words standing on page {page} of the document, as Word drew them.')
        if page > 1:
            run = paragraph.runs[0]
            if rendered:
                run._r.insert(0, OxmlElement('w:lastRenderedPageBreak'))
            else:
                paragraph.insert_paragraph_before('').add_run().add_break(WD_BREAK.PAGE)
        document.add_paragraph(f'More on page {page}.')
    document.save(path)
    return path


@pytest.mark.parametrize('rendered', [False, True])
def test_a_docx_chunk_has_the_page_the_file_says(tmp_path: Path, rendered: bool) -> None:
    parsed = parse_path(_docx(tmp_path / 'pages.docx', rendered=rendered), chunker=Chunker(chunk_size=80))
    for chunk in parsed.chunks:
        page = int(chunk.urtext.split('page ')[1][0])
        assert chunk.page == page, (chunk.page, chunk.urtext)
    assert {c.page for c in parsed.chunks} == {1, 2, 3}


def test_a_docx_without_breaks_has_no_page_numbers(tmp_path: Path) -> None:
    import docx

    document = docx.Document()
    document.add_paragraph('Only one page here, as far as the file says.')
    document.save(tmp_path / 'one.docx')
    assert [c.page for c in parse_path(tmp_path / 'one.docx').chunks] == [None]


def test_a_pptx_chunk_has_its_slide(tmp_path: Path) -> None:
    import pptx

    deck = pptx.Presentation()
    for n in range(1, 4):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = f'Slide title {n}'
        slide.placeholders[1].text = f'The body of slide {n} says something worth citing.'
    deck.save(tmp_path / 'deck.pptx')
    chunks = list(parse_path(tmp_path / 'deck.pptx').chunks)
    assert [c.page for c in chunks] == [1, 2, 3]
    assert all(f'slide {c.page} says' in c.urtext for c in chunks)
