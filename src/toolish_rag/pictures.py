"""A citation on its page: the page drawn (pypdfium2 for PDFs, the image for scans) with the quote's boxes.

Pixels come only from a file under a root the caller names (`PageFiles`) whose bytes are the
ones ingested (the digest a PDF's or image's fingerprint carries): never from a path a record
names on its own. Every picture is bounded: at most `MAX_SIDE` pixels on its longer side
(a 20,000 x 20,000-point page is drawn small, never whole). The inspector, ``toolish-rag show``
and `citation_picture` draw the same picture. See docs/inspect.md#citation-pages.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlparse

from .citations import CitationSource, check_quote
from .citations._quotes import DEFAULT_MIN_QUOTE_CHARS
from .content import Chunk
from .errors import InvalidRequestError
from .protocols import DocumentStore
from .retriever import Retriever

__all__ = [
    'MAX_FILE_BYTES',
    'MAX_SIDE',
    'CitationPicture',
    'PageFiles',
    'PagePicture',
    'citation_picture',
    'render_page',
]

MAX_SIDE = 1600
"""The longest side of a drawn page, in pixels (a thumbnail asks for less)."""

MAX_FILE_BYTES = 256 * 1024 * 1024
"""A larger file is not read to draw a page of it."""

_PDF_SUFFIXES = frozenset({'.pdf'})
_IMAGE_SUFFIXES = frozenset({'.png', '.jpg', '.jpeg', '.tif', '.tiff'})
_HIGHLIGHT = (255, 200, 0, 110)
_OUTLINE = (220, 120, 0, 255)

Box = tuple[float, float, float, float]
Kind = Literal['pdf', 'image']


@dataclass(frozen=True)
class PagePicture:
    """A drawn page: PNG bytes and their size in pixels."""

    png: bytes
    width: int
    height: int


@dataclass(frozen=True)
class CitationPicture:
    """A verified quote (its `CitationSource`: page, boxes) and its page drawn with the boxes highlighted
    (``picture`` is ``None`` where no file may be drawn: no page, no root holding it, or changed since)."""

    chunk: Chunk
    source: CitationSource
    picture: PagePicture | None
    drawable: bool = False
    """Whether its page can be drawn (a file under a root, unchanged since ingested, holding the page)."""


@dataclass(frozen=True)
class PageFiles:
    """The files a page may be drawn from: under one of ``roots``, with the bytes the store's document was read from."""

    roots: tuple[Path, ...] = ()

    @classmethod
    def under(cls, *roots: str | Path) -> PageFiles:
        return cls(tuple(Path(r).expanduser().resolve() for r in roots))

    def locate(self, uri: str, fingerprint: str | None) -> tuple[bytes, Kind] | None:
        """The bytes of the file ``uri`` names and their kind, when it is under a root and is the file ingested."""
        from .ingest._fingerprint import bytes_digest

        digest = bytes_digest(fingerprint)
        parsed = urlparse(uri)
        if digest is None or parsed.scheme != 'file' or not self.roots:
            return None
        try:
            path = Path(unquote(parsed.path)).resolve(strict=True)
        except (OSError, RuntimeError):
            return None
        suffix = path.suffix.lower()
        kind: Kind | None = 'pdf' if suffix in _PDF_SUFFIXES else 'image' if suffix in _IMAGE_SUFFIXES else None
        if kind is None or not any(path.is_relative_to(root) for root in self.roots):
            return None
        try:
            if not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
                return None
            data = path.read_bytes()
        except OSError:
            return None
        return (data, kind) if 'sha256:' + hashlib.sha256(data).hexdigest() == digest else None


def render_page(
    data: bytes, kind: Kind, page: int, boxes: Sequence[Box] = (), *, max_side: int = MAX_SIDE
) -> PagePicture | None:
    """Page ``page`` (1-based) of a PDF or image file, at most ``max_side`` pixels on its longer side, with
    ``boxes`` (fractions of the page) highlighted; ``None`` for a page the file does not have or cannot draw."""
    max_side = max(16, min(max_side, MAX_SIDE))
    image = _pdf_page(data, page, max_side) if kind == 'pdf' else _image_frame(data, page, max_side)
    if image is None:
        return None
    if boxes:
        image = _highlighted(image, boxes)
    out = io.BytesIO()
    image.save(out, format='PNG', optimize=False, compress_level=1)
    return PagePicture(out.getvalue(), image.width, image.height)


def _pdf_page(data: bytes, page: int, max_side: int) -> Any:
    import pypdfium2 as pdfium

    from .ingest._readers.pdf import _PDFIUM

    with _PDFIUM:
        try:
            pdf = pdfium.PdfDocument(data)
        except pdfium.PdfiumError:
            return None
        try:
            if not 1 <= page <= len(pdf):
                return None
            handle = pdf[page - 1]
            width, height = handle.get_size()  # the page as displayed: CropBox, rotation applied
            scale = min(2.0, max_side / max(width, height, 1.0))
            bitmap = handle.render(scale=scale)
            try:
                return bitmap.to_pil().convert('RGB')
            finally:
                bitmap.close()
                handle.close()
        finally:
            pdf.close()


def _image_frame(data: bytes, page: int, max_side: int) -> Any:
    from PIL import Image

    from .ingest._readers.image import MAX_PIXELS

    try:
        with warnings.catch_warnings():
            warnings.simplefilter('error', Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
            if image.width * image.height > MAX_PIXELS or page < 1 or page > getattr(image, 'n_frames', 1):
                return None
            image.seek(page - 1)
            image.draft('RGB', (max_side, max_side))  # JPEG: decoded at a smaller size to begin with
            frame = image.convert('RGB')
    except (OSError, ValueError, EOFError, SyntaxError, Image.DecompressionBombError, Image.DecompressionBombWarning):
        return None
    frame.thumbnail((max_side, max_side))
    return frame


def _highlighted(image: Any, boxes: Sequence[Box]) -> Any:
    from PIL import Image, ImageDraw

    overlay = Image.new('RGBA', image.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    w, h = image.size
    line = max(1, w // 600)
    for x0, top, x1, bottom in boxes:
        pad = line + (bottom - top) * h * 0.15  # boxes are one em tall: the outline drawn just outside the glyphs
        rect = (x0 * w - pad, top * h - pad, max(x0 * w + 1, x1 * w) + pad, max(top * h + 1, bottom * h) + pad)
        draw.rectangle(rect, fill=_HIGHLIGHT, outline=_OUTLINE, width=line)
    return Image.alpha_composite(image.convert('RGBA'), overlay).convert('RGB')


async def page_file(retriever: Retriever, chunk: Chunk, files: PageFiles) -> tuple[bytes, Kind] | None:
    """The verified file of ``chunk``'s document (read through ``files``), or ``None``."""
    store = retriever.store
    if not files.roots or not isinstance(store, DocumentStore):
        return None
    info = next((d for d in await store.list_documents() if d.id == chunk.document_id), None)
    if info is None:
        return None
    return await asyncio.to_thread(files.locate, info.uri, info.fingerprint)


async def citation_picture(
    retriever: Retriever,
    chunk_id: str,
    quote: str,
    files: PageFiles,
    *,
    max_side: int = MAX_SIDE,
    min_quote_chars: int = DEFAULT_MIN_QUOTE_CHARS,
    draw: bool = True,
) -> CitationPicture | str:
    """``quote`` verified in chunk ``chunk_id`` (read through ``retriever``'s scope) and its page drawn with the
    quote's boxes; or the reason it cannot be (a chunk missing or out of scope, a quote not in it).

    ``draw=False``: the file is found and checked but not drawn (`CitationPicture.drawable` says whether it could be).
    """
    try:
        record = await retriever.get(chunk_id)
    except InvalidRequestError as e:
        return str(e)
    if not isinstance(record, Chunk):
        return 'no chunk with this id in this scope'
    source = check_quote(record, quote, min_quote_chars=min_quote_chars)
    if isinstance(source, str):
        return source
    picture, drawable = None, False
    if source.page is not None:
        found = await page_file(retriever, record, files)
        drawable = found is not None
        if found is not None and draw:
            picture = await asyncio.to_thread(
                render_page, found[0], found[1], source.page, source.boxes, max_side=max_side
            )
            drawable = picture is not None
    return CitationPicture(record, source, picture, drawable)
