"""Hostile files built in the tests: small on disk, huge or deep once read (issue 28 item 2).

The builders take their size: the default tests build the bombs scaled down, the ``slow`` ones full size.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

from toolish_rag.ingest._parse import parse_file

MB = 1024 * 1024


def _zip(members: dict[str, bytes | str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, 'w', zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buffer.getvalue()


def _xlsx(sheet_xml: str | bytes, extra: dict[str, bytes | str] | None = None) -> bytes:
    """A minimal workbook (one sheet) whose sheet1.xml is ``sheet_xml``."""
    return _zip(
        {
            '[Content_Types].xml': (
                '<?xml version="1.0" encoding="UTF-8"?>'
                '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
                '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
                '<Default Extension="xml" ContentType="application/xml"/>'
                '<Override PartName="/xl/workbook.xml" '
                'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
                '<Override PartName="/xl/worksheets/sheet1.xml" '
                'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
                '</Types>'
            ),
            '_rels/.rels': (
                '<?xml version="1.0" encoding="UTF-8"?>'
                '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
                '<Relationship Id="rId1" Target="xl/workbook.xml" '
                'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument"/>'
                '</Relationships>'
            ),
            'xl/workbook.xml': (
                '<?xml version="1.0" encoding="UTF-8"?>'
                '<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
                'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">'
                '<sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>'
            ),
            'xl/_rels/workbook.xml.rels': (
                '<?xml version="1.0" encoding="UTF-8"?>'
                '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
                '<Relationship Id="rId1" Target="worksheets/sheet1.xml" '
                'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet"/>'
                '</Relationships>'
            ),
            'xl/worksheets/sheet1.xml': sheet_xml,
            **(extra or {}),
        }
    )


def xlsx_huge_dimension() -> bytes:
    """1.5 KB: a sheet declaring ``A1:XFD1048576`` and holding two cells (iter_rows padded 16,384 columns)."""
    return _xlsx(
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
        '<dimension ref="A1:XFD1048576"/><sheetData>'
        '<row r="1"><c r="A1" t="inlineStr"><is><t>hello</t></is></c></row>'
        '<row r="1048576"><c r="XFD1048576" t="inlineStr"><is><t>world</t></is></c></row>'
        '</sheetData></worksheet>'
    )


def xlsx_comment_bomb(megabytes: int) -> bytes:
    """A sheet whose XML holds one ``megabytes`` MB comment (the expat feed was quadratic)."""
    body = b'<!--' + b'a' * (megabytes * MB) + b'-->'
    sheet = (
        b'<?xml version="1.0" encoding="UTF-8"?>'
        b'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">' + body + b'<sheetData>'
        b'<row r="1"><c r="A1" t="inlineStr"><is><t>hello</t></is></c></row></sheetData></worksheet>'
    )
    return _xlsx(sheet)


def nested_divs(depth: int) -> bytes:
    """``depth`` nested ``<div>`` elements (100k: the walk was quadratic, then RecursionError)."""
    return b'<html><body>' + b'<div>' * depth + b'deep text' + b'</div>' * depth + b'</body></html>'


def _epub(spine_refs: int, chapter: bytes) -> bytes:
    itemrefs = '<itemref idref="c1"/>' * spine_refs
    return _zip(
        {
            'mimetype': 'application/epub+zip',
            'META-INF/container.xml': (
                '<?xml version="1.0"?><container version="1.0" '
                'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
                '<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
                '</rootfiles></container>'
            ),
            'OEBPS/content.opf': (
                '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
                '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Bomb</dc:title></metadata>'
                '<manifest><item id="c1" href="c1.xhtml" media-type="application/xhtml+xml"/></manifest>'
                f'<spine>{itemrefs}</spine></package>'
            ),
            'OEBPS/c1.xhtml': chapter,
        }
    )


def epub_repeated_chapter(refs: int, chapter_kb: int) -> bytes:
    """A spine listing one chapter ``refs`` times (4 KB listing a 1.1 MB chapter 128 times: 834 MB)."""
    words = b' '.join(b'word%d' % (i % 997) for i in range(chapter_kb * 1024 // 8))
    chapter = b'<html><body><h1>Chapter</h1><p>' + words + b'</p></body></html>'
    return _epub(refs, chapter)


def epub_comment_bomb(megabytes: int) -> bytes:
    """A chapter holding one ``megabytes`` MB comment."""
    chapter = b'<html><body><h1>Chapter</h1><!--' + b'a' * (megabytes * MB) + b'--><p>text</p></body></html>'
    return _epub(1, chapter)


def docx_empty_paragraphs(megabytes: int) -> bytes:
    """A DOCX whose document.xml is ``megabytes`` MB of ``<w:p/>`` (256 MB: peak 5.8 GB)."""
    return docx(b'<w:p><w:r><w:t>hello</w:t></w:r></w:p>' + b'<w:p/>' * (megabytes * MB // 6))


def docx(body: bytes) -> bytes:
    """A minimal DOCX whose ``w:body`` holds ``body`` (WordprocessingML with the ``w:`` prefix)."""
    ns = 'http://schemas.openxmlformats.org/wordprocessingml/2006/main'
    document = (
        f'<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="{ns}"><w:body>'.encode()
        + body
        + b'</w:body></w:document>'
    )
    return _zip(
        {
            '[Content_Types].xml': (
                '<?xml version="1.0" encoding="UTF-8"?>'
                '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
                '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
                '<Default Extension="xml" ContentType="application/xml"/>'
                '<Override PartName="/word/document.xml" '
                'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
                '</Types>'
            ),
            '_rels/.rels': (
                '<?xml version="1.0" encoding="UTF-8"?>'
                '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
                '<Relationship Id="rId1" Target="word/document.xml" '
                'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument"/>'
                '</Relationships>'
            ),
            'word/document.xml': document,
        }
    )


def write(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


def misbehaving_parse(path: str, *args: Any) -> Any:
    """A parse target for the supervised workers: ``slow*`` files sleep, ``hungry*`` files eat memory.

    Module-level, so the spawned workers import it; other files go to the real `parse_file`.
    """
    import time

    name = Path(path).name
    if name.startswith('slow'):
        time.sleep(600)
    if name.startswith('hungry'):
        held = []
        for _ in range(64):  # up to 3.2 GB, 50 MB at a time, so the watchdog sees it grow
            held.append(b'x' * (50 * MB))
            time.sleep(0.02)
    if name.startswith('crash'):
        import os

        os._exit(3)
    return parse_file(path, *args)
