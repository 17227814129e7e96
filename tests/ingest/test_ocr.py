"""OCR: scanned PDF pages and image files read with Tesseract, on real files from ../shared/data.

The OCR tests run the real ``tesseract`` and skip with the package to install where it is absent;
the missing-Tesseract tests hide it by emptying ``PATH`` (the binary is looked up there).
"""

from __future__ import annotations

import io
import re
import shutil
import unicodedata
from collections import Counter
from pathlib import Path

import pypdfium2 as pdfium
import pytest
from PIL import Image

from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.ingest import Chunker, IngestLimits, ReadError, ingest, parse_path, read_file
from toolish_rag.ingest._readers._ocr import (
    OcrOptions,
    detected_language,
    tesseract_languages,
    text_is_garbage,
    text_quality,
)
from toolish_rag.search import SearchRequest
from toolish_rag.stores import InMemoryStore

SHARED = Path(__file__).resolve().parents[3] / 'shared' / 'data'

FIDELITY = SHARED / 'fidelity'

needs_tesseract = pytest.mark.skipif(
    shutil.which('tesseract') is None,
    reason='Tesseract is not installed (apt-get install tesseract-ocr, or brew install tesseract)',
)


@pytest.fixture
def fidelity_dir() -> Path:
    if not (FIDELITY / 'manifest.json').is_file():
        pytest.skip(f'fidelity documents not found at {FIDELITY} (../shared/data is absent)')
    return FIDELITY


def _words(text: str) -> list[str]:
    """The fidelity README's normalisation: NFKC, casefold, quotes and dashes mapped, hyphenated line ends
    joined (on both sides), words stripped of punctuation; UNLV's ``~`` dropped."""
    text = unicodedata.normalize('NFKC', text.replace('~', '')).casefold()
    for a, b in {'\u2018': "'", '\u2019': "'", '\u201c': '"', '\u201d': '"', '\u2013': '-', '\u2014': '-'}.items():
        text = text.replace(a, b)
    text = re.sub(r'([^\W\d_])-\n([^\W\d_])', r'\1\2', text.replace('\u00ad', ''))
    words = (w.strip('!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~') for w in text.split())
    return [w for w in words if w]


def word_f1(predicted: str, truth: str) -> float:
    pred, true = Counter(_words(predicted)), Counter(_words(truth))
    tp = sum((pred & true).values())
    if not tp:
        return 0.0
    precision, recall = tp / sum(pred.values()), tp / sum(true.values())
    return 2 * precision * recall / (precision + recall)


def test_word_f1_helper_can_fail() -> None:
    assert word_f1('the cat sat', 'the cat sat') == 1.0
    assert word_f1('a dog ran', 'the cat sat') == 0.0
    assert 0.6 < word_f1('the cat sat down', 'the cat sat') < 1.0


# --- when a page needs OCR -------------------------------------------------------------------------


@pytest.mark.shared_data
def test_text_layers_of_real_pages_are_not_garbage(documents_dir: Path, fidelity_dir: Path) -> None:
    pdfs = [p for p in sorted(documents_dir.glob('*.pdf')) + sorted((fidelity_dir / 'docs').glob('*.pdf'))]
    scored = 0
    for path in pdfs:
        try:
            pdf = pdfium.PdfDocument(path)
        except pdfium.PdfiumError:
            continue  # the encrypted and the malformed one
        for page in pdf:
            text = page.get_textpage().get_text_range()
            if sum(not c.isspace() for c in text) >= 20:
                assert not text_is_garbage(text), (path.name, text_quality(text), text[:200])
                scored += 1
    assert scored >= 60


@pytest.mark.shared_data
def test_a_broken_font_map_is_garbage(documents_dir: Path) -> None:
    """pypdf decodes this real page through a broken font map (``o(hô..i.p3xSTRxtT3xR2tTOR``): OCR territory."""
    import pypdf

    text = pypdf.PdfReader(documents_dir / 'pdf_senate_expenditures.pdf').pages[0].extract_text()
    assert text_quality(text) < 0.3 and text_is_garbage(text)
    assert text_is_garbage('(cid:3)(cid:4)(cid:5) (cid:6)(cid:7)(cid:8)(cid:9) (cid:10)(cid:11)')
    assert not text_is_garbage('<resource uuid="96445439-6ce1-4e22"> see https://fedramp.gov/ns/oscal')


def test_languages_map_to_installed_data() -> None:
    installed = frozenset({'eng', 'deu', 'chi_sim'})
    assert tesseract_languages(['de'], installed) == 'deu'
    assert tesseract_languages(['de', 'en'], installed) == 'deu+eng'
    assert tesseract_languages(['deu+fra'], installed) == 'deu'  # no French data: left out
    assert tesseract_languages(['zh'], installed) == 'chi_sim'
    assert tesseract_languages(['el'], installed) == 'eng'  # nothing installed of it: English
    assert tesseract_languages([], installed) == 'eng'
    assert tesseract_languages(['auto'], installed) == 'eng'
    with pytest.raises(ValueError, match='never'):
        OcrOptions('sometimes')  # type: ignore[arg-type]


def test_a_page_in_another_language_is_read_again_in_it_when_installed() -> None:
    """With no language given, a first English pass is checked by language detection (lingua)."""
    german = 'Die Lieferung erfolgt innerhalb von vierzehn Tagen nach Eingang der Bestellung bei uns.'
    assert detected_language(german, frozenset({'eng', 'deu'})) == 'deu'
    assert detected_language(german, frozenset({'eng'})) is None  # no German data: English stays
    english = 'Refunds are paid within thirty days of the request reaching the billing team.'
    assert detected_language(english, frozenset({'eng', 'deu'})) is None


# --- acceptance: a scanned (JBIG2) page becomes searchable ----------------------------------------


@needs_tesseract
@pytest.mark.shared_data
async def test_scanned_pdf_becomes_searchable(documents_dir: Path) -> None:
    store = InMemoryStore(HashingEmbeddingModel(64))
    report = await ingest(store, documents_dir / 'pdf_scanned_linn_brochure.pdf', progress=False)
    assert report.ok and len(report.added) == 1
    assert [(Path(i.path).name, i.reason) for i in report.ocr] == [('pdf_scanned_linn_brochure.pdf', 'page 1')]
    # phrases read off the page image (rendered with pypdfium2 and looked at)
    for phrase in (
        '32 Track MIDI Sequence Recorder',
        'Composition Without Compromise',
        'Exclusive real-time ERASE function makes editing FAST',
        '18720 Oxnard Street, Tarzana',
    ):
        hits = await store.text_search(SearchRequest(phrase, 3))
        assert hits and phrase in ' '.join(hits[0].record.text.split()), phrase
        assert hits[0].record.metadata['page'] == 1 if 'page' in hits[0].record.metadata else True


@needs_tesseract
@pytest.mark.shared_data
def test_page_scanned_sideways_is_read(fidelity_dir: Path) -> None:
    doc = read_file(fidelity_dir / 'docs' / 'docling_ocr_test_rotated_90.pdf')
    truth = (fidelity_dir / 'truth' / 'docling_ocr_test_rotated_90.md').read_text()
    assert doc.ocr_pages == [1]
    assert word_f1(doc.source, truth) >= 0.9


@pytest.mark.shared_data
def test_ocr_never_leaves_a_scan_unread(documents_dir: Path) -> None:
    with pytest.raises(ReadError, match=r"no extractable text.*ocr='auto'"):
        read_file(documents_dir / 'pdf_scanned_linn_brochure.pdf', ocr=OcrOptions('never'))
    # a text layer is read the same with OCR off
    doc = parse_path(documents_dir / 'pdf_nics_background_checks_2015-11.pdf', ocr=OcrOptions('never'))
    assert doc.chunks


# --- image files -----------------------------------------------------------------------------------


@needs_tesseract
@pytest.mark.shared_data
@pytest.mark.parametrize(('name', 'truth'), [
    ('pytesseract_phototest.png', 'pytesseract_phototest.txt'),
    ('unlv_8071_093.3B.tif', 'unlv_8071_093.3B.txt'),
])  # fmt: skip
def test_images_are_read_by_ocr(fidelity_dir: Path, name: str, truth: str) -> None:
    doc = read_file(fidelity_dir / 'docs' / name)
    assert doc.ocr_pages == [1] and doc.page_starts == [0]
    assert word_f1(doc.source, (fidelity_dir / 'truth' / truth).read_text()) >= 0.95


@needs_tesseract
async def test_image_folder_frames_and_bad_files(tmp_path: Path) -> None:
    """A two-frame TIFF is two pages; an image without text is skipped; a corrupt one fails alone."""
    frames = []
    for text in ('FIRST FRAME HELLO', 'SECOND FRAME WORLD'):
        frame = Image.new('L', (900, 160), 255)
        from PIL import ImageDraw, ImageFont

        ImageDraw.Draw(frame).text((30, 40), text, fill=0, font=ImageFont.load_default(size=56))
        frames.append(frame)
    frames[0].save(tmp_path / 'two.tiff', save_all=True, append_images=frames[1:])
    Image.new('RGB', (300, 200), (20, 120, 200)).save(tmp_path / 'blank.png')
    Image.new('L', (16, 16), 0).save(tmp_path / 'icon.png')
    (tmp_path / 'broken.jpg').write_bytes(b'\xff\xd8\xff\xe0' + b'\x00' * 50)
    store = InMemoryStore(HashingEmbeddingModel(64))
    report = await ingest(store, tmp_path, progress=False, chunker=Chunker(chunk_size=30, overlap=0))
    assert [Path(u).name for u in report.added] == ['two.tiff']
    assert {Path(i.path).name: i.reason for i in report.ocr} == {'two.tiff': 'pages 1-2'}
    assert {Path(i.path).name for i in report.skipped} == {'blank.png', 'icon.png'}
    assert [Path(i.path).name for i in report.failed] == ['broken.jpg']
    assert 'image' in report.failed[0].reason
    doc = read_file(tmp_path / 'two.tiff')
    assert doc.page_starts is not None and len(doc.page_starts) == 2
    second = doc.source[doc.page_starts[1] :]
    assert 'SECOND' in second and 'FIRST' not in second


# --- Tesseract missing ---------------------------------------------------------------------------


def _two_page_pdf(documents_dir: Path) -> bytes:
    """A real text page followed by the real scanned page, in one PDF."""
    pdf = pdfium.PdfDocument.new()
    pdf.import_pages(pdfium.PdfDocument(documents_dir / 'pdf_nics_background_checks_2015-11.pdf'))
    pdf.import_pages(pdfium.PdfDocument(documents_dir / 'pdf_scanned_linn_brochure.pdf'))
    out = io.BytesIO()
    pdf.save(out)
    return out.getvalue()


@pytest.mark.shared_data
async def test_missing_tesseract_is_reported_per_file(
    documents_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / 'in'
    folder.mkdir()
    shutil.copy(documents_dir / 'pdf_scanned_linn_brochure.pdf', folder / 'scan.pdf')
    (folder / 'mixed.pdf').write_bytes(_two_page_pdf(documents_dir))
    (folder / 'note.md').write_text('# Note\n\nplain text still goes in\n')
    Image.new('L', (200, 100), 255).save(folder / 'photo.png')
    monkeypatch.setenv('PATH', str(tmp_path / 'empty-bin'))
    store = InMemoryStore(HashingEmbeddingModel(64))
    with pytest.raises(RuntimeError, match='apt-get install tesseract-ocr'):
        await ingest(store, folder, progress=False, ocr='always')
    assert not await store.list_documents()  # nothing was done
    report = await ingest(store, folder, progress=False)
    failed = {Path(i.path).name: i.reason for i in report.failed}
    assert set(failed) == {'scan.pdf', 'photo.png'}
    assert all('apt-get install tesseract-ocr' in r and 'brew install tesseract' in r for r in failed.values())
    assert sorted(Path(u).name for u in report.added) == ['mixed.pdf', 'note.md']  # the batch went on
    warned = {Path(i.path).name: i.reason for i in report.warnings}
    assert 'page(s) 2 not read' in warned['mixed.pdf'] and 'apt-get install tesseract-ocr' in warned['mixed.pdf']
    assert not report.ocr


@needs_tesseract
@pytest.mark.shared_data
async def test_ocr_stays_within_the_time_limit_per_file(documents_dir: Path) -> None:
    """Tesseract's subprocess gets what is left of the file's seconds: the file fails alone with the reason."""
    store = InMemoryStore(HashingEmbeddingModel(64))
    report = await ingest(
        store,
        documents_dir / 'pdf_scanned_linn_brochure.pdf',
        progress=False,
        limits=IngestLimits(seconds=2.0),  # the page takes ~3 CPU seconds to OCR
        executor='thread',
    )
    assert not report.added  # without the subprocess's timeout the page would be read, late
    # on a loaded machine the render itself may use up the 2 s: then the check before OCR says so
    assert [i.reason.removeprefix('OCR ') for i in report.failed] == [
        'took longer than the 2-second limit per file (raise it with --max-seconds S; IngestLimits(seconds=...))'
    ]


def test_cli_ocr_always_without_tesseract_stops_before_opening_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolish_rag.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / 'a.md').write_text('# A\n\ntext\n')
    monkeypatch.setenv('PATH', str(tmp_path / 'empty-bin'))
    with pytest.raises(
        SystemExit, match=r'--ocr always: Tesseract OCR is not installed.*apt-get install tesseract-ocr'
    ):
        main(['ingest', 'a.md', '--ocr', 'always', '--store', 'memory:./kb', '--embedder', 'hashing'])
    assert not (tmp_path / 'kb').exists()
    assert main(['ingest', 'a.md', '--ocr', 'never', '--store', 'memory:./kb', '--embedder', 'hashing']) == 0
