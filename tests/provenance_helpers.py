"""Born-digital PDFs written with pdfium for the provenance tests (text at known places), and how boxes are compared."""

from __future__ import annotations

import ctypes
import io
from pathlib import Path

import pypdfium2 as pdfium
import pypdfium2.raw as raw

Line = tuple[float, float, float, str]
"""``(x, baseline y, font size, text)`` in PDF points, y up."""


def write_pdf(
    pages: list[list[Line]], path: Path, crop: tuple[float, float, float, float] | None = None, turned: bool = False
) -> Path:
    """A born-digital PDF of Helvetica lines, each page 612 x 792 points, cropped to ``crop`` when given;
    ``turned``: pages of ``/Rotate 90`` whose lines are drawn upwards, so they read left to right as displayed."""
    pdf = pdfium.PdfDocument.new()
    for lines in pages:
        page = pdf.new_page(612, 792)
        for x, y, size, text in lines:
            obj = raw.FPDFPageObj_NewTextObj(pdf.raw, b'Helvetica', ctypes.c_float(size))
            buffer = ctypes.create_string_buffer((text + '\0').encode('utf-16-le'))
            raw.FPDFText_SetText(obj, ctypes.cast(buffer, ctypes.POINTER(raw.FPDF_WCHAR)))
            raw.FPDFPageObj_Transform(obj, *((0, 1, -1, 0) if turned else (1, 0, 0, 1)), x, y)
            raw.FPDFPage_InsertObject(page.raw, obj)
        raw.FPDFPage_GenerateContent(page.raw)
        if crop is not None:
            raw.FPDFPage_SetCropBox(page.raw, *crop)
        if turned:
            page.set_rotation(90)
    out = io.BytesIO()
    pdf.save(out)
    path.write_bytes(out.getvalue())
    return path


def iou(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def plumber_box(
    path: Path, text: str, page: int = 0, crop: tuple[float, float, float, float] | None = None
) -> tuple[float, float, float, float]:
    """pdfplumber's box of the first run of characters spelling ``text`` (spaces aside), as fractions of its page
    (of ``crop``, ``(x0, top, x1, bottom)`` from the top left, where the page is cropped: pdfplumber measures
    from the MediaBox)."""
    import pdfplumber

    with pdfplumber.open(path) as pdf:
        p = pdf.pages[page]
        chars = [c for c in p.chars if c['text'].strip()]
        wanted = text.replace(' ', '')
        spelled = ''.join(c['text'] for c in chars)
        at = spelled.index(wanted)
        run = chars[at : at + len(wanted)]
        x0, top, x1, bottom = crop or p.bbox
        width, height = x1 - x0, bottom - top
        return (
            (min(c['x0'] for c in run) - x0) / width,
            (min(c['top'] for c in run) - top) / height,
            (max(c['x1'] for c in run) - x0) / width,
            (max(c['bottom'] for c in run) - top) / height,
        )
