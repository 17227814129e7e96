"""A real documentation tree, ingested as a new user would (issue 40's "Measure it").

    python benchmarks/doctree_bench.py PATH [PATH ...] --questions FILE [--exclude GLOB] [--ocr auto|never]

1. walks PATH (as `ingest` does: .gitignore honoured, ``--exclude`` applied) and counts files by kind;
2. parses every file once, alone and in order, timing each kind (OCR is the images' share);
3. ingests PATH into a new LanceDB store (the MiniLM embedder) and times the run by phase:
   walk, parse (waiting on the parse workers), write (the store's upserts: embedding and writing);
4. counts the stored documents by kind, and how many are image noise: an image document most of
   whose words are not words of the tree's own text (each one is listed, for a human to check);
5. asks the questions of ``--questions`` (written before ingesting; JSON: ``{"questions": [{"q",
   "pages"}]}``, pages relative to ``--base``, default the common folder of PATH) through the toolset's retriever,
   text / vector / hybrid, and reports precision@3 (answering chunks among the top 3), success@3
   (an answering page among them) and image documents in any top 3;
6. times ``toolish-rag search`` cold, per phase, from the differences of nested commands run in
   fresh processes (interpreter, ``import toolish_rag``, the CLI and store imports, the search).

Nothing is written to the repository; the store lives in a temp dir. The tree's content is never
committed (the questions file only names its pages).
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncGenerator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pin_threads import set_thread_counts

THREADS = set_thread_counts(2)

from toolish_rag.content import Chunk  # noqa: E402
from toolish_rag.ingest import ParseJob, ingest, walk_paths  # noqa: E402
from toolish_rag.ingest._parse import Parsed, parse_file  # noqa: E402
from toolish_rag.ingest._readers import READERS  # noqa: E402
from toolish_rag.ingest._readers._ocr import OcrOptions  # noqa: E402
from toolish_rag.ingest._walk import Found  # noqa: E402
from toolish_rag.ingest._workers import LocalExecutor  # noqa: E402
from toolish_rag.toolset import ToolishRag  # noqa: E402
from toolish_rag_lancedb import LanceDBStore  # noqa: E402

IMAGES = frozenset({'.png', '.jpg', '.jpeg', '.tif', '.tiff'})
MODES = ('text', 'vector', 'hybrid')
_WORD = re.compile(r'[A-Za-z]{3,}')


def _kind(path: str) -> str:
    return Path(path).suffix.lower() or '(none)'


class _TimedStore(LanceDBStore):
    """The LanceDB store, timing its upserts (embedding and writing): the write phase of a run."""

    upsert_seconds = 0.0

    async def upsert(self, items: Any) -> None:
        started = time.perf_counter()
        try:
            await super().upsert(items)
        finally:
            _TimedStore.upsert_seconds += time.perf_counter() - started


class _TimedExecutor:
    """The default local executor, timing how long the run waited for parsed files: the parse phase."""

    embeds = False
    waited = 0.0

    def __init__(self) -> None:
        self.inner = LocalExecutor()

    async def parse(self, files: Sequence[Found], job: ParseJob, embedding: object) -> AsyncGenerator[Parsed, None]:
        results = self.inner.parse(files, job, None)
        while True:
            started = time.perf_counter()
            try:
                result = await anext(results)
            except StopAsyncIteration:
                return
            finally:
                _TimedExecutor.waited += time.perf_counter() - started
            yield result


def parse_by_kind(found: Sequence[Found], roots: Sequence[Path], ocr: OcrOptions) -> dict[str, dict[str, float]]:
    """Each file parsed once, alone and in order (one process): seconds and outcomes per kind."""
    from toolish_rag.ingest import Chunker

    out: dict[str, dict[str, float]] = {}
    chunker = Chunker()
    for item in found:
        started = time.perf_counter()
        result = _parse(item, chunker, roots, ocr)
        row = out.setdefault(_kind(str(item.path)), {'files': 0, 'seconds': 0.0, 'stored': 0, 'skipped': 0})
        row['files'] += 1
        row['seconds'] += time.perf_counter() - started
        row['stored' if result.document is not None else 'skipped'] += 1
    return {k: {**v, 'seconds': round(v['seconds'], 2)} for k, v in sorted(out.items())}


def _parse(item: Found, chunker: Any, roots: Sequence[Path], ocr: OcrOptions) -> Parsed:
    """`parse_file` as this tree takes it: a whole `ParseJob`, or (a baseline tree from before) its parts."""
    if 'job' in inspect.signature(parse_file).parameters:
        return parse_file(
            str(item.path), ParseJob(chunker, {}, (), ocr=ocr, roots=tuple(map(str, roots))), item.relative_path
        )
    old: Any = parse_file
    return old(str(item.path), chunker, {}, (), item.relative_path, ocr=ocr, **_roots(roots))  # type: ignore[no-any-return]


def _roots(roots: Sequence[Path]) -> dict[str, Any]:
    """``roots=`` for `parse_file` where it takes them: the bench also runs on trees from before it did (a baseline)."""
    return {'roots': tuple(map(str, roots))} if 'roots' in inspect.signature(parse_file).parameters else {}


def _excluding(patterns: Sequence[str]) -> dict[str, Any]:
    """``exclude=`` where given (a baseline from before it existed runs without it)."""
    return {'exclude': list(patterns)} if patterns else {}


async def run_ingest(paths: Sequence[Path], store_dir: Path, args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    found = list(walk_paths(paths, suffixes=frozenset(READERS), **_excluding(args.exclude)))
    walk_seconds = time.perf_counter() - started
    store = _TimedStore(store_dir)
    executor = _TimedExecutor()
    started = time.perf_counter()
    report = await ingest(store, paths, progress=False, executor=executor, ocr=args.ocr, **_excluding(args.exclude))
    total = time.perf_counter() - started
    return {
        'found_by_kind': dict(Counter(_kind(str(f.path)) for f in found if f.reason is None).most_common()),
        'report': {
            'added': len(report.added),
            'failed': [(i.path, i.reason) for i in report.failed],
            'skipped': len(report.skipped),
            'warnings': len(report.warnings),
            'chunks': report.chunks,
        },
        'seconds': {
            'walk': round(walk_seconds, 2),
            'ingest_total': round(total, 2),
            'waiting_on_parse': round(_TimedExecutor.waited, 2),
            'upsert_embed_write': round(_TimedStore.upsert_seconds, 2),
        },
        'store': store,
        'found': found,
    }


async def stored_kinds(store: LanceDBStore, vocabulary: set[str]) -> dict[str, Any]:
    """Stored documents by kind, and the image documents whose words are mostly not the tree's words."""
    infos = await store.list_documents()
    by_kind = Counter(_kind(i.uri) for i in infos)
    rag = ToolishRag(store)
    noise: list[tuple[str, str]] = []
    images: list[tuple[str, str]] = []
    for info in infos:
        if _kind(info.uri) not in IMAGES:
            continue
        ids = [f'{info.id}-{n}' for n in range(info.chunk_count)]
        text = ' '.join(r.urtext for r in await rag.retriever().records(ids) if isinstance(r, Chunk))
        words = _WORD.findall(text.lower())
        known = sum(w in vocabulary for w in words) / len(words) if words else 0.0
        images.append((info.uri.rsplit('/', 1)[-1], f'{known:.2f} {" ".join(text.split())[:70]}'))
        if known < 0.5:
            noise.append(images[-1])
    return {
        'documents': len(infos),
        'by_kind': dict(by_kind.most_common()),
        'image_documents': images,
        'image_noise': noise,
        'image_noise_share': round(len(noise) / len(infos), 4) if infos else 0.0,
    }


async def quality(store: LanceDBStore, questions: list[dict[str, Any]], base: Path) -> dict[str, Any]:
    retriever = ToolishRag(store).retriever()
    out: dict[str, Any] = {}
    for mode in MODES:
        search = getattr(retriever, f'{mode}_search')
        precision, success, images, misses = [], [], 0, []
        for question in questions:
            pages = {(base / p).resolve().as_uri() for p in question['pages']}
            hits = [h.record for h in await search(question['q'], 3)]
            uris = [r.document_uri for r in hits if isinstance(r, Chunk)]
            good = [u in pages for u in uris]
            precision.append(sum(good) / 3)
            success.append(any(good))
            images += sum(_kind(u) in IMAGES for u in uris)
            if not any(good):
                misses.append((question['q'][:50], [u.rsplit('/', 2)[-1] for u in uris]))
        out[mode] = {
            'precision@3': round(statistics.fmean(precision), 3),
            'success@3': round(statistics.fmean(success), 3),
            'images_in_top3': images,
            'misses': misses,
        }
    return out


def cold_start(store_dir: Path, query: str, repeats: int) -> dict[str, Any]:
    """``toolish-rag search`` in fresh processes; each phase the difference of two nested commands (median of ``repeats``)."""
    spec = f'lancedb:{store_dir}'
    steps = {
        'interpreter': [sys.executable, '-c', 'pass'],
        'import toolish_rag': [sys.executable, '-c', 'import toolish_rag'],
        'import cli + lancedb store': [
            sys.executable,
            '-c',
            'import toolish_rag.cli, toolish_rag_lancedb',
        ],
    }
    for mode in MODES:
        steps[f'search --tool {mode}'] = [
            sys.executable,
            '-m',
            'toolish_rag.cli',
            'search',
            query,
            '--tool',
            mode,
            '--store',
            spec,
            '--top-k',
            '3',
        ]
    medians: dict[str, float] = {}
    env = {**os.environ, 'HF_HUB_OFFLINE': '1', 'TOKENIZERS_PARALLELISM': 'false'}
    for name, command in steps.items():
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
            times.append(time.perf_counter() - started)
            if done.returncode != 0:
                raise SystemExit(f'{name}: exit {done.returncode}: {done.stderr[-500:]}')
        medians[name] = round(statistics.median(times), 3)
    base = medians['import cli + lancedb store']
    return {
        'median_seconds': medians,
        'phases': {
            'interpreter': medians['interpreter'],
            'import toolish_rag': round(medians['import toolish_rag'] - medians['interpreter'], 3),
            'import cli + store': round(base - medians['import toolish_rag'], 3),
            **{f'open + search ({m})': round(medians[f'search --tool {m}'] - base, 3) for m in MODES},
        },
    }


def _say(what: str) -> None:
    print(f'[{time.strftime("%H:%M:%S")}] {what}', file=sys.stderr, flush=True)


def vocabulary_of(found: Sequence[Found]) -> set[str]:
    words: set[str] = set()
    for item in found:
        if item.reason is None and _kind(str(item.path)) in ('.md', '.py', '.txt', '.html'):
            words.update(_WORD.findall(item.path.read_text(encoding='utf-8', errors='replace').lower()))
    return words


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('paths', nargs='+', type=Path)
    parser.add_argument('--questions', type=Path, required=True)
    parser.add_argument('--base', type=Path, default=None, help="the folder the questions' pages are relative to")
    parser.add_argument('--exclude', action='append', default=[])
    parser.add_argument('--ocr', choices=('auto', 'never'), default='auto')
    parser.add_argument('--repeats', type=int, default=3, help='cold starts per command (median)')
    parser.add_argument('--json-out', type=Path, default=None)
    parser.add_argument('--no-cold-start', action='store_true', help='skip the CLI cold-start timings')
    args = parser.parse_args()
    paths = [p.resolve() for p in args.paths]
    base = args.base.resolve() if args.base is not None else Path(os.path.commonpath(paths))
    questions = json.loads(args.questions.read_text())['questions']
    with tempfile.TemporaryDirectory(prefix='doctree-') as tmp:
        _say('ingesting')
        ingested = await run_ingest(paths, Path(tmp) / 'store', args)
        store: LanceDBStore = ingested.pop('store')
        found: list[Found] = ingested.pop('found')
        files = [f for f in found if f.reason is None]
        result: dict[str, Any] = {'paths': [str(p) for p in paths], 'threads': THREADS, 'ingest': ingested}
        _say(f'ingested in {ingested["seconds"]["ingest_total"]} s; parsing each file alone')
        result['parse_by_kind'] = parse_by_kind(files, paths, OcrOptions(args.ocr))
        result['stored'] = await stored_kinds(store, vocabulary_of(files))
        _say('asking the questions')
        result['quality'] = await quality(store, questions, base.parent if base.is_file() else base)
        result['pages_missing'] = [p for q in questions for p in q['pages'] if not (base / p).is_file()]
        if not args.no_cold_start:
            _say('timing CLI cold starts')
            result['cli_cold_start'] = cold_start(Path(tmp) / 'store', questions[0]['q'], args.repeats)
    print(json.dumps(result, indent=2))
    if args.json_out is not None:
        args.json_out.write_text(json.dumps(result, indent=2) + '\n')


if __name__ == '__main__':
    asyncio.run(main())
