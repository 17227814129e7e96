"""`InMemoryStore` writes are incremental (issue 18): a write appends a segment and marks the slots
it replaces dead, instead of rebuilding every structure. These tests hold it to the rebuild:

* after random upserts and deletes, every search (text with both corpus statistics, scoped and
  not; vector; regex; navigation; lookups) answers exactly, scores and order, as a store built in
  one write from the surviving documents, and the text scores equal bm25s over those documents;
* the BM25 segments merge and compact to exactly the postings of one build;
* a saved store, reopened (its segments replayed), answers the same, and a store saved in the
  first format (a full copy per version) loads and is saved in the new layout by its next write;
* readers beside a writer see one version or the next, never a mix.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import random
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import TypeAdapter

from tests.helpers import bm25s_english
from toolish_rag import analyzer_for
from toolish_rag.builder import DocumentBuilder
from toolish_rag.content import Document, Entity, Record
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.filters import Filter, PropertyFilter as F, matches
from toolish_rag.manifest import read_manifest
from toolish_rag.search import ExpansionRequest, RegexRequest, SearchRequest
from toolish_rag.sections import DocumentPageRequest, SectionReadRequest
from toolish_rag.stores import InMemoryStore
from toolish_rag.stores.memory import _rows
from toolish_rag.stores.memory._bm25 import Bm25Index, Bm25Segment
from toolish_rag.stores.memory._rows import GrowingList, GrowingMatrix, LayeredMap

WORDS = [f'w{i}' for i in range(60)] + ['refund', 'receipt', 'warranty', 'shipping', 'the', 'and']
QUERIES = ['refund receipt', 'w3 w7 w11', 'warranty shipping w1', 'w42', 'the and']
SCOPES: list[Filter | None] = [None, F.eq('tenant', 'a'), F.gte('year', 2022), F.ne('tenant', 'b') & F.lt('year', 2024)]


def _doc(d: int, version: int, rng: random.Random) -> Document:
    b = DocumentBuilder(
        f'file:///{d}.md', f'Doc {d}', metadata={'tenant': 'ab'[d % 2], 'year': 2020 + d % 5, 'v': version}
    )
    for s in range(rng.randrange(1, 3)):
        section = b.section(f'Part {s}')
        for c in range(rng.randrange(1, 4)):
            words = ' '.join(rng.choices(WORDS, k=rng.randrange(3, 25)))
            b.add_chunk(section, f'd{d} v{version} c{s}.{c} ERR-{rng.randrange(100):02d} {words}')
    return b.build()


def _hits(hits: Any) -> list[tuple[str, float]]:
    return [(h.record.id, h.score) for h in hits]


async def _answers(store: InMemoryStore) -> dict[str, Any]:
    """Everything a reader can ask, keyed by the question."""
    out: dict[str, Any] = {'len': len(store), 'documents': [d.id for d in await store.list_documents()]}
    for q in QUERIES:
        for i, scope in enumerate(SCOPES):
            out[f'text {q} {i}'] = _hits(await store.text_search(SearchRequest(query=q, top_k=15, filter=scope)))
            out[f'vector {q} {i}'] = [
                h.record.id for h in await store.vector_search(SearchRequest(query=q, top_k=15, filter=scope))
            ]
    for i, scope in enumerate(SCOPES):
        regex = await store.regex_search(RegexRequest(pattern=r'ERR-0\d', top_k=20, filter=scope))
        out[f'regex {i}'] = _hits(regex)
        page = await store.document_page(DocumentPageRequest(filter=scope, limit=100))
        out[f'page {i}'] = [(d.id, d.chunk_count, d.section_count) for d in page.documents]
    for doc_id in out['documents'][:5]:
        section = await store.read_section(SectionReadRequest(document_id=doc_id, limit=50))
        out[f'section {doc_id}'] = [c.id for c in section.chunks]
        expanded = await store.expand(ExpansionRequest(document_id=doc_id, limit=50))
        out[f'expand {doc_id}'] = [c.id for c in expanded]
    return out


def _bm25s_ranking(texts: list[tuple[str, str]], query: str, top_k: int) -> list[tuple[str, float]]:
    """bm25s (the library itself) over ``texts`` (id, text) in order, ties in that order."""
    import bm25s

    index = bm25s.BM25()
    index.index(bm25s_english([t for _, t in texts]), show_progress=False)
    vocabulary = set(index.vocab_dict)
    words = [w for w in bm25s_english([query])[0] if w in vocabulary]
    if not words:
        return []
    scores = index.get_scores(words)
    ranked = sorted((i for i in range(len(texts)) if scores[i] > 0), key=lambda i: (-scores[i], i))
    return [(texts[i][0], float(scores[i])) for i in ranked[:top_k]]


async def _random_history(
    rng: random.Random, stores: list[InMemoryStore], rounds: int
) -> tuple[list[Document], set[str]]:
    """Random upserts (new documents and new versions) and deletes on every store; the survivors,
    in the order a rebuild appends them (each document where its last write put it), and which
    states the first store passed through (dead slots, several segments)."""
    current: dict[int, Document] = {}
    states: set[str] = set()
    for r in range(rounds):
        snapshot = stores[0]._snapshot
        states.update({'dead'} if snapshot.dead else set())
        states.update({'segments'} if len(snapshot.segments) > 1 else set())
        if current and rng.random() < 0.3:
            victims = rng.sample(sorted(current), rng.randrange(1, min(4, len(current)) + 1))
            for store in stores:
                await store.delete_documents([current[d].id for d in victims])
            for d in victims:
                del current[d]
            continue
        batch = [_doc(d, r, rng) for d in rng.sample(range(40), rng.randrange(1, 6))]
        for store in stores:
            await store.upsert(batch)
        for doc in batch:
            current.pop(int(doc.uri.rsplit('/', 1)[-1][:-3]), None)
            current[int(doc.uri.rsplit('/', 1)[-1][:-3])] = doc
    return list(current.values()), states


@pytest.mark.parametrize('seed', range(4))
async def test_random_writes_answer_exactly_as_a_rebuild(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    scope_store = InMemoryStore(HashingEmbeddingModel(32), path=tmp_path / 'scope', language='en')
    store_stats = InMemoryStore(HashingEmbeddingModel(32), statistics='store', language='en')
    survivors, states = await _random_history(rng, [scope_store, store_stats], rounds=30)
    assert states == {'dead', 'segments'}  # the incremental paths ran

    rebuilt = InMemoryStore(HashingEmbeddingModel(32), language='en')
    await rebuilt.upsert(survivors)
    rebuilt_stats = InMemoryStore(HashingEmbeddingModel(32), statistics='store', language='en')
    await rebuilt_stats.upsert(survivors)
    assert len(rebuilt._snapshot.segments) == 1 and not rebuilt._snapshot.dead

    expected = await _answers(rebuilt)
    assert await _answers(scope_store) == expected
    assert await _answers(store_stats) == await _answers(rebuilt_stats)
    reopened = InMemoryStore(HashingEmbeddingModel(32), path=tmp_path / 'scope')
    assert await _answers(reopened) == expected

    # The rebuild itself is bm25s: over the survivors (store statistics), over the scope's (scope statistics).
    records = [(c.id, c.text, c) for d in survivors for c in d.chunks]
    for q in QUERIES:
        whole = await store_stats.text_search(SearchRequest(query=q, top_k=15))
        assert _hits(whole) == _bm25s_ranking([(i, t) for i, t, _ in records], q, 15)
        scope = SCOPES[1]
        assert scope is not None
        scoped = await scope_store.text_search(SearchRequest(query=q, top_k=15, filter=scope))
        assert _hits(scoped) == _bm25s_ranking([(i, t) for i, t, c in records if matches(scope, c)], q, 15)


async def test_entities_replaced_and_deleted_match_a_rebuild() -> None:
    def entity(i: int, version: int) -> Entity:
        return Entity(id=f'e{i}', name=f'Entity {i}', description=f'entity {i} version {version} refund w{i}')

    rng = random.Random(3)
    docs = [_doc(d, 0, rng) for d in range(6)]
    store = InMemoryStore(HashingEmbeddingModel(32))
    await store.upsert([*docs[:3], entity(0, 0), entity(1, 0)])
    await store.upsert([entity(0, 1), *docs[3:]])
    await store.delete_entities(['e1', 'missing'])
    await store.upsert([entity(2, 0)])
    rebuilt = InMemoryStore(HashingEmbeddingModel(32))
    await rebuilt.upsert(docs)
    for e in (entity(0, 1), entity(2, 0)):
        await rebuilt.upsert([e])
    await rebuilt._commit(rebuilt._snapshot.compacted(rebuilt.text_analyzer))  # one segment, as one write
    assert [e.text for e in await store.list_entities()] == [e.text for e in await rebuilt.list_entities()]
    assert await _answers(store) == await _answers(rebuilt)
    with pytest.raises(ValueError, match='already belongs'):
        await store.upsert([Entity(id=docs[0].chunks[0].id, name='clash')])


def test_merged_and_compacted_segments_hold_the_postings_of_one_build() -> None:
    rng = random.Random(5)
    texts = [' '.join(rng.choices(WORDS, k=rng.randrange(0, 30))) for _ in range(300)]
    tokens = analyzer_for('en').tokenize(texts)

    def segment(part: list[list[str]]) -> Bm25Segment:
        vocabulary: dict[str, int] = {}
        ids = [[vocabulary.setdefault(t, len(vocabulary)) for t in doc] for doc in part]
        return Bm25Segment.build(ids, vocabulary)

    def postings(index: Bm25Index) -> dict[str, tuple[list[int], list[float]]]:
        words = {w for s in index.segments for w in s.vocabulary}
        out = {}
        for w in words:
            found = index.postings(w)
            assert found is not None
            if found[0].size:
                out[w] = (found[0].tolist(), found[1].tolist())
        return out

    whole = Bm25Index.of([segment(tokens)])
    cuts = [0, 17, 18, 90, 200, 300]
    parts = [segment(tokens[a:b]) for a, b in itertools.pairwise(cuts)]
    assert postings(Bm25Index.of(parts)) == postings(whole)  # gathered across segments
    assert postings(Bm25Index.of([Bm25Segment.merge(parts)])) == postings(whole)  # merged
    np.testing.assert_array_equal(Bm25Index.of(parts).lengths, whole.lengths)
    keep = np.array([rng.random() < 0.6 for _ in texts])
    kept = Bm25Index.of([Bm25Segment.merge(parts).select(keep)])
    assert postings(kept) == postings(Bm25Index.of([segment([t for t, k in zip(tokens, keep, strict=True) if k])]))


def test_a_growing_matrix_never_changes_rows_an_older_version_holds() -> None:
    base = GrowingMatrix.of(np.ones((3, 2), dtype=np.float32))
    longer = base.append(np.full((2, 2), 2, dtype=np.float32))
    assert longer._buffer is base._buffer  # appended in place: the tip grew
    # A write from the older version (as after a failed write) must not overwrite the longer one's rows.
    forked = base.append(np.full((1, 2), 3, dtype=np.float32))
    assert forked._buffer is not base._buffer
    np.testing.assert_array_equal(longer.view[3:], np.full((2, 2), 2))
    np.testing.assert_array_equal(forked.view, [[1, 1], [1, 1], [1, 1], [3, 3]])
    np.testing.assert_array_equal(base.view, np.ones((3, 2)))
    with pytest.raises(ValueError, match='read-only'):
        longer.view[0, 0] = 9
    big = longer.append(np.zeros((5000, 2), dtype=np.float32))  # past the capacity: copied, longer intact
    assert big.rows == 5005 and longer.view.shape == (5, 2)


def test_a_growing_list_never_changes_items_an_older_version_holds() -> None:
    base = GrowingList.of(['a', 'b'])
    longer = base.append(['c'])
    forked = base.append(['x', 'y'])  # not the tip any more: a copy
    assert list(base) == ['a', 'b'] and list(longer) == ['a', 'b', 'c'] and list(forked) == ['a', 'b', 'x', 'y']
    assert longer[-1] == 'c' and longer[1:] == ['b', 'c'] and len(forked) == 4
    with pytest.raises(IndexError):
        base[2]


@pytest.mark.parametrize('seed', range(3))
def test_a_layered_map_behaves_as_a_dict_across_versions(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Random removals and insertions against a plain dict (values, order, size), every version
    kept and checked again at the end: a later version's changes never show in an earlier one."""
    monkeypatch.setattr(_rows, '_FOLD_MIN', 8)  # fold the overlay into a new base often
    rng = random.Random(seed)
    reference: dict[int, int] = {k: k for k in range(50)}
    layered: LayeredMap[int, int] = LayeredMap(dict(reference))
    history: list[tuple[dict[int, int], LayeredMap[int, int]]] = []
    folds = 0
    for step in range(600):
        removed = rng.sample(range(80), rng.randrange(0, 4))
        added = [(rng.randrange(80), step) for _ in range(rng.randrange(0, 4))]
        before, layered = layered, layered.changed(removed, added)
        folds += layered._base is not before._base
        for k in removed:
            reference.pop(k, None)
        for k, v in added:
            reference.pop(k, None)
            reference[k] = v
        history.append((dict(reference), layered))
    assert folds > 5
    for expected, version in history:
        assert list(version.items()) == list(expected.items()) and len(version) == len(expected)
        assert all(version.get(k) == expected.get(k) and (k in version) == (k in expected) for k in range(80))


async def test_a_store_saved_in_the_first_format_loads_and_moves_to_segments(tmp_path: Path) -> None:
    rng = random.Random(2)
    docs = [_doc(d, 0, rng) for d in range(5)]
    live = InMemoryStore(HashingEmbeddingModel(32), language='en')
    await live.upsert(docs)
    # What toolish-rag wrote before segments: one directory per version holding every record.
    version = tmp_path / 'v1'
    version.mkdir()
    adapter: TypeAdapter[Record] = TypeAdapter(Record)
    records = live._snapshot.records
    (version / 'records.jsonl').write_bytes(b''.join(adapter.dump_json(r) + b'\n' for r in records))
    np.save(version / 'vectors.npy', live._snapshot.vectors)
    infos = [dataclasses.asdict(d) for d in await live.list_documents()]
    (version / 'documents.json').write_text(json.dumps(infos))
    (version / 'manifest.json').write_text(json.dumps({'format': 1, 'embedder': 'x', 'records': len(records)}))
    (tmp_path / 'CURRENT').write_text('v1')

    old = InMemoryStore(HashingEmbeddingModel(32), path=tmp_path, windows=None)
    assert await _answers(old) == await _answers(live)
    newer = _doc(1, 1, rng)
    await old.upsert([newer])
    await live.upsert([newer])
    manifest = json.loads((tmp_path / (tmp_path / 'CURRENT').read_text() / 'manifest.json').read_text())
    assert manifest['format'] == 2 and len(manifest['segments']) >= 1
    assert not (tmp_path / 'v1').exists()
    assert await _answers(InMemoryStore(HashingEmbeddingModel(32), path=tmp_path, windows=None)) == await _answers(live)


async def test_readers_beside_a_writer_see_one_version_or_the_next(tmp_path: Path) -> None:
    """Every write replaces one document (4 chunks) with a new round's text: in place while the
    dead slots are few, through a compaction once they are a quarter. A reader's answer (searches
    run in threads, like the store's own) holds every document once, each of one round: never half
    a document, a document twice, or one missing."""
    store = InMemoryStore(HashingEmbeddingModel(32), path=tmp_path)

    def doc(d: int, round_: int) -> Document:
        b = DocumentBuilder(f'file:///{d}.md', f'Doc {d}', metadata={'tenant': 'ab'[d % 2]})
        section = b.section('Body')
        for c in range(4):
            b.add_chunk(section, f'round{round_} refund chunk {c} of document {d}')
        return b.build()

    await store.upsert([doc(d, 0) for d in range(12)])
    done = threading.Event()
    rounds_seen: set[str] = set()
    errors: list[str] = []

    def reader(scope: Filter | None) -> None:
        loop = asyncio.new_event_loop()
        expected = 12 if scope is None else 6
        try:
            while not done.is_set():
                for search in (store.text_search, store.vector_search):
                    hits = loop.run_until_complete(search(SearchRequest(query='refund chunk', top_k=100, filter=scope)))
                    by_document: dict[str, set[str]] = {}
                    for h in hits:
                        words = h.record.urtext.split()  # type: ignore[union-attr]
                        by_document.setdefault(words[-1], set()).add(words[0])
                    rounds_seen.update(r for rs in by_document.values() for r in rs)
                    mixed = [d for d, rs in by_document.items() if len(rs) != 1]
                    if len(hits) != 4 * expected or len(by_document) != expected or mixed:
                        errors.append(f'{search.__name__}: {len(hits)} hits, documents {sorted(by_document)}')
        finally:
            loop.close()

    threads = [threading.Thread(target=reader, args=(scope,)) for scope in (None, F.eq('tenant', 'a'))]
    for t in threads:
        t.start()
    try:
        for r in range(1, 25):
            await store.upsert([doc(r % 12, r)])
            await asyncio.sleep(0.001)
    finally:
        done.set()
        for t in threads:
            t.join()
    assert errors == []
    assert len(rounds_seen) > 2  # the readers saw the writes land


async def test_upgrade_rewrites_a_first_format_store_with_the_same_answers_and_no_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Regression (issue 27): an older store warned on every open and re-ingesting said "unchanged"."""
    rng = random.Random(3)
    docs = [_doc(d, 0, rng) for d in range(4)]
    live = InMemoryStore(HashingEmbeddingModel(32), windows=None, language='en')
    await live.upsert(docs)
    version = tmp_path / 'v1'  # the first format, written as the old code did (one directory per version)
    version.mkdir()
    adapter: TypeAdapter[Record] = TypeAdapter(Record)
    records = live._snapshot.records
    (version / 'records.jsonl').write_bytes(b''.join(adapter.dump_json(r) + b'\n' for r in records))
    np.save(version / 'vectors.npy', live._snapshot.vectors)
    (version / 'documents.json').write_text(json.dumps([dataclasses.asdict(d) for d in await live.list_documents()]))
    (version / 'manifest.json').write_text(
        json.dumps({'format': 1, 'embedder': 'toolish-rag:hashing-32', 'records': len(records)})
    )
    (tmp_path / 'CURRENT').write_text('v1')

    old = InMemoryStore(HashingEmbeddingModel(32), path=tmp_path, windows=None)
    assert read_manifest(tmp_path) is None
    assert await old.upgrade() == ['rewrote the store in the current format']
    assert not (tmp_path / 'v1').exists() and (tmp_path / 'segments').is_dir()
    manifest = read_manifest(tmp_path)
    assert manifest is not None and manifest.embedder is not None
    assert (manifest.embedder.model, manifest.embedder.dimensions) == ('toolish-rag:hashing-32', 32)
    assert await old.upgrade() == []  # already current
    caplog.clear()
    reopened = InMemoryStore(HashingEmbeddingModel(32), path=tmp_path, windows=None)
    assert await _answers(reopened) == await _answers(live)
    assert not caplog.records
