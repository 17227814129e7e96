"""The conformance kit fails stores that break the scope contract, and names what broke.

A kit that only checks scope through the `Retriever` cannot fail a leaky store: the
Retriever drops out-of-scope hits and re-queries. Here the kit runs (with pytest's own
``pytester``) against small stores written for the purpose, each an `InMemoryStore`
behind a wrapper that claims pushdown for every filter and then breaks the contract in
one way:

* `LeakyLookupStore` ignores the filter in ``get_records`` and ``expand``;
* `LeakyTextStore` ignores it in ``text_search``;
* `PostFilteringVectorStore` takes the ``top_k`` best and filters afterwards (fewer hits
  than exist);
* `LooseMaskCacheStore` filters correctly through a mask cache keyed by a
  ``model_dump()`` tuple, in which ``True == 1`` and ``False == 0 == -0.0``;
* `LeakyOutlineStore` ignores the filter in ``chunk_outlines``;
* `OverCountingSectionStore` lists and reads the right chunks but counts out-of-scope ones in
  its totals and a document's chunk and section counts;
* `LooseSectionCacheStore` caches document listings under the same loose key.

The same wrapper with no bug (`HonestStore`) passes the whole kit, so each failure is the
bug's doing. The Retriever-level checks still pass for the leaky stores: that is the point.
Last, the direct checks on their own: a native ``hybrid_search`` is checked like the other
searches, and a store that does not push a filter down is handed ``filter=None``, never the filter.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import replace
from typing import Any

import pytest

from tests.helpers import InnerWrites
from toolish_rag import Chunk, Document, Entity, matches
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.filters import Filter, PropertyFilter as F
from toolish_rag.fusion import fuse
from toolish_rag.search import ExpansionRequest, RegexRequest, SearchHit, SearchRequest
from toolish_rag.sections import (
    MAX_PAGE_LIMIT,
    ChunkOutline,
    DocumentPage,
    DocumentPageRequest,
    OutlineRequest,
    SectionPage,
    SectionReadRequest,
)
from toolish_rag.stores import InMemoryStore
from toolish_rag.testing import COMMON_WORD, EDGE_FILTERS, conformance_corpus, conformance_entities
from toolish_rag.testing.contract import SearchProbe, expansion_problems, received_filter, search_problems

pytest_plugins = ['pytester']

Record = Chunk | Entity


class HonestStore(InnerWrites):
    """Every protocol delegated, unchanged, to an `InMemoryStore`; pushdown claimed for every filter."""

    text_query_syntax = InMemoryStore.text_query_syntax

    def __init__(self, inner: InMemoryStore) -> None:
        self.inner = inner

    async def upsert(self, items: Iterable[Document | Entity]) -> None:
        await self.inner.upsert(items)

    def supports_filter(self, filter: Filter) -> bool:
        return True

    async def vector_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        return await self.inner.vector_search(request)

    async def text_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        return await self.inner.text_search(request)

    async def regex_search(self, request: RegexRequest) -> Sequence[SearchHit]:
        return await self.inner.regex_search(request)

    async def get_records(self, ids: Sequence[str], *, filter: Filter | None = None) -> Sequence[Record]:
        return await self.inner.get_records(ids, filter=filter)

    async def expand(self, request: ExpansionRequest) -> Sequence[Chunk]:
        return await self.inner.expand(request)

    async def document_page(self, request: DocumentPageRequest) -> DocumentPage:
        return await self.inner.document_page(request)

    async def chunk_outlines(self, request: OutlineRequest) -> Sequence[ChunkOutline]:
        return await self.inner.chunk_outlines(request)

    async def read_section(self, request: SectionReadRequest) -> SectionPage:
        return await self.inner.read_section(request)


class LeakyLookupStore(HonestStore):
    async def get_records(self, ids: Sequence[str], *, filter: Filter | None = None) -> Sequence[Record]:
        return await self.inner.get_records(ids)

    async def expand(self, request: ExpansionRequest) -> Sequence[Chunk]:
        return await self.inner.expand(replace(request, filter=None))


class LeakyTextStore(HonestStore):
    async def text_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        return await self.inner.text_search(replace(request, filter=None))


class PostFilteringVectorStore(HonestStore):
    async def vector_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        hits = await self.inner.vector_search(replace(request, filter=None))
        return [h for h in hits if matches(request.filter, h.record)]


def loose_key(value: Any) -> Hashable:
    """A filter's ``model_dump()`` as a hashable tuple: where ``True == 1`` and ``-0.0 == 0``."""
    if isinstance(value, dict):
        return tuple(sorted((k, loose_key(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(loose_key(v) for v in value)
    scalar: Hashable = value
    return scalar


class LooseMaskCacheStore(HonestStore):
    """Evaluates every filter correctly, but caches which ids it accepts under `loose_key`."""

    def __init__(self, inner: InMemoryStore) -> None:
        super().__init__(inner)
        self._ids: set[str] = set()
        self._masks: dict[Hashable, frozenset[str]] = {}

    async def upsert(self, items: Iterable[Document | Entity]) -> None:
        items = list(items)
        for item in items:
            self._ids.update([c.id for c in item.chunks] if isinstance(item, Document) else [item.id])
        self._masks.clear()
        await self.inner.upsert(items)

    async def delete_documents(self, document_ids: Iterable[str]) -> int:
        self._masks.clear()
        return await self.inner.delete_documents(document_ids)

    async def delete_entities(self, entity_ids: Iterable[str]) -> int:
        self._masks.clear()
        return await self.inner.delete_entities(entity_ids)

    async def _accepts(self, f: Filter | None) -> frozenset[str] | None:
        if f is None:
            return None
        key = loose_key(f.model_dump())
        if key not in self._masks:
            self._masks[key] = frozenset(r.id for r in await self.inner.get_records(sorted(self._ids), filter=f))
        return self._masks[key]

    async def _kept(self, hits: Sequence[SearchHit], f: Filter | None, top_k: int) -> list[SearchHit]:
        accepted = await self._accepts(f)
        return [h for h in hits if accepted is None or h.id in accepted][:top_k]

    async def vector_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        hits = await self.inner.vector_search(replace(request, filter=None, top_k=len(self._ids)))
        return await self._kept(hits, request.filter, request.top_k)

    async def text_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        hits = await self.inner.text_search(replace(request, filter=None, top_k=len(self._ids)))
        return await self._kept(hits, request.filter, request.top_k)

    async def regex_search(self, request: RegexRequest) -> Sequence[SearchHit]:
        hits = await self.inner.regex_search(replace(request, filter=None, top_k=len(self._ids)))
        return await self._kept(hits, request.filter, request.top_k)

    async def get_records(self, ids: Sequence[str], *, filter: Filter | None = None) -> Sequence[Record]:
        accepted = await self._accepts(filter)
        return [r for r in await self.inner.get_records(ids) if accepted is None or r.id in accepted]

    async def expand(self, request: ExpansionRequest) -> Sequence[Chunk]:
        accepted = await self._accepts(request.filter)
        chunks = await self.inner.expand(replace(request, filter=None, limit=len(self._ids) + 1))
        return [c for c in chunks if accepted is None or c.id in accepted][: request.limit]


class LeakyOutlineStore(HonestStore):
    async def chunk_outlines(self, request: OutlineRequest) -> Sequence[ChunkOutline]:
        return await self.inner.chunk_outlines(replace(request, filter=None))


class OverCountingSectionStore(HonestStore):
    """The right documents and chunks, but counts taken before the filter (as a count query forgetting it)."""

    async def document_page(self, request: DocumentPageRequest) -> DocumentPage:
        page = await self.inner.document_page(request)
        whole = await self.inner.document_page(DocumentPageRequest(limit=MAX_PAGE_LIMIT))
        counts = {d.id: d for d in whole.documents}
        documents = tuple(
            replace(d, chunk_count=counts[d.id].chunk_count, section_count=counts[d.id].section_count)
            for d in page.documents
        )
        return DocumentPage(documents, page.total)

    async def read_section(self, request: SectionReadRequest) -> SectionPage:
        page = await self.inner.read_section(request)
        unscoped = await self.inner.read_section(replace(request, filter=None, offset=0, limit=0))
        return SectionPage(page.chunks, unscoped.total)


class LooseSectionCacheStore(HonestStore):
    """Lists documents correctly, but caches each listing under `loose_key` of its request."""

    def __init__(self, inner: InMemoryStore) -> None:
        super().__init__(inner)
        self._pages: dict[Hashable, DocumentPage] = {}

    async def upsert(self, items: Iterable[Document | Entity]) -> None:
        self._pages.clear()
        await self.inner.upsert(items)

    async def delete_documents(self, document_ids: Iterable[str]) -> int:
        self._pages.clear()
        return await self.inner.delete_documents(document_ids)

    async def document_page(self, request: DocumentPageRequest) -> DocumentPage:
        f = request.filter.model_dump() if request.filter is not None else None
        key = loose_key([f, request.title_contains, request.document_id, request.offset, request.limit])
        if key not in self._pages:
            self._pages[key] = await self.inner.document_page(request)
        return self._pages[key]


ALL_RECORDS: list[Record] = [*(c for d in conformance_corpus() for c in d.chunks), *conformance_entities()]
LEAKY_FILTERS = {name for name, f in EDGE_FILTERS if not all(matches(f, r) for r in ALL_RECORDS)}
"""The edge filters that leave some record out: a store ignoring the filter shows on exactly these."""

RETRIEVER_LEVEL_SCOPE_CHECKS = {
    'test_filter_semantics_match_reference',
    'test_expansion_honours_scope',
    'test_entities_are_searchable_and_labelled',
}
"""The kit's scope checks through the Retriever, which re-checks hits: the leaky stores pass them."""


class KitRun:
    """The outcome of every kit test against one store: test id (``name[param]``) -> failure text or None."""

    def __init__(self, pytester: pytest.Pytester, store: type[HonestStore], select: str | None = None) -> None:
        """Run the kit (only its tests whose names contain ``select``, if given) against ``store``."""
        # pytest-asyncio's default (strict) mode, as a store author's project may have it.
        pytester.makeini('[pytest]\nasyncio_default_fixture_loop_scope = function\n')
        pytester.makepyfile(
            test_kit=f"""
from toolish_rag.stores import InMemoryStore
from toolish_rag.testing import StoreConformance
from {__name__} import {store.__name__}


class TestKit(StoreConformance):
    async def make_store(self, path, embedder):
        return {store.__name__}(InMemoryStore(embedder))
"""
        )
        options = ['-k', select] if select is not None else []
        recorder = pytester.inline_run('-p', 'no:cacheprovider', '-W', 'ignore::DeprecationWarning', *options)
        self.results: dict[str, str | None] = {}
        for report in recorder.getreports('pytest_runtest_logreport'):
            test_id = report.nodeid.split('::')[-1]
            if report.failed:
                # The exception's message only (the kit lists each broken call there), not the source.
                crash = getattr(report.longrepr, 'reprcrash', None)
                self.results[test_id] = crash.message if crash is not None else str(report.longrepr)
            else:
                self.results.setdefault(test_id, None)
        assert len(self.results) > (100 if select is None else 0), f'the kit did not run: {self.results}'

    @property
    def failed(self) -> dict[str, str]:
        return {test_id: text for test_id, text in self.results.items() if text is not None}

    def failed_with(self, test: str) -> dict[str, str]:
        """The failed ids of one kit test, by parameter (``''`` when it has none)."""
        out: dict[str, str] = {}
        for test_id, text in self.failed.items():
            name, _, param = test_id.partition('[')
            if name == test:
                out[param.removesuffix(']')] = text
        return out

    def assert_passed(self, tests: Iterable[str]) -> None:
        for test in tests:
            assert test in {t.partition('[')[0] for t in self.results}, f'{test} did not run'
            assert not self.failed_with(test), f'{test} failed: {self.failed_with(test)}'


def test_the_honest_wrapper_passes_the_whole_kit(pytester: pytest.Pytester) -> None:
    run = KitRun(pytester, HonestStore)
    assert run.failed == {}


def test_a_store_leaking_through_lookups_fails_the_direct_checks(pytester: pytest.Pytester) -> None:
    run = KitRun(pytester, LeakyLookupStore)
    failed = run.failed_with('test_expansion_honours_the_filter_it_receives')
    assert set(failed) == LEAKY_FILTERS
    assert all('get_records(' in text and 'expand(ExpansionRequest(' in text for text in failed.values())
    assert 'get_records(' in run.failed_with('test_scopes_in_sequence_on_one_store')['']
    assert {t.partition('[')[0] for t in run.failed} == {
        'test_expansion_honours_the_filter_it_receives',
        'test_scopes_in_sequence_on_one_store',
    }
    run.assert_passed(RETRIEVER_LEVEL_SCOPE_CHECKS)


def test_a_store_leaking_through_text_search_fails_the_direct_checks(pytester: pytest.Pytester) -> None:
    run = KitRun(pytester, LeakyTextStore)
    failed = run.failed_with('test_searches_honour_the_filter_they_receive')
    assert set(failed) == LEAKY_FILTERS
    for text in failed.values():
        assert 'text_search(top_k=' in text and 'outside the filter' in text
        assert 'vector_search(' not in text and 'regex_search(' not in text
    assert 'text_search(' in run.failed_with('test_top_k_under_one_percent_filter_directly')['']
    assert 'text_search(' in run.failed_with('test_scopes_in_sequence_on_one_store')['']
    assert {t.partition('[')[0] for t in run.failed} == {
        'test_searches_honour_the_filter_they_receive',
        'test_top_k_under_one_percent_filter_directly',
        'test_scopes_in_sequence_on_one_store',
    }
    run.assert_passed(RETRIEVER_LEVEL_SCOPE_CHECKS)


def test_a_store_filtering_after_top_k_fails_on_top_k(pytester: pytest.Pytester) -> None:
    run = KitRun(pytester, PostFilteringVectorStore)
    for test in ('test_top_k_under_one_percent_filter_directly', 'test_exactly_top_k_under_one_percent_filter'):
        assert run.failed_with(test), f'{test} passed'
    assert 'vector_search(top_k=5' in run.failed_with('test_top_k_under_one_percent_filter_directly')['']
    assert (
        'so it must return 5 (top_k whenever that many match)'
        in run.failed_with('test_top_k_under_one_percent_filter_directly')['']
    )
    assert run.failed_with('test_searches_honour_the_filter_they_receive')
    for text in run.failed.values():
        assert 'text_search(' not in text and 'regex_search(' not in text and 'outside the filter' not in text


def test_a_mask_cache_that_conflates_true_and_1_fails_the_sequence_check(pytester: pytest.Pytester) -> None:
    run = KitRun(pytester, LooseMaskCacheStore)
    assert set(run.failed) == {'test_scopes_in_sequence_on_one_store'}
    text = run.failed['test_scopes_in_sequence_on_one_store']
    # Forward, `eq 1` is served the records of `eq True`; backward, `eq False` those of `eq 0`.
    assert "filter=Eq(key='flag', value=1, op='eq')) returned" in text
    assert "filter=Eq(key='flag', value=False, op='eq')) returned" in text
    assert "filter=In(key='flag', values=(1,), op='in')) returned" in text


SECTION_READER_TESTS = {
    'test_section_reader_honours_every_filter',
    'test_section_reader_pages',
    'test_section_reader_outlines',
    'test_section_reader_titles_order_and_metadata',
    'test_section_reader_scopes_in_turn_and_foreign_ids',
    'test_section_reader_after_replace_and_delete',
}
"""The kit's SectionReader tests that run on a store that does not persist (all but the reopen test)."""


def test_the_honest_wrapper_runs_every_section_reader_test(pytester: pytest.Pytester) -> None:
    run = KitRun(pytester, HonestStore, select='section_reader')
    run.assert_passed(SECTION_READER_TESTS)


def test_a_section_reader_ignoring_the_filter_in_outlines_fails(pytester: pytest.Pytester) -> None:
    run = KitRun(pytester, LeakyOutlineStore, select='section_reader')
    assert set(run.failed) == SECTION_READER_TESTS
    for text in run.failed.values():
        assert 'chunk_outlines(OutlineRequest(' in text and 'outside the scope: ' in text
        assert 'document_page(' not in text and 'read_section(' not in text
    # Outlines of an out-of-scope document or section are not empty: the foreign-id check names them.
    assert 'is not empty' in run.failed['test_section_reader_scopes_in_turn_and_foreign_ids']


def test_a_section_reader_counting_out_of_scope_chunks_fails(pytester: pytest.Pytester) -> None:
    run = KitRun(pytester, OverCountingSectionStore, select='section_reader')
    # Every chunk and document shown is in scope: only the counts are wrong, so every test that runs
    # a scope cutting through a document fails on them (outlines carry no count).
    assert set(run.failed) == SECTION_READER_TESTS - {'test_section_reader_outlines'}
    for text in run.failed.values():
        assert 'outside the scope' not in text and 'chunk_outlines(' not in text
    every_filter = run.failed['test_section_reader_honours_every_filter']
    assert (
        'first difference: got DocumentSummary(' in every_filter and 'read_section(SectionReadRequest(' in every_filter
    )
    assert 'first difference: got DocumentSummary(' in run.failed['test_section_reader_pages']


def test_a_section_reader_cache_conflating_true_and_1_fails_the_every_filter_check(pytester: pytest.Pytester) -> None:
    run = KitRun(pytester, LooseSectionCacheStore, select='section_reader')
    assert set(run.failed) == {'test_section_reader_honours_every_filter'}
    text = run.failed['test_section_reader_honours_every_filter']
    assert "document_page(DocumentPageRequest(filter=Eq(key='flag', value=1, op='eq')" in text
    assert "document_page(DocumentPageRequest(filter=Eq(key='flag', value=0, op='eq')" in text


# -- the direct checks, called on their own ---------------------------------------------------------

EVERY_RECORD = SearchProbe(COMMON_WORD, COMMON_WORD)


class HybridStore(HonestStore):
    """A native hybrid search: the core's fusion of the inner store's two legs."""

    async def hybrid_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        return fuse(await self.inner.vector_search(request), await self.inner.text_search(request), request.top_k)


class LeakyHybridStore(HybridStore):
    async def hybrid_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        return await super().hybrid_search(replace(request, filter=None))


class RecordingStore:
    """Vector search and expansion without `FilterPushdown`; remembers every filter it is handed."""

    def __init__(self, inner: InMemoryStore) -> None:
        self.inner = inner
        self.received: list[Filter | None] = []

    async def vector_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        self.received.append(request.filter)
        return await self.inner.vector_search(request)

    async def get_records(self, ids: Sequence[str], *, filter: Filter | None = None) -> Sequence[Record]:
        self.received.append(filter)
        return await self.inner.get_records(ids, filter=filter)

    async def expand(self, request: ExpansionRequest) -> Sequence[Chunk]:
        self.received.append(request.filter)
        return await self.inner.expand(request)


class DecliningStore(RecordingStore):
    """Implements `FilterPushdown` but pushes nothing down."""

    def supports_filter(self, filter: Filter) -> bool:
        return False


async def loaded_inner() -> InMemoryStore:
    store = InMemoryStore(HashingEmbeddingModel(64))
    await store.upsert([*conformance_corpus(), *conformance_entities()])
    return store


async def test_a_native_hybrid_search_is_checked_directly() -> None:
    inner = await loaded_inner()
    acme = F.eq('tenant', 'acme')
    assert await search_problems(HybridStore(inner), acme, ALL_RECORDS, EVERY_RECORD, (1, 3, 50)) == []
    problems = await search_problems(LeakyHybridStore(inner), acme, ALL_RECORDS, EVERY_RECORD, (1, 3, 50))
    assert problems and all(p.startswith('hybrid_search(top_k=') for p in problems)
    assert any('outside the filter' in p for p in problems)


@pytest.mark.parametrize('store_type', [RecordingStore, DecliningStore])
async def test_a_store_that_does_not_push_a_filter_down_is_checked_with_none(store_type: type[RecordingStore]) -> None:
    """The contract: such a store receives ``filter=None`` and returns what it holds (the core filters)."""
    store = store_type(await loaded_inner())
    for _, f in EDGE_FILTERS[:5]:
        assert received_filter(store, f) is None
        assert await search_problems(store, f, ALL_RECORDS, EVERY_RECORD, (1, 3, 50)) == []
        assert await expansion_problems(store, f, conformance_corpus(), conformance_entities()) == []
    assert store.received and set(store.received) == {None}
