"""EPUB (2 and 3) with the standard library's zipfile and the HTML reader.

The spine (reading order) comes from the OPF package document; each XHTML item is read
like an HTML page, so chapter headings build the section tree. (EbookLib is AGPL, so it
is not used.)
"""

from __future__ import annotations

import posixpath
import zipfile
from pathlib import Path
from xml.etree import ElementTree

from .._limits import check_time, current_limits
from .._model import OutlineBuilder, ParsedDocument, ReadError
from ._containers import open_container
from .html import html_into_outline
from .text import title_from_path

__all__ = ['read_epub']

VERSION = 0
"""Bump when the same bytes read differently: its files are then read again (docs/ingestion.md#reader-versions)."""

_NS = {
    'c': 'urn:oasis:names:tc:opendocument:xmlns:container',
    'opf': 'http://www.idpf.org/2007/opf',
    'dc': 'http://purl.org/dc/elements/1.1/',
}


def read_epub(data: bytes, path: Path) -> ParsedDocument:
    try:
        zf = open_container(data, 'EPUB')
    except zipfile.BadZipFile as exc:
        raise ReadError(f'corrupt EPUB (not a readable ZIP container): {exc}') from None
    with zf:
        try:
            container = ElementTree.fromstring(zf.read('META-INF/container.xml'))
            rootfile = container.find('.//c:rootfile', _NS)
            if rootfile is None:
                raise ReadError('corrupt EPUB: container.xml names no package document')
            opf_path = rootfile.get('full-path', '')
            opf = ElementTree.fromstring(zf.read(opf_path))
        except (KeyError, ElementTree.ParseError) as exc:
            raise ReadError(f'corrupt EPUB: {exc}') from None
        base = posixpath.dirname(opf_path)
        title_el = opf.find('.//dc:title', _NS)
        title = ' '.join((title_el.text or '').split()) if title_el is not None else ''
        creator_el = opf.find('.//dc:creator', _NS)
        manifest = {
            item.get('id'): item.get('href', '')
            for item in opf.findall('.//opf:manifest/opf:item', _NS)
            if item.get('media-type') in ('application/xhtml+xml', 'text/html')
        }
        outline = OutlineBuilder()
        _read_spine(zf, opf, manifest, base, outline)
    if not outline.length:
        raise ReadError('no extractable text in the EPUB spine')
    metadata = {'author': ' '.join(creator_el.text.split())} if creator_el is not None and creator_el.text else {}
    return ParsedDocument(
        source=outline.text(),
        title=title or title_from_path(path),
        root=outline.root,
        format='epub',
        metadata=dict(metadata),
    )


def _read_spine(
    zf: zipfile.ZipFile, opf: ElementTree.Element, manifest: dict[str | None, str], base: str, outline: OutlineBuilder
) -> None:
    """Each spine chapter into ``outline`` once (a spine listing one chapter 128 times reads it once),
    stopping at the ``text_chars`` limit."""
    limit = current_limits().text_chars
    read: set[str] = set()
    for ref in opf.findall('.//opf:spine/opf:itemref', _NS):
        href = manifest.get(ref.get('idref'))
        if not href:
            continue
        name = posixpath.normpath(posixpath.join(base, href))
        if name in read:
            continue
        read.add(name)
        try:
            markup = zf.read(name)
        except KeyError:
            continue
        html_into_outline(markup, outline)
        if outline.length > limit:
            raise ReadError(f'the EPUB holds more than the {limit:,}-character limit of text')
        check_time()
