"""Navigation over the real files of ../shared/data/documents, as a model sees it (issue #13).

The folder is ingested once per module into an `InMemoryStore` with the hashing embedder
(the tests are about structure, not ranking), then every check goes through
``ToolishRag.run_tool`` and reads the text the model would read:

* ``list_documents`` paged with the next-page offsets it gives lists every document once;
* ``outline`` of Markdown and DOCX files equals heading lists written here by hand from the
  files themselves;
* ``read_section`` of a table returns its header and every row, in order;
* ``read_section`` of a section spread over 20+ chunks, followed page by page, gives back the
  section's source text exactly: no chunk twice, none missing, nothing from outside it.

Sections are chunked with ``combine_sections=False``: the default chunker merges small
sibling sections into one chunk filed under their parent, and an outline (built from the
chunks' section paths) then cannot show those headings.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from toolish_rag import ToolishRag
from toolish_rag._record_text import chunk_body
from toolish_rag.content import Chunk
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.ingest import Chunker, IngestReport, ingest, read_file
from toolish_rag.protocols import SectionReader
from toolish_rag.stores import InMemoryStore

pytestmark = [pytest.mark.shared_data, pytest.mark.asyncio(loop_scope='module')]

DOCUMENTS = Path(__file__).resolve().parents[3] / 'shared' / 'data' / 'documents'
"""Where tests/ingest/conftest.py finds the shared documents (its fixture is per test; this one is per module)."""

MAX_READ_CHARS = 1500
"""Small enough that a long section takes many ``read_section`` calls (chunks are at most ~500 characters)."""


@dataclass(frozen=True)
class Corpus:
    store: InMemoryStore
    report: IngestReport
    rag: ToolishRag[Any]


@pytest_asyncio.fixture(scope='module', loop_scope='module')
async def corpus() -> AsyncIterator[Corpus]:
    if not (DOCUMENTS / 'SOURCES.md').is_file():
        pytest.skip(f'shared documents not found at {DOCUMENTS} (../shared/data is absent)')
    store = InMemoryStore(HashingEmbeddingModel(64))
    assert isinstance(store, SectionReader)
    report = await ingest(store, DOCUMENTS, progress=False, chunker=Chunker(combine_sections=False))
    bad = {Path(f.path).name for f in report.failed}
    assert {'pdf_encrypted_libreoffice_pw-openpassword.pdf', 'pdf_malformed_invalid.pdf'} <= bad
    assert len(report.added) >= 15, report.added
    yield Corpus(store, report, ToolishRag(store, max_read_chars=MAX_READ_CHARS))


async def call(rag: ToolishRag[Any], tool: str, **arguments: Any) -> tuple[str, list[Chunk]]:
    """The text a model reads from ``tool`` and the chunks it shows (from the result's metadata)."""
    result = await rag.run_tool(tool, arguments)
    assert isinstance(result.return_value, str)
    hits = (result.metadata or {}).get('hits', [])
    return result.return_value, [h.record for h in hits]


# -- list_documents ------------------------------------------------------------------------------

_LISTING = re.compile(r'^Documents (\d+)-(\d+) of (\d+), by title:$')
_LISTED = re.compile(r'^\[(\d+)\] (.+) \(document id (d[0-9a-f]{15})\) \| ')
_MORE = re.compile(r'^\[More: call docs_list_documents with offset=(\d+)(?:, limit=\d+)? for the next page\.\]$')


async def test_list_documents_pages_through_every_document_once(corpus: Corpus) -> None:
    stored = {d.id: d for d in await corpus.store.list_documents()}
    assert len(stored) == len(corpus.report.added)
    listed: list[tuple[str, str]] = []
    offset: int | None = 0
    pages = 0
    while offset is not None:
        text, _ = await call(corpus.rag, 'list_documents', offset=offset, limit=5)
        lines = text.splitlines()
        head = _LISTING.match(lines[0])
        assert head is not None, text
        first, last, total = map(int, head.groups())
        assert (first, total) == (offset + 1, len(stored)), text
        entries = [m for line in lines if (m := _LISTED.match(line))]
        assert [int(m[1]) for m in entries] == list(range(first, last + 1)), text
        assert len(entries) == min(5, total - offset)
        listed += [(m[3], m[2]) for m in entries]
        more = _MORE.match(lines[-1])
        offset = int(more[1]) if more else None
        assert offset in (None, last), text
        assert (offset is None) == (last == total), text
        pages += 1
    ids = [doc_id for doc_id, _ in listed]
    assert sorted(ids) == sorted(stored)  # every stored document, each exactly once
    assert len(ids) == len(set(ids))
    assert pages == -(-len(stored) // 5)
    assert [title for _, title in listed] == [stored[i].title for i in ids]
    assert [t.casefold() for _, t in listed] == sorted(t.casefold() for _, t in listed)  # by title


# -- outline -------------------------------------------------------------------------------------

_OUTLINE_HEAD = re.compile(r'^Outline of (.+) \(document id (d[0-9a-f]{15}), (\S+)\): (\d+) chunks\.$')
_OUTLINE_NODE = re.compile(r'^((?:  )*)- (.+) \[section (\S+)\] \((\d+) chunks?\)$')
_PREAMBLE = re.compile(r'^\((\d+) chunks? before the first heading;')

# (depth in the section tree, title) of every heading, read off the files by hand. Depth is
# the nesting, not the Markdown level (md_oscal_identifier_use.md starts at ###); inline
# markup is not part of a title (`deprecate!` in backticks, **Identifier Type** in bold).
OUTLINES: dict[str, tuple[str, list[tuple[int, str]]]] = {
    'md_homebrew_deprecating_disabling_removing.md': (
        'Deprecating, Disabling and Removing',
        [
            (1, 'Deprecating, Disabling and Removing'),
            (2, 'Formulae and casks'),
            (3, 'Upstream removal requests'),
            (3, 'deprecate!'),
            (3, 'disable!'),
            (3, 'When to deprecate formulae'),
            (3, 'When to deprecate casks'),
            (3, 'When to disable formulae'),
            (3, 'When to disable casks'),
            (3, 'When to remove formulae'),
            (3, 'When to remove casks'),
            (3, 'Deprecate and disable reasons'),
            (2, 'Code'),
            (3, 'API classification'),
            (3, 'When to deprecate code'),
            (3, 'When to disable code'),
            (3, 'When to remove code'),
            (3, 'The deprecation lifecycle'),
            (3, 'CLI flags'),
            (3, 'Environment variables'),
        ],
    ),
    'md_oscal_identifier_use.md': (
        'Identifier Use',
        [
            (1, 'Identifier Type'),
            (2, 'Machine-Oriented'),
            (2, 'Human-Oriented'),
            (1, 'Uniqueness'),
            (1, 'Scope'),
            (2, 'Catalog Identifiers'),
            (2, 'Profile Identifiers'),
            (2, 'Component Definition Identifiers'),
            (2, 'SSP Identifiers'),
            (2, 'AP Identifiers'),
            (2, 'AR Identifiers'),
            (2, 'POA&M Identifiers'),
            (1, 'Consistency'),
        ],
    ),
    'md_pydantic_ai_gateway.md': (
        'Pydantic AI Gateway',
        [
            (1, 'Pydantic AI Gateway'),
            (2, 'Documentation Integration'),
            (2, 'Key features'),
            (2, 'Quick Start'),
            (3, 'Create an account'),
            (3, 'Create Gateway API keys'),
            (2, 'Usage'),
            (3, 'Pydantic AI'),
            (4, 'Passing API Key directly'),
            (4, 'Using a different upstream provider'),
            (3, 'Claude Code'),
            (3, 'Codex'),
            (3, 'SDKs'),
            (4, 'OpenAI SDK'),
            (4, 'Anthropic SDK'),
            (4, 'Vercel AI SDK'),
            (2, 'Routing groups'),
            (3, 'Creating a routing group'),
            (3, 'Using a routing group'),
            (2, 'Troubleshooting'),
            (3, 'Unable to calculate spend'),
        ],
    ),
    'md_docling_model_catalog.md': (
        'Model Catalog',
        [
            (1, 'Model Catalog'),
            (2, 'Overview'),
            (2, 'Stages and Models Overview'),
            (2, 'Inference Engines by Model Family'),
            (3, 'Object Detection Models (Layout)'),
            (3, 'TableFormer Models (Table Structure)'),
            (3, 'Image Classifier (Picture Classifier)'),
            (3, 'OCR Engines'),
            (3, 'Vision-Language Models (VLM)'),
            (4, 'VLM Convert Stage'),
            (4, 'Picture Description Stage'),
            (4, 'Code & Formula Stage'),
            (2, 'Usage Examples'),
            (3, 'Layout Detection'),
            (3, 'Table Structure Recognition'),
            (3, 'Picture Classification'),
            (3, 'OCR'),
            (3, 'VLM Convert (Full Page)'),
            (3, 'Picture Description'),
            (3, 'Code & Formula Extraction'),
            (2, 'Additional Resources'),
            (2, 'Notes'),
        ],
    ),
    # Heading 1/2/3 paragraphs (the Title-styled 'Swimming in the lake' is the document title).
    'docx_fedramp_working_with_oscal.docx': (
        'docx fedramp working with oscal',
        [
            (1, 'Working with OSCAL Files'),
            (2, 'XML and JSON Formats'),
            (2, 'SSP File Concepts'),
            (3, 'Resolved Profile Catalogs'),
            (2, 'OSCAL-based FedRAMP SSP Template'),
            (2, 'OSCAL\u2019s Minimum File Requirements'),
            (2, 'Importing the FedRAMP Baseline'),
        ],
    ),
    'docx_docling_word_sample.docx': ('Swimming in the lake', [(1, 'Let\u2019s swim!'), (2, 'Let\u2019s eat')]),
}


@pytest.mark.parametrize('file_name', list(OUTLINES))
async def test_outline_is_the_files_heading_tree(corpus: Corpus, file_name: str) -> None:
    title, expected = OUTLINES[file_name]
    text, shown = await call(corpus.rag, 'outline', document=title)
    assert not shown  # an outline shows no text
    lines = text.splitlines()
    head = _OUTLINE_HEAD.match(lines[0])
    assert head is not None, text
    assert head[1] == title and head[3].endswith('/' + file_name)
    total = int(head[4])
    nodes = [(len(m[1]) // 2 + 1, m[2], int(m[4])) for line in lines if (m := _OUTLINE_NODE.match(line))]
    assert [(depth, t) for depth, t, _ in nodes] == expected
    preamble = next((int(m[1]) for line in lines if (m := _PREAMBLE.match(line))), 0)
    assert sum(n for depth, _, n in nodes if depth == 1) + preamble == total  # top sections + preamble: all
    info = next(d for d in await corpus.store.list_documents() if d.id == head[2])
    assert info.chunk_count == total


# -- read_section --------------------------------------------------------------------------------

_SHOWING = re.compile(r'^Showing chunks (\d+)-(\d+) of (\d+), in reading order\.$')
_CHUNK = re.compile(r'^chunk (\S+) \(section: (.*)\)$')
_CONTINUED = re.compile(
    r"^\[Continued: call docs_read_section with section='([^']+)' and offset=(\d+) for chunks (\d+)-(\d+)\.\]$"
)


@dataclass(frozen=True)
class Shown:
    """One chunk as ``read_section`` printed it: its id, section path and text (indentation removed)."""

    id: str
    path: str
    text: str


def parse_page(text: str) -> tuple[tuple[int, int, int], list[Shown], tuple[str, int] | None]:
    """``(first, last, total)``, the chunks printed, and the ``(section, offset)`` of the next call (if any)."""
    lines = text.splitlines()
    showing = _SHOWING.match(lines[1])
    assert showing is not None, text
    assert 'Chunk cut' not in text  # every chunk fits MAX_READ_CHARS: the text shown is whole
    chunks: list[tuple[str, str, list[str]]] = []
    for line in lines[2:]:
        if (m := _CHUNK.match(line)) is not None:
            chunks.append((m[1], m[2], []))
        elif line.startswith('[') or not chunks:
            assert not line or line.startswith('['), line
        else:
            assert line == '' or line.startswith('    '), line
            chunks[-1][2].append(line[4:])
    more = _CONTINUED.match(lines[-1])
    assert more is not None or lines[-1] == '[End of section.]', lines[-1]
    first, last, total = map(int, showing.groups())
    if more is not None:
        assert (int(more[3]), int(more[4])) == (last + 1, total)
    shown = [Shown(i, p, '\n'.join(body).strip('\n')) for i, p, body in chunks]
    return (first, last, total), shown, (more[1], int(more[2])) if more else None


async def read_whole(rag: ToolishRag[Any], section: str, document: str | None = None) -> tuple[str, list[Chunk]]:
    """Read a section to its end following the tool's own "offset=N" hints; returns its id and the chunks shown.

    Checks on the way that pages follow on (chunk a of each page is b+1 of the one before, the total
    never changes), that no chunk is shown twice, and that the text printed is each chunk's urtext (a piece of
    a split table below the table's header rows).
    """
    arguments: dict[str, Any] = {'section': section} if document is None else {'section': section, 'document': document}
    header = ''
    seen: list[Chunk] = []
    total: int | None = None
    while True:
        text, records = await call(rag, 'read_section', **arguments)
        header = header or text.splitlines()[0]
        assert text.splitlines()[0] == header  # the same section on every page
        (first, last, n), shown, more = parse_page(text)
        assert total in (None, n) and first == len(seen) + 1 and last == len(seen) + len(shown)
        total = n
        assert [s.id for s in shown] == [c.id for c in records]
        assert [s.text for s in shown] == [chunk_body(c) for c in records]  # urtext, a table's piece with its header
        assert [s.path for s in shown] == [' > '.join(c.section_path) for c in records]
        seen += records
        if more is None:
            break
        assert len(shown) < total
        arguments = {'section': more[0], 'offset': more[1]}
        assert more[1] == last
    assert len(seen) == total
    assert len({c.id for c in seen}) == len(seen)  # no chunk twice across pages
    section_id = header.removeprefix('Section ').split(':', 1)[0]
    return section_id, seen


def assert_rows_in_order(lines: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Each row is a line of ``lines`` (its non-empty ``|``-separated cells, in order), the rows in order."""
    at = 0
    for row in rows:
        cells = [c for c in row if c]
        for i in range(at, len(lines)):
            if [c.strip() for c in lines[i].split('|') if c.strip()] == cells:
                at = i + 1
                break
        else:
            raise AssertionError(f'row {cells} not found (in order) after line {at}')


async def test_read_section_returns_a_whole_spreadsheet_table(corpus: Corpus) -> None:
    import openpyxl

    path = DOCUMENTS / 'xlsx_fedramp_oscal_registry.xlsx'
    workbook = openpyxl.load_workbook(path, read_only=True, data_only=True)
    try:
        sheet = workbook['FedRAMP Extensions']
        rows = [[' '.join(str(v).split()) for v in r if v is not None] for r in sheet.iter_rows(values_only=True)]
    finally:
        workbook.close()
    rows = [r for r in rows if r]
    assert rows[1] == ['SSP', 'Field', 'Cardinality', 'XPath Notation', 'NOTES'] and len(rows) > 50
    _, chunks = await read_whole(corpus.rag, 'FedRAMP Extensions', document='xlsx fedramp oscal registry')
    assert len(chunks) > 5  # a table over many chunks, read back whole
    lines = '\n'.join(c.urtext for c in chunks).splitlines()
    assert lines[:3] == [  # a pipe table: its caption, header row and the line where the header ends
        'FedRAMP SSP Information',
        '| SSP | Field | Cardinality | XPath Notation | NOTES |',
        '| --- | --- | --- | --- | --- |',
    ]
    assert_rows_in_order(lines, rows)
    assert len([line for line in lines if line]) == len(rows) + 1  # and nothing else but that line


# Written by hand from the files: the Markdown table under "### OCR Engines", and the table in
# the DOCX's "Let's eat" section (its top-left cell is empty).
TABLES = {
    ('Model Catalog', 'OCR Engines'): [
        ['OCR Engine', 'Backend', 'Language Support', 'Notes'],
        ['Tesseract', 'CLI or tesserocr', '100+ languages', 'Most widely used, good accuracy'],
        ['EasyOCR', 'PyTorch', '80+ languages', 'GPU-accelerated, good for Asian languages'],
        ['RapidOCR', 'ONNX/OpenVINO/Paddle', 'Multiple', 'Fast, multiple backend options'],
        ['macOS Vision', 'Native macOS', '20+ languages', 'macOS only, excellent quality'],
        ['SuryaOCR', 'PyTorch', '90+ languages', 'Modern, good for complex layouts'],
        ['Auto', 'Automatic', 'Varies', 'Automatically selects best available engine'],
    ],
    ('Swimming in the lake', 'Let\u2019s eat'): [
        ['', 'Food', 'Calories per portion'],
        ['Leaves', 'Ash, Elm, Maple', '50'],
        ['Berries', 'Blueberry, Strawberry, Cranberry', '150'],
        ['Grain', 'Corn, Buckwheat, Barley', '200'],
    ],
}


@pytest.mark.parametrize(('document', 'section'), list(TABLES))
async def test_read_section_returns_a_whole_table(corpus: Corpus, document: str, section: str) -> None:
    _, chunks = await read_whole(corpus.rag, section, document=document)
    lines = '\n'.join(c.urtext for c in chunks).splitlines()
    assert_rows_in_order(lines, TABLES[document, section])


# -- a long section, page by page ----------------------------------------------------------------


async def test_read_section_over_many_pages_gives_back_the_source_span(corpus: Corpus) -> None:
    path = DOCUMENTS / 'md_pydantic_ai_gateway.md'
    source = read_file(path).source  # the page as its site renders it: admonition and tabs as plain text
    assert '!!! question' not in source and 'Questions?\n\nFor questions and feedback' in source
    section_id, chunks = await read_whole(corpus.rag, 'Usage', document='Pydantic AI Gateway')
    assert len(chunks) >= 20
    assert section_id == chunks[0].section_ids[1]  # '## Usage', under '# Pydantic AI Gateway'
    assert all(section_id in c.section_ids for c in chunks)
    numbers = [c.sequence_number for c in chunks]
    assert numbers == list(range(numbers[0], numbers[0] + len(chunks)))  # reading order, no gap

    # The span, found by hand: from the '## Usage' line to the next '## ' heading.
    start = source.index('\n## Usage\n') + 1
    end = source.index('\n## Routing groups\n') + 1
    bounds = [start]
    for c in chunks:
        assert c.start_char is not None and c.end_char is not None
        assert source[c.start_char : c.end_char] == c.urtext
        bounds += [c.start_char, c.end_char]
    bounds.append(end)
    # Between consecutive chunks (and before the first, after the last) lies only whitespace and
    # the subsections' heading lines: the chunks hold every other character of the span, once.
    assert bounds == sorted(bounds)
    gaps = [source[a:b] for a, b in zip(bounds[::2], bounds[1::2], strict=True)]
    headings = [line for gap in gaps for line in gap.splitlines() if line.strip()]
    assert headings == [
        '## Usage',
        '### Pydantic AI',
        '#### Passing API Key directly',
        '#### Using a different upstream provider',
        '### Claude Code',
        '### Codex',
        '### SDKs',
        '#### OpenAI SDK',
        '#### Anthropic SDK',
        '#### Vercel AI SDK',
    ]
