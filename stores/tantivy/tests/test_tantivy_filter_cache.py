"""The cache of compiled filter queries (`CompiledFilters`): same answers as compiling per call,
never reused across a commit, keyed exactly, bounded.

No timing here: these are correctness checks of the cache, the speed is benchmarks/tantivy_bench.py's.
"""

from __future__ import annotations

import threading

import pytest
from tantivy import Query

from toolish_rag import DocumentBuilder
from toolish_rag.content import Document
from toolish_rag.filters import Filter, PropertyFilter as F
from toolish_rag.search import SearchRequest
from toolish_rag_tantivy import TantivyStore
from toolish_rag_tantivy._filters import CompiledFilters
from toolish_rag_tantivy._index import IndexSnapshot

TENANTS = ['a', 'b', 'c', 'd']


def _doc(name: str, metadata: dict[str, object], text: str = 'refund policy') -> Document:
    b = DocumentBuilder(f'file:///{name}.md', name, metadata=metadata)  # type: ignore[arg-type]
    b.add_chunk(b.section('Body'), f'{text} {name}')
    return b.build()


def _corpus() -> list[Document]:
    docs = [
        _doc(f'{tenant}{i}', {'tenant': tenant, 'year': 2020 + i, 'path': f'{tenant}/{i}.md'})
        for tenant in TENANTS
        for i in range(3)
    ]
    docs.append(_doc('flag-true', {'flag': True}))
    docs.append(_doc('flag-one', {'flag': 1}))
    return docs


FILTERS: list[Filter] = [
    F.eq('tenant', 'b'),
    F.ne('tenant', 'b'),
    F.in_('tenant', ['a', 'c']),
    F.lt('tenant', 'c'),  # a string range: read from the term dictionary
    ~F.lt('tenant', 'b'),
    F.gte('year', 2021),
    F.starts_with('path', 'c/'),
    F.contains('path', '/1'),
    F.eq('tenant', 'a') | F.gt('year', 2021),
    F.eq('flag', True),
    F.eq('flag', 1),
]


def _ids(hits: object) -> list[tuple[str, float]]:
    return [(h.record.id, h.score) for h in hits]  # type: ignore[attr-defined]


def _uncached(snapshot: IndexSnapshot) -> IndexSnapshot:
    return IndexSnapshot(snapshot.index, snapshot.schema, snapshot.searcher)


async def test_cached_results_equal_compiling_per_call() -> None:
    store = TantivyStore()
    await store.upsert(_corpus())
    query = Query.term_query(store.index.schema, store.analysis.field, 'refund')
    for f in FILTERS:
        request = SearchRequest('refund', 50, f)
        snapshot = store.snapshot()
        expected = [(snapshot.record(a).id, s) for s, a in _uncached(snapshot).ranked(query, request)]
        assert expected  # every filter here admits something
        first = await store.text_search(request)
        second = await store.text_search(request)  # from the cache
        assert _ids(first) == _ids(second) == expected
    assert store.compiled_filters.hits >= len(FILTERS)


async def test_a_write_between_two_identical_filtered_searches_is_seen_by_the_second() -> None:
    store = TantivyStore()
    await store.upsert(_corpus())
    # Not "tenant < b": a stale term set of the values below 'b' would let a new value below 'b'
    # through this negation. The cache must not survive the write.
    scope = ~F.lt('tenant', 'b')
    request = SearchRequest('refund', 50, scope)
    before = {h.record.metadata['tenant'] for h in await store.text_search(request) if 'tenant' in h.record.metadata}
    assert before == {'b', 'c', 'd'}
    assert len(store.compiled_filters) == 1

    await store.upsert([_doc('new-aa', {'tenant': 'aa'}), _doc('new-e', {'tenant': 'e'})])
    assert len(store.compiled_filters) == 0  # the commit emptied it
    after = [h.record for h in await store.text_search(request)]
    tenants = {r.metadata.get('tenant') for r in after}
    assert 'aa' not in tenants  # below 'b': out of scope
    assert 'e' in tenants  # written after the first search, in scope: seen


async def test_a_snapshot_taken_before_a_write_cannot_serve_its_filters_after_it() -> None:
    store = TantivyStore()
    await store.upsert(_corpus())
    scope = ~F.lt('tenant', 'b')
    old = store.snapshot()
    await store.upsert([_doc('new-aa', {'tenant': 'aa'})])
    # A read still running on the old version compiles (and caches) for that version only...
    old.filter_query(scope)
    # ... and the next search, on the new version, compiles its own.
    hits = await store.text_search(SearchRequest('refund', 50, scope))
    assert 'aa' not in {h.record.metadata.get('tenant') for h in hits}
    assert 'new-aa' not in {h.record.document_title for h in hits}


async def test_equal_looking_filters_of_different_types_do_not_share_an_entry() -> None:
    store = TantivyStore()
    await store.upsert(_corpus())
    one = await store.text_search(SearchRequest('refund', 50, F.eq('flag', 1)))
    true = await store.text_search(SearchRequest('refund', 50, F.eq('flag', True)))
    assert [h.record.document_title for h in one] == ['flag-one']
    assert [h.record.document_title for h in true] == ['flag-true']


async def test_a_filter_the_index_cannot_hold_is_refused_as_before() -> None:
    store = TantivyStore()
    await store.upsert(_corpus())
    with pytest.raises(ValueError, match='a value this store cannot hold'):
        store.snapshot().filter_query(F.eq('x', 2**70))
    assert len(store.compiled_filters) == 0


def test_the_cache_is_bounded_least_recently_used_first() -> None:
    cache = CompiledFilters(max_entries=2)
    made: list[str] = []

    def compile(name: str) -> Query:
        made.append(name)
        return Query.all_query()

    cache.get(1, F.eq('k', 'a'), lambda: compile('a'))
    cache.get(1, F.eq('k', 'b'), lambda: compile('b'))
    cache.get(1, F.eq('k', 'a'), lambda: compile('a again'))  # a hit: 'a' is now the most recent
    cache.get(1, F.eq('k', 'c'), lambda: compile('c'))  # evicts 'b'
    assert len(cache) == 2
    cache.get(1, F.eq('k', 'a'), lambda: compile('a third'))
    cache.get(1, F.eq('k', 'b'), lambda: compile('b again'))
    assert made == ['a', 'b', 'c', 'b again']
    cache.get(2, F.eq('k', 'b'), lambda: compile('b, version 2'))  # another version: another entry
    assert made[-1] == 'b, version 2'
    with pytest.raises(ValueError):
        CompiledFilters(max_entries=0)


async def test_threads_sharing_cached_filters_get_the_same_answers() -> None:
    store = TantivyStore()
    await store.upsert(_corpus())
    expected = {repr(f): _ids(await store.text_search(SearchRequest('refund', 50, f))) for f in FILTERS}
    failures: list[str] = []

    def search_all() -> None:
        for _ in range(20):
            for f in FILTERS:
                snapshot = store.snapshot()
                query = Query.term_query(store.index.schema, store.analysis.field, 'refund')
                got = [(snapshot.record(a).id, s) for s, a in snapshot.ranked(query, SearchRequest('refund', 50, f))]
                if got != expected[repr(f)]:
                    failures.append(repr(f))

    threads = [threading.Thread(target=search_all) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
