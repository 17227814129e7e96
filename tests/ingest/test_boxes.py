"""Where chunks and quotes stand: pages and line boxes from PDF text layers and OCR, cut to a quote by verification.

PDFs are written here with pdfium (Helvetica text at known places, a CropBox that does not start
at the origin); the boxes are checked against pdfplumber's character boxes, an independent reader.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageDraw, ImageFont

from tests.provenance_helpers import iou, plumber_box, write_pdf
from toolish_rag.citations import CitationSource, check_quote
from toolish_rag.citations._model import page_and_paragraph
from toolish_rag.content import Chunk, TextBox
from toolish_rag.ingest import Chunker, parse_path

SENTENCE = 'The quick brown fox jumps over the lazy dog near the river.'


def test_line_boxes_stand_where_the_text_is_on_the_cropped_page(tmp_path: Path) -> None:
    path = write_pdf([[(72, 700, 12, SENTENCE), (300, 300, 20, 'Lower down the page.')]], tmp_path / 'a.pdf')
    cropped = write_pdf(
        [[(72, 700, 12, SENTENCE), (300, 300, 20, 'Lower down the page.')]], tmp_path / 'b.pdf', (36, 36, 576, 756)
    )
    for pdf, crop in ((path, None), (cropped, (36.0, 36.0, 576.0, 756.0))):
        (chunk,) = parse_path(pdf).chunks
        assert chunk.page == 1 and [b.page for b in chunk.boxes] == [1, 1]
        for box in chunk.boxes:
            line = chunk.urtext[box.start : box.end]
            assert line in (SENTENCE, 'Lower down the page.')
            assert iou(box.box, plumber_box(pdf, line, crop=crop)) > 0.9, (pdf.name, line, box)  # both em boxes
    first = parse_path(cropped).chunks[0].boxes[0]
    assert first.x0 == pytest.approx((72 - 36) / 540, abs=0.002)  # the CropBox's left edge is the page's


def test_line_boxes_on_a_page_turned_by_rotate_stand_where_it_is_displayed(tmp_path: Path) -> None:
    """A ``/Rotate 90`` page: the boxes are on the page as shown, as pdfplumber (>= 0.11) places its characters."""
    lines = [(500, 100, 12, SENTENCE), (300, 300, 12, 'Further along, a second line.')]
    turned = write_pdf([lines], tmp_path / 'turned.pdf', turned=True)
    (chunk,) = parse_path(turned).chunks
    assert len(chunk.boxes) == 2
    for box in chunk.boxes:
        line = chunk.urtext[box.start : box.end]
        assert iou(box.box, plumber_box(turned, line)) > 0.9, (line, box)


def test_a_quote_has_its_own_page_and_boxes(tmp_path: Path) -> None:
    """One chunk holding two pages: a quote on the second names page 2 and the box of its words only."""
    pages = [
        [(72, 700, 12, 'First page opening words stand here.')],
        [(72, 700, 12, SENTENCE), (72, 684, 12, 'And a second line follows it below.')],
    ]
    pdf = write_pdf(pages, tmp_path / 'two.pdf')
    (chunk,) = parse_path(pdf, chunker=Chunker(chunk_size=400)).chunks
    assert chunk.page == 1 and {b.page for b in chunk.boxes} == {1, 2}
    source = check_quote(chunk, 'brown fox jumps over the lazy dog')
    assert isinstance(source, CitationSource)
    assert source.page == 2 and len(source.boxes) == 1
    assert iou(source.boxes[0], plumber_box(pdf, 'brown fox jumps over the lazy dog', page=1)) > 0.85
    line = next(b for b in chunk.boxes if b.page == 2)
    assert line.x0 < source.boxes[0][0] < source.boxes[0][2] < line.x1  # a part of the line, not all of it
    spanning = check_quote(chunk, 'near the river. And a second line')
    assert isinstance(spanning, CitationSource) and spanning.page == 2 and len(spanning.boxes) == 2
    assert page_and_paragraph(spanning) == ', page 2'


def test_a_box_cut_to_a_span_keeps_its_share_of_the_line() -> None:
    box = TextBox(3, 10, 30, 0.1, 0.2, 0.5, 0.25)
    text = 'x' * 40
    assert box.within(0, 100, text) == box
    assert box.within(15, 25, text) == TextBox(3, 15, 25, 0.2, 0.2, 0.4, 0.25)
    assert box.within(30, 40, text) is None
    assert box.within(12, 14, 'x' * 12 + 'a\nb' + 'x' * 20) == TextBox(3, 12, 14, 0.1, 0.2, 0.5, 0.25)  # a table
    # by the letters' usual widths: 'mmmm' is wider than 'iiii'
    narrow, wide = (
        box.within(10, 14, 'x' * 10 + 'iiiimmmm' + 'x' * 12),
        box.within(14, 18, 'x' * 10 + 'iiiimmmm' + 'x' * 12),
    )
    assert narrow is not None and wide is not None and (narrow.x1 - narrow.x0) * 3 < wide.x1 - wide.x0
    assert box.shifted(-10) == TextBox(3, 0, 20, 0.1, 0.2, 0.5, 0.25)
    # a right-to-left line starts at its right edge: its first word is cut from there
    arabic = 'مرحبا بالعالم الكبير'
    first = box.within(10, 15, 'x' * 10 + arabic)
    last = box.within(25, 30, 'x' * 10 + arabic)
    assert first is not None and last is not None and first.x1 == 0.5 and last.x0 == 0.1


def test_paragraph_numbers_where_the_source_has_them(tmp_path: Path) -> None:
    lines = [
        (72, 700, 12, '11. The tenant pays the rent monthly.'),
        (72, 660, 12, '12. The landlord repairs the roof within thirty days.'),
        (72, 620, 12, 'In 12 cases nobody repaired anything at all.'),
    ]
    (chunk,) = parse_path(write_pdf([lines], tmp_path / 'lease.pdf')).chunks
    source = check_quote(chunk, 'repairs the roof within thirty days')
    assert isinstance(source, CitationSource) and source.paragraph == '12'
    assert page_and_paragraph(source) == ', page 1, paragraph 12'
    plain = check_quote(chunk, 'nobody repaired anything at all')
    assert isinstance(plain, CitationSource) and plain.paragraph is None


@pytest.mark.skipif(shutil.which('tesseract') is None, reason='Tesseract is not installed')
def test_an_ocr_quote_is_boxed_where_its_words_were_drawn(tmp_path: Path) -> None:
    image = Image.new('L', (1400, 400), 255)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=44)
    draw.text((60, 60), 'Invoices are paid within thirty days', fill=0, font=font)
    draw.text((60, 200), 'of the request reaching the billing team.', fill=0, font=font)
    x0, top, x1, bottom = draw.textbbox((60, 200), 'of the request reaching the billing team.', font=font)
    image.save(tmp_path / 'scan.png')
    (chunk,) = parse_path(tmp_path / 'scan.png').chunks
    words = ['Invoices', 'are', 'paid', 'within', 'thirty', 'days', 'of', 'the', 'request', 'reaching', 'the']
    boxed = [chunk.urtext[b.start : b.end] for b in chunk.boxes]
    assert chunk.page == 1 and boxed == [*words, 'billing', 'team.']  # a box per word
    source = check_quote(chunk, 'reaching the billing team')
    assert isinstance(source, CitationSource) and source.page == 1 and len(source.boxes) == 1  # one a line
    qx0, qtop, qx1, qbottom = source.boxes[0]
    assert (
        x0 / 1400 < qx0 < qx1 <= x1 / 1400 + 0.01
        and abs(qtop - top / 400) < 0.03
        and abs(qbottom - bottom / 400) < 0.03
    )
    line = chunk.boxes[6:]
    union = (min(b.x0 for b in line), min(b.top for b in line), max(b.x1 for b in line), max(b.bottom for b in line))
    assert iou(union, (x0 / 1400, top / 400, x1 / 1400, bottom / 400)) > 0.8
    # a quote of words without ascenders or descenders is as tall as they are, not as their line
    plain = check_quote(chunk, 'are', min_quote_chars=1)
    assert isinstance(plain, CitationSource) and len(plain.boxes) == 1
    ax0 = 60 + draw.textlength('Invoices ', font=font)
    drawn = draw.textbbox((ax0, 60), 'are', font=font)
    assert iou(plain.boxes[0], tuple(v / s for v, s in zip(drawn, (1400, 400, 1400, 400), strict=True))) > 0.7


def test_an_ocr_line_is_boxed_word_by_word_where_its_words_are_found_else_whole() -> None:
    from toolish_rag.citations._where import quote_place
    from toolish_rag.ingest._readers._boxes import WordedLine, locate_lines

    boxes = [(0.1, 0.12, 0.2, 0.2), (0.22, 0.1, 0.3, 0.18), (0.32, 0.12, 0.36, 0.18), (0.6, 0.1, 0.7, 0.2)]
    line = WordedLine(
        'pay | full in far-', (0.1, 0.1, 0.7, 0.2), tuple(zip(('pay', 'full', 'in', 'far-'), boxes, strict=True))
    )
    text = 'pay | full in far'  # a table's bar between cells; the hyphen gone (a word joined)
    words = locate_lines(text, [line], 1, offset=5)
    assert [(b.start, b.end, b.box) for b in words] == [
        (5, 8, boxes[0]),
        (11, 15, boxes[1]),
        (16, 18, boxes[2]),
        (19, 22, boxes[3]),
    ]
    misread = WordedLine('pay in', (0.1, 0.1, 0.5, 0.2), (('pay', boxes[0]), ('im', boxes[1])))
    assert [(b.start, b.end) for b in locate_lines('pay in', [misread], 1)] == [(0, 6)]  # a word not found: the line
    # a quote's neighbouring words on a line are one box; not across a table's bar, nor a gap wider than a word is tall
    chunk = _boxed_chunk(text, tuple(b.shifted(-5) for b in words), page=1)
    assert quote_place(chunk, 0, len(text)) == (1, (boxes[0], (0.22, 0.1, 0.36, 0.18), boxes[3]))


def test_a_pdf_table_is_boxed_cell_by_cell_where_its_pieces_fall_into_cells() -> None:
    from toolish_rag.ingest._readers._pdf_layout import Piece
    from toolish_rag.ingest._readers._pdf_table_pages import table_row_boxes

    def piece(text: str, x0: float, x1: float, bottom: float) -> Piece:
        return Piece(text, x0, x1, bottom, bottom + 12, 10.0, False, em=(x0, bottom, x1, bottom + 10))

    text = '| Country | Count |\n| --- | --- |\n| Italy |  |\n| Spain wide | 40 |'
    drawn = [piece('Country', 72, 120, 700), piece('Count', 300, 330, 700), piece('Italy', 72, 100, 686)]
    drawn += [piece('Spain', 72, 100, 672), piece('wide', 104, 126, 672), piece('40', 300, 312, 672)]
    runs = table_row_boxes(text, drawn)
    assert [r for r, _ in runs] == ['Country', 'Count', 'Italy', 'Spain', 'wide', '40']  # the rule: no box
    assert [box for _, box in runs] == [
        (72, 700, 120, 710),
        (300, 700, 330, 710),
        (72, 686, 100, 696),
        (72, 672, 100, 682),  # a cell of two pieces: each its own
        (104, 672, 126, 682),
        (300, 672, 312, 682),
    ]
    two_lines = [piece('a', 72, 80, 700), piece('two', 300, 320, 700), piece('lines', 300, 330, 686)]
    tall = table_row_boxes('| a | two lines |', two_lines)
    assert [box for _, box in tall][1:] == [(300, 700, 320, 710), (300, 686, 330, 696)]  # a cell drawn on two lines
    # a piece across two cells: the row is one run
    across = table_row_boxes('| a | b |\n| c | d |', [piece('a b', 72, 200, 700), piece('c', 72, 80, 686)])
    assert [r for r, _ in across] == ['| a | b |', 'c | d']  # and a cell nothing drew joins the one before
    assert table_row_boxes('| a | b |', []) == []  # nothing drawn: the caller keeps the table's own box


def _boxed_chunk(text: str, boxes: tuple[Any, ...], page: int | None = None) -> Chunk:
    """A chunk of ``text`` (its urtext too) with ``boxes``: what a citation's quote is placed in."""
    return Chunk(
        id='c',
        metadata={},
        document_id='d',
        document_uri='u',
        document_title='t',
        text=text,
        urtext=text,
        chunk_index=0,
        sequence_number=0,
        page=page,
        boxes=boxes,
    )


def _cell_piece(
    text: str, x0: float, x1: float, bottom: float, words: tuple[tuple[str, float, float], ...] = ()
) -> Any:
    from toolish_rag.ingest._readers._pdf_layout import Piece

    boxes = tuple((w, (a, bottom, b, bottom + 10)) for w, a, b in words)
    return Piece(text, x0, x1, bottom, bottom + 12, 10.0, False, em=(x0, bottom, x1, bottom + 10), words=boxes)


def test_a_piece_drawn_across_table_cells_is_cut_into_its_words_cell_by_cell() -> None:
    from toolish_rag.ingest._readers._pdf_table_pages import table_row_boxes

    # pdfium reads `Yes Yes 40` as one piece (the cells stand close): each cell its own word's box, not the row's
    row = _cell_piece('Yes Yes 40', 100, 260, 700, (('Yes', 100, 120), ('Yes', 180, 200), ('40', 248, 260)))
    runs = table_row_boxes('| UT | Yes | Yes | 40 |', [_cell_piece('UT', 72, 84, 700), row])
    assert runs == [
        ('UT', (72, 700, 84, 710)),
        ('Yes', (100, 700, 120, 710)),
        ('Yes', (180, 700, 200, 710)),
        ('40', (248, 700, 260, 710)),
    ]


def test_cells_of_the_same_text_side_by_side_are_each_boxed_where_drawn() -> None:
    from toolish_rag.ingest._readers._pdf_table_pages import table_row_boxes

    drawn = [_cell_piece('WI', 72, 84, 700), _cell_piece('No', 100, 114, 700), _cell_piece('No', 180, 194, 700)]
    runs = table_row_boxes('| WI | No | No |', drawn)
    assert [box for _, box in runs] == [(72, 700, 84, 710), (100, 700, 114, 710), (180, 700, 194, 710)]


def test_a_merged_cell_the_rendering_repeats_is_boxed_where_it_is_drawn_once() -> None:
    from toolish_rag.ingest._readers._pdf_table_pages import table_row_boxes

    text = '| Tested 2004 | Tested 2004 | Tested 2006 |'
    drawn = [_cell_piece('Tested 2004', 72, 200, 700), _cell_piece('Tested 2006', 300, 420, 700)]
    runs = table_row_boxes(text, drawn)
    assert runs == [
        ('Tested 2004', (72, 700, 200, 710)),
        ('Tested 2004', (72, 700, 200, 710)),  # not joined to the first (a quote of it would take a share of both)
        ('Tested 2006', (300, 700, 420, 710)),
    ]


def test_a_merged_cell_of_two_lines_is_repeated_line_by_line() -> None:
    """The repeat of a merged cell drawn on two lines gets the box of each line, not one box around both: a
    quote of its first line is as tall as that line."""
    from toolish_rag.ingest._readers._pdf_table_pages import table_row_boxes

    text = '| Checks November | Checks November | Total |'
    drawn = [_cell_piece('Checks', 72, 140, 700), _cell_piece('November', 72, 160, 686)]
    drawn.append(_cell_piece('Total', 300, 340, 700))
    runs = table_row_boxes(text, drawn)
    assert runs == [
        ('Checks', (72, 700, 140, 710)),
        ('November', (72, 686, 160, 696)),
        ('Checks', (72, 700, 140, 710)),
        ('November', (72, 686, 160, 696)),
        ('Total', (300, 700, 340, 710)),
    ]


def test_a_table_quote_from_the_header_rule_on_is_not_boxed_at_the_header() -> None:
    from toolish_rag.citations._where import quote_place
    from toolish_rag.ingest._readers._boxes import locate_lines
    from toolish_rag.ingest._readers._pdf_table_pages import table_row_boxes

    columns = 12  # a wide table: its rule is longer than a few cells' bars
    header = '| ' + ' | '.join(f'h{n}' for n in range(columns)) + ' |'
    row = '| ' + ' | '.join(f'v{n}' for n in range(columns)) + ' |'
    text = header + '\n|' + ' --- |' * columns + '\n' + row
    drawn = [_cell_piece(f'h{n}', 72 + 40 * n, 84 + 40 * n, 700) for n in range(columns)]
    drawn += [_cell_piece(f'v{n}', 72 + 40 * n, 84 + 40 * n, 686) for n in range(columns)]
    runs = table_row_boxes(text, drawn)
    assert [r for r, _ in runs] == [f'h{n}' for n in range(columns)] + [f'v{n}' for n in range(columns)]
    boxes = locate_lines(text, [(r, (0.0, 0.0, 1.0, float(b[1]) / 1000)) for r, b in runs], page=1)
    assert len(boxes) == 2 * columns  # every cell found again after the rule
    chunk = _boxed_chunk(text, tuple(boxes))
    start = text.index('--- |\n| v0')
    _, placed = quote_place(chunk, start, text.index(' v1') + 3)
    assert [b[3] for b in placed] == [0.686, 0.686]  # v0 and v1 only: the rule is not the last header cell


def test_pdf_pieces_keep_their_words_boxes(tmp_path: Path) -> None:
    import pypdfium2 as pdfium

    from toolish_rag.ingest._readers._pdf_layout import page_pieces

    path = write_pdf([[(72, 700, 12, 'Total Gross Loans')]], tmp_path / 'words.pdf')
    page = pdfium.PdfDocument(path)[0]
    textpage = page.get_textpage()
    (piece,) = page_pieces(textpage)
    assert [w for w, _ in piece.words] == piece.text.split() == ['Total', 'Gross', 'Loans']
    lefts = [box[0] for _, box in piece.words]
    assert piece.em is not None and lefts == sorted(lefts)
    assert piece.words[0][1][0] == piece.em[0] and piece.words[-1][1][2] == piece.em[2]
    textpage.close()
