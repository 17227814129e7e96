"""PDF layout on real files: reading order across columns, running headers and footers, rotated pages,
headings from the fonts, hyphenation joined (docs/ingestion.md#pdf-layout)."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolish_rag.ingest import Chunker, parse_path, read_file
from toolish_rag.ingest._readers._ocr import join_hyphenated

SHARED = Path(__file__).resolve().parents[3] / 'shared' / 'data'
FIDELITY = SHARED / 'fidelity'


def _flat(text: str) -> str:
    return ' '.join(text.split())


@pytest.mark.shared_data
@pytest.mark.parametrize('path', [
    'documents/pdf_faa_amt_handbook_2col.pdf',
    'fidelity/docs/docling_amt_handbook_sample.pdf',
])  # fmt: skip
def test_two_columns_are_read_one_after_the_other(path: str) -> None:
    if not (SHARED / path).is_file():
        pytest.skip(f'{path} not found under {SHARED} (../shared/data is absent)')
    doc = read_file(SHARED / path)
    flat = _flat(doc.source)
    # sentences that wrap across lines of one column read whole (interleaved columns would cut them)
    for sentence in (
        'The two general types of self-locking nuts currently in use are the all-metal type and the fiber lock type.',
        'The Boots self-locking nut is of one piece, all-metal construction designed to hold tight despite severe '
        'vibration.',
        'The elastic stop nut is a standard nut with the height increased to accommodate a fiber locking collar.',
    ):
        assert sentence in flat, sentence
    left_end = flat.index('styles and in various shapes and sizes. The wing type that is')
    right_start = flat.index('the most common ranges in size for No. 6 up to 1')
    assert left_end < right_start < flat.index('Elastic Stop Nut')
    assert doc.headings() == ['Boots Self-Locking Nut', 'Stainless Steel Self-Locking Nut', 'Elastic Stop Nut']


@pytest.mark.shared_data
def test_running_headers_footers_and_page_numbers_are_dropped(documents_dir: Path) -> None:
    doc = read_file(documents_dir / 'pdf_fedramp_poam_guide_rev5.pdf')
    assert doc.page_starts is not None and len(doc.page_starts) == 37
    pages = [doc.source[a:b] for a, b in zip(doc.page_starts, [*doc.page_starts[1:], len(doc.source)], strict=True)]
    assert sum('User Implementation Guide | Fedramp2.0.0-oscal1.0.x' in _flat(p) for p in pages) == 0
    assert sum(p.strip().split('\n')[0].strip() == 'fedramp.gov' for p in pages if p.strip()) == 0
    for page in pages[2:]:
        lines = [ln.strip() for ln in page.strip().split('\n') if ln.strip()]
        assert not (lines and lines[0].isdigit()) and not (lines and lines[-1].isdigit()), lines[:2] + lines[-2:]
    assert '1.3 Basic Terminology' in doc.headings()


@pytest.mark.shared_data
def test_a_rotated_page_reads_in_rows(documents_dir: Path) -> None:
    """A landscape table on a page turned by /Rotate 90: rows read left to right (pypdf read it as gibberish)."""
    doc = read_file(documents_dir / 'pdf_senate_expenditures.pdf')
    flat = _flat(doc.source)
    assert 'BAIN, J MATTHEW DISTRICT DIRECTOR 37,499.96' in flat
    assert 'AIRFARE FOR E JOHNSON KANSAS CITY TO WASHINGTON DC AND RETURN' in flat
    assert not doc.ocr_pages  # its text layer is good: no OCR needed


@pytest.mark.shared_data
def test_font_headings_form_the_section_tree() -> None:
    path = FIDELITY / 'docs' / 'docling_multi_page.pdf'
    if not path.is_file():
        pytest.skip(f'{path} not found (../shared/data is absent)')
    truth = [ln.lstrip('#').strip() for ln in (FIDELITY / 'truth' / 'docling_multi_page.md').read_text().splitlines()]
    headings = read_file(path).headings()
    marked = [h for h in truth if h and h in headings]
    assert len(marked) >= 11  # all 11 of docling's headings (measured: 11/11; one extra, a bold list item)


def test_hyphenation_joined_only_letter_hyphen_newline_lowercase() -> None:
    text = 'a sim-\nple case, the well-\nKnown name, 1990-\n91, co-\n-op and über-\nall'
    assert join_hyphenated(text) == 'a simple case, the well-\nKnown name, 1990-\n91, co-\n-op and überall'


@pytest.mark.shared_data
def test_a_pdf_table_is_a_table_block_with_its_header_in_every_chunk() -> None:
    path = FIDELITY / 'docs' / 'icdar2013_us-012.pdf'
    if not path.is_file():
        pytest.skip(f'{path} not found (../shared/data is absent)')
    parsed = read_file(path)
    tables = [b for s in parsed.root.walk() for b in s.blocks if b.kind == 'table']
    assert len(tables) == 1 and tables[0].header_end is not None
    header = parsed.source[tables[0].start : tables[0].header_end]
    assert 'AYP Based on 2003\u201304 Testing' in header and header.endswith('| --- |')
    cell = 'State granted exceptions to districts to exceed 1% cap'
    assert _flat(parsed.source).count(cell) == _flat(parsed.source[tables[0].start : tables[0].end]).count(cell)
    assert 'Exhibit B.4' in parsed.source[: tables[0].start]  # the caption stays running text, before it
    doc = parse_path(path, Chunker(chunk_size=600, overlap=0))
    pieces = [c for c in doc.chunks if c.urtext.startswith('| ')]  # the table's row groups
    assert len(pieces) >= 4 and any('| NC |' in c.urtext for c in pieces)
    assert all('AYP Based on 2003\u201304 Testing' in c.text for c in pieces)
