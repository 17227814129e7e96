"""Provenance: are pages, quote boxes and OCR right, and how fast is a citation's page drawn.

One command, every figure measured in the same run against an independent reader:

* **boxes, text layers**: random exact quotes (4-14 words) of chunks of every born-digital PDF in
  ``../shared/data/fidelity`` and ``documents``, verified with `check_quote`; the boxes of the span it cites
  against pdfplumber's character boxes of the same characters, found without our boxes (`box_truth`): prose
  spelled once (whitespace aside, NFKC) in pdfplumber's order, else in the drawn order (line by line), else
  its words chained where they stand (columns, line numbers, right to left); a table quote (holding a ``|``:
  our chunk's text of a table is a rendering) cut into cells and rows, each word matched to a drawn word,
  chained cell after cell to the right and row after row down, the header's ``---`` rule not looked for, a
  merged cell the rendering repeats matched to its words drawn once;
  repeated text widened by its chunk's own words around it until found once (a paragraph printed twice: the
  k-th of n). Both sides' boxes are merged into one box a line (pdfplumber knows no pieces or cells), as
  fractions of the page as displayed (pdfplumber measures from the MediaBox, so its boxes are moved into the
  CropBox; it turns ``/Rotate`` pages itself). Goal: IoU >= 0.9 on >= 95% of quotes; quotes in tables are
  also given apart, and the IoU across the page only; the quotes not scored are counted by why (``missing``:
  spelled otherwise by pdfplumber; ``repeated``: still found twice).
* **boxes, OCR**: the same for OCR'd pages (images, scanned PDFs) against the word boxes of a
  separate plain ``tesseract FILE - tsv`` run.
* **pages**: every chunk's page holds its text (its first 30 non-space characters in pdfplumber's
  text of that page), and every quote's page holds the quote.
* **OCR recall**: word recall against the truth for every image and scanned PDF in ``fidelity``,
  ours and plain ``tesseract FILE -`` (a PDF page rendered at 300 dpi first), same run.
* **storage**: bytes of a boxed chunk's boxes in JSON and the time to write and read them, the packed
  string stores keep against the list form written before (``box_storage.py``), text layers and OCR'd.
* **render**: the inspector's citation page (`toolish_rag.inspect` page picture) of a 50-page PDF,
  warm, median of 10 (goal 300 ms).

    python benchmarks/provenance_bench.py [--data ../shared/data] [--quotes 20] [--json out.json]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from box_storage import storage_row, summary  # noqa: E402
from box_truth import Unscored, truth_run  # noqa: E402
from ingest_fidelity import normalise, words  # noqa: E402

from toolish_rag.citations import CitationSource, check_quote  # noqa: E402
from toolish_rag.content import Chunk  # noqa: E402
from toolish_rag.ingest import parse_path  # noqa: E402
from toolish_rag.pictures import PageFiles  # noqa: E402

Box = tuple[float, float, float, float]
IMAGES = {'.png', '.jpg', '.jpeg', '.tif', '.tiff'}


def iou(a: list[Box], b: list[Box], *, across_only: bool = False) -> float:
    """Area IoU of two sets of boxes, each set's area its union (boxes of one set may overlap: the lines of a
    quote do once only their extents across the page count); ``across_only``: of their extents across the page.
    Exact: the plane cut at every box edge, each cell counted once."""
    if across_only:
        a = [(x0, 0.0, x1, 1.0) for x0, _, x1, _ in a]
        b = [(x0, 0.0, x1, 1.0) for x0, _, x1, _ in b]
    if not a or not b:
        return 0.0
    xs = np.unique([v for box in a + b for v in (box[0], box[2])])
    ys = np.unique([v for box in a + b for v in (box[1], box[3])])
    cx, cy = (xs[:-1] + xs[1:]) / 2, (ys[:-1] + ys[1:]) / 2
    cells = np.outer(np.diff(ys), np.diff(xs))

    def covered(boxes: list[Box]) -> np.ndarray:
        inside = np.zeros(cells.shape, dtype=bool)
        for x0, top, x1, bottom in boxes:
            inside |= ((cy > top) & (cy < bottom))[:, None] & ((cx > x0) & (cx < x1))[None, :]
        return inside

    in_a, in_b = covered(a), covered(b)
    union = float(cells[in_a | in_b].sum())
    return float(cells[in_a & in_b].sum()) / union if union > 0 else 0.0


def _lines_of(items: list[tuple[Box, str]]) -> list[Box]:
    """Boxes of characters or words grouped into lines (by their vertical middle), one union box a line."""
    lines: list[list[Box]] = []
    for box, _ in items:
        middle = (box[1] + box[3]) / 2
        if lines and abs((lines[-1][-1][1] + lines[-1][-1][3]) / 2 - middle) < (box[3] - box[1]) * 0.5:
            lines[-1].append(box)
        else:
            lines.append([box])
    return [(min(b[0] for b in g), min(b[1] for b in g), max(b[2] for b in g), max(b[3] for b in g)) for g in lines]


# -- truth readers ----------------------------------------------------------------------------------


def _direction_runs(word: dict[str, Any]) -> list[dict[str, Any]]:
    """A pdfplumber word (``return_chars``) as its runs of one writing direction, each boxed by its characters
    (a character of no direction, a digit or a stop, stays with the run it is in)."""
    runs: list[list[dict[str, Any]]] = []
    direction = ''
    for char in word['chars']:
        kinds = {_DIRECTION.get(unicodedata.bidirectional(c), '') for c in char['text']} - {''}
        if runs and (not kinds or kinds == {direction}):
            runs[-1].append(char)
            continue
        if runs and not direction and kinds:  # the run so far had no direction: it takes this one
            runs[-1].append(char)
        else:
            runs.append([char])
        direction = next(iter(kinds), direction)
    if len(runs) < 2:
        return [word]
    return [
        {
            'text': ''.join(c['text'] for c in run),
            'x0': min(c['x0'] for c in run),
            'x1': max(c['x1'] for c in run),
            'top': min(c['top'] for c in run),
            'bottom': max(c['bottom'] for c in run),
        }
        for run in runs
    ]


_DIRECTION = {'L': 'ltr', 'R': 'rtl', 'AL': 'rtl'}


class PlumberPages:
    """pdfplumber's characters of each page, as fractions of the page as displayed (its CropBox)."""

    def __init__(self, path: Path) -> None:
        import pdfplumber

        self.pdf = pdfplumber.open(path)

    def rotated(self, page: int) -> bool:
        return int(self.pdf.pages[page - 1].rotation or 0) % 360 != 0

    def chars(self, page: int) -> list[tuple[Box, str]]:
        return self._placed(page, [c for c in self.pdf.pages[page - 1].chars if c['text'].strip()])

    def words(self, page: int) -> list[tuple[Box, str]]:
        """pdfplumber's words, each cut where its letters change direction: on a right-to-left line it runs a
        Latin word into the Arabic one beside it (``ذيفنتلPython``), where the page draws two words."""
        words = self.pdf.pages[page - 1].extract_words(return_chars=True)
        return self._placed(page, [part for word in words for part in _direction_runs(word)])

    def _placed(self, page: int, objects: list[dict[str, Any]]) -> list[tuple[Box, str]]:
        """Objects' boxes as fractions of the CropBox (pdfplumber >= 0.11 turns pages by their ``/Rotate`` itself)."""
        p = self.pdf.pages[page - 1]
        x0, top, x1, bottom = (float(v) for v in p.cropbox)
        top, bottom = float(p.mediabox[3]) - bottom, float(p.mediabox[3]) - top  # PDF y up -> from the top
        w, h = x1 - x0, bottom - top
        return [
            (((c['x0'] - x0) / w, (c['top'] - top) / h, (c['x1'] - x0) / w, (c['bottom'] - top) / h), c['text'])
            for c in objects
        ]

    def text(self, page: int) -> str:
        return ''.join(t for _, t in self.chars(page))

    def close(self) -> None:
        self.pdf.close()


def tesseract_words(image_path: Path) -> tuple[list[tuple[Box, str]], str]:
    """Plain ``tesseract`` on a file: its words with boxes (fractions) from TSV, and its text output."""
    from PIL import Image

    with Image.open(image_path) as im:
        width, height = im.size
    tsv = subprocess.run(['tesseract', str(image_path), '-', 'tsv'], capture_output=True, text=True).stdout
    text = subprocess.run(['tesseract', str(image_path), '-'], capture_output=True, text=True).stdout
    out = []
    for row in tsv.splitlines()[1:]:
        cells = row.split('\t')
        if len(cells) == 12 and cells[0] == '5' and cells[11].strip():
            left, top, w, h = (int(c) for c in cells[6:10])
            out.append(((left / width, top / height, (left + w) / width, (top + h) / height), cells[11]))
    return out, text


def rendered_pages(path: Path, folder: Path) -> list[Path]:
    """A PDF's pages as 300-dpi PNGs (pdfium, as the reader renders them for OCR)."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(path)
    out = []
    for i, page in enumerate(pdf):
        image = page.render(scale=300 / 72, grayscale=True).to_pil()
        target = folder / f'{path.stem}-{i + 1}.png'
        image.save(target, dpi=(300, 300))
        out.append(target)
    return out


# -- quotes -------------------------------------------------------------------------------------------


Quote = tuple[Chunk, int, int]
"""A quote: ``chunk.urtext[start:end]``."""


def random_quotes(chunks: list[Chunk], count: int, rng: random.Random) -> list[Quote]:
    """Up to ``count`` exact quotes of 4-14 words from chunks with boxes."""
    boxed = [c for c in chunks if c.boxes]
    out: list[Quote] = []
    for _ in range(count * 4):
        if not boxed or len(out) >= count:
            break
        chunk = rng.choice(boxed)
        spans = [m.span() for m in re.finditer(r'\S+', chunk.urtext)]
        if len(spans) < 6:
            continue
        n = rng.randint(4, min(14, len(spans)))
        i = rng.randrange(0, len(spans) - n + 1)
        out.append((chunk, spans[i][0], spans[i + n - 1][1]))
    return out


def page_texts(chunks: list[Chunk]) -> tuple[str, dict[int, tuple[int, int]]]:
    """Our text of the document (its chunks' text at their offsets) and each page's span in it: from the first
    to the last offset boxed on that page."""
    placed = [c for c in chunks if c.start_char is not None]
    text = [' '] * max([c.start_char + len(c.urtext) for c in placed if c.start_char is not None] or [0])
    spans: dict[int, tuple[int, int]] = {}
    for c in placed:
        assert c.start_char is not None
        text[c.start_char : c.start_char + len(c.urtext)] = c.urtext
        for b in c.boxes:
            lo, hi = spans.get(b.page, (b.start + c.start_char, b.end + c.start_char))
            spans[b.page] = (min(lo, b.start + c.start_char), max(hi, b.end + c.start_char))
    return ''.join(text), spans


def _page_of(chunk: Chunk, start: int, page: int, pages: tuple[str, dict[int, tuple[int, int]]]) -> Any:
    """Our text of ``page`` and the offset in it of ``chunk``'s offset ``start`` (``None`` where unknown)."""
    text, spans = pages
    if chunk.start_char is None or page not in spans:
        return None
    lo, hi = spans[page]
    return text[lo:hi], chunk.start_char + start - lo


def score_quotes(
    quotes: list[Quote], run_on_page: Any, rotated: Any = lambda page: False, chunks: list[Chunk] | None = None
) -> dict[str, Any]:
    """``run_on_page(page, text, start, end, table, ours)``: the other reader's boxes of ``text[start:end]`` on
    that page (`box_truth.truth_run`; ``ours``: our text of the page and the quote's offset in it), or why they
    were not found. A quote holding a cell bar is a table's."""
    pages = page_texts(chunks or [])
    ious, across, tables, pages_ok, unboxed, turned, elsewhere = [], [], [], 0, 0, 0, 0
    unscored: Counter[str] = Counter()
    for chunk, start, end in quotes:
        quote = chunk.urtext[start:end]
        source = check_quote(chunk, quote, min_quote_chars=1)
        if not isinstance(source, CitationSource) or source.page is None or not source.boxes:
            unboxed += 1
            continue
        turned += bool(rotated(source.page))
        table = '|' in quote
        elsewhere += source.chunk_start != start  # repeated in its chunk: the verifier cites the first
        ours_page = _page_of(chunk, source.chunk_start, source.page, pages)
        run = run_on_page(source.page, chunk.urtext, source.chunk_start, source.chunk_end, table, ours_page)
        if isinstance(run, Unscored):  # not found by the other reader: a word it draws otherwise, or repeated
            unscored[f'{"table " if table else ""}{run}'] += 1
            continue
        pages_ok += 1
        truth = _lines_of(run)
        ours = _lines_of([(box, '') for box in source.boxes])  # a line's pieces or cells as one box, like truth's
        ious.append(iou(ours, truth))
        across.append(iou(ours, truth, across_only=True))
        if table:
            tables.append(ious[-1])
    return {
        'quotes': len(ious),
        'skipped': sum(unscored.values()),
        'skipped_why': dict(sorted(unscored.items())),
        'no_boxes': unboxed,
        'cited_earlier_in_chunk': elsewhere,
        'on_rotated_pages': turned,
        'iou_median': round(statistics.median(ious), 3) if ious else None,
        'share_iou_0.9': round(sum(v >= 0.9 for v in ious) / len(ious), 3) if ious else None,
        'share_iou_across_0.9': round(sum(v >= 0.9 for v in across) / len(across), 3) if across else None,
        'quote_pages_right': pages_ok,
        'table_quotes': len(tables),
        'table_share_iou_0.9': round(sum(v >= 0.9 for v in tables) / len(tables), 3) if tables else None,
    }


def chunk_pages(chunks: list[Chunk], plumber: PlumberPages) -> tuple[int, int]:
    """Chunks whose page is the one holding most of their first words (pdfplumber's text of each page, spaces
    aside: reading orders differ, so words are looked up, not the chunk's opening), of those checked."""
    texts = [plumber.text(n) for n in range(1, len(plumber.pdf.pages) + 1)]
    right = checked = 0
    for chunk in chunks:
        tokens = [w.strip('.,;:()[]"\'|*') for w in chunk.urtext[:300].split()]
        tokens = [w for w in tokens if len(w) >= 3 and w.strip('-')][:6]  # its first words (a table's | --- | aside)
        if chunk.page is None or len(tokens) < 3:
            continue
        shares = [sum(w in text or w[::-1] in text for w in tokens) / len(tokens) for text in texts]  # RTL: reversed
        checked += 1
        share = shares[chunk.page - 1]  # most words there, or nearly all (a contents line: its section's page too)
        right += share >= 0.8 or (share >= 0.5 and share == max(shares))
    return right, checked


# -- runs ---------------------------------------------------------------------------------------------


def text_layer_boxes(files: list[Path], quotes: int, rng: random.Random, storage: dict[str, Any]) -> dict[str, Any]:
    rows = {}
    for path in files:
        try:
            started = time.perf_counter()
            doc = parse_path(path)
            storage[path.name] = storage_row(doc.chunks, time.perf_counter() - started)
        except Exception as exc:  # the encrypted and the malformed PDFs
            rows[path.name] = {'error': str(exc)[:80]}
            continue
        plumber = PlumberPages(path)
        try:
            chunks = list(doc.chunks)
            row = score_quotes(
                random_quotes(chunks, quotes, rng),
                lambda page, *q, p=plumber: truth_run(p.chars(page), p.words(page), *q[:3], table=q[3], page=q[4]),
                plumber.rotated,
                chunks,
            )
            right, checked = chunk_pages(chunks, plumber)
            row['chunk_pages'] = f'{right}/{checked}'
            rows[path.name] = row
        finally:
            plumber.close()
    return rows


def ocr_boxes_and_recall(
    files: list[Path], data: Path, quotes: int, rng: random.Random, storage: dict[str, Any]
) -> dict[str, Any]:
    manifest = {Path(m['doc']).name: m for m in json.loads((data / 'fidelity' / 'manifest.json').read_text())}
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for path in files:
            started = time.perf_counter()
            doc = parse_path(path)
            storage[path.name] = storage_row(doc.chunks, time.perf_counter() - started)
            images = [path] if path.suffix.lower() in IMAGES else rendered_pages(path, Path(tmp))
            frames = _frames(path, Path(tmp)) if path.suffix.lower() in ('.tif', '.tiff') else images
            plain = [tesseract_words(frame) for frame in frames]
            truth_words = [words_of for words_of, _ in plain]
            chunks = list(doc.chunks)
            row = score_quotes(
                random_quotes(chunks, quotes, rng),
                lambda page, *q, t=truth_words: truth_run(t[page - 1], t[page - 1], *q[:3], table=q[3], page=q[4]),
                chunks=chunks,
            )
            truth = manifest.get(path.name)
            if truth is not None and truth.get('has_text_truth'):
                row |= _recall(doc, '\n'.join(t for _, t in plain), data / 'fidelity' / truth['truth'][0])
            rows[path.name] = row
    return rows


def _frames(path: Path, folder: Path) -> list[Path]:
    from PIL import Image, ImageSequence

    out = []
    with Image.open(path) as image:
        for i, frame in enumerate(ImageSequence.Iterator(image)):
            target = folder / f'{path.stem}-frame{i + 1}.png'
            frame.convert('L').save(target, dpi=image.info.get('dpi', (300, 300)))
            out.append(target)
    return out


def _recall(doc: Any, plain: str, truth_path: Path) -> dict[str, Any]:
    truth_text = truth_path.read_text(encoding='utf-8')
    markdown, unlv = truth_path.suffix == '.md', truth_path.name.startswith('unlv')
    truth = Counter(words(normalise(truth_text, markdown=markdown, unlv=unlv)))
    ours_text = '\n\n'.join(c.urtext for c in doc.chunks)

    def recall(text: str) -> float:
        found = Counter(words(normalise(text, markdown=markdown)))
        return round(sum((found & truth).values()) / max(1, sum(truth.values())), 3)

    return {'recall_ours': recall(ours_text), 'recall_tesseract': recall(plain)}


def render_time(data: Path) -> dict[str, Any]:
    """The inspector's citation page picture of page 25 of a 50-page PDF, warm: median of 10 runs."""
    import pypdfium2 as pdfium

    from toolish_rag.pictures import render_page

    source = pdfium.PdfDocument(data / 'documents' / 'pdf_fedramp_poam_guide_rev5.pdf')
    pdf = pdfium.PdfDocument.new()
    while len(pdf) < 50:
        pdf.import_pages(source, list(range(min(len(source), 50 - len(pdf)))))
    buffer = io.BytesIO()
    pdf.save(buffer)
    raw = buffer.getvalue()
    boxes = [(0.1, 0.2, 0.8, 0.22), (0.1, 0.22, 0.5, 0.24)]
    render_page(raw, 'pdf', 25, boxes)  # cold: pdfium loaded
    times, located, cpu = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / 'fifty.pdf'
        path.write_bytes(raw)
        files = PageFiles.under(tmp)
        fingerprint = f'sha256:x bytes=sha256:{hashlib.sha256(raw).hexdigest()}'
        for _ in range(10):
            started, started_cpu = time.perf_counter(), time.process_time()
            found = files.locate(path.as_uri(), fingerprint)  # read and check the file, as every picture does
            located.append(time.perf_counter() - started)
            assert found is not None
            render_page(found[0], 'pdf', 25, boxes)
            times.append(time.perf_counter() - started)
            cpu.append(time.process_time() - started_cpu)
    return {
        'pages': len(pdf),
        'bytes': len(raw),
        'render_ms_median': round(statistics.median(times) * 1000, 1),
        'render_ms_max': round(max(times) * 1000, 1),
        'render_cpu_ms_median': round(statistics.median(cpu) * 1000, 1),
        'of_which_file_check_ms_median': round(statistics.median(located) * 1000, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--data', type=Path, default=ROOT.parent / 'shared' / 'data')
    parser.add_argument('--quotes', type=int, default=20, help='random quotes per document')
    parser.add_argument('--seed', type=int, default=39)
    parser.add_argument('--json', type=Path)
    parser.add_argument('--skip-ocr', action='store_true')
    parser.add_argument('--only-render', action='store_true')
    args = parser.parse_args()
    rng = random.Random(args.seed)
    pdfs = sorted((args.data / 'fidelity' / 'docs').glob('*.pdf')) + sorted((args.data / 'documents').glob('*.pdf'))
    scanned = {'docling_ocr_test_rotated_90.pdf', 'pdf_scanned_linn_brochure.pdf'}
    born_digital = [p for p in pdfs if p.name not in scanned]
    ocr_files = [p for p in pdfs if p.name in scanned and 'fidelity' in str(p)]
    ocr_files += [p for p in sorted((args.data / 'fidelity' / 'docs').iterdir()) if p.suffix.lower() in IMAGES]
    result: dict[str, Any] = {}
    if not args.only_render:
        result['text_layers'] = text_layer_boxes(born_digital, args.quotes, rng, result.setdefault('storage', {}))
    if not args.skip_ocr and not args.only_render:
        result['ocr'] = ocr_boxes_and_recall(ocr_files, args.data, args.quotes, rng, result.setdefault('storage', {}))
    result['render'] = render_time(args.data)
    _print(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


def _print(result: dict[str, Any]) -> None:
    for part in ('text_layers', 'ocr'):
        rows = result.get(part, {})
        columns = sorted({k for row in rows.values() for k in row})
        print(f'\n## {part}\n\n| file | ' + ' | '.join(columns) + ' |\n|' + ' - |' * (len(columns) + 1))
        for name, row in rows.items():
            print(f'| {name} | ' + ' | '.join(str(row.get(c, '')) for c in columns) + ' |')
        scored = [r for r in rows.values() if r.get('quotes')]
        if scored:
            total = sum(r['quotes'] for r in scored)
            good = sum(r['quotes'] * r['share_iou_0.9'] for r in scored)
            across = sum(r['quotes'] * r['share_iou_across_0.9'] for r in scored)
            print(f'\nall quotes: {total}; IoU >= 0.9: {good / total:.3f}; across the page only: {across / total:.3f}')
            in_tables = sum(r['table_quotes'] for r in scored)
            good_tables = sum(r['table_quotes'] * (r['table_share_iou_0.9'] or 0) for r in scored)
            if in_tables:
                outside = (good - good_tables) / max(1, total - in_tables)
                print(
                    f'in tables: {in_tables}, IoU >= 0.9: {good_tables / in_tables:.3f}; outside: {total - in_tables}, {outside:.3f}'
                )
        why: Counter[str] = sum((Counter(r.get('skipped_why', {})) for r in rows.values()), Counter())
        sampled = sum(r.get('quotes', 0) + r.get('skipped', 0) + r.get('no_boxes', 0) for r in rows.values())
        print(
            f'sampled: {sampled}; unscored: {sum(why.values())} {dict(why)}; without boxes: '
            f'{sum(r.get("no_boxes", 0) for r in rows.values())}'
        )
        print(summary([result.get('storage', {}).get(name, {}) for name in rows]))
    print('\n## render\n\n', result.get('render'))


if __name__ == '__main__':
    main()
