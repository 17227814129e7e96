"""Multi-vector chunks (MaxP) in `LanceDBStore`: the ``windows`` column, scored like the reference store."""

from __future__ import annotations

import logging
import random
from dataclasses import replace
from pathlib import Path
from typing import Literal

import numpy as np
import pytest
from lancedb.index import IvfFlat

from toolish_rag import Document, DocumentBuilder, EmbeddingWindows, Filter, SearchRequest, parse_filter
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.filters import matches
from toolish_rag.stores import InMemoryStore
from toolish_rag_lancedb import LanceDBStore
from toolish_rag_lancedb._windows import WINDOWS_COLUMN

WINDOWS = EmbeddingWindows(max_tokens=24, overlap=6)
_FILLER = [
    *['the', 'committee', 'reviewed', 'budget', 'tables', 'for', 'regional', 'offices', 'and', 'noted'],
    *['across', 'several', 'quarters', 'while', 'travel', 'policies', 'and', 'procurement', 'schedules'],
]


def _filler(n: int, seed: int) -> str:
    rng = random.Random(seed)
    return ' '.join(rng.choice(_FILLER) for _ in range(n))


def _doc(doc_id: str, texts: list[str], **metadata: str | int) -> Document:
    builder = DocumentBuilder(f'mem://{doc_id}', doc_id, id=doc_id, metadata=metadata, indexed_text=None)
    for text in texts:
        builder.add_chunk(None, text)
    return builder.build()


def _corpus(n: int = 20, seed: int = 5) -> list[Document]:
    rng = random.Random(seed)
    topics = ['zebra migration', 'quantum dots', 'glacier melt', 'coral reefs', 'volcanic ash', 'honey bees']
    docs = []
    for d in range(n):
        chunks = [
            f'{_filler(rng.choice([8, 20, 60, 150]), d * 10 + c)} {rng.choice(topics)} {_filler(rng.choice([0, 40]), c)}'
            for c in range(rng.randint(1, 3))
        ]
        docs.append(_doc(f'd{d}', chunks, group=rng.choice('abc'), year=rng.randint(2000, 2004)))
    return docs


def _lance(path: Path, windows: EmbeddingWindows | None = WINDOWS, **kw: object) -> LanceDBStore:
    return LanceDBStore(path, embedder=HashingEmbeddingModel(128), windows=windows, **kw)  # type: ignore[arg-type]


def _filters(rng: random.Random) -> list[Filter | None]:
    out: list[Filter | None] = [None]
    for _ in range(8):
        group = parse_filter({'op': 'in', 'key': 'group', 'values': rng.sample('abc', rng.randint(1, 2))})
        year = parse_filter({'op': 'gte', 'key': 'year', 'value': rng.randint(2000, 2004)})
        both = parse_filter({'op': 'and', 'filters': [group.model_dump(), year.model_dump()]})
        out.append(rng.choice([group, year, both]))
    return out


async def test_a_passage_past_the_first_window_is_found_with_windows_only(tmp_path: Path) -> None:
    long = _filler(220, 1) + ' the zebra migration crossed the quantum river at dawn'
    docs = [
        _doc('long', [long]),
        _doc('near', ['zebra stripes in the savanna']),
        _doc('x', ['quantum computers and the river of data']),
    ]
    query = SearchRequest(query='zebra migration quantum river dawn', top_k=3)
    # Plain MaxP: the last window alone decides (with the default mean, the 220 filler words of the
    # whole text's vector count half, and the hashing embedder rates them near zero).
    windowed = _lance(tmp_path / 'w', replace(WINDOWS, scoring='best'))
    single = _lance(tmp_path / 's', None)
    await windowed.upsert(docs)
    await single.upsert(docs)
    hits = await windowed.vector_search(query)
    assert hits[0].record.id == 'long-0'
    assert (await single.vector_search(query))[0].record.id != 'long-0'
    table = await windowed.records_table()
    assert WINDOWS_COLUMN in (await table.schema()).names
    assert WINDOWS_COLUMN not in (await (await single.records_table()).schema()).names


@pytest.mark.parametrize(('scoring', 'documents'), [('mean_whole_best', 20), ('mean_whole_best', 90), ('best', 20)])
async def test_scores_and_exact_top_k_equal_the_reference_store_under_filters(
    tmp_path: Path, scoring: Literal['mean_whole_best', 'best'], documents: int
) -> None:
    # With 90 documents (about 180 chunks) the mean's candidates fetched by MaxP (at least 20 more
    # than k) are often not enough and are widened: the top k must still be the reference's.
    docs = _corpus(documents)
    config = replace(WINDOWS, scoring=scoring)
    lance = _lance(tmp_path / 'kb', config)
    await lance.upsert(docs)
    memory = InMemoryStore(HashingEmbeddingModel(128), windows=config)
    await memory.upsert(docs)
    assert memory._snapshot.windows.extra > 10
    records = {c.id: c for d in docs for c in d.chunks}
    rng = random.Random(11)
    for query in ['zebra migration', 'budget committee glacier', 'honey bees coral']:
        everything = {h.record.id: h.score for h in await memory.vector_search(SearchRequest(query=query, top_k=999))}
        for f in _filters(rng):
            k = rng.randint(1, 8 if documents <= 20 else 40)
            hits = await lance.vector_search(SearchRequest(query=query, top_k=k, filter=f))
            in_scope = sorted((s for i, s in everything.items() if matches(f, records[i])), reverse=True)
            assert len(hits) == min(k, len(in_scope))
            assert all(matches(f, h.record) for h in hits)
            np.testing.assert_allclose([h.score for h in hits], in_scope[:k], atol=1e-4)
            for h in hits:
                assert h.score == pytest.approx(everything[h.record.id], abs=1e-4)


async def test_round_trip_and_idempotent_re_upsert(tmp_path: Path) -> None:
    docs = _corpus(8)
    store = _lance(tmp_path / 'kb')
    await store.upsert(docs)

    async def stored() -> dict[str, list[list[float]]]:
        table = await store.records_table()
        rows = (await table.query().select(['id', WINDOWS_COLUMN]).to_arrow()).to_pylist()
        return {r['id']: r[WINDOWS_COLUMN] for r in rows}

    first = await stored()
    assert max(len(v) for v in first.values()) > 1
    await store.upsert(docs)
    assert await stored() == first
    query = SearchRequest(query='volcanic ash committee', top_k=10)
    before = [(h.record.id, h.score) for h in await store.vector_search(query)]
    await store.aclose()
    reopened = _lance(tmp_path / 'kb')
    assert [(h.record.id, h.score) for h in await reopened.vector_search(query)] == before


async def test_a_table_without_windows_keeps_working_single_vector_and_says_how_to_rebuild(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    docs = _corpus(8)
    old = _lance(tmp_path / 'kb', None)
    await old.upsert(docs)
    query = SearchRequest(query='zebra migration', top_k=20)
    expected = [(h.record.id, h.score) for h in await old.vector_search(query)]
    await old.aclose()
    store = _lance(tmp_path / 'kb')
    with caplog.at_level(logging.WARNING, logger='toolish_rag_lancedb'):
        hits = await store.vector_search(query)
    assert [(h.record.id, h.score) for h in hits] == expected
    assert 'toolish-rag upgrade --store' in caplog.text
    # Writes keep to the table's single-vector format.
    await store.upsert([_doc('new', [_filler(100, 3) + ' zebra migration'])])
    assert WINDOWS_COLUMN not in (await (await store.records_table()).schema()).names
    assert any(h.record.id == 'new-0' for h in await store.vector_search(query))


async def test_upgrade_gives_a_table_without_windows_its_windows(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The older table of the test above, upgraded in place: windows embedded, the hint gone."""
    docs = _corpus(8)
    for write in (_lance(tmp_path / 'kb', None).upsert, _lance(tmp_path / 'fresh').upsert):
        await write(docs)
    store = _lance(tmp_path / 'kb')
    done = await store.upgrade()
    assert any('window vectors of' in step for step in done), done
    assert WINDOWS_COLUMN in (await (await store.records_table()).schema()).names
    assert await store.upgrade() == [], 'a second upgrade has nothing to do'
    await store.aclose()
    # Reopened, the store scores like one written with windows from the start, and says nothing.
    reopened, fresh = _lance(tmp_path / 'kb'), _lance(tmp_path / 'fresh')
    query = SearchRequest(query='zebra migration', top_k=20)
    with caplog.at_level(logging.WARNING, logger='toolish_rag_lancedb'):
        got = [(h.record.id, round(h.score, 5)) for h in await reopened.vector_search(query)]
    want = [(h.record.id, round(h.score, 5)) for h in await fresh.vector_search(query)]
    assert got == want
    assert 'without window vectors' not in caplog.text


async def test_an_embedder_without_a_window_needs_no_column(tmp_path: Path) -> None:
    store = LanceDBStore(tmp_path / 'kb', embedder=HashingEmbeddingModel(128))  # default windows: no limit stated
    await store.upsert(_corpus(3))
    assert WINDOWS_COLUMN not in (await (await store.records_table()).schema()).names


async def test_the_ann_index_covers_the_windows_column(tmp_path: Path) -> None:
    docs = _corpus(40, seed=9)
    store = _lance(tmp_path / 'kb', ann_threshold=None)
    await store.upsert(docs)
    await store.create_vector_index(IvfFlat(distance_type='cosine', num_partitions=2))
    stats = await store.index_stats()
    assert any(s['columns'] == [WINDOWS_COLUMN] for s in stats.values())
    memory = InMemoryStore(HashingEmbeddingModel(128), windows=WINDOWS)
    await memory.upsert(docs)
    query = SearchRequest(query='glacier melt zebra', top_k=5)
    hits = await store.vector_search(query)
    expected = await memory.vector_search(query)
    assert len(hits) == 5
    # Every partition probed: the index answers what the flat search does.
    assert [h.record.id for h in hits] == [h.record.id for h in expected]
