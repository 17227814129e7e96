"""Table cell exact-match accuracy of the default readers against ``fidelity/truth/*.tables.json``.

Every document of ``../shared/data/fidelity`` with table truth is read with the reader its
extension picks; the table blocks of the result are parsed
back into grids (`tables_of`) and scored with `cell_accuracy`: predicted tables are aligned
to the truth tables in order (an order-keeping alignment that maximises matching cells, so a
missed or an extra table costs only itself), and the score is matching cells / truth cells,
cells compared at the same (row, column) after the fidelity README's normalisation (NFKC,
curly quotes and dashes folded, whitespace collapsed; no case folding). Per document, then the
macro-average per kind of truth (ICDAR is human truth; docling's is agreement with docling).

    python benchmarks/table_fidelity.py [--data ../shared/data/fidelity] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import unicodedata
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

Grid = Sequence[Sequence[str]]

_SPACE = re.compile(r'\s+')
_SEPARATOR = re.compile(r'^:?-{3,}:?$')
_PIPE = re.compile(r'(?<!\\) ?\| ?')


_FOLD = str.maketrans(
    {'\u2018': "'", '\u2019': "'", '\u201c': '"', '\u201d': '"', '\u00ad': None}
    | {c: '-' for c in '\u2010\u2011\u2012\u2013\u2014\u2212'}
)


def _norm(cell: str) -> str:
    """The fidelity set's normalisation of a cell: NFKC, curly quotes and dashes folded, whitespace collapsed."""
    return _SPACE.sub(' ', unicodedata.normalize('NFKC', cell).translate(_FOLD)).strip()


def _matches(pred: Grid, truth: Grid) -> int:
    return sum(
        1
        for r, row in enumerate(truth)
        if r < len(pred)
        for c, cell in enumerate(row)
        if c < len(pred[r]) and _norm(pred[r][c]) == _norm(cell)
    )


def cell_accuracy(pred: Sequence[Grid], truth: Sequence[Grid]) -> float:
    """Matching cells / truth cells, the predicted tables aligned to the truth tables in order.

    ``pred`` and ``truth`` are lists of tables, each a list of rows of cell strings. The
    alignment keeps both orders and maximises the total of matching cells (a dynamic
    programme, so an extra predicted table or a missed one does not shift the others).
    A document without truth cells scores 1.0 when nothing is predicted either, else 0.0.
    """
    total = sum(len(row) for table in truth for row in table)
    if total == 0:
        return 0.0 if any(pred) else 1.0
    n, m = len(truth), len(pred)
    best = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            best[i][j] = max(best[i - 1][j], best[i][j - 1], best[i - 1][j - 1] + _matches(pred[j - 1], truth[i - 1]))
    return best[n][m] / total


def parse_table(text: str) -> list[list[str]]:
    """A table block's text back into rows: a pipe table (``| a | b |``), or ``a | b`` lines."""
    lines = text.splitlines()
    piped = any(line.startswith('| ') for line in lines)
    rows: list[list[str]] = []
    for line in lines:
        if piped and not line.startswith('|'):
            continue  # a caption line above a pipe table
        inner = line
        if line.startswith('|') and line.rstrip().endswith('|') and len(line.rstrip()) > 1:
            inner = line.strip()[1:-1]
        cells = [c.replace('\\|', '|').strip() for c in _PIPE.split(inner)]
        if cells and all(_SEPARATOR.match(c) for c in cells):
            continue
        rows.append(cells)
    return rows


def tables_of(parsed: object) -> list[list[list[str]]]:
    """Every table block of a `ParsedDocument`, parsed back into a grid, in document order."""
    from toolish_rag.ingest._model import ParsedDocument

    assert isinstance(parsed, ParsedDocument)
    blocks = [b for section in parsed.root.walk() for b in section.blocks if b.kind == 'table']
    blocks.sort(key=lambda b: b.start)
    return [parse_table(parsed.source[b.start : b.end]) for b in blocks]


def read(path: Path) -> object:
    from toolish_rag.ingest._readers import read_bytes

    return read_bytes(path.read_bytes(), path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--data', type=Path, default=Path(__file__).resolve().parents[1] / '../shared/data/fidelity')
    parser.add_argument('--json', type=Path, help='also write the per-document figures here')
    args = parser.parse_args()
    data: Path = args.data
    if not (data / 'truth').is_dir():
        sys.exit(f'no fidelity data at {data}')
    manifest = json.loads((data / 'manifest.json').read_text())
    kind_of = {Path(str(rec['doc'])).stem: str(rec.get('truth_kind', '?')) for rec in manifest}
    rows = []
    for truth_path in sorted((data / 'truth').glob('*.tables.json')):
        stem = truth_path.name.removesuffix('.tables.json')
        docs = sorted((data / 'docs').glob(f'{stem}.*'))
        if not docs:
            continue
        truth = json.loads(truth_path.read_text())
        started = time.perf_counter()
        try:
            pred = tables_of(read(docs[0]))
            error = ''
        except Exception as exc:
            pred, error = [], f'{type(exc).__name__}: {exc}'
        seconds = time.perf_counter() - started
        score = cell_accuracy(pred, truth)
        rows.append(
            {
                'document': docs[0].name,
                'format': docs[0].suffix.lstrip('.').lower(),
                'truth_kind': kind_of.get(stem, '?'),
                'truth_tables': len(truth),
                'predicted_tables': len(pred),
                'cell_accuracy': round(score, 4),
                'seconds': round(seconds, 3),
                'error': error,
            }
        )
    print(f'{"document":45} {"truth":>5} {"pred":>5} {"cells":>6}  kind')
    for r in rows:
        print(
            f'{r["document"]:45} {r["truth_tables"]:5} {r["predicted_tables"]:5} {r["cell_accuracy"]:6.3f}  '
            f'{r["truth_kind"]} {r["error"]}'
        )
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in rows:
        groups[(str(r['truth_kind']), str(r['format']))].append(float(r['cell_accuracy']))
    print('\nmacro-average cell accuracy per kind of truth and format:')
    for (kind, fmt), scores in sorted(groups.items()):
        print(f'  {kind:28} {fmt:5} {sum(scores) / len(scores):.3f}  ({len(scores)} documents)')
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == '__main__':
    main()
