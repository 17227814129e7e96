"""Images (PNG, JPEG, TIFF with all its frames) read by OCR: one page per frame.

An image with no text in it (a photo) or whose OCR reads as noise (a logo, an icon, an
illustration: `judge_page`) is skipped, not failed, with the reason; a frame of noise in a
text TIFF is left empty. With ``ocr='never'`` images are skipped too. See docs/ingestion.md#ocr.
"""

from __future__ import annotations

import io
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from .._limits import check_time
from .._model import OutlineBuilder, ParsedDocument, ReadError
from ._boxes import locate_lines, ocr_lines
from ._ocr import DEFAULT_OCR, NoTextFound, OcrOptions, OcrPage, ocr_page, require_tesseract
from ._ocr_noise import TextVerdict, judge_page
from .text import paragraph_spans, title_from_path

if TYPE_CHECKING:
    from PIL.Image import Image

__all__ = ['IMAGE_SUFFIXES', 'read_image']

VERSION = 3
"""Bump when the same bytes read differently: its files are then read again (docs/ingestion.md#reader-versions)."""

IMAGE_SUFFIXES = ('.png', '.jpg', '.jpeg', '.tif', '.tiff')

MAX_PIXELS = 100_000_000
"""Pixels of one frame (a 10,000 x 10,000 scan); a larger one fails alone (a decompression bomb)."""

MIN_SIDE = 24
"""Frames smaller than this (pixels) on either side are icons: no text to read."""


def read_image(data: bytes, path: Path, *, ocr: OcrOptions = DEFAULT_OCR) -> ParsedDocument:
    """An image file's text as Tesseract reads it in ``ocr``'s languages; ``ocr='never'``: skipped (`NoTextFound`)."""
    if ocr.mode == 'never':
        raise NoTextFound("an image is read only by OCR, which is off (ocr='never')")
    require_tesseract()
    image = _opened(data, path)
    pages, verdicts = _read_frames(image, data, ocr)
    texts = [page.text if page is not None else '' for page in pages]
    if not any(t.strip() for t in texts):
        noisy = max(verdicts, key=lambda v: v.words, default=TextVerdict(0, 0, 0.0))
        raise NoTextFound(noisy.reason())
    outline = OutlineBuilder()
    ocr_pages: list[int] = []
    for number, (text, read) in enumerate(zip(texts, pages, strict=True), 1):
        outline.start_page()
        ocr_pages.append(number)
        headers = dict(read.tables()) if read is not None else {}
        for start, end in paragraph_spans(text):
            header = headers.get(text[start:end])
            outline.block(text[start:end], 'table' if header else 'text', header=header)
    source = outline.text()
    ends = [*outline.page_starts[1:], len(source)]
    boxes = [
        box
        for number, (page, start, end) in enumerate(zip(pages, outline.page_starts, ends, strict=True), 1)
        if page is not None
        for box in locate_lines(source[start:end], ocr_lines(page), number, start)
    ]
    return ParsedDocument(
        source=source,
        title=title_from_path(path),
        root=outline.root,
        format=image.format.lower() if image.format else path.suffix.lstrip('.').lower(),
        metadata={'page_count': len(pages)},
        page_starts=outline.page_starts,
        ocr_pages=ocr_pages,
        boxes=boxes,
    )


def _opened(data: bytes, path: Path) -> Image:
    """The decoded image; a decompression bomb, unknown or corrupt data is a `ReadError` naming it."""
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter('error', Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
            image.load()
    except UnidentifiedImageError:
        raise ReadError(f'unreadable image: not a {path.suffix.lstrip(".").upper() or "known"} image') from None
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ReadError(f'unreadable image: {exc}') from None
    except (OSError, ValueError, SyntaxError) as exc:  # truncated or corrupt data
        raise ReadError(f'corrupt image: {exc}') from None
    return image


def _read_frames(image: Image, data: bytes, ocr: OcrOptions) -> tuple[list[OcrPage | None], list[TextVerdict]]:
    """Each frame OCR'd (``None``: too small, or not text by `judge_page`), with the verdicts of those read."""
    from PIL import ImageSequence

    dpi = image.info.get('dpi')
    resolution = float(dpi[0]) if isinstance(dpi, tuple) and dpi and dpi[0] else None
    pages: list[OcrPage | None] = []
    verdicts: list[TextVerdict] = []
    try:
        for frame in ImageSequence.Iterator(image):
            check_time()
            width, height = frame.size
            if width * height > MAX_PIXELS:
                raise ReadError(f'a frame of {width} x {height} pixels is over the {MAX_PIXELS:,}-pixel limit')
            if min(width, height) < MIN_SIDE:
                pages.append(None)
                continue
            single = getattr(image, 'n_frames', 1) == 1 and not _has_alpha(frame)
            page = ocr_page(
                _flattened(frame),
                resolution if resolution and resolution >= 50 else None,
                source=data if single and image.format in _TESSERACT_READS else None,
                languages=ocr.languages,
            )
            verdicts.append(judge_page(page))
            pages.append(page if verdicts[-1].is_text else None)
    except (OSError, ValueError, EOFError) as exc:
        raise ReadError(f'corrupt image: {exc}') from None
    return pages, verdicts


_TESSERACT_READS = frozenset({'PNG', 'JPEG', 'TIFF'})
"""Formats Tesseract reads itself: a one-frame file of these is given to it as it is (as ``tesseract FILE``)."""


def _has_alpha(frame: Image) -> bool:
    return frame.mode in ('RGBA', 'LA', 'PA') or (frame.mode == 'P' and 'transparency' in frame.info)


def _flattened(frame: Image) -> Image:
    """The frame in 8-bit grey, a transparent background made white (OCR reads dark on light)."""
    from PIL import Image as PILImage

    if _has_alpha(frame):
        rgba = frame.convert('RGBA')
        background = PILImage.new('RGBA', rgba.size, (255, 255, 255, 255))
        return PILImage.alpha_composite(background, rgba).convert('L')
    return frame.convert('L')
