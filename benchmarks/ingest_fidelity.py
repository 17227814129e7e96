"""How faithfully each converter recovers text, order, headings and tables, against ``../shared/data/fidelity``.

Converters, each run on each document in its own subprocess (so the peak resident memory is
that converter's, not the benchmark's):

* ``default``: toolish-rag's readers through the code path ingestion uses (``read_bytes`` within
  the default limits and OCR settings; ``parse_file`` does exactly this before chunking);
* ``unstructured``: ``reader='unstructured'`` (the ``unstructured`` backend where it takes the
  format; other formats are marked ``n/a``, as ingestion would read them with the default readers);
* ``markitdown``: Microsoft's MarkItDown (``pip install "toolish-rag[bench]"``), the offline peer;
* ``tesseract``: the plain ``tesseract`` CLI on the image files (PNG, JPEG, TIFF).

Docling is not run: it downloads its layout and table models from the Hugging Face hub at first
use, which this project does not do.

Scoring follows the fidelity README's "How to score": its normalisation (Markdown syntax
removed when either side is Markdown, NFKC, casefold, quotes and dashes folded, soft hyphens
removed; end-of-line hyphenation joined on both sides; words split on whitespace with their
outer punctuation stripped, ``~`` deleted for UNLV truth); bag-of-words precision / recall /
F1; order-aware ``1 - NED`` over words (only where ``order_reviewed``); heading recall (only
for ``headings_marked`` truth); table cell exact-match accuracy (tables paired in document
order by `table_fidelity.cell_accuracy`), cell multiset F1 and the count of tables found.
Per document, then macro-averages per kind of truth and format, never merged across kinds.

    .venv/bin/python benchmarks/ingest_fidelity.py [--data ../shared/data/fidelity] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from table_fidelity import cell_accuracy, parse_table  # noqa: E402

CONVERTERS = ('default', 'unstructured', 'markitdown', 'tesseract')
IMAGES = frozenset({'.png', '.jpg', '.jpeg', '.tif', '.tiff'})
Grid = list[list[str]]

# -- conversion (runs in the child process) ---------------------------------------------


def _pages(path: Path) -> int:
    """Pages (PDF), slides (PPTX) or frames (TIFF) of a document; 1 for the unpaged formats."""
    suffix = path.suffix.lower()
    try:
        if suffix == '.pdf':
            import pypdfium2

            return len(pypdfium2.PdfDocument(str(path)))
        if suffix == '.pptx':
            from pptx import Presentation

            return max(1, len(Presentation(str(path)).slides))
        if suffix in IMAGES:
            from PIL import Image

            with Image.open(path) as image:
                return int(getattr(image, 'n_frames', 1))
    except Exception:
        return 1
    return 1


def _parsed_result(parsed: Any) -> dict[str, Any]:
    blocks = sorted((b for s in parsed.root.walk() for b in s.blocks if b.kind == 'table'), key=lambda b: b.start)
    return {
        'text': parsed.source,
        'markdown': True,
        'headings': parsed.headings(),
        'tables': [parse_table(parsed.source[b.start : b.end]) for b in blocks],
    }


def _convert(converter: str, path: Path) -> dict[str, Any] | None:
    """The converter's output for ``path``: text, whether it is Markdown, headings (or None), tables."""
    if converter in ('default', 'unstructured'):
        from toolish_rag.ingest._limits import DEFAULT_LIMITS, bounded
        from toolish_rag.ingest._readers import read_bytes

        data = path.read_bytes()
        with bounded(DEFAULT_LIMITS):  # read_bytes' default OCR options are `DEFAULT_OCR`
            if converter == 'default':
                return _parsed_result(read_bytes(data, path))
            from toolish_rag.ingest._readers.unstructured import SUFFIXES, read_unstructured

            if path.suffix.lower() not in SUFFIXES:
                return None
            return _parsed_result(read_unstructured(data, path))
    if converter == 'markitdown':
        from markitdown import MarkItDown

        text = MarkItDown(enable_plugins=False).convert(str(path)).text_content
        return {
            'text': text,
            'markdown': True,
            'headings': [line.lstrip('#').strip() for line in text.splitlines() if line.startswith('#')],
            'tables': _markdown_tables(text),
        }
    if converter == 'tesseract':
        if path.suffix.lower() not in IMAGES:
            return None
        exe = shutil.which('tesseract')
        if exe is None:
            raise RuntimeError('tesseract is not installed')
        done = subprocess.run([exe, str(path), 'stdout'], capture_output=True, text=True, check=True)
        return {'text': done.stdout, 'markdown': False, 'headings': None, 'tables': []}
    raise ValueError(converter)


def _markdown_tables(text: str) -> list[Grid]:
    tables: list[Grid] = []
    block: list[str] = []
    for line in [*text.splitlines(), '']:
        if line.lstrip().startswith('|'):
            block.append(line.strip())
        elif block:
            tables.append(parse_table('\n'.join(block)))
            block = []
    return tables


def child(converter: str, path: Path) -> None:
    """``--child``: convert one document, print one JSON line (output, seconds, peak RSS)."""
    os.environ.setdefault('HF_HUB_OFFLINE', '1')
    if converter == 'markitdown':
        import markitdown  # noqa: F401  (imported before the clock starts, like the others below)
    elif converter == 'default':
        import toolish_rag.ingest._readers  # noqa: F401
    elif converter == 'unstructured':
        from toolish_rag.ingest._readers.unstructured import require_unstructured

        require_unstructured()  # imports the library and its partitioners once, as a parse worker does
    started = time.perf_counter()
    try:
        out = _convert(converter, path)
        error = None
    except Exception as exc:
        out, error = None, f'{type(exc).__name__}: {str(exc)[:200]}'
    seconds = time.perf_counter() - started
    peak_kib = max(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    )
    print(json.dumps({'output': out, 'error': error, 'seconds': seconds, 'peak_mib': peak_kib / 1024}))


# -- scoring (README "How to score") ---------------------------------------------------------

_FOLD = str.maketrans(
    {'\u2018': "'", '\u2019': "'", '\u201a': "'", '\u201c': '"', '\u201d': '"', '\u201e': '"', '\u00ad': None}
    | {c: '-' for c in '\u2010\u2011\u2012\u2013\u2014\u2015\u2212'}
)
_COMMENT = re.compile(r'<!--.*?-->', re.S)
_LINK = re.compile(r'!?\[([^\]]*)\]\([^)]*\)')
_HEADING = re.compile(r'^\s{0,3}#{1,6}\s*', re.M)
_LIST = re.compile(r'^\s*(?:[-*+]|\d+[.)])\s+', re.M)
_SEPARATOR_ROW = re.compile(r'^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$', re.M)
_EMPHASIS = re.compile(r'\*\*|__|~~|`|(?<!\w)\*(?=\S)|(?<=\S)\*(?!\w)|(?<!\w)_(?=\S)|(?<=\S)_(?!\w)')
_ESCAPE = re.compile(r'\\([\\`*_{}\[\]()#+\-.!|>~<"\'&$%])')
_PLACEHOLDER = re.compile('[\U000f0000-\U000f00ff]')
_HYPHEN = re.compile(r'(?<=[^\W\d_])-[ \t]*\n[ \t]*(?=[^\W\d_])')


def strip_markdown(text: str) -> str:
    # escaped characters are set aside first, so that ``c\\_d`` keeps its underscore through the emphasis step
    text = _ESCAPE.sub(lambda m: m.group(1) if m.group(1) == '|' else chr(0xF0000 + ord(m.group(1))), text)
    text = _COMMENT.sub(' ', text)
    text = _LINK.sub(r'\1', text)
    text = _SEPARATOR_ROW.sub('', text)
    text = _HEADING.sub('', text)
    text = _LIST.sub('', text)
    text = _EMPHASIS.sub('', text)
    text = text.replace('|', ' ')
    return _PLACEHOLDER.sub(lambda m: chr(ord(m.group(0)) - 0xF0000), text)


def normalise(text: str, *, markdown: bool, unlv: bool = False) -> str:
    if markdown:
        text = strip_markdown(text)
    text = unicodedata.normalize('NFKC', text).casefold().translate(_FOLD)
    text = _HYPHEN.sub('', text)  # step 3, on both sides
    return text.replace('~', '') if unlv else text


def words(text: str) -> list[str]:
    out = []
    for raw in text.split():
        word = raw.strip('!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~«»…·•')
        if word:
            out.append(word)
    return out


def prf(pred: Sequence[str], truth: Sequence[str]) -> tuple[float, float, float]:
    if not pred or not truth:
        return 0.0, 0.0, 0.0
    tp = sum((Counter(pred) & Counter(truth)).values())
    p, r = tp / len(pred), tp / len(truth)
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def order_score(pred: Sequence[str], truth: Sequence[str]) -> float:
    """``1 - Levenshtein(pred_words, truth_words) / max(len)``."""
    from rapidfuzz.distance import Levenshtein

    longest = max(len(pred), len(truth))
    return 1.0 - Levenshtein.distance(list(pred), list(truth)) / longest if longest else 1.0


def heading_recall(predicted: Sequence[str], truth_md: str) -> float | None:
    truth = [' '.join(words(normalise(line, markdown=True))) for line in truth_md.splitlines() if line.startswith('#')]
    truth = [t for t in truth if t]
    if not truth:
        return None
    found = {' '.join(words(normalise(h, markdown=True))) for h in predicted}
    return sum(1 for t in truth if t in found) / len(truth)


def _cell(text: str) -> str:
    return ' '.join(unicodedata.normalize('NFKC', text).translate(_FOLD).split())


def cell_multiset_f1(pred: Sequence[Grid], truth: Sequence[Grid]) -> float:
    p = Counter(_cell(c) for t in pred for row in t for c in row if _cell(c))
    t = Counter(_cell(c) for tb in truth for row in tb for c in row if _cell(c))
    if not p or not t:
        return 0.0
    tp = sum((p & t).values())
    precision, recall = tp / sum(p.values()), tp / sum(t.values())
    return 2 * precision * recall / (precision + recall) if tp else 0.0


def score(record: dict[str, Any], out: dict[str, Any], data: Path) -> dict[str, float | int | None]:
    stem = Path(record['doc']).stem
    result: dict[str, float | int | None] = {}
    truths = [data / t for t in record['truth']]
    text_truth = next((t for t in truths if t.suffix in ('.md', '.txt')), None)
    if record['has_text_truth'] and text_truth is not None:
        truth_raw = text_truth.read_text(encoding='utf-8')
        markdown = text_truth.suffix == '.md' or bool(out['markdown'])
        unlv = stem.startswith('unlv_')
        tw = words(normalise(truth_raw, markdown=markdown, unlv=unlv))
        pw = words(normalise(out['text'], markdown=markdown, unlv=unlv))
        result['precision'], result['recall'], result['f1'] = prf(pw, tw)
        result['order'] = order_score(pw, tw) if record['order_reviewed'] else None
        if record['headings_marked'] and out['headings'] is not None:
            result['headings'] = heading_recall(out['headings'], truth_raw)
    tables_truth = next((t for t in truths if t.name.endswith('.tables.json')), None)
    if record['has_table_truth'] and tables_truth is not None:
        truth_tables = json.loads(tables_truth.read_text(encoding='utf-8'))
        result['cells'] = cell_accuracy(out['tables'], truth_tables)
        result['cell_f1'] = cell_multiset_f1(out['tables'], truth_tables)
        result['tables_found'] = len(out['tables'])
        result['tables_truth'] = len(truth_tables)
    return result


# -- the run ----------------------------------------------------------------------------------


def run_child(converter: str, path: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, '--child', converter, str(path)],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
        env={**os.environ, 'HF_HUB_OFFLINE': '1', 'OMP_THREAD_LIMIT': '1'},
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith('{"output"')]
    if done.returncode != 0 or not lines:
        return {'output': None, 'error': f'exit {done.returncode}: {done.stderr.strip()[-200:]}', 'seconds': 0}
    return dict(json.loads(lines[-1]))


def available(converter: str) -> str | None:
    """Why ``converter`` cannot run here, or None."""
    import importlib.util

    if converter == 'markitdown' and importlib.util.find_spec('markitdown') is None:
        return 'markitdown is not installed (pip install "toolish-rag[bench]")'
    if converter == 'unstructured' and importlib.util.find_spec('unstructured') is None:
        return 'unstructured is not installed (pip install "toolish-rag[unstructured]")'
    if converter == 'tesseract' and shutil.which('tesseract') is None:
        return 'tesseract is not installed'
    return None


def _applies(converter: str, path: Path) -> bool:
    """Whether ``converter`` reads files like ``path`` at all (``n/a`` rows spawn no process)."""
    suffix = path.suffix.lower()
    if converter == 'tesseract':
        return suffix in IMAGES
    if converter == 'unstructured':
        from toolish_rag.ingest._readers.unstructured import SUFFIXES

        return suffix in SUFFIXES
    return True


def _fmt(value: float | int | None) -> str:
    if value is None:
        return '-'
    return f'{value:.3f}' if isinstance(value, float) else str(value)


def report(rows: list[dict[str, Any]], converters: Sequence[str]) -> str:
    lines: list[str] = []
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_kind[row['truth_kind']].append(row)
    metrics = ('f1', 'precision', 'recall', 'order', 'headings', 'cells', 'cell_f1')
    for kind in sorted(by_kind):
        lines += [f'### Truth: {kind}', '']
        kind_rows = by_kind[kind]
        shown = [m for m in metrics if any(r['scores'].get(m) is not None for r in kind_rows)]
        lines.append('| format | converter | docs | ' + ' | '.join(shown) + ' | s/page | peak MiB |')
        lines.append('|' + ' --- |' * (len(shown) + 5))
        groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for r in kind_rows:
            groups[(r['format'], r['converter'])].append(r)
        for (fmt, conv), group in sorted(groups.items(), key=lambda kv: (kv[0][0], converters.index(kv[0][1]))):
            if all(r['status'] == 'n/a' for r in group):
                continue  # the converter does not read this format
            scored = [r for r in group if r['status'] in ('ok', 'failed')]  # a failure scores what it recovered: 0
            cells = []
            for m in shown:
                present = [r['scores'][m] for r in scored if r['scores'].get(m) is not None]
                cells.append(_fmt(sum(present) / len(present)) if present else ('-' if scored else 'n/a'))
            ran = [r for r in group if r['status'] == 'ok']
            per_page = _fmt(sum(r['seconds'] / r['pages'] for r in ran) / len(ran)) if ran else '-'
            peak = f'{max(r["peak_mib"] for r in ran):.0f}' if ran else '-'
            lines.append(f'| {fmt} | {conv} | {len(scored)} | ' + ' | '.join(cells) + f' | {per_page} | {peak} |')
        lines.append('')
    header = '| document | converter | status | ' + ' | '.join(metrics) + ' | tables found / truth | s/page |'
    lines += ['### Per document', '', header, '|' + ' --- |' * (len(metrics) + 5)]
    for r in rows:
        if r['status'] == 'n/a':
            continue
        found, truth = r['scores'].get('tables_found'), r['scores'].get('tables_truth')
        lines.append(
            f'| {r["document"]} | {r["converter"]} | {r["status"]} | '
            + ' | '.join(_fmt(r['scores'].get(m)) for m in metrics)
            + f' | {f"{found} / {truth}" if truth is not None else "-"}'
            + f' | {_fmt(r["seconds"] / r["pages"]) if r["status"] == "ok" else "-"} |'
        )
    return '\n'.join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--data', type=Path, default=ROOT / '..' / 'shared' / 'data' / 'fidelity')
    parser.add_argument('--converters', default=','.join(CONVERTERS), help='comma-separated: ' + ', '.join(CONVERTERS))
    parser.add_argument('--docs', default='', help='comma-separated document stems (default: every document)')
    parser.add_argument('--json', type=Path, help='also write every per-document figure here')
    parser.add_argument('--render', type=Path, help='print the tables of an earlier --json file instead of running')
    parser.add_argument('--child', nargs=2, metavar=('CONVERTER', 'PATH'), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]))
        return
    if args.render:
        rendered: list[dict[str, Any]] = json.loads(args.render.read_text())
        print(report(rendered, [c for c in CONVERTERS if any(r['converter'] == c for r in rendered)]))
        return
    data: Path = args.data.resolve()
    if not (data / 'manifest.json').is_file():
        sys.exit(f'no fidelity data at {data} (give --data)')
    converters = [c for c in args.converters.split(',') if c]
    for c in converters:
        if c not in CONVERTERS:
            sys.exit(f'unknown converter {c!r}: one of {", ".join(CONVERTERS)}')
    wanted = {s for s in args.docs.split(',') if s}
    manifest = [
        r for r in json.loads((data / 'manifest.json').read_text()) if not wanted or Path(r['doc']).stem in wanted
    ]
    missing = {c: why for c in converters if (why := available(c)) is not None}
    rows: list[dict[str, Any]] = []
    started, load_before = time.perf_counter(), os.getloadavg()
    for record in manifest:
        path = data / record['doc']
        pages = _pages(path)
        for conv in converters:
            row: dict[str, Any] = {
                'document': path.name,
                'format': record['format'],
                'truth_kind': record['truth_kind'],
                'converter': conv,
                'pages': pages,
                'seconds': 0.0,
                'peak_mib': 0.0,
                'scores': {},
            }
            if conv in missing:
                row.update(status='missing', error=missing[conv])
            elif not _applies(conv, path):
                row.update(status='n/a', error=None)
            else:
                got = run_child(conv, path)
                row.update(seconds=got['seconds'], peak_mib=got.get('peak_mib', 0.0), error=got['error'])
                if got['output'] is None and got['error'] is None:
                    row['status'] = 'n/a'
                elif got['output'] is None:  # the converter failed: it recovered nothing
                    row['status'] = 'failed'
                    row['scores'] = score(record, {'text': '', 'markdown': False, 'headings': [], 'tables': []}, data)
                else:
                    row['status'] = 'ok'
                    row['scores'] = score(record, got['output'], data)
            rows.append(row)
            print(f'{path.name:48} {conv:12} {row["status"]:7} {row.get("error") or ""}'[:160], file=sys.stderr)
    for conv, why in missing.items():
        print(f'not run: {conv}: {why}')
    print(report(rows, converters))
    load = ' '.join(f'{x:.1f}' for x in load_before) + ' / ' + ' '.join(f'{x:.1f}' for x in os.getloadavg())
    print(
        f'\n{len(manifest)} documents, {len(converters)} converters, {time.perf_counter() - started:.0f} s; '
        f'{os.cpu_count()} CPUs, load average (1/5/15 min) at start / end: {load}'
    )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == '__main__':
    main()
