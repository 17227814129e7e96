"""What language detection costs at ingest: chunks/s of text analysis with ``language='auto'`` and without.

    .venv/bin/python benchmarks/language_bench.py [--languages en,de,el,ar,hi,tr,zh,vi] [--repeat 3]

For each XQuAD corpus in ../shared/data (240 passages of ~700 characters, the same in every
language) it times, in one process, CPU seconds (``time.process_time``, best of ``--repeat``):

- ``fixed``: `TextAnalyzer(<its language>).tokenize` (what a store with an explicit language does),
- ``auto``: `TextAnalyzer('auto').analyse` with one document per passage (detection + analysis),
- ``auto/doc``: the same with the passages of one Wikipedia article one document (XQuAD's titles,
  about five passages each): a document's language is named once, its chunks checked cheaply,
- ``reopen``: `analyse` given the languages ``auto`` named (a reopened store's saved languages),
- ``detect``: `toolish_rag.languages.detect_language` alone, on every passage (the cost before the
  stop-word and script checks, and still the cost of a passage they leave in doubt),

and how often detection named the passage's language. The first ``auto`` pass of a script also
loads lingua's models for it (reported apart as ``first auto``); the stem caches are warmed by a
``fixed`` pass first, so ``auto`` and ``fixed`` compare analysis work alike. The peak RSS at the
end includes lingua's loaded models (the peak before the first detection is printed beside it).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pin_threads import set_thread_counts

THREADS = set_thread_counts(2)

from common import data_dir, peak_rss_mib  # noqa: E402

from toolish_rag.analysis import AUTO, LANGUAGES, TextAnalyzer  # noqa: E402
from toolish_rag.languages import detect_language  # noqa: E402


def _seconds(work: Callable[[], object], repeat: int) -> float:
    best = float('inf')
    for _ in range(repeat):
        start = time.process_time()
        work()
        best = min(best, time.process_time() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--languages', default='en,de,el,ar,hi,tr,zh,vi')
    parser.add_argument('--repeat', type=int, default=3)
    args = parser.parse_args()
    root = data_dir()
    before = peak_rss_mib()
    print(
        f'{"lang":5} {"chunks":>6} {"fixed/s":>9} {"auto/s":>9} {"auto/doc/s":>10} {"reopen/s":>9} '
        f'{"detect/s":>9} {"first auto s":>12} {"named":>6}'
    )
    totals = {'fixed': 0.0, 'auto': 0.0, 'doc': 0.0, 'reopen': 0.0, 'n': 0}
    for language in args.languages.split(','):
        corpus = root / f'xquad-{language}' / 'corpus.jsonl'
        if not corpus.is_file():
            print(f'{language:5} missing: {corpus}')
            continue
        rows = [json.loads(line) for line in corpus.read_text(encoding='utf-8').splitlines() if line]
        texts = [row['text'] for row in rows]
        owners = [str(i) for i in range(len(texts))]
        articles = [str(row.get('title') or row['_id'].partition('#')[0]) for row in rows]
        fixed = TextAnalyzer(language if language in LANGUAGES else 'none')
        auto = TextAnalyzer(AUTO)
        fixed.tokenize(texts)  # warm the stem cache
        start = time.process_time()
        first = auto.analyse(texts, owners)
        first_auto = time.process_time() - start
        named = sum(code == (language if language in LANGUAGES else 'none') for code in first.languages)
        fixed_s = _seconds(lambda: fixed.tokenize(texts), args.repeat)  # noqa: B023
        auto_s = _seconds(lambda: auto.analyse(texts, owners), args.repeat)  # noqa: B023
        doc_s = _seconds(lambda: auto.analyse(texts, articles), args.repeat)  # noqa: B023
        known = first.languages
        reopen_s = _seconds(lambda: auto.analyse(texts, owners, languages=known), args.repeat)  # noqa: B023
        detect_s = _seconds(lambda: [detect_language(t) for t in texts], args.repeat)  # noqa: B023
        n = len(texts)
        totals['fixed'] += fixed_s
        totals['auto'] += auto_s
        totals['doc'] += doc_s
        totals['reopen'] += reopen_s
        totals['n'] += n
        print(
            f'{language:5} {n:6d} {n / fixed_s:9.0f} {n / auto_s:9.0f} {n / doc_s:10.0f} {n / reopen_s:9.0f} '
            f'{n / detect_s:9.0f} '
            f'{first_auto:12.2f} {named / n:6.1%}'
        )
    if totals['n']:
        total = totals['n']
        print(
            f'{"all":5} {total:6.0f} {total / totals["fixed"]:9.0f} {total / totals["auto"]:9.0f} {total / totals["doc"]:10.0f} '
            f'{total / totals["reopen"]:9.0f}'
        )
    print(f'peak RSS {peak_rss_mib():.0f} MiB ({before:.0f} MiB before any detection); threads {THREADS}')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
