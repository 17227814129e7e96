"""Multi-vector chunks (MaxP) in `InMemoryStore`: windows found, scores exact, scope kept, persisted."""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt
import pytest
from pydantic_ai.embeddings import EmbeddingResult, EmbeddingSettings
from pydantic_ai.embeddings.result import EmbedInputType

from toolish_rag import Document, DocumentBuilder, EmbeddingWindows, Filter, SearchRequest, embed_windows, parse_filter
from toolish_rag.embedding import HashingEmbeddingModel, resolve_embedder
from toolish_rag.filters import matches
from toolish_rag.stores import InMemoryStore

WINDOWS = EmbeddingWindows(max_tokens=24, overlap=6)
_FILLER = [
    *[
        'the',
        'committee',
        'reviewed',
        'budget',
        'tables',
        'for',
        'regional',
        'offices',
        'and',
        'noted',
        'staffing',
        'levels',
    ],
    *[
        'across',
        'several',
        'quarters',
        'while',
        'travel',
        'policies',
        'and',
        'procurement',
        'schedules',
        'were',
        'discussed',
    ],
]


class _Counting(HashingEmbeddingModel):
    """The hashing embedder, counting the texts it embeds (to see what a write re-embeds)."""

    def __init__(self) -> None:
        super().__init__(128)
        self.embedded = 0

    async def embed(
        self, inputs: str | Sequence[str], *, input_type: EmbedInputType, settings: EmbeddingSettings | None = None
    ) -> EmbeddingResult:
        if input_type == 'document':
            self.embedded += 1 if isinstance(inputs, str) else len(inputs)
        return await super().embed(inputs, input_type=input_type, settings=settings)


def _filler(n: int, seed: int) -> str:
    rng = random.Random(seed)
    return ' '.join(rng.choice(_FILLER) for _ in range(n))


def _doc(doc_id: str, texts: list[str], **metadata: str | int) -> Document:
    builder = DocumentBuilder(f'mem://{doc_id}', doc_id, id=doc_id, metadata=metadata, indexed_text=None)
    for text in texts:
        builder.add_chunk(None, text)
    return builder.build()


def _corpus(n: int = 24, seed: int = 7) -> list[Document]:
    rng = random.Random(seed)
    topics = ['zebra migration', 'quantum dots', 'glacier melt', 'coral reefs', 'volcanic ash', 'honey bees']
    docs = []
    for d in range(n):
        chunks = []
        for c in range(rng.randint(1, 3)):
            words = rng.choice([8, 20, 60, 150])
            body = _filler(words, seed * 1000 + d * 10 + c)
            topic = rng.choice(topics)
            chunks.append(f'{body} {topic} {_filler(rng.choice([0, 5, 40]), d + c)}'.strip())
        docs.append(_doc(f'd{d}', chunks, group=rng.choice('abc'), year=rng.randint(2000, 2004)))
    return docs


async def _oracle(store: InMemoryStore, query: str, config: EmbeddingWindows | None) -> dict[str, float]:
    """Each record's score recomputed from scratch with numpy: unit rows, best dot product (MaxP),
    averaged with the whole text's (row 0) for ``scoring='mean_whole_best'``."""
    records = [c for d in await _documents(store) for c in d.chunks]
    model = store.embedder
    q = np.asarray((await model.embed_query(query)).embeddings[0], dtype=np.float32)
    q /= np.linalg.norm(q) or 1.0
    texts = [r.text for r in records]
    rows = await embed_windows(model, texts, config) if config else await embed_windows(model, texts, WINDOWS_OFF)
    out: dict[str, float] = {}
    for r, m in zip(records, rows, strict=True):
        unit = m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)
        cosines = unit @ q
        best = float(cosines.max())
        mean = config is not None and config.scoring == 'mean_whole_best'
        out[r.id] = (float(cosines[0]) + best) / 2 if mean else best
    return out


WINDOWS_OFF = EmbeddingWindows(max_windows=1)

_STORED: dict[int, list[Document]] = {}


async def _documents(store: InMemoryStore) -> list[Document]:
    return _STORED[id(store)]


async def _store(docs: list[Document], config: EmbeddingWindows | None = WINDOWS, **kw: object) -> InMemoryStore:
    store = InMemoryStore(HashingEmbeddingModel(128), windows=config, **kw)  # type: ignore[arg-type]
    await store.upsert(docs)
    _STORED[id(store)] = docs
    return store


def _scores(hits: Sequence[object]) -> dict[str, float]:
    return {h.record.id: h.score for h in hits}  # type: ignore[attr-defined]


async def test_a_passage_past_the_first_window_is_found_with_windows_only() -> None:
    long = _filler(220, 1) + ' the zebra migration crossed the quantum river at dawn'
    docs = [
        _doc('long', [long]),
        _doc('near', ['zebra stripes in the savanna']),
        _doc('other', ['quantum computers and the river of data']),
    ]
    query = 'zebra migration quantum river dawn'
    with_windows = await (await _store(docs)).vector_search(SearchRequest(query=query, top_k=3))
    without = await (await _store(docs, None)).vector_search(SearchRequest(query=query, top_k=3))
    assert with_windows[0].record.id == 'long-0'
    assert without[0].record.id != 'long-0'
    assert _scores(with_windows)['long-0'] > _scores(without)['long-0'] + 0.2


@pytest.mark.parametrize('scoring', ['mean_whole_best', 'best'])
async def test_scores_equal_a_numpy_oracle_under_random_filters(scoring: Literal['mean_whole_best', 'best']) -> None:
    docs = _corpus()
    config = replace(WINDOWS, scoring=scoring)
    store = await _store(docs, config)
    assert store._snapshot.windows.extra > 10  # the corpus has long chunks
    rng = random.Random(3)
    filters: list[Filter | None] = [None]
    for _ in range(12):
        group = parse_filter({'op': 'in', 'key': 'group', 'values': rng.sample('abc', rng.randint(1, 2))})
        year = parse_filter({'op': 'gte', 'key': 'year', 'value': rng.randint(2000, 2004)})
        filters.append(
            rng.choice([group, year, parse_filter({'op': 'and', 'filters': [group.model_dump(), year.model_dump()]})])
        )
    records = {c.id: c for d in docs for c in d.chunks}
    for query in ['zebra migration', 'committee budget quantum dots', 'honey bees glacier']:
        oracle = await _oracle(store, query, config)
        for f in filters:
            k = rng.randint(1, 8)
            hits = await store.vector_search(SearchRequest(query=query, top_k=k, filter=f))
            in_scope = {i: s for i, s in oracle.items() if matches(f, records[i])}
            expected = sorted(in_scope.values(), reverse=True)[:k]
            assert len(hits) == min(k, len(in_scope))
            assert all(matches(f, h.record) for h in hits)
            np.testing.assert_allclose([h.score for h in hits], expected, atol=1e-5)
            for h in hits:
                assert h.score == pytest.approx(oracle[h.record.id], abs=1e-5)


async def test_without_windows_scores_are_one_vector_per_record() -> None:
    docs = _corpus(10)
    store = await _store(docs, None)
    assert store._snapshot.unwindowed == len(store)
    oracle = await _oracle(store, 'zebra migration', None)
    hits = await store.vector_search(SearchRequest(query='zebra migration', top_k=50))
    assert _scores(hits) == pytest.approx(oracle, abs=1e-5)


async def test_persistence_round_trip(tmp_path: Path) -> None:
    docs = _corpus(12)
    store = await _store(docs, path=tmp_path / 'kb')
    before = await store.vector_search(SearchRequest(query='coral reefs committee', top_k=20))
    reopened = InMemoryStore(HashingEmbeddingModel(128), path=tmp_path / 'kb', windows=WINDOWS)
    after = await reopened.vector_search(SearchRequest(query='coral reefs committee', top_k=20))
    assert [(h.record.id, h.score) for h in after] == [(h.record.id, h.score) for h in before]
    np.testing.assert_array_equal(reopened._snapshot.windows.vectors, store._snapshot.windows.vectors)
    # A graph-only write links the record files (windows included) and keeps the windows.
    await reopened.set_graph_marks('b', {'k': 'v'})
    again = InMemoryStore(HashingEmbeddingModel(128), path=tmp_path / 'kb', windows=WINDOWS)
    assert _scores(await again.vector_search(SearchRequest(query='coral reefs committee', top_k=20))) == _scores(before)


async def test_a_store_saved_before_windows_loads_single_vector_and_rebuilds(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    docs = _corpus(12)
    path = tmp_path / 'kb'
    await _store(docs, None, path=path)
    # The format before windows: the saved records have no window files at all.
    for segment in (path / 'segments').iterdir():
        for name in ('windows.npy', 'window_counts.npy', 'windows.json'):
            (segment / name).unlink()
    with caplog.at_level(logging.WARNING, logger='toolish_rag.stores.memory'):
        legacy = InMemoryStore(HashingEmbeddingModel(128), path=path, windows=WINDOWS)
    assert 'rebuild_windows' in caplog.text
    _STORED[id(legacy)] = docs
    single = await _oracle(legacy, 'zebra migration', None)
    assert _scores(await legacy.vector_search(SearchRequest(query='zebra migration', top_k=100))) == pytest.approx(
        single, abs=1e-5
    )
    assert await legacy.rebuild_windows() == len(legacy)
    assert await legacy.rebuild_windows() == 0
    windowed = await _oracle(legacy, 'zebra migration', WINDOWS)
    assert windowed != pytest.approx(single, abs=1e-5)
    rebuilt = InMemoryStore(HashingEmbeddingModel(128), path=path, windows=WINDOWS)
    hits = await rebuilt.vector_search(SearchRequest(query='zebra migration', top_k=100))
    assert _scores(hits) == pytest.approx(windowed, abs=1e-5)


async def test_another_window_config_forgets_the_old_windows_until_rebuilt(tmp_path: Path) -> None:
    docs = _corpus(8)
    path = tmp_path / 'kb'
    await _store(docs, path=path)
    other = EmbeddingWindows(max_tokens=40, overlap=8)
    store = InMemoryStore(HashingEmbeddingModel(128), path=path, windows=other)
    _STORED[id(store)] = docs
    await store.upsert([docs[0]])  # a write under the new config
    assert store._snapshot.windows.key == other.key(40)
    assert store._snapshot.unwindowed == len(store) - len(docs[0].chunks)
    await store.rebuild_windows()
    hits = await store.vector_search(SearchRequest(query='glacier melt', top_k=100))
    assert _scores(hits) == pytest.approx(await _oracle(store, 'glacier melt', other), abs=1e-5)


async def test_re_upsert_is_idempotent_and_embeds_nothing() -> None:
    docs = _corpus(10)
    model = _Counting()
    store = InMemoryStore(model, windows=WINDOWS)
    await store.upsert(docs)
    first = store._snapshot.windows
    embedded = model.embedded
    await store.upsert(docs)
    assert model.embedded == embedded
    np.testing.assert_array_equal(store._snapshot.windows.vectors, first.vectors)
    np.testing.assert_array_equal(store._snapshot.windows.counts, first.counts)
    # A fresh store given the same documents makes the same windows.
    fresh = InMemoryStore(_Counting(), windows=WINDOWS)
    await fresh.upsert(docs)
    np.testing.assert_array_equal(fresh._snapshot.windows.vectors, first.vectors)


async def test_replacing_and_deleting_documents_keeps_windows_aligned() -> None:
    docs = _corpus(12)
    store = await _store(docs)
    changed = _doc('d3', [_filler(90, 99) + ' volcanic ash plume', 'short new chunk'], group='a', year=2001)
    await store.upsert([changed])
    await store.delete_documents(['d5', 'd7'])
    remaining = [changed if d.id == 'd3' else d for d in docs if d.id not in ('d5', 'd7')]
    _STORED[id(store)] = remaining
    for query in ['volcanic ash plume', 'budget committee']:
        hits = await store.vector_search(SearchRequest(query=query, top_k=100))
        assert _scores(hits) == pytest.approx(await _oracle(store, query, WINDOWS), abs=1e-5)


def _unit(m: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    unit: npt.NDArray[np.float32] = m / np.linalg.norm(m, axis=1, keepdims=True)
    return unit


@pytest.mark.model
async def test_minilm_finds_the_end_of_a_long_abstract(tmp_path: Path) -> None:
    intro = (
        'Dietary patterns were recorded for a cohort of adults over ten years, with food frequency '
        'questionnaires, cooking methods, meal timing, household income and physical activity. '
    ) * 8
    long = intro + 'In mice, knocking out the TREM2 gene increased amyloid plaque burden in the hippocampus.'
    docs = [_doc('long', [long]), _doc('other', ['Plaque on teeth is removed by brushing twice a day.'])]
    embedder = resolve_embedder(None)
    store = InMemoryStore(embedder, windows=EmbeddingWindows())
    await store.upsert(docs)
    single = InMemoryStore(embedder, windows=None)
    await single.upsert(docs)
    query = 'Does TREM2 deficiency increase amyloid plaques?'
    hits = await store.vector_search(SearchRequest(query=query, top_k=2))
    baseline = _scores(await single.vector_search(SearchRequest(query=query, top_k=2)))
    assert hits[0].record.id == 'long-0'
    assert hits[0].score > baseline['long-0'] + 0.1
    rows = (await embed_windows(store.embedder, [long], EmbeddingWindows()))[0]
    assert rows.shape[0] >= 2
    q = np.asarray((await store.embedder.embed_query(query)).embeddings[0], dtype=np.float32)
    cosines = _unit(rows) @ (q / np.linalg.norm(q))
    # The default scoring: the mean of the whole text's cosine (row 0) and the best window's.
    assert hits[0].score == pytest.approx((float(cosines[0]) + float(cosines.max())) / 2, abs=1e-4)
    assert float(cosines.max()) > float(cosines[0]) + 0.1  # the window found what the whole text hid
