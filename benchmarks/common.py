"""Shared helpers for the benchmarks and quality tests: BEIR data, documents, nDCG.

* `data_dir` / `load_beir` read a BEIR-layout collection from ``../shared/data`` (never
  copied into the repository).
* `build_documents` turns each corpus entry into one `Document` with one chunk whose
  indexed text *and* source text are ``title + "\\n\\n" + text`` (built with
  `DocumentBuilder(indexed_text=None)` and the text passed explicitly, so the builder adds
  no heading of its own).
* `evaluate` runs every judged query through a `Retriever` (the code path the agent's
  tools use) and `ndcg_at_10` scores the run with ``pytrec-eval-terrier`` (trec_eval's
  nDCG, linear gains), averaged over *all* judged queries: a query with no hits scores 0.
* `reference_ndcg` is a small pure-Python nDCG used to cross-check pytrec_eval.
* `CachedEmbeddingModel` is for iterating on benchmarks only (a cache directory outside
  the repository); tests never use it.

For the speed scripts (core_bench, lancedb_bench, tantivy_bench), one copy of what they share:
synthetic corpora (`PseudoWords`, `bucket_of`, `synthetic_name`), the cheap
`BagOfRandomVectors` embedder, timing a tool call beside its raw counterpart (`alternate`,
`tool_latency`, `pct`, `timed`) and the speed-result JSON that suite.py and render.py read
(`tool_json`, `filtered_json`, `speed_result`). Thread pinning is in ``pin_threads.py``: it
must run before this module imports numpy.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import math
import random
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import accumulate
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt
from pydantic_ai.embeddings import EmbeddingModel, EmbeddingResult, EmbeddingSettings
from pydantic_ai.embeddings.result import EmbedInputType

from toolish_rag.builder import DocumentBuilder
from toolish_rag.content import Document
from toolish_rag.retriever import Retriever
from toolish_rag.search import SearchHit

if TYPE_CHECKING:
    from toolish_rag.toolset import ToolishRag

__all__ = [
    'Alternated',
    'BagOfRandomVectors',
    'BeirDataset',
    'CachedEmbeddingModel',
    'PseudoWords',
    'Qrels',
    'Run',
    'alternate',
    'bucket_of',
    'build_documents',
    'chunk_text',
    'cpu_model',
    'data_dir',
    'evaluate',
    'filtered_json',
    'hit_doc_ids',
    'load_beir',
    'memory_gib',
    'ndcg_at_10',
    'pct',
    'peak_rss_mib',
    'ranking_to_run',
    'reference_ndcg',
    'speed_result',
    'synthetic_name',
    'timed',
    'tool_json',
    'tool_latency',
    'write_speed_result',
]

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]
Mode = Literal['vector', 'text', 'hybrid']


def peak_rss_mib() -> float:
    """This process's peak resident memory in MiB.

    Reads ``VmHWM`` (reset by ``exec``): ``ru_maxrss`` is kept across fork and exec on Linux,
    so a benchmark started by the suite would report the suite's own peak.
    """
    try:
        for line in Path('/proc/self/status').read_text().splitlines():
            if line.startswith('VmHWM:'):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def data_dir() -> Path:
    """``../shared/data`` next to the repository root (may not exist)."""
    return (Path(__file__).resolve().parents[1] / '..' / 'shared' / 'data').resolve()


@dataclass(frozen=True)
class BeirDataset:
    name: str
    corpus: dict[str, tuple[str, str]]
    """corpus id -> (title, text)"""
    queries: dict[str, str]
    """Only the queries that have judgments."""
    qrels: Qrels


def load_beir(name: str, split: str, root: Path | None = None) -> BeirDataset:
    """Read ``<root>/<name>`` (BEIR layout); keeps only judged queries and positive judgments."""
    base = (root or data_dir()) / name
    corpus: dict[str, tuple[str, str]] = {}
    with (base / 'corpus.jsonl').open(encoding='utf-8') as f:
        for line in f:
            row = json.loads(line)
            corpus[str(row['_id'])] = (row.get('title') or '', row.get('text') or '')
    qrels: Qrels = {}
    with (base / 'qrels' / f'{split}.tsv').open(encoding='utf-8') as f:
        next(f)  # header
        for line in f:
            qid, did, score = line.rstrip('\n').split('\t')
            if int(score) > 0:
                qrels.setdefault(qid, {})[did] = int(score)
    queries: dict[str, str] = {}
    with (base / 'queries.jsonl').open(encoding='utf-8') as f:
        for line in f:
            row = json.loads(line)
            if str(row['_id']) in qrels:
                queries[str(row['_id'])] = row['text']
    qrels = {q: r for q, r in qrels.items() if q in queries}
    return BeirDataset(name, corpus, queries, qrels)


def chunk_text(title: str, text: str) -> str:
    """What is indexed for a corpus entry: the title, a blank line, the text."""
    return f'{title}\n\n{text}' if title else text


def build_documents(dataset: BeirDataset) -> list[Document]:
    """One `Document` per corpus entry, one chunk each; the corpus id is the document id."""
    documents: list[Document] = []
    for doc_id, (title, text) in dataset.corpus.items():
        builder = DocumentBuilder(f'beir://{dataset.name}/{doc_id}', title, id=doc_id, indexed_text=None)
        full = chunk_text(title, text)
        builder.add_chunk(None, full, text=full)
        documents.append(builder.build())
    return documents


def ranking_to_run(rankings: Mapping[str, Sequence[str]]) -> Run:
    """Turn ranked id lists into a trec run whose scores keep exactly that order.

    trec_eval sorts by score and breaks ties by document id, so the raw scores of tied
    hits could reorder them; rank-derived scores evaluate the ranking the tool returned.
    """
    return {qid: {doc: float(len(docs) - i) for i, doc in enumerate(docs)} for qid, docs in rankings.items()}


def ndcg_at_10(qrels: Qrels, rankings: Mapping[str, Sequence[str]]) -> float:
    """Mean nDCG@10 (pytrec-eval-terrier) over every judged query; unanswered queries count 0."""
    import pytrec_eval

    run = {q: r for q, r in ranking_to_run(rankings).items() if r and q in qrels}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {'ndcg_cut.10'})
    per_query = evaluator.evaluate(run)
    return sum(v['ndcg_cut_10'] for v in per_query.values()) / len(qrels)


def reference_ndcg(qrels: Qrels, rankings: Mapping[str, Sequence[str]], k: int = 10) -> float:
    """nDCG@k by the textbook formula (linear gain, log2(rank + 1) discount), mean over judged queries."""
    total = 0.0
    for qid, judged in qrels.items():
        ranked = list(rankings.get(qid, ()))[:k]
        dcg = sum(judged.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranked))
        ideal = sorted(judged.values(), reverse=True)[:k]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        total += dcg / idcg if idcg else 0.0
    return total / len(qrels)


def hit_doc_ids(hits: Sequence[SearchHit]) -> list[str]:
    """Corpus ids of hits, best first (one chunk per document, so one id per hit)."""
    out: list[str] = []
    for h in hits:
        doc_id = getattr(h.record, 'document_id', h.record.id)
        if doc_id not in out:
            out.append(doc_id)
    return out


async def evaluate(
    retriever: Retriever, dataset: BeirDataset, mode: Mode, top_k: int = 10, concurrency: int = 1
) -> dict[str, list[str]]:
    """Run every judged query through ``retriever.<mode>_search``; returns corpus-id rankings."""
    search: Callable[[str, int], Awaitable[list[SearchHit]]] = getattr(retriever, f'{mode}_search')
    rankings: dict[str, list[str]] = {}
    semaphore = asyncio.Semaphore(concurrency)

    async def one(qid: str, text: str) -> None:
        async with semaphore:
            rankings[qid] = hit_doc_ids(await search(text, top_k))

    await asyncio.gather(*(one(q, t) for q, t in dataset.queries.items()))
    return rankings


class CachedEmbeddingModel(EmbeddingModel):
    """Wraps a model and keeps its vectors in ``cache_dir`` (benchmark iteration only).

    Keyed by model name, input type and text digest; one ``.npy`` per text. Never used by
    tests, never pointed inside the repository.
    """

    def __init__(self, inner: EmbeddingModel, cache_dir: Path, *, cache_queries: bool = True) -> None:
        self._inner = inner
        self._cache_queries = cache_queries
        self._dir = cache_dir / inner.model_name.replace('/', '_')
        self._dir.mkdir(parents=True, exist_ok=True)
        super().__init__(settings=inner.settings)

    @property
    def model_name(self) -> str:
        return self._inner.model_name

    @property
    def system(self) -> str:
        return self._inner.system

    def _path(self, text: str, input_type: str) -> Path:
        digest = hashlib.sha256(f'{input_type}\0{text}'.encode()).hexdigest()
        return self._dir / digest[:2] / f'{digest}.npy'

    async def embed(
        self, inputs: str | Sequence[str], *, input_type: EmbedInputType, settings: EmbeddingSettings | None = None
    ) -> EmbeddingResult:
        texts = [inputs] if isinstance(inputs, str) else list(inputs)
        if input_type == 'query' and not self._cache_queries:
            return await self._inner.embed(texts, input_type=input_type, settings=settings)
        found: dict[int, Any] = {}
        missing: list[int] = []
        for i, t in enumerate(texts):
            p = self._path(t, input_type)
            if p.is_file():
                found[i] = np.load(p)
            else:
                missing.append(i)
        if missing:
            fresh = await self._inner.embed([texts[i] for i in missing], input_type=input_type, settings=settings)
            for i, vec in zip(missing, fresh.embeddings, strict=True):
                arr = np.asarray(vec, dtype=np.float32)
                p = self._path(texts[i], input_type)
                p.parent.mkdir(exist_ok=True)
                np.save(p, arr)
                found[i] = arr
        return EmbeddingResult(
            embeddings=[found[i].tolist() for i in range(len(texts))],
            inputs=texts,
            input_type=input_type,
            model_name=self.model_name,
            provider_name=self.system,
        )

    async def max_input_tokens(self) -> int | None:
        return await self._inner.max_input_tokens()

    async def count_tokens(self, text: str) -> int:
        return await self._inner.count_tokens(text)


# -- speed benchmarks: synthetic corpora ---------------------------------------------------------


def bucket_of(key: str) -> int:
    """A stable pseudo-random bucket 0-99 for ``key``: the metadata the filtered searches scope by."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=4).digest(), 'little') % 100


def synthetic_name(size: int) -> str:
    """A synthetic corpus's name in the JSON: ``synthetic-2k``, ``synthetic-100k``, ``synthetic-1m``."""
    if size >= 1_000_000 and size % 1_000_000 == 0:
        return f'synthetic-{size // 1_000_000}m'
    return f'synthetic-{size // 1000}k' if size >= 1000 else f'synthetic-{size}'


@dataclass(frozen=True)
class PseudoWords:
    """A vocabulary of 20,000 pseudo-words (``bak12``) drawn with Zipf weights, as words are in text.

    Drawn from the caller's ``rng`` so that a corpus is a pure function of its seed.
    """

    vocab: list[str]
    cum_weights: list[float]

    @classmethod
    def draw(cls, rng: random.Random) -> PseudoWords:
        consonants, vowels = 'bcdfghklmnprstvz', 'aeiou'
        vocab = [f'{rng.choice(consonants)}{rng.choice(vowels)}{rng.choice(consonants)}{i}' for i in range(20_000)]
        return cls(vocab, list(accumulate(1 / (r + 1) for r in range(len(vocab)))))

    def chunk(self, rng: random.Random, words: int = 60) -> str:
        """``words`` words, one of them replaced by an ``ERR-nnnn`` code (what the regex benchmarks find)."""
        drawn = rng.choices(self.vocab, cum_weights=self.cum_weights, k=words)
        drawn[rng.randrange(words)] = f'ERR-{rng.randrange(10_000):04d}'
        return ' '.join(drawn)

    def query(self, rng: random.Random) -> str:
        """Four words of middling frequency (neither stop-word-like nor unseen)."""
        return ' '.join(rng.choices(self.vocab[50:5000], k=4))


# -- speed benchmarks: a cheap embedder ----------------------------------------------------------

_WORD = re.compile(r'\w+')


class BagOfRandomVectors(EmbeddingModel):
    """Each word a fixed pseudo-random vector (seeded by its hash); a text the normalised sum.

    Deterministic across processes and cheap: a dictionary lookup per word and one sparse
    matrix product per batch, so the synthetic corpora of a million chunks embed in minutes and
    query embedding costs microseconds (the tool/raw ratios then isolate our layer).
    Deliberately not the library's `toolish_rag.embedding.HashingEmbeddingModel`: that one
    hashes every word *and* character trigram in pure Python (far slower per chunk) into
    signed buckets, whereas dense Gaussian word vectors make texts that share words cluster
    the way real embeddings do, which is what the ANN indexes of the stores are built for.
    """

    def __init__(self, dimensions: int = 384) -> None:
        self._dims = dimensions
        self._ids: dict[str, int] = {}
        self._table = np.zeros((4096, dimensions), dtype=np.float32)
        super().__init__()

    @property
    def model_name(self) -> str:
        return f'bag-of-random-vectors-{self._dims}'

    @property
    def system(self) -> str:
        return 'benchmark'

    def _new_word(self, word: str) -> int:
        i = len(self._ids)
        if i == self._table.shape[0]:
            self._table = np.vstack([self._table, np.zeros_like(self._table)])
        seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), 'little')
        self._table[i] = np.random.default_rng(seed).standard_normal(self._dims).astype(np.float32)
        self._ids[word] = i
        return i

    def vectors(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Unit vectors of ``texts`` as one float32 matrix (the raw side of the ingest timings)."""
        from scipy.sparse import csr_matrix  # type: ignore[import-untyped]

        ids: list[int] = []
        indptr = [0]
        lookup = self._ids
        for text in texts:
            for w in _WORD.findall(text.lower()):
                i = lookup.get(w)
                ids.append(self._new_word(w) if i is None else i)
            indptr.append(len(ids))
        n_words = len(self._ids)
        counts = csr_matrix(
            (np.ones(len(ids), dtype=np.float32), np.asarray(ids, dtype=np.int64), np.asarray(indptr)),
            shape=(len(texts), n_words),
        )
        out = np.asarray(counts @ self._table[:n_words], dtype=np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        out /= norms
        return out

    async def embed(
        self, inputs: str | Sequence[str], *, input_type: EmbedInputType, settings: EmbeddingSettings | None = None
    ) -> EmbeddingResult:
        inputs, settings = self.prepare_embed(inputs, settings)
        return EmbeddingResult(
            embeddings=self.vectors(inputs).tolist(),
            inputs=inputs,
            input_type=input_type,
            model_name=self.model_name,
            provider_name=self.system,
        )

    async def max_input_tokens(self) -> int | None:
        return None

    async def count_tokens(self, text: str) -> int:
        return len(_WORD.findall(text))


# -- speed benchmarks: timing --------------------------------------------------------------------


def pct(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``values``, numpy's linear interpolation."""
    return float(np.percentile(np.asarray(values), q))


async def timed(call: Awaitable[Any]) -> tuple[float, Any]:
    """Milliseconds to await ``call`` (a coroutine does no work until awaited) and its result."""
    start = time.perf_counter()
    result = await call
    return (time.perf_counter() - start) * 1000, result


async def _clocked(call: Callable[[Any], Any], arg: Any) -> tuple[float, Any]:
    """Milliseconds of ``call(arg)``: the call itself if it is synchronous, else only the awaiting."""
    start = time.perf_counter()
    out = call(arg)
    elapsed = time.perf_counter() - start
    if inspect.isawaitable(out):
        return await timed(out)
    return elapsed * 1000, out


@dataclass(frozen=True)
class Alternated:
    """A tool and its raw counterpart timed call by call on the same arguments."""

    tool_ms: list[float]
    raw_ms: list[float]
    """Empty when there is no raw counterpart."""
    tool_out: list[Any]
    """What each tool call returned, first round only (one per argument)."""
    raw_out: list[Any]


async def alternate(
    tool: Callable[[Any], Awaitable[Any]],
    raw: Callable[[Any], Any] | None,
    args: Sequence[Any],
    rounds: int = 1,
) -> Alternated:
    """Time ``tool(a)`` and ``raw(a)`` for every ``a`` of ``args``, ``rounds`` times over.

    Which of the two goes first alternates call by call (and round by round), so neither
    always runs on a warmer cache and load from other processes hits both alike. ``raw`` may
    be synchronous (tantivy-py) or return an awaitable (LanceDB, the embedder).
    """
    got = Alternated([], [], [], [])

    async def run_raw(a: Any, keep: bool) -> None:
        assert raw is not None
        ms, out = await _clocked(raw, a)
        got.raw_ms.append(ms)
        if keep:
            got.raw_out.append(out)

    for r in range(rounds):
        for i, a in enumerate(args):
            raw_first = (i + r) % 2 == 0
            if raw is not None and raw_first:
                await run_raw(a, r == 0)
            ms, out = await _clocked(tool, a)
            got.tool_ms.append(ms)
            if r == 0:
                got.tool_out.append(out)
            if raw is not None and not raw_first:
                await run_raw(a, r == 0)
    return got


async def tool_latency(
    rag: ToolishRag[None],
    tool: str,
    args: Sequence[dict[str, Any]],
    raw: Callable[[dict[str, Any]], Any] | None,
    rounds: int = 1,
) -> Alternated:
    """`alternate` over ``rag.run_tool(tool, a)``, the agent's tool call; ``tool_out`` holds each call's hits."""
    got = await alternate(lambda a: rag.run_tool(tool, a), raw, args, rounds)
    return replace(got, tool_out=[list(result.metadata['hits']) for result in got.tool_out])


# -- speed benchmarks: the speed-result JSON (suite.py and render.py read it) ----------------------

Percentile = Callable[[Sequence[float], float], float]


def tool_json(
    tool: str, tool_ms: Sequence[float], raw_ms: Sequence[float], raw: str, percentile: Percentile = pct
) -> dict[str, Any]:
    """One entry of a corpus's ``tools``: tool and raw p50/p99 in ms (raw ``None`` without a counterpart)."""
    return {
        'tool': tool,
        'n': len(tool_ms),
        'p50_ms': round(percentile(tool_ms, 50), 4),
        'p99_ms': round(percentile(tool_ms, 99), 4),
        'raw_p50_ms': round(percentile(raw_ms, 50), 4) if raw_ms else None,
        'raw_p99_ms': round(percentile(raw_ms, 99), 4) if raw_ms else None,
        'raw': raw,
    }


def filtered_json(
    tool: str,
    selectivity: float,
    tool_ms: Sequence[float],
    raw_ms: Sequence[float],
    *,
    unfiltered_p50_ms: float,
    exact_top_k: int,
    top_k: int,
    percentile: Percentile = pct,
) -> dict[str, Any]:
    """One entry of a corpus's ``filtered``: a search scoped to ``selectivity`` of the chunks.

    ``exact_top_k`` counts the calls that returned exactly ``top_k`` hits (or every in-scope
    match, when fewer exist), all in scope.
    """
    return {
        'tool': tool,
        'selectivity': selectivity,
        'n': len(tool_ms),
        'p50_ms': round(percentile(tool_ms, 50), 4),
        'p99_ms': round(percentile(tool_ms, 99), 4),
        'unfiltered_p50_ms': round(unfiltered_p50_ms, 4),
        'raw_p50_ms': round(percentile(raw_ms, 50), 4),
        'exact_top_k': exact_top_k,
        'top_k': top_k,
    }


def speed_result(store: str, threads: str, corpora: list[dict[str, Any]]) -> dict[str, Any]:
    """A speed script's whole result: its store, thread note, peak memory so far and corpora."""
    return {'store': store, 'threads': threads, 'peak_rss_mib': round(peak_rss_mib(), 1), 'corpora': corpora}


def write_speed_result(path: Path | None, result: dict[str, Any]) -> None:
    """Write ``result`` to ``path`` (``--json-out``; nothing when ``None``)."""
    if path is not None:
        path.write_text(json.dumps(result, indent=2) + '\n', encoding='utf-8')


# -- speed benchmarks: the machine ---------------------------------------------------------------


def cpu_model(default: str) -> str:
    """The CPU's model name (``/proc/cpuinfo``), or ``default`` where that cannot be read."""
    try:
        for line in Path('/proc/cpuinfo').read_text().splitlines():
            if line.startswith('model name'):
                return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return default


def memory_gib() -> float | None:
    """Total memory in GiB (``MemTotal`` of ``/proc/meminfo``), ``None`` where unknown."""
    try:
        for line in Path('/proc/meminfo').read_text().splitlines():
            if line.startswith('MemTotal'):
                return int(line.split()[1]) / 2**20
    except (OSError, ValueError, IndexError):
        pass
    return None
