"""OCR words from Tesseract's TSV: boxes and confidences, the text derived from them, and images of noise skipped.

Images are drawn here with Pillow (text, a table of figures, scribbles, shapes, a badge); real
scans come from ../shared/data when it is there. Runs the real ``tesseract``.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.ingest import ingest, read_file
from toolish_rag.ingest._readers._ocr import OcrPage, ocr_page, parse_tsv
from toolish_rag.ingest._readers._ocr_noise import judge_page
from toolish_rag.stores import InMemoryStore

FIDELITY = Path(__file__).resolve().parents[3] / 'shared' / 'data' / 'fidelity'

needs_tesseract = pytest.mark.skipif(
    shutil.which('tesseract') is None,
    reason='Tesseract is not installed (apt-get install tesseract-ocr, or brew install tesseract)',
)

_HEADER = 'level page_num block_num par_num line_num word_num left top width height conf text'.replace(' ', '\t')
_TSV = (
    _HEADER
    + '\n'
    + '\n'.join(
        '\t'.join(map(str, row))
        for row in [
            (1, 1, 0, 0, 0, 0, 0, 0, 400, 300, -1, ''),
            (4, 1, 1, 1, 1, 0, 10, 10, 200, 20, -1, ''),
            (5, 1, 1, 1, 1, 1, 10, 10, 50, 20, 96.5, 'A'),
            (5, 1, 1, 1, 1, 2, 70, 10, 80, 20, 91.0, 'well-'),
            (5, 1, 1, 1, 2, 1, 10, 40, 60, 20, 88.0, 'known'),
            (5, 1, 1, 1, 2, 2, 80, 40, 30, 20, -1, ' '),
            (5, 1, 1, 2, 1, 1, 10, 90, 90, 20, 95.25, 'Second'),
            (5, 1, 2, 1, 1, 1, 10, 150, 90, 20, 12.0, 'block'),
        ]
    )
)


def test_tsv_rows_become_words_and_the_text_tesseract_prints() -> None:
    page = parse_tsv(_TSV, (1, 1))
    assert (page.width, page.height) == (400, 300)  # the page row's size
    assert [w.text for w in page.words] == ['A', 'well-', 'known', 'Second', 'block']  # the blank word left out
    first = page.words[1]
    assert first.box == (70, 10, 150, 30) and first.confidence == 91.0 and first.line_key == (1, 1, 1)
    assert [len(line) for line in page.lines()] == [2, 1, 1, 1]
    assert page.raw_text() == 'A well-\nknown\n\nSecond\n\nblock'  # lines, then paragraphs split by blank lines
    assert page.text == 'A wellknown\n\nSecond\n\nblock'  # hyphenated line end joined as before
    assert parse_tsv('', (640, 480)) == OcrPage(640, 480, ())


def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def _text_image(lines: list[str], size: tuple[int, int] = (1200, 420)) -> Image.Image:
    image = Image.new('L', size, 255)
    draw = ImageDraw.Draw(image)
    for i, line in enumerate(lines):
        draw.text((40, 30 + i * 60), line, fill=0, font=_font(40))
    return image


@needs_tesseract
def test_word_boxes_stand_where_the_words_were_drawn() -> None:
    image = Image.new('L', (900, 300), 255)
    draw = ImageDraw.Draw(image)
    draw.text((60, 50), 'Quarterly', fill=0, font=_font(48))
    draw.text((500, 200), 'revenue', fill=0, font=_font(48))
    drawn = {
        'Quarterly': draw.textbbox((60, 50), 'Quarterly', font=_font(48)),
        'revenue': draw.textbbox((500, 200), 'revenue', font=_font(48)),
    }
    page = ocr_page(image)
    assert (page.width, page.height) == (900, 300)
    found = {w.text: w for w in page.words}
    for text, (x0, top, x1, bottom) in drawn.items():
        word = found[text]
        wx0, wtop, wx1, wbottom = word.box
        assert abs(wx0 - x0) <= 6 and abs(wx1 - x1) <= 6 and abs(wtop - top) <= 12 and abs(wbottom - bottom) <= 12
        assert word.confidence > 80


@needs_tesseract
def test_the_text_is_what_plain_tesseract_prints(tmp_path: Path) -> None:
    """One TSV run gives the same text as ``tesseract IMAGE -`` with the same settings (the fidelity benchmark's
    images measured the same, byte for byte)."""
    path = FIDELITY / 'docs' / 'pytesseract_phototest.png'
    if path.is_file():
        image = Image.open(path).convert('L')
    else:
        image = _text_image(['The quick brown fox jumps over', 'the lazy dog near the river bank.'])
    image.save(tmp_path / 'page.png')
    psm = '1' if 'osd' in subprocess.run(['tesseract', '--list-langs'], capture_output=True, text=True).stdout else '3'
    plain = subprocess.run(
        ['tesseract', str(tmp_path / 'page.png'), 'stdout', '-l', 'eng', '--psm', psm],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert ocr_page(image).raw_text() == plain.replace('\x0c', '').strip('\n')
    if path.is_file():  # an image file is given to Tesseract as it is: its words are plain Tesseract's
        as_is = subprocess.run(['tesseract', str(path), 'stdout'], capture_output=True, text=True, check=True).stdout
        assert read_file(path).source.split() == as_is.split()


def _scribbles(seed: int) -> Image.Image:
    rng = random.Random(seed)
    image = Image.new('L', (800, 400), 255)
    draw = ImageDraw.Draw(image)
    for row in range(8):
        x = 20
        while x < 760:
            points = [(x + i * 3, 30 + row * 45 + rng.randrange(-8, 9)) for i in range(rng.randrange(2, 6))]
            draw.line(points, fill=0, width=2)
            x += rng.randrange(8, 30)
    return image


def _shapes(seed: int) -> Image.Image:
    rng = random.Random(seed)
    image = Image.new('RGB', (600, 400), (240, 240, 240))
    draw = ImageDraw.Draw(image)
    for _ in range(40):
        x, y, w, h = rng.randrange(600), rng.randrange(400), rng.randrange(5, 120), rng.randrange(5, 120)
        colour = tuple(rng.randrange(200) for _ in range(3))
        draw.rectangle([x, y, x + w, y + h], outline=colour, width=rng.randrange(1, 6))
        draw.ellipse([y, x % 400, y + h, x % 400 + w], fill=colour)
    return image


def _badge() -> Image.Image:
    image = Image.new('RGB', (360, 60), (85, 85, 85))
    draw = ImageDraw.Draw(image)
    draw.rectangle([180, 0, 360, 60], fill=(76, 175, 80))
    draw.text((20, 12), 'build', fill=(255, 255, 255), font=_font(32))
    draw.text((200, 12), 'passing', fill=(255, 255, 255), font=_font(32))
    return image


@needs_tesseract
async def test_images_of_noise_are_skipped_and_text_and_figures_kept(tmp_path: Path) -> None:
    folder = tmp_path / 'images'
    folder.mkdir()
    _text_image(
        [
            'Refunds are paid within thirty days',
            'of the request reaching the billing team,',
            'and an invoice is sent by email.',
        ]
    ).save(folder / 'prose.png')
    _text_image(
        [
            'Month    Units    Revenue',
            'Jan      1,204    18,060.00',
            'Feb      1,377    20,655.50',
            'Mar   982   14,730.25',
        ],
        (1100, 300),
    ).save(folder / 'figures.png')
    _scribbles(1).save(folder / 'scribbles.png')
    _shapes(2).save(folder / 'shapes.png')
    _badge().save(folder / 'badge.png')
    store = InMemoryStore(HashingEmbeddingModel(64))
    report = await ingest(store, folder, progress=False)
    assert sorted(Path(u).name for u in report.added) == ['figures.png', 'prose.png']
    skipped = {Path(i.path).name: i.reason for i in report.skipped}
    assert set(skipped) == {'scribbles.png', 'shapes.png', 'badge.png'} and not report.failed
    assert 'noise' in skipped['scribbles.png'] and 'words read' in skipped['scribbles.png']
    figures = read_file(folder / 'figures.png').source
    assert '20,655.50' in figures and 'Revenue' in figures


@needs_tesseract
@pytest.mark.shared_data
def test_real_scans_read_as_text() -> None:
    if not (FIDELITY / 'manifest.json').is_file():
        pytest.skip(f'fidelity documents not found at {FIDELITY} (../shared/data is absent)')
    image = Image.open(FIDELITY / 'docs' / 'pytesseract_phototest.png')
    verdict = judge_page(ocr_page(image))
    assert verdict.is_text and verdict.read_share > 0.9 and verdict.read_words > 50
    noise = judge_page(ocr_page(_scribbles(3)))
    assert not noise.is_text and noise.read_share < 0.2


@needs_tesseract
def test_an_ocr_table_is_cut_between_rows_and_repeats_its_header(tmp_path: Path) -> None:
    from toolish_rag.ingest import Chunker, parse_path

    header = 'Date       Description          Amount'
    rows = [f'{d:02d}/03      Transfer {d * 7:03d}         {d * 113.25:,.2f}' for d in range(1, 13)]
    _text_image([header, *rows], (1300, 60 * 14 + 60)).save(tmp_path / 'statement.png')
    parsed = read_file(tmp_path / 'statement.png')
    kinds = [b.kind for s in parsed.root.walk() for b in s.blocks]
    assert kinds == ['table'], kinds
    chunks = parse_path(tmp_path / 'statement.png', chunker=Chunker(chunk_size=160, overlap=0)).chunks
    assert len(chunks) >= 3
    read_rows = parsed.source.split('\n')
    for chunk in chunks:
        assert all(line in read_rows for line in chunk.urtext.split('\n')), chunk.urtext  # whole rows only
    first_header = read_rows[0]
    assert all(c.text.split('\n').count(first_header) == 1 for c in chunks[1:])  # the header repeated once
