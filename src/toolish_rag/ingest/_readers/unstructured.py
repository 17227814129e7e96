"""The ``unstructured`` backend: the library's offline partitioners, their elements mapped onto sections and blocks.

``reader='unstructured'`` (``--reader unstructured``) reads DOCX, PPTX, XLSX, HTML, Markdown and
plain text with ``unstructured``; other formats keep the default readers (its PDF and image
partitioners import ``unstructured-inference``, a torch vision stack this project does not
install; EPUB and RTF need pandoc). Nothing is fetched: telemetry is opted out, and the spaCy
model ``unstructured`` would download for its text heuristics is replaced by spaCy's blank
English pipeline unless ``en_core_web_sm`` is installed. See docs/ingestion.md#the-unstructured-backend.
"""

from __future__ import annotations

import importlib.metadata
import io
import os
import zipfile
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from ..._extras import install_command
from .._limits import check_time, current_limits
from .._model import OutlineBuilder, ParsedDocument, ReadError
from ._containers import open_container
from ._tables import SpanCell, add_table, span_grid
from .html import check_shape
from .office import XML_DEPTH_LIMIT, parse_failure
from .text import decode_text, title_from_path

__all__ = ['INSTALL_UNSTRUCTURED', 'SUFFIXES', 'VERSION', 'backend_key', 'read_unstructured', 'require_unstructured']

VERSION = 2
"""Bump when the same bytes read differently: its files are then read again (docs/ingestion.md#reader-versions)."""

INSTALL_UNSTRUCTURED = f'the unstructured reader backend is not installed: {install_command("unstructured")}'

SUFFIXES: dict[str, str] = {
    '.docx': 'docx',
    '.pptx': 'pptx',
    '.xlsx': 'xlsx',
    '.html': 'html',
    '.htm': 'html',
    '.xhtml': 'html',
    '.md': 'md',
    '.markdown': 'md',
    '.mdown': 'md',
    '.mkd': 'md',
    '.txt': 'text',
    '.text': 'text',
}
"""Extension -> ``unstructured`` partitioner this backend reads with; other extensions keep the default reader."""

_OFFLINE_ENV = {'SCARF_NO_ANALYTICS': 'true', 'DO_NOT_TRACK': 'true', 'UNSTRUCTURED_DISABLE_NOTICE': '1'}
"""What ``unstructured`` honours to send no usage ping and print no banner."""

_SKIPPED = frozenset({'Header', 'Footer', 'PageNumber', 'PageBreak', 'Image', 'Formula'})
_LIST_INDENT = '  '


def _library_version() -> str | None:
    try:
        return importlib.metadata.version('unstructured')
    except importlib.metadata.PackageNotFoundError:
        return None


def backend_key(path: Path) -> str | None:
    """``'unstructured/<VERSION>/<library version>'`` for a file this backend reads, else ``None`` (default reader)."""
    if path.suffix.lower() not in SUFFIXES:
        return None
    return f'unstructured/{VERSION}/{_library_version() or "missing"}'


def require_unstructured() -> None:
    """Fail before any work (``RuntimeError`` naming the extra) when ``unstructured`` cannot be used."""
    try:
        _partitioners()
    except ImportError as exc:
        raise RuntimeError(f'{INSTALL_UNSTRUCTURED} ({exc})') from None


@cache
def _partitioners() -> dict[str, Callable[..., list[Any]]]:
    """Import ``unstructured`` offline, once per process: its partitioners by name."""
    for key, value in _OFFLINE_ENV.items():
        os.environ.setdefault(key, value)
    import spacy
    import unstructured.nlp.tokenize as tokenize
    from unstructured.partition.docx import partition_docx
    from unstructured.partition.html import partition_html
    from unstructured.partition.md import partition_md
    from unstructured.partition.pptx import partition_pptx
    from unstructured.partition.text import partition_text
    from unstructured.partition.xlsx import partition_xlsx

    if not spacy.util.is_package('en_core_web_sm'):  # it would download and install it at first use
        blank = spacy.blank('en')
        blank.add_pipe('sentencizer')
        tokenize._get_nlp = lambda: blank  # type: ignore[assignment]  # instead of a download at first use
    return {
        'docx': partition_docx,
        'pptx': partition_pptx,
        'xlsx': partition_xlsx,
        'html': partition_html,
        'md': partition_md,
        'text': partition_text,
    }


def read_unstructured(data: bytes, path: Path) -> ParsedDocument:
    """Partition ``data`` with ``unstructured`` and map its elements onto a `ParsedDocument`."""
    kind = SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise ReadError(f'the unstructured backend does not read {path.suffix or "(no extension)"!r} files')
    try:
        partition = _partitioners()[kind]
    except ImportError as exc:
        raise ReadError(f'{INSTALL_UNSTRUCTURED} ({exc})') from None
    warnings: list[str] = []
    _check_bounds(data, kind)
    try:
        if kind == 'text':
            elements = partition(text=decode_text(data), languages=['eng'])
        elif kind == 'md':  # its HTML, checked as an HTML file is, then partitioned as partition_md would
            markup = _markdown_html(decode_text(data))
            elements = _partitioners()['html'](text=markup, languages=['eng'], metadata_file_type=_md_type())
        elif kind == 'html':
            elements = partition(file=io.BytesIO(data), languages=['eng'])
        else:
            elements = partition(file=io.BytesIO(data), languages=['eng'], infer_table_structure=True)
    except ReadError:
        raise
    except Exception as exc:  # the library's own errors on a bad file: the file fails alone, with the type
        if kind in ('docx', 'pptx', 'xlsx') and str(exc).startswith('Excessive depth in document'):
            raise parse_failure(kind.upper(), exc) from None
        detail = ' '.join(str(exc).split())[:200]
        raise ReadError(f'unstructured could not read the file ({type(exc).__name__}: {detail})') from None
    check_time()
    return _document(elements, path, kind, warnings)


def _check_bounds(data: bytes | str, kind: str) -> None:
    """The checks the default readers make before a parser sees the bytes: a container within the
    `IngestLimits` (unpacked size, ratio, CRCs, XML tags), markup within the element and depth limits.

    Markup nested deeper than lxml's `XML_DEPTH_LIMIT` is refused: ``unstructured`` parses it with
    lxml, which silently leaves out what is deeper (a page of 255 nested ``div`` read as no text).
    """
    if kind in ('docx', 'pptx', 'xlsx'):
        try:
            open_container(data if isinstance(data, bytes) else data.encode(), kind.upper()).close()
        except zipfile.BadZipFile as exc:
            raise ReadError(f'corrupt {kind.upper()} (not a readable ZIP container): {exc}') from None
    elif kind in ('html', 'md'):  # Markdown: the HTML partition_md makes of it
        what = 'HTML' if kind == 'html' else 'Markdown (as HTML)'
        tags = data.count(b'<') if isinstance(data, bytes) else data.count('<')
        if tags > current_limits().elements:
            raise ReadError(f'more than the {current_limits().elements:,}-element limit of {what} tags')
        from bs4 import BeautifulSoup

        check_shape(BeautifulSoup(data, 'lxml'), XML_DEPTH_LIMIT, ' of lxml, which the unstructured backend uses', what)


def _md_type() -> Any:
    from unstructured.file_utils.model import FileType

    return FileType.MD


def _markdown_html(text: str) -> str:
    """Markdown as ``partition_md`` turns it into HTML (its extensions), checked as an HTML file is."""
    import markdown  # type: ignore[import-untyped]
    from unstructured.partition.md import _DEFAULT_MARKDOWN_EXTENSIONS

    markup: str = markdown.markdown(text, extensions=list(_DEFAULT_MARKDOWN_EXTENSIONS))
    _check_bounds(markup, 'md')
    return markup


def _document(elements: Sequence[Any], path: Path, kind: str, warnings: list[str]) -> ParsedDocument:
    outline = OutlineBuilder()
    title: str | None = None
    page: int | None = None
    pending_list: list[tuple[int, str]] = []

    def flush_list() -> None:
        if pending_list:  # nesting by category depth, the shallowest item of the run at the margin
            top = min(depth for depth, _ in pending_list)
            outline.block('\n'.join(f'{_LIST_INDENT * (d - top)}- {text}' for d, text in pending_list), 'list')
            pending_list.clear()

    for element in elements:
        category = getattr(element, 'category', 'Text')
        meta = getattr(element, 'metadata', None)
        number = getattr(meta, 'page_number', None)
        if isinstance(number, int) and number != page:
            flush_list()
            page = number
            outline.start_page()
            sheet = getattr(meta, 'page_name', None)
            if kind == 'xlsx' and isinstance(sheet, str) and sheet.strip():  # one section per sheet, as by default
                outline.heading(sheet, 1)
        if category in _SKIPPED:
            continue
        text = str(getattr(element, 'text', '') or '').strip()
        depth = getattr(meta, 'category_depth', None)
        depth = depth if isinstance(depth, int) and depth >= 0 else 0
        if category == 'ListItem':
            if text:
                pending_list.append((depth, ' '.join(text.split())))
            continue
        flush_list()
        if category == 'Title' and text:  # a heading, and a line of its section: its text is indexed, never dropped
            if title is None:
                title = ' '.join(text.split())
            section = outline.heading(text, depth + (2 if kind == 'xlsx' else 1))
            outline.add_span(section.start, outline.length)
        elif category == 'Table':
            rows = _html_rows(getattr(meta, 'text_as_html', None))
            if rows is None or add_table(outline, rows) is None:
                outline.block(text)
        elif text:
            outline.block(text)
    flush_list()
    source = outline.text()
    if not source.strip():
        raise ReadError('no extractable text')
    return ParsedDocument(
        source=source,
        title=title or title_from_path(path),
        root=outline.root,
        format={'md': 'markdown'}.get(kind, kind),  # the default readers' names
        page_starts=outline.page_starts or None,
        warnings=warnings,
    )


def _html_rows(html: object) -> list[list[str]] | None:
    """The grid of a table element's ``text_as_html`` (`span_grid`: merged cells within its bounds)."""
    if not isinstance(html, str) or '<t' not in html:
        return None
    from bs4 import BeautifulSoup

    table = BeautifulSoup(html, 'lxml').find('table')
    if table is None:
        return None
    trs = table.find_all('tr')
    rows = [
        [
            SpanCell(' '.join(cell.get_text(' ').split()), _span(cell.get('colspan')), _span(cell.get('rowspan')))
            for cell in tr.find_all(['td', 'th'])
        ]
        for tr in trs
    ]
    grid = span_grid(rows)
    return grid or None


def _span(value: object) -> int:
    try:
        return max(1, min(int(str(value)), 1000))
    except (TypeError, ValueError):
        return 1
