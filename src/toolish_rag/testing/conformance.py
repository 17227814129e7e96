"""`StoreConformance`: the pytest suite every store adapter runs.

Subclass it in your store's tests and say how to make (and, if it persists, reopen) a
store::

    import pytest
    from toolish_rag.testing import StoreConformance

    class TestMyStore(StoreConformance):
        async def make_store(self, path, embedder):
            return MyStore(path, embedder=embedder)

        async def reopen_store(self, path, embedder):   # only for persistent stores
            return MyStore(path, embedder=embedder)

The suite checks only the capabilities the store implements, always against the
reference semantics: every filter edge case (`EDGE_FILTERS`) through every search the
store offers, exactly ``top_k`` under a 1% filter, expansion honouring scope, whole
document replacement, deletes, metadata types after a reload, entities and labels,
that an expansion reads its anchor and its chunks from one version while a writer rewrites
the document, and that hostile input (catastrophic regexes, punctuation-heavy text) is handled.
A `SectionReader` is checked on direct calls only (`toolish_rag.testing.sections_contract`):
every listing, outline and section page must equal the reference answer, under every edge
filter, at every offset and limit, after replacements, deletes and a reopen.

A graph store (`GraphSearch` and `GraphStore`) is checked on direct calls too
(`toolish_rag.testing.graph_contract`), over `graph_corpus`: nodes of every kind, one hop's
edges (direction, edge types, limit and ``truncated``, order, self-loops, both endpoints in
scope) and walks (budgets, ordering, centrality) must equal the reference answers under every
edge filter; upserting or deleting a document drops its relations and its ledger marks while
relations of the same batch and standalone ones stay; the ledger and relation writes keep
their contract, and a reopened store holds the same graph.

Scope is checked twice. Through the `Retriever`, the path the tools take; and on direct
calls to the store's own methods (`toolish_rag.testing.contract`), because the Retriever
re-checks every hit and re-queries when a store leaks, which would hide the leak. The
direct checks pass the filter the protocol contract says the store receives (the filter
itself when ``supports_filter`` accepts it, else ``None``), one scope after another on the
same store too, so a cache that confuses two filters (``True`` and ``1``) fails.

Needs ``pytest`` and ``pytest-asyncio`` (the tests are coroutines marked ``asyncio``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
import pytest_asyncio

from ..content import Chunk, Document, Entity
from ..embedding import HashingEmbeddingModel
from ..errors import QuerySyntaxError
from ..filters import EntityFilter, Filter, PropertyFilter as F, matches
from ..protocols import (
    DocumentStore,
    GraphSearch,
    GraphStore,
    RegexSearch,
    ResultExpander,
    SectionReader,
    StoreCapabilities,
    TextSearch,
    VectorSearch,
)
from ..retriever import Retriever
from ..search import ExpansionRequest, RegexRequest
from ..sections import DocumentPageRequest
from .contract import (
    SearchProbe,
    expansion_problems,
    get_records_problems,
    mixed_version_problems,
    search_problems,
)
from .corpus import (
    COMMON_WORD,
    EDGE_FILTERS,
    conformance_corpus,
    conformance_entities,
    navigation_corpus,
    selective_corpus,
)
from .graph_contract import (
    GRAPH_SCOPES,
    GraphCalls,
    GraphReference,
    graph_corpus,
    graph_scope_calls,
    ledger_problems,
    neighbour_calls,
    node_calls,
    relation_write_problems,
    replacement_problems,
    stored_problems,
    walk_calls,
)
from .sections_contract import (
    UNKNOWN_ID,
    SectionReference,
    document_metadata_problems,
    document_reads,
    empty_answer_problems,
    nested_section,
    outline_calls,
    pagination_calls,
    scope_calls,
    title_calls,
)

__all__ = ['StoreConformance']

_FILTER_IDS = [name for name, _ in EDGE_FILTERS]
_EVERY_RECORD = SearchProbe(COMMON_WORD, COMMON_WORD)
"""Every record of the conformance corpus contains `COMMON_WORD`."""
_EVERY_SELECTIVE_RECORD = SearchProbe('record about refund policy', 'record [0-9]+')
"""Every record of `selective_corpus` contains ``record`` and matches ``record [0-9]+``."""
_PARTIAL = (F.ne('n', 2) & F.ne('tenant', 'initech')) | F.eq('n', 20)
"""A scope that cuts through every document of the conformance corpus: acme without its chunk 2,
globex whole, initech by one chunk (of a nested section)."""
_TITLE_PROBES = ['STRASSE', 'straße', 'ß', 'NOTES', 'ZeTa', 'e', '', ' ', 'no such title']
"""``title_contains`` values for `navigation_corpus`: ``'STRASSE'`` and ``'straße'`` find ``'Straße
zone'`` only when both sides are case-folded (``str.lower`` keeps the ``ß``)."""
_MAX_SHOWN = 25


def _report(problems: list[str]) -> str:
    shown = problems[:_MAX_SHOWN]
    more = len(problems) - len(shown)
    return '\n'.join([*shown, *([f'... and {more} more'] if more else [])])


def _section_reader(store: Any) -> SectionReader:
    if not isinstance(store, SectionReader):
        pytest.skip('no SectionReader')
    return store


def _graph_store(store: Any) -> Any:
    if not (isinstance(store, GraphSearch) and isinstance(store, GraphStore)):
        pytest.skip('no GraphSearch + GraphStore')
    return store


def _second_version(old: Document) -> Document:
    """``old`` replaced: same id, a new title, fewer chunks, other sections (a chunk with none)."""
    from ..builder import DocumentBuilder

    b = DocumentBuilder(old.uri, 'Acme manual, second edition', metadata={'tenant': 'acme', 'year': 2030, 'v': 2.5})
    b.add_chunk(None, f'{COMMON_WORD} preamble of the second edition', metadata={'n': 2})
    summary = b.section('Summary')
    b.add_chunk(summary, f'{COMMON_WORD} summary acme', metadata={'n': 40})
    b.add_chunk(b.section('Contacts', parent=summary), f'{COMMON_WORD} contacts acme', metadata={'n': 41})
    new = b.build()
    assert new.id == old.id and len(new.chunks) < len(old.chunks) and len(new.sections) < len(old.sections)
    return new


class StoreConformance:
    """Base class of a store's conformance tests (see the module docstring)."""

    pytestmark: ClassVar[list[pytest.MarkDecorator]] = [pytest.mark.asyncio]

    embedding_dimensions: ClassVar[int] = 64

    async def make_store(self, path: Path, embedder: Any) -> Any:
        """Return a new, empty store keeping its data under ``path`` (an empty directory)."""
        raise NotImplementedError

    async def reopen_store(self, path: Path, embedder: Any) -> Any:
        """Open the store at ``path`` again, as a new process would. Skip if not persistent."""
        pytest.skip('the store does not claim persistence (reopen_store not implemented)')

    # -- helpers ---------------------------------------------------------------------------

    @pytest.fixture
    def embedder(self) -> HashingEmbeddingModel:
        return HashingEmbeddingModel(self.embedding_dimensions)

    @pytest.fixture
    def store_path(self, tmp_path: Path) -> Path:
        path = tmp_path / 'store'
        path.mkdir()
        return path

    @pytest_asyncio.fixture  # not pytest.fixture: pytest-asyncio's default strict mode ignores those
    async def loaded(self, store_path: Path, embedder: HashingEmbeddingModel) -> Any:
        store = await self.make_store(store_path, embedder)
        await store.upsert([*conformance_corpus(), *conformance_entities()])
        return store

    @staticmethod
    def _all_records() -> list[Chunk | Entity]:
        return [*(c for d in conformance_corpus() for c in d.chunks), *conformance_entities()]

    @staticmethod
    def _expected(f: Filter | None) -> set[str]:
        return {r.id for r in StoreConformance._all_records() if matches(f, r)}

    @staticmethod
    async def _everything(retriever: Retriever, caps: StoreCapabilities, total: int) -> dict[str, set[str]]:
        """Every in-scope record, through each search the store offers."""
        found: dict[str, set[str]] = {}
        if caps.vector:
            found['vector'] = {h.id for h in await retriever.vector_search(COMMON_WORD, total)}
        if caps.text:
            found['text'] = {h.id for h in await retriever.text_search(COMMON_WORD, total)}
        if caps.regex:
            found['regex'] = {h.id for h in await retriever.regex_search(COMMON_WORD, total)}
        return found

    # -- capabilities and writes -------------------------------------------------------------

    async def test_declares_capabilities(self, loaded: Any) -> None:
        caps = StoreCapabilities.of(loaded)
        assert caps.any_search or caps.regex, 'a store must implement at least one search protocol'
        assert isinstance(loaded, DocumentStore), 'a store must implement DocumentStore (upsert, delete, list)'
        if isinstance(loaded, TextSearch):
            assert isinstance(loaded.text_query_syntax, str) and loaded.text_query_syntax.strip()

    async def test_list_documents(self, loaded: Any) -> None:
        infos = {d.id: d for d in await loaded.list_documents()}
        corpus = {d.id: d for d in conformance_corpus()}
        assert set(infos) == set(corpus)
        for doc_id, info in infos.items():
            doc = corpus[doc_id]
            assert (info.uri, info.title, info.fingerprint, info.chunk_count) == (
                doc.uri,
                doc.title,
                doc.fingerprint,
                len(doc.chunks),
            )
            assert info.metadata == doc.metadata
            assert all(type(info.metadata[k]) is type(v) for k, v in doc.metadata.items())

    async def test_upsert_is_idempotent(self, loaded: Any) -> None:
        await loaded.upsert([*conformance_corpus(), *conformance_entities()])
        assert len(await loaded.list_documents()) == 3
        await self._assert_scope_matches(loaded, None)

    async def test_replacing_a_document_leaves_no_stale_chunk(self, loaded: Any) -> None:
        old = conformance_corpus()[0]
        from ..builder import DocumentBuilder

        b = DocumentBuilder(old.uri, old.title + ' v2', metadata={'tenant': 'acme', 'year': 2030}, fingerprint='fp-2')
        b.add_chunk(b.section('Only'), f'{COMMON_WORD} rewritten acme text')
        new = b.build()
        assert new.id == old.id
        await loaded.upsert([new])
        retriever = Retriever(loaded, F.eq('tenant', 'acme'))
        for ids in (await self._everything(retriever, StoreCapabilities.of(loaded), 100)).values():
            assert ids == {new.chunks[0].id, 'ent-alice', 'ent-acme'}
        info = {d.id: d for d in await loaded.list_documents()}[old.id]
        assert (info.title, info.fingerprint, info.chunk_count) == (new.title, 'fp-2', 1)
        if isinstance(loaded, ResultExpander):
            stale = await loaded.get_records([c.id for c in old.chunks[1:]])
            assert list(stale) == []

    async def test_delete_documents_and_entities(self, loaded: Any) -> None:
        corpus = conformance_corpus()
        assert await loaded.delete_documents([corpus[1].id, 'no-such-document']) == 1
        assert await loaded.delete_entities(['ent-alice']) == 1
        assert {d.id for d in await loaded.list_documents()} == {corpus[0].id, corpus[2].id}
        expected = {c.id for d in (corpus[0], corpus[2]) for c in d.chunks} | {'ent-acme'}
        for ids in (await self._everything(Retriever(loaded), StoreCapabilities.of(loaded), 100)).values():
            assert ids == expected

    async def test_empty_store_searches_return_nothing(self, store_path: Path, embedder: Any) -> None:
        store = await self.make_store(store_path, embedder)
        found = await self._everything(Retriever(store), StoreCapabilities.of(store), 10)
        assert all(ids == set() for ids in found.values())

    # -- filters ---------------------------------------------------------------------------

    async def _assert_scope_matches(self, store: Any, f: Filter | None) -> None:
        expected = self._expected(f)
        total = len(self._all_records())
        found = await self._everything(Retriever(store, f), StoreCapabilities.of(store), total)
        for mode, ids in found.items():
            assert ids == expected, f'{mode} search under {f!r}: extra {ids - expected}, missing {expected - ids}'

    @pytest.mark.parametrize('f', [f for _, f in EDGE_FILTERS], ids=_FILTER_IDS)
    async def test_filter_semantics_match_reference(self, loaded: Any, f: Filter) -> None:
        await self._assert_scope_matches(loaded, f)

    async def test_exactly_top_k_under_one_percent_filter(self, store_path: Path, embedder: Any) -> None:
        store = await self.make_store(store_path, embedder)
        await store.upsert(selective_corpus(500, 100))
        caps = StoreCapabilities.of(store)
        retriever = Retriever(store, F.eq('rare', True))
        checks = []
        if caps.vector:
            checks.append(await retriever.vector_search('record about refund policy', 5))
        if caps.text:
            checks.append(await retriever.text_search('record refund policy', 5))
        if caps.hybrid:
            checks.append(await retriever.hybrid_search('record about refund policy', 5))
        if caps.regex:
            checks.append(await retriever.regex_search('record [0-9]+', 5))
        assert checks
        for hits in checks:
            assert len(hits) == 5
            assert all(h.record.metadata['rare'] is True for h in hits)

    # -- the scope contract, on direct calls (no Retriever to re-check and re-query) -----------------

    @pytest.mark.parametrize('f', [f for _, f in EDGE_FILTERS], ids=_FILTER_IDS)
    async def test_searches_honour_the_filter_they_receive(self, loaded: Any, f: Filter) -> None:
        total = len(self._all_records())
        problems = await search_problems(loaded, f, self._all_records(), _EVERY_RECORD, (1, 3, total))
        assert not problems, '\n'.join(problems)

    @pytest.mark.parametrize('f', [f for _, f in EDGE_FILTERS], ids=_FILTER_IDS)
    async def test_expansion_honours_the_filter_it_receives(self, loaded: Any, f: Filter) -> None:
        if not isinstance(loaded, ResultExpander):
            pytest.skip('no ResultExpander')
        problems = await expansion_problems(loaded, f, conformance_corpus(), conformance_entities())
        assert not problems, '\n'.join(problems)

    async def test_top_k_under_one_percent_filter_directly(self, store_path: Path, embedder: Any) -> None:
        store = await self.make_store(store_path, embedder)
        corpus = selective_corpus(500, 100)
        await store.upsert(corpus)
        records = list(corpus[0].chunks)
        problems = await search_problems(store, F.eq('rare', True), records, _EVERY_SELECTIVE_RECORD, (1, 5, 50))
        assert not problems, '\n'.join(problems)

    async def test_scopes_in_sequence_on_one_store(self, loaded: Any, tmp_path: Path, embedder: Any) -> None:
        """Every edge filter on one store, then in reverse order on another: each answer must
        depend on its own scope only. A cache keyed by something coarser than the filter (say
        its ``model_dump()``, where ``True == 1``) serves one scope the records of another.
        Searches and ``get_records`` only: ``expand`` under each filter has its own test, and
        its 18 calls a filter would make this one slow on a real store."""
        other_path = tmp_path / 'store-reversed'
        other_path.mkdir()
        other = await self.make_store(other_path, embedder)
        await other.upsert([*conformance_corpus(), *conformance_entities()])
        filters = [f for _, f in EDGE_FILTERS]
        records = self._all_records()
        problems: list[str] = []
        for store, order in ((loaded, filters), (other, filters[::-1])):
            for f in order:
                problems += await search_problems(store, f, records, _EVERY_RECORD, (len(records),))
                if isinstance(store, ResultExpander):
                    problems += await get_records_problems(store, f, records)
        assert not problems, '\n'.join(problems)

    async def test_top_k_is_respected_and_ranked(self, loaded: Any) -> None:
        caps = StoreCapabilities.of(loaded)
        retriever = Retriever(loaded)
        results = []
        if caps.vector:
            results.append(await retriever.vector_search('warranty claims details', 3))
        if caps.text:
            results.append(await retriever.text_search('warranty claims', 3))
        if caps.regex:
            results.append(await retriever.regex_search('ERR-10[0-9]{2}', 3))
        for hits in results:
            assert len(hits) == 3
            scores = [h.score for h in hits]
            assert scores == sorted(scores, reverse=True)

    # -- search behaviour ------------------------------------------------------------------------

    async def test_text_search_finds_the_right_chunk(self, loaded: Any) -> None:
        if not isinstance(loaded, TextSearch):
            pytest.skip('no TextSearch')
        hits = await Retriever(loaded).text_search('ERR-1012', 3)
        assert hits and 'ERR-1012' in hits[0].record.text

    async def test_text_search_survives_hostile_queries(self, loaded: Any) -> None:
        if not isinstance(loaded, TextSearch):
            pytest.skip('no TextSearch')
        queries = [
            'what is "the refund policy"?',
            'refund AND (policy OR',
            'tenant:globex refund',
            'foo.bar() -> ERR-1012 [x] {y} ~ ^ * ?',
            "it's a 'quoted' \\ back\\slash",
            ':::',
            'NOT',
        ]
        for q in queries:
            try:
                hits = await Retriever(loaded).text_search(q, 5)
            except QuerySyntaxError as e:
                assert str(e).strip(), 'a QuerySyntaxError must say what to fix'
                continue
            assert isinstance(hits, list)
        hits = await Retriever(loaded, F.eq('tenant', 'acme')).text_search('tenant:globex refund policy', 50)
        assert all(h.record.metadata.get('tenant') == 'acme' for h in hits)

    async def test_vector_search_scores_are_cosine(self, loaded: Any) -> None:
        if not isinstance(loaded, VectorSearch):
            pytest.skip('no VectorSearch')
        hits = await Retriever(loaded).vector_search(f'{COMMON_WORD} details warranty claims ERR-1004 acme', 5)
        assert hits
        assert all(-1.0001 <= h.score <= 1.0001 for h in hits)

    async def test_regex_is_linear_and_validated(self, loaded: Any) -> None:
        if not isinstance(loaded, RegexSearch):
            pytest.skip('no RegexSearch')
        # Exponential for a backtracking engine; must simply complete here.
        hits = await Retriever(loaded).regex_search('(a+)+$', 5)
        assert hits == []
        for bad in ['(unclosed', '(a)\\1', '']:
            with pytest.raises(QuerySyntaxError):
                await loaded.regex_search(RegexRequest(bad, 5))
        hits = await Retriever(loaded).regex_search('ERR-10(0[0-9]|1[0-2])', 50)
        assert all(isinstance(h.record, Chunk) for h in hits)
        assert sorted(h.record.urtext.split('ERR-')[1][:4] for h in hits if isinstance(h.record, Chunk)) == [
            '1002',
            '1003',
            '1004',
            '1010',
            '1011',
            '1012',
        ]
        # Regex runs on the exact source text (urtext) of chunks.
        hits = await Retriever(loaded).regex_search('^zebrafish details', 50)
        assert len(hits) == 9

    # -- expansion -------------------------------------------------------------------------------

    async def test_get_records_keeps_types_and_text(self, loaded: Any) -> None:
        if not isinstance(loaded, ResultExpander):
            pytest.skip('no ResultExpander')
        originals = {r.id: r for r in self._all_records()}
        found = {r.id: r for r in await loaded.get_records([*originals, 'missing-id'])}
        assert set(found) == set(originals)
        for rid, record in found.items():
            self._assert_same_record(record, originals[rid])

    @staticmethod
    def _assert_same_record(got: Chunk | Entity, want: Chunk | Entity) -> None:
        assert got == want, f'record {want.id} changed through the store:\n got {got!r}\nwant {want!r}'
        for key, value in want.metadata.items():
            stored = got.metadata[key]
            assert type(stored) is type(value), f'{want.id}.{key}: {value!r} came back as {stored!r}'
            if isinstance(value, list):
                assert [type(x) for x in stored] == [type(x) for x in value]  # type: ignore[union-attr]

    async def test_expand_by_sequence_and_section(self, loaded: Any) -> None:
        if not isinstance(loaded, ResultExpander):
            pytest.skip('no ResultExpander')
        doc = conformance_corpus()[1]
        chunks = await loaded.expand(ExpansionRequest(document_id=doc.id, first=2, last=5))
        assert [c.sequence_number for c in chunks] == [2, 3, 4, 5]
        limited = await loaded.expand(ExpansionRequest(document_id=doc.id, first=1, limit=2))
        assert [c.sequence_number for c in limited] == [1, 2]
        overview = doc.sections[0].id
        in_section = await loaded.expand(ExpansionRequest(document_id=doc.id, section_id=overview))
        assert [c.id for c in in_section] == [c.id for c in doc.chunks if overview in c.section_ids]
        by_section_only = await loaded.expand(ExpansionRequest(section_id=doc.sections[1].id))
        assert [c.id for c in by_section_only] == [c.id for c in doc.chunks[2:5]]
        # Around an anchor: the window comes from the anchor as stored.
        around = await loaded.expand(ExpansionRequest.around_chunk(doc.chunks[3].id, 2, 1))
        assert [c.sequence_number for c in around] == [1, 2, 3, 4]
        enclosing = await loaded.expand(ExpansionRequest.enclosing(doc.chunks[3].id))
        assert [c.id for c in enclosing] == [c.id for c in doc.chunks[2:5]]
        parent = await loaded.expand(ExpansionRequest.enclosing(doc.sections[1].id))
        assert [c.id for c in parent] == [c.id for c in doc.chunks[:5]]
        whole = await loaded.expand(ExpansionRequest.enclosing(doc.sections[0].id, limit=3))
        assert [c.id for c in whole] == [c.id for c in doc.chunks[:3]]
        for nothing in ('ent-alice', 'no-such-record'):
            assert list(await loaded.expand(ExpansionRequest.enclosing(nothing))) == []
            assert list(await loaded.expand(ExpansionRequest.around_chunk(nothing, 1, 1))) == []

    async def test_expansion_reads_one_version(self, store_path: Path, embedder: Any) -> None:
        """A writer rewrites a document while readers expand around its chunks (see
        `mixed_version_problems`): each answer must come from one version. A store that reads an
        anchor and its window at two moments returns a new version's chunks around an old anchor."""
        store = await self.make_store(store_path, embedder)
        if not isinstance(store, ResultExpander):
            pytest.skip('no ResultExpander')
        problems = await mixed_version_problems(store)
        assert not problems, '\n'.join(problems)

    async def test_expansion_honours_scope(self, loaded: Any) -> None:
        if not isinstance(loaded, ResultExpander):
            pytest.skip('no ResultExpander')
        acme, globex = conformance_corpus()[:2]
        scoped = Retriever(loaded, F.eq('tenant', 'acme'))
        assert await scoped.get(globex.chunks[0].id) is None
        assert await scoped.neighbours(globex.chunks[1].id, 2) is None
        assert await scoped.section(globex.chunks[1].id, 50) is None
        assert await scoped.section(globex.sections[0].id, 50) is None
        found = await scoped.neighbours(acme.chunks[3].id, 2)
        assert found is not None
        assert [c.sequence_number for c in found[1]] == [1, 2, 3, 4, 5]
        # A scope that cuts through a document: neighbours and sections skip what is out of scope.
        partial = Retriever(loaded, F.eq('tenant', 'acme') & F.ne('n', 2))
        found = await partial.neighbours(acme.chunks[3].id, 2)
        assert found is not None and [c.sequence_number for c in found[1]] == [1, 3, 4, 5]
        view = await partial.section(acme.chunks[3].id, 50)
        assert view is not None and [c.sequence_number for c in view.chunks] == [3, 4]
        view = await partial.section(acme.sections[1].id, 50)
        assert view is not None and view.section_id == acme.sections[0].id
        assert [c.sequence_number for c in view.chunks] == [0, 1, 3, 4]

    # -- navigation (SectionReader): direct calls, every answer equal to the reference's -----------

    async def test_section_reader_honours_every_filter(self, loaded: Any) -> None:
        """Every edge filter in turn, on one store: listing, outlines and reads equal the reference.

        One store for all of them, so a cache keyed by something coarser than the filter (where
        ``True == 1``) serves one scope another's answer and fails here too."""
        store = _section_reader(loaded)
        reference = SectionReference.of(conformance_corpus(), conformance_entities())
        problems: list[str] = []
        for f in [None, *(f for _, f in EDGE_FILTERS)]:
            problems += await scope_calls(reference.documents, f).problems(store, reference)
        assert not problems, _report(problems)

    async def test_section_reader_pages(self, loaded: Any) -> None:
        """Every offset (to past the end) and limit (0 to more than all), and page-by-page walks."""
        store = _section_reader(loaded)
        reference = SectionReference.of(conformance_corpus(), conformance_entities())
        problems: list[str] = []
        for f in (None, _PARTIAL):
            problems += await pagination_calls(reference.documents, f).problems(store, reference)
        assert not problems, _report(problems)

    async def test_section_reader_outlines(self, loaded: Any) -> None:
        """By document, section id and section title, alone and combined (also into nothing), and cut at ``limit``."""
        store = _section_reader(loaded)
        reference = SectionReference.of(conformance_corpus(), conformance_entities())
        problems = await outline_calls(reference.documents, _PARTIAL).problems(store, reference)
        assert not problems, _report(problems)

    async def test_section_reader_titles_order_and_metadata(self, store_path: Path, embedder: Any) -> None:
        """Case-folded ``title_contains`` and order (ties broken by id), document metadata with its types.

        Starts on the empty store: every listing is empty."""
        made = await self.make_store(store_path, embedder)
        store = _section_reader(made)
        documents = navigation_corpus()
        empty = SectionReference.of([])
        problems = await title_calls(documents, None, _TITLE_PROBES).problems(store, empty)
        await made.upsert(documents)
        reference = SectionReference.of(documents)
        assert [d.title for d in reference.page(DocumentPageRequest(title_contains='STRASSE')).documents] == [
            'Straße zone',
            'Strassenbahn',
        ], 'the navigation corpus no longer probes case folding'
        for f in (None, F.eq('part', 2)):
            problems += await (title_calls(documents, f, _TITLE_PROBES) + scope_calls(documents, f)).problems(
                store, reference
            )
        problems += await document_metadata_problems(store, documents)
        assert not problems, _report(problems)

    async def test_section_reader_scopes_in_turn_and_foreign_ids(self, loaded: Any) -> None:
        """Two tenants in turn on one store; an id outside the scope answers like one that exists nowhere.

        Ids of the other tenant's document and sections, an entity id, an unknown id: each must get
        the empty answer (total 0), never an error or a count. A scope holding only entities lists
        nothing: entities never appear."""
        store = _section_reader(loaded)
        reference = SectionReference.of(conformance_corpus(), conformance_entities())
        acme, globex = F.eq('tenant', 'acme'), F.eq('tenant', 'globex')
        problems: list[str] = []
        for f in (acme, globex, acme, _PARTIAL & F.ne('tenant', 'globex')):
            foreign = reference.documents_out_of_scope(f)[0]
            ids = [foreign.id, nested_section(foreign), 'ent-alice', UNKNOWN_ID]
            problems += await scope_calls(reference.documents, f).problems(store, reference)
            problems += await empty_answer_problems(store, ids, f)
        people = EntityFilter.has_any_label('Person')
        assert reference.page(DocumentPageRequest(filter=people)).total == 0
        problems += await scope_calls(reference.documents, people).problems(store, reference)
        assert not problems, _report(problems)

    async def test_section_reader_after_replace_and_delete(self, loaded: Any) -> None:
        """A replaced document shows only its new version (title, chunks, sections, metadata); a deleted one is gone."""
        store = _section_reader(loaded)
        corpus, entities = conformance_corpus(), conformance_entities()
        old = corpus[0]
        new = _second_version(old)
        await loaded.upsert([new])
        reference = SectionReference.of([new, *corpus[1:]], entities)
        stale_sections = [s.id for s in old.sections if new.section_by_id(s.id) is None]
        problems: list[str] = []
        scopes: list[Filter | None] = [F.eq('tenant', 'acme'), F.lte('n', 2)]
        for f in scopes:
            calls = scope_calls(reference.documents, f) + document_reads([new], f) + outline_calls([new], f)
            problems += await (calls + title_calls([new], f, ['handbook'])).problems(store, reference)
            problems += await empty_answer_problems(store, stale_sections, f)
        await loaded.delete_documents([corpus[1].id])
        reference = SectionReference.of([new, corpus[2]], entities)
        gone = [corpus[1].id, nested_section(corpus[1])]
        for f in (None, F.eq('tenant', 'globex')):
            problems += await scope_calls(reference.documents, f).problems(store, reference)
            problems += await empty_answer_problems(store, gone, f)
        assert not problems, _report(problems)

    async def test_section_reader_after_reopen(self, store_path: Path, embedder: Any) -> None:
        """Reopened, a store lists the same documents with the same metadata types (``2.0`` stays a float)."""
        made = await self.make_store(store_path, embedder)
        _section_reader(made)
        documents = navigation_corpus()
        await made.upsert(documents)
        del made
        reopened = _section_reader(await self.reopen_store(store_path, embedder))
        reference = SectionReference.of(documents)
        problems = await document_metadata_problems(reopened, documents)
        problems += await scope_calls(documents, F.eq('region', 'south')).problems(reopened, reference)
        assert not problems, _report(problems)

    # -- graph (GraphSearch + GraphStore): direct calls, every answer equal to the reference's -------

    @pytest_asyncio.fixture
    async def graph_loaded(self, store_path: Path, embedder: HashingEmbeddingModel) -> Any:
        store = _graph_store(await self.make_store(store_path, embedder))
        await store.upsert(graph_corpus().items())
        return store

    async def test_graph_honours_every_filter(self, graph_loaded: Any) -> None:
        """Every edge filter in turn, on one store: nodes, edges (and ``truncated``) and a walk equal the reference.

        One store for all of them, so a cache keyed by something coarser than the filter (where
        ``True == 1``) serves one scope another's answer and fails here too."""
        corpus = graph_corpus()
        reference = GraphReference.of(corpus)
        calls = GraphCalls()
        for f in [None, *(f for _, f in EDGE_FILTERS)]:
            calls += graph_scope_calls(corpus, reference, f)
        assert not (problems := await calls.problems(graph_loaded, reference)), _report(problems)

    async def test_graph_nodes_of_every_kind(self, graph_loaded: Any) -> None:
        """Chunks, sections, documents and entities, in and out of scope; ids of no node; duplicates of none."""
        corpus = graph_corpus()
        calls = GraphCalls()
        for _, f in GRAPH_SCOPES:
            calls += node_calls(corpus, f)
        assert not (problems := await calls.problems(graph_loaded, GraphReference.of(corpus))), _report(problems)

    async def test_graph_neighbours(self, graph_loaded: Any) -> None:
        """Direction, edge types, ``limit`` and exactly when ``truncated``, order, self-loops, both endpoints in scope."""
        corpus = graph_corpus()
        reference = GraphReference.of(corpus)
        calls = GraphCalls()
        for _, f in GRAPH_SCOPES:
            calls += neighbour_calls(corpus, reference, f)
        assert not (problems := await calls.problems(graph_loaded, reference)), _report(problems)

    async def test_graph_walks(self, graph_loaded: Any) -> None:
        """`toolish_rag.graph.walk.walk` over the store equals the walk over the reference: hops, via, budgets, order."""
        corpus = graph_corpus()
        reference = GraphReference.of(corpus)
        calls = GraphCalls()
        for _, f in GRAPH_SCOPES[:4]:
            calls += walk_calls(corpus, reference, f)
        assert not (problems := await calls.problems(graph_loaded, reference)), _report(problems)

    async def test_graph_replacing_and_deleting_documents(self, graph_loaded: Any) -> None:
        """A document's relations and ledger marks go with it; the same batch's and standalone relations stay."""
        assert not (problems := await replacement_problems(graph_loaded, graph_corpus())), _report(problems)

    async def test_graph_relation_writes(self, graph_loaded: Any) -> None:
        """Relations rewritten by id (the last of an id in a batch wins) and deleted by id; entities listed."""
        assert not (problems := await relation_write_problems(graph_loaded, graph_corpus())), _report(problems)

    async def test_graph_ledger(self, store_path: Path, embedder: Any) -> None:
        """Marks set, overwritten and deleted per builder, each builder's apart."""
        store = _graph_store(await self.make_store(store_path, embedder))
        assert not (problems := await ledger_problems(store)), _report(problems)

    async def test_graph_after_reopen(self, store_path: Path, embedder: Any) -> None:
        """Reopened, a store holds the same relations and ledger, and answers alike."""
        made = _graph_store(await self.make_store(store_path, embedder))
        corpus = graph_corpus()
        await made.upsert(corpus.items())
        marks = {'exact': {corpus.documents[0].id: 'fp-1', 'names': 'names-1'}}
        await made.set_graph_marks('exact', marks['exact'])
        del made
        reopened = _graph_store(await self.reopen_store(store_path, embedder))
        reference = GraphReference.of(corpus)
        problems = await stored_problems(reopened, 'after a reopen', corpus.relations, marks)
        calls = graph_scope_calls(corpus, reference, None) + graph_scope_calls(corpus, reference, GRAPH_SCOPES[1][1])
        problems += await calls.problems(reopened, reference)
        assert not problems, _report(problems)

    # -- entities -------------------------------------------------------------------------------

    async def test_entities_are_searchable_and_labelled(self, loaded: Any) -> None:
        caps = StoreCapabilities.of(loaded)
        people = Retriever(loaded, F.eq('tenant', 'acme')).with_filter(EntityFilter.has_any_label('Person'))
        for ids in (await self._everything(people, caps, 50)).values():
            assert ids == {'ent-alice'}

    # -- persistence ----------------------------------------------------------------------------

    async def test_reopen_gives_identical_records_and_results(self, store_path: Path, embedder: Any) -> None:
        store = await self.make_store(store_path, embedder)
        corpus: list[Document | Entity] = [*conformance_corpus(), *conformance_entities()]
        await store.upsert(corpus)
        caps = StoreCapabilities.of(store)
        before = await self._ranked(store, caps)
        del store
        reopened = await self.reopen_store(store_path, embedder)
        assert await self._ranked(reopened, caps) == before
        if isinstance(reopened, ResultExpander):
            originals = {r.id: r for r in self._all_records()}
            for record in await reopened.get_records(list(originals)):
                self._assert_same_record(record, originals[record.id])
        assert {d.id for d in await reopened.list_documents()} == {d.id for d in conformance_corpus()}

    @staticmethod
    async def _ranked(store: Any, caps: StoreCapabilities) -> dict[str, list[tuple[str, float]]]:
        retriever = Retriever(store, F.ne('tenant', 'initech'))
        out: dict[str, list[tuple[str, float]]] = {}
        if caps.vector:
            out['vector'] = [(h.id, round(h.score, 4)) for h in await retriever.vector_search('warranty details', 5)]
        if caps.text:
            out['text'] = [(h.id, round(h.score, 4)) for h in await retriever.text_search('warranty details', 5)]
        if caps.regex:
            out['regex'] = [(h.id, h.score) for h in await retriever.regex_search('ERR-[0-9]+', 5)]
        return out
