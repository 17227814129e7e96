"""Corpus statistics as an oracle (issue 12): a tenant's BM25 scores must not reveal what other
tenants hold. `InMemoryStore` takes BM25's statistics from the records in scope (the default,
``statistics='scope'``), so a scoped search's scores are byte-identical whatever is written or
deleted outside its scope; ``statistics='store'`` is the whole-store ranking, and leaks."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.helpers import bm25s_english
from toolish_rag import ToolishRag, analyzer_for
from toolish_rag.builder import DocumentBuilder
from toolish_rag.content import Document, MetadataValue
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.filters import Filter, PropertyFilter as F, matches
from toolish_rag.protocols import DocumentStore, TextSearch
from toolish_rag.retriever import Retriever
from toolish_rag.search import SearchRequest
from toolish_rag.stores import InMemoryStore
from toolish_rag.stores.memory._snapshot import build_bm25
from toolish_rag.testing import StoreConformance

QUERY = 'refund receipt warranty'
A_SCOPE = F.eq('tenant', 'acme')


def _doc(uri: str, texts: list[str], metadata: dict[str, MetadataValue]) -> Document:
    b = DocumentBuilder(uri, uri.rsplit('/', 1)[-1], metadata=metadata)
    section = b.section('Body')
    for t in texts:
        b.add_chunk(section, t)
    return b.build()


def _acme() -> list[Document]:
    return [
        _doc(
            f'file:///acme/{i}.md',
            [f'acme refund policy {i}: keep the receipt', f'acme warranty {i} covers parts', f'acme shipping note {i}'],
            {'tenant': 'acme', 'year': 2020 + i},
        )
        for i in range(4)
    ]


def _globex(n: int) -> list[Document]:
    """Documents full of acme's query words: they change whole-store IDF and average length."""
    return [
        _doc(f'file:///globex/{i}.md', ['refund refund receipt warranty ' * (1 + i % 3)] * 3, {'tenant': 'globex'})
        for i in range(n)
    ]


def _store(statistics: Any = None, path: Path | None = None) -> InMemoryStore:
    return InMemoryStore(HashingEmbeddingModel(32), path=path, statistics=statistics)


async def _scores(store: InMemoryStore, f: Filter = A_SCOPE) -> list[tuple[str, float]]:
    return [(h.id, h.score) for h in await Retriever(store, f).text_search(QUERY, 50)]


async def _oracle(store: InMemoryStore, f: Filter = A_SCOPE) -> list[list[tuple[str, float]]]:
    """Scope ``f``'s scores: alone, after globex writes acme's words, after it deletes some of them."""
    await store.upsert(_acme())
    seen = [await _scores(store, f)]
    globex = _globex(12)
    await store.upsert(globex)
    seen.append(await _scores(store, f))
    await store.delete_documents([d.id for d in globex[:7]])
    seen.append(await _scores(store, f))
    return seen


async def test_whole_store_statistics_leak_other_tenants_writes() -> None:
    """The oracle exists with ``statistics='store'``: this is what the default rules out."""
    before, after_write, after_delete = await _oracle(_store('store'))
    assert [i for i, _ in before] == [i for i, _ in after_write]  # same hits, all acme's ...
    assert before != after_write  # ... but their scores tell that globex wrote acme's words
    assert after_write != after_delete  # ... and that it deleted some


@pytest.mark.parametrize('scope', [A_SCOPE, A_SCOPE & F.gte('year', 2021), F.ne('tenant', 'globex')])
async def test_scoped_scores_do_not_move_when_another_tenant_writes(scope: Filter) -> None:
    store = _store()
    assert store.statistics == 'scope'
    before, after_write, after_delete = await _oracle(store, scope)
    assert before and all(score > 0 for _, score in before)
    assert after_write == before
    assert after_delete == before


async def test_the_tool_text_does_not_move_either() -> None:
    store = _store()
    await store.upsert(_acme())
    rag = ToolishRag(store, name='kb').with_metadata_filter(A_SCOPE)
    first = (await rag.run_tool('text_search', {'query': QUERY, 'top_k': 10})).return_value
    await store.upsert(_globex(30))
    assert (await rag.run_tool('text_search', {'query': QUERY, 'top_k': 10})).return_value == first


async def test_a_scoped_search_scores_as_a_store_of_its_records_alone() -> None:
    shared = _store()
    await shared.upsert([*_acme(), *_globex(5)])
    alone = _store()
    await alone.upsert(_acme())
    assert await _scores(shared) == await _scores(alone, F.exists('tenant'))


async def test_unscoped_searches_rank_with_whole_store_statistics_in_both_modes() -> None:
    scope, store = _store('scope'), _store('store')
    for s in (scope, store):
        await s.upsert([*_acme(), *_globex(5)])
    assert await _scores(scope, F.exists('tenant')) == await _scores(store, F.exists('tenant'))
    unscoped = [await s.text_search(SearchRequest(QUERY, 20)) for s in (scope, store)]
    assert [(h.id, h.score) for h in unscoped[0]] == [(h.id, h.score) for h in unscoped[1]]


def test_whole_store_scores_equal_bm25s_bit_for_bit() -> None:
    """The index reproduces bm25s (Lucene BM25, float32) exactly with whole-store statistics."""
    import bm25s

    rng = random.Random(7)
    vocab = [f'w{i}' for i in range(300)] + ['the', 'and', 'running', 'runs', 'ran']
    texts = [' '.join(rng.choices(vocab, k=rng.randrange(0, 40))) for _ in range(400)]
    reference = bm25s.BM25()
    reference.index(bm25s_english(texts), show_progress=False)  # bm25s's own tokenisation
    ours = build_bm25(texts, analyzer_for('en'))  # the store's: the English analyzer
    for _ in range(50):
        words = [t for t in bm25s_english([' '.join(rng.choices(vocab, k=4))])[0] if t in ours]
        if words:
            assert np.array_equal(ours.scores(words, ours.whole, None), reference.get_scores(words))


@pytest.mark.parametrize('scope', [A_SCOPE, A_SCOPE & F.gte('year', 2021), F.ne('tenant', 'globex')])
async def test_scoped_whole_store_scores_are_bm25s_over_the_whole_store(scope: Filter) -> None:
    """``statistics='store'`` is bm25s's ranking of the whole store, restricted to the scope: every
    statistic (count, mean length, document frequencies) comes from the whole store. (It counted
    document frequencies inside the scope with the whole store's count and mean length: neither.)"""
    import bm25s

    docs = [*_acme(), *_globex(5)]
    store = _store('store')
    await store.upsert(docs)
    chunks = [c for d in docs for c in d.chunks]  # the store's record order
    reference = bm25s.BM25()
    reference.index(bm25s_english([c.text for c in chunks]), show_progress=False)
    for query in (QUERY, 'acme refund', 'warranty parts shipping', 'receipt receipt note'):
        words = [t for t in bm25s_english([query])[0] if t in reference.vocab_dict]
        whole = reference.get_scores(words)
        in_scope = [(i, c.id, float(whole[i])) for i, c in enumerate(chunks) if matches(scope, c) and whole[i] > 0]
        expected = [(id_, score) for _, id_, score in sorted(in_scope, key=lambda t: (-t[2], t[0]))]
        hits = await store.text_search(SearchRequest(query, 1000, filter=scope))
        assert expected and [(h.id, h.score) for h in hits] == expected
        top = await store.text_search(SearchRequest(query, 3, filter=scope))
        assert [(h.id, h.score) for h in top] == expected[:3]


# -- exact top_k under filters -----------------------------------------------------------------


@pytest.mark.parametrize('statistics', ['scope', 'store'])
async def test_exact_top_k_under_filters(statistics: Any) -> None:
    store = _store(statistics)
    docs = [
        _doc(
            f'file:///t{t}/{d}.md',
            [f'refund record {t} {d} {k} ' + 'warranty ' * k for k in range(5)],
            {'tenant': f't{t}', 'n': d},
        )
        for t in range(5)
        for d in range(6)
    ]
    await store.upsert(docs)
    for scope in (F.eq('tenant', 't1'), F.eq('tenant', 't2') & F.lt('n', 2), F.in_('tenant', ['t0', 't4'])):
        in_scope = [c for d in docs for c in d.chunks if matches(scope, c)]
        for top_k in (1, 9, 60):
            hits = await store.text_search(SearchRequest('refund warranty', top_k, filter=scope))
            assert len(hits) == min(top_k, len(in_scope))
            assert all(matches(scope, h.record) for h in hits)
            assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


# -- the mode persists with the store ----------------------------------------------------------


async def test_statistics_are_saved_with_the_store(tmp_path: Path) -> None:
    store = _store('store', tmp_path)
    await store.upsert([*_acme(), *_globex(4)])
    leaky = await _scores(store)
    reopened = _store(path=tmp_path)
    assert reopened.statistics == 'store'
    assert await _scores(reopened) == leaky
    # An explicit choice wins and is saved at once (it changes no stored data).
    isolated = _store('scope', tmp_path)
    assert isolated.statistics == 'scope' and _store(path=tmp_path).statistics == 'scope'
    alone = _store()
    await alone.upsert(_acme())
    assert await _scores(_store(path=tmp_path)) == await _scores(alone) != leaky


async def test_a_new_store_defaults_to_scope_statistics(tmp_path: Path) -> None:
    store = _store(path=tmp_path)
    await store.upsert(_acme())
    assert store.statistics == 'scope' and _store(path=tmp_path).statistics == 'scope'
    assert not (tmp_path / 'settings.json').exists()  # the default needs no record
    with pytest.raises(ValueError, match='unknown BM25 statistics'):
        _store('global')


# -- the conformance kit, whole-store statistics (the default runs in test_conformance_memory.py) ----


class TestWholeStoreStatistics(StoreConformance):
    """Whole-store statistics change BM25's scores, and which code scores a scoped text search: text
    search's ranking and its exact top_k under every edge filter, on direct calls. Which records a
    filter admits does not depend on the statistics, so the Retriever sweep is not run again."""

    protocols = frozenset({TextSearch})
    aspects = frozenset({'search', 'scope'})

    async def make_store(self, path: Path, embedder: Any) -> InMemoryStore:
        return InMemoryStore(embedder, statistics='store')


@pytest.mark.slow  # the default run has it: TestPersistedInMemoryStore (test_conformance_memory.py) is 'scope' too
class TestPersistedScopeStatistics(StoreConformance):
    # The statistics setting is saved with the store: what a reopen restores, for text search.
    protocols = frozenset({TextSearch, DocumentStore})
    aspects = frozenset({'writes', 'persistence'})

    async def make_store(self, path: Path, embedder: Any) -> InMemoryStore:
        return InMemoryStore(embedder, path=path, statistics='scope')

    async def reopen_store(self, path: Path, embedder: Any) -> InMemoryStore:
        return InMemoryStore(embedder, path=path)


# -- the benchmark behind docs/filters.md still runs --------------------------------------------


def test_isolation_bench_runs() -> None:
    import importlib.util
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    stores = ['memory', *(['tantivy'] if importlib.util.find_spec('toolish_rag_tantivy') else [])]
    done = subprocess.run(
        [
            sys.executable,
            str(root / 'benchmarks' / 'isolation_bench.py'),
            '--sizes',
            '300',
            '--queries',
            '4',
            '--rounds',
            '1',
            '--stores',
            *stores,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith('| synthetic-300 |')]
    assert len(rows) == 2 * (2 + 3 * (len(stores) - 1))  # each row printed as measured and in the final table
