"""EPUB (2 and 3) with the standard library's zipfile and the HTML reader.

The spine (reading order) comes from the OPF package document; each XHTML item is read
like an HTML page, so chapter headings build the section tree. (EbookLib is AGPL, so it
is not used.)
"""

from __future__ import annotations

import io
import posixpath
import zipfile
from pathlib import Path
from xml.etree import ElementTree

from .._model import OutlineBuilder, ParsedDocument, ReadError
from .html import html_into_outline
from .text import title_from_path

__all__ = ['read_epub']

_NS = {
    'c': 'urn:oasis:names:tc:opendocument:xmlns:container',
    'opf': 'http://www.idpf.org/2007/opf',
    'dc': 'http://purl.org/dc/elements/1.1/',
}


def read_epub(data: bytes, path: Path) -> ParsedDocument:
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
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
        for ref in opf.findall('.//opf:spine/opf:itemref', _NS):
            href = manifest.get(ref.get('idref'))
            if not href:
                continue
            try:
                markup = zf.read(posixpath.normpath(posixpath.join(base, href)))
            except KeyError:
                continue
            html_into_outline(markup, outline)
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
