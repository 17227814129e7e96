"""Seconds per PDF page: the PDF reader (pdfium, layout, headings) against pypdf's plain text, same run.

Every PDF in ``../shared/data/documents`` and ``../shared/data/fidelity/docs`` with a text layer,
OCR off (OCR costs seconds per page: see docs/ingestion.md#ocr). CPU seconds of this process
(``time.process_time``), best of ``--repeat`` runs per file.

    python benchmarks/pdf_pages.py [--data ../shared/data] [--repeat 3]
"""

from __future__ import annotations

import argparse
import io
import logging
import time
from collections.abc import Callable
from pathlib import Path

import pypdf

from toolish_rag.ingest import ReadError, read_file
from toolish_rag.ingest._readers._ocr import OcrOptions


def _best(fn: Callable[[], object], repeat: int) -> float:
    best = float('inf')
    for _ in range(repeat):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def _pypdf_text(path: Path) -> None:
    reader = pypdf.PdfReader(io.BytesIO(path.read_bytes()))
    for page in reader.pages:
        page.extract_text()


NO_OCR = OcrOptions('never')
"""OCR off: the text layers alone."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--data', type=Path, default=Path(__file__).resolve().parents[2] / 'shared' / 'data')
    parser.add_argument('--repeat', type=int, default=3)
    args = parser.parse_args()
    logging.getLogger('pypdf').setLevel(logging.ERROR)
    files = sorted((args.data / 'documents').glob('*.pdf')) + sorted((args.data / 'fidelity' / 'docs').glob('*.pdf'))
    pages = ours = theirs = 0.0
    print(f'{"file":48} {"pages":>5} {"reader s/page":>14} {"pypdf s/page":>13}')
    for path in files:
        try:
            doc = read_file(path, ocr=NO_OCR)
        except ReadError as exc:
            print(f'{path.name:48} skipped: {exc}'[:110])
            continue
        n = len(doc.page_starts or [0])
        a = _best(lambda p=path: read_file(p, ocr=NO_OCR), args.repeat)
        b = _best(lambda p=path: _pypdf_text(p), args.repeat)
        pages, ours, theirs = pages + n, ours + a, theirs + b
        print(f'{path.name:48} {n:5d} {a / n:14.4f} {b / n:13.4f}')
    print(f'{"total":48} {pages:5.0f} {ours / pages:14.4f} {theirs / pages:13.4f}')


if __name__ == '__main__':
    main()
