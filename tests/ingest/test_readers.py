"""Every readable file in ../shared/data/documents yields its real headings; the rest give reasons."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolish_rag.ingest import ReadError, parse_path, read_file

pytestmark = pytest.mark.shared_data

# file -> (title, headings that must appear as sections, in this order)
EXPECTED: dict[str, tuple[str, list[str]]] = {
    'md_docling_model_catalog.md': (
        'Model Catalog',
        ['Model Catalog', 'Overview', 'Stages and Models Overview', 'Inference Engines by Model Family',
         'Object Detection Models (Layout)', 'VLM Convert Stage', 'Usage Examples', 'Layout Detection',
         'Code & Formula Extraction', 'Additional Resources'],
    ),
    'md_homebrew_deprecating_disabling_removing.md': (
        'Deprecating, Disabling and Removing',
        ['Deprecating, Disabling and Removing', 'Formulae and casks', 'Upstream removal requests', 'deprecate!',
         'disable!', 'Deprecate and disable reasons', 'Code', 'The deprecation lifecycle', 'Environment variables'],
    ),
    'md_oscal_identifier_use.md': (
        'Identifier Use',
        ['Identifier Type', 'Machine-Oriented', 'Human-Oriented', 'Uniqueness', 'Scope', 'Catalog Identifiers',
         'POA&M Identifiers', 'Consistency'],
    ),
    'md_pydantic_ai_gateway.md': (
        'Pydantic AI Gateway',
        ['Pydantic AI Gateway', 'Key features', 'Quick Start', 'Create an account', 'Usage', 'Claude Code',
         'Routing groups', 'Troubleshooting', 'Unable to calculate spend'],
    ),
    'html_v8_blog_standalone_wasm.html': (
        'Outside the web: standalone WebAssembly binaries using Emscripten',
        ['Using standalone mode in Emscripten', 'Write your own JavaScript loader', 'Building Wasm plugins',
         "WebAssembly's two standard APIs", 'Do we need non-standalone Wasm?', 'Current status'],
    ),
    'html_wikipedia_mozilla.html': (
        'Mozilla',
        ['Mozilla', 'History', 'Eich CEO promotion controversy', 'Software', 'Firefox', 'Thunderbird', 'Gecko',
         'Community', 'Mozilla Summit', 'External links'],
    ),
    'html_fedramp_extensions.html': ('FedRAMP OSCAL Registry', ['FedRAMP OSCAL Registry', 'Response Point', 'Party Identifier']),
    'docx_docling_word_sample.docx': ('Swimming in the lake', ['Let\u2019s swim!', 'Let\u2019s eat']),
    'docx_fedramp_working_with_oscal.docx': (
        'docx fedramp working with oscal',
        ['Working with OSCAL Files', 'XML and JSON Formats', 'SSP File Concepts', 'Resolved Profile Catalogs',
         'OSCAL-based FedRAMP SSP Template', 'OSCAL\u2019s Minimum File Requirements', 'Importing the FedRAMP Baseline'],
    ),
    'pdf_docling_multi_page.pdf': (
        'The Evolution of the Word Processor',
        ['The Evolution of the Word Processor', 'Pre-Digital Era (19th - Early 20th Century)',
         'The Birth of Word Processing (1960s - 1970s)', 'The Rise of Personal Computers (1980s)',
         'A Glimpse Into the Future'],
    ),
    'pdf_fedramp_poam_guide_rev5.pdf': (
        'Guide to OSCAL-Based FedRAMP® Plan of Action and Milestones (POA&M)',
        ['1 Overview', '1.1 Who Should Use This Document?', '3.2.1 Resolved Profile Catalogs',
         '4 POA&M Template to OSCAL Mapping', '4.5.4 Vendor Dependency', 'Appendix A. CVSS Scoring'],
    ),
    'pptx_nist_oscal_high_level_overview_201801.pptx': (
        'Open Security Controls Assessment Language (OSCAL) High Level Overview',
        ['Why OSCAL?', 'What is OSCAL?', 'Benefits for OSCAL consumers', 'OSCAL goals', 'Team'],
    ),
    'xlsx_fedramp_oscal_registry.xlsx': (
        'xlsx fedramp oscal registry',
        ['FedRAMP Extensions', 'FedRAMP Defined Identifiers', 'FedRAMP Accepted Values'],
    ),
    'epub_purvis_poetry.epub': ('Poetry', ['The Grave of the Slave', 'Past Joys', 'Prayer', 'The Farewell']),
}  # fmt: skip

# formats without a heading structure of their own: readable, no sections
NO_HEADINGS = [
    'pdf_faa_amt_handbook_2col.pdf',
    'pdf_scotus_transcript_p1.pdf',
    'pdf_senate_expenditures.pdf',
    'rtf_unstructured_eng_spa_mult.rtf',
]

UNREADABLE = {
    'docx_truncated62886.docx': 'corrupt DOCX',
    'pdf_encrypted_libreoffice_pw-openpassword.pdf': 'encrypted PDF',
    'pdf_malformed_invalid.pdf': 'malformed PDF',
}  # the scanned PDF is OCR'd: tests/ingest/test_ocr.py


def _in_order(expected: list[str], actual: list[str]) -> bool:
    it = iter(actual)
    return all(any(a == e for a in it) for e in expected)


@pytest.mark.parametrize('name', sorted(EXPECTED))
def test_headings_become_sections(documents_dir: Path, name: str) -> None:
    title, headings = EXPECTED[name]
    doc = parse_path(documents_dir / name)
    section_titles = [s.title for s in doc.sections]
    assert doc.title.startswith(title)
    assert _in_order(headings, section_titles), section_titles
    assert doc.chunks
    parsed = read_file(documents_dir / name)
    for chunk in doc.chunks:
        assert chunk.urtext == parsed.source[chunk.start_char : chunk.end_char]
        assert chunk.urtext.strip()


@pytest.mark.parametrize('name', NO_HEADINGS)
def test_flat_files_are_read(documents_dir: Path, name: str) -> None:
    doc = parse_path(documents_dir / name)
    assert doc.chunks and all(c.urtext.strip() for c in doc.chunks)


@pytest.mark.parametrize('name', sorted(UNREADABLE))
def test_unreadable_files_have_reasons(documents_dir: Path, name: str) -> None:
    with pytest.raises(ReadError, match=UNREADABLE[name]):
        parse_path(documents_dir / name)


def test_markdown_code_comments_are_not_headings(documents_dir: Path) -> None:
    doc = parse_path(documents_dir / 'md_docling_model_catalog.md')
    titles = {s.title for s in doc.sections}
    assert 'Use Heron layout model (default)' not in titles  # a '# comment' inside a python fence
    assert any('# Use Heron layout model (default)' in c.urtext for c in doc.chunks)


def test_front_matter_is_typed_metadata(documents_dir: Path) -> None:
    doc = parse_path(documents_dir / 'md_oscal_identifier_use.md')
    assert doc.title == 'Identifier Use'
    meta = doc.chunks[0].metadata
    assert meta['weight'] == 50 and isinstance(meta['weight'], int)
    assert meta['suppresstopiclist'] is True
    assert meta['toc_enabled'] is True  # nested mapping flattened
    assert meta['source_format'] == 'markdown'


def test_pdf_pages_are_recorded(documents_dir: Path) -> None:
    doc = parse_path(documents_dir / 'pdf_fedramp_poam_guide_rev5.pdf')
    pages = [c.page for c in doc.chunks]
    assert pages == sorted(pages) and pages[0] >= 1 and max(pages) >= 30  # type: ignore[type-var]
    vendor = [c for c in doc.chunks if c.section_path[-1:] == ('4.5.4 Vendor Dependency',)]
    assert vendor and vendor[0].page == 33  # outline destination: 0-based page 32


def test_html_boilerplate_dropped(documents_dir: Path) -> None:
    doc = parse_path(documents_dir / 'html_wikipedia_mozilla.html')
    text = '\n'.join(c.urtext for c in doc.chunks)
    assert '[edit]' not in text and 'Jump to navigation' not in text
    assert 'Contents' not in {s.title for s in doc.sections}  # the table of contents is chrome
    v8 = parse_path(documents_dir / 'html_v8_blog_standalone_wasm.html')
    code = '\n'.join(c.urtext for c in v8.chunks)
    assert '#include' in code  # <pre> C code keeps its '#' lines
    assert 'Posted by' not in {s.title for s in v8.sections}


def test_table_header_repeated_on_every_piece(documents_dir: Path) -> None:
    from toolish_rag.ingest import Chunker

    doc = parse_path(documents_dir / 'xlsx_fedramp_oscal_registry.xlsx', Chunker(chunk_size=400))
    first_sheet = [c for c in doc.chunks if c.section_path == ('FedRAMP Extensions',)]
    assert len(first_sheet) > 3
    for chunk in first_sheet[1:]:
        assert 'SSP | Field | Cardinality | XPath Notation | NOTES' in chunk.text
