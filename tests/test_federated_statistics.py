"""Statistics a member reports itself (`TermStatisticsSource`): current, never a census (docs/federation.md#fusion)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from toolish_rag.analysis import analyzer_for
from toolish_rag.builder import DocumentBuilder
from toolish_rag.content import Document, Entity
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.filters import Filter, PropertyFilter as F
from toolish_rag.search import SearchHit, SearchRequest
from toolish_rag.sections import DocumentPage, DocumentPageRequest
from toolish_rag.stores import InMemoryStore
from toolish_rag.stores.federated import ByMetadata, Federated, MemberFusion, MemberUnavailable
from toolish_rag_lancedb import LanceDBStore

EMBEDDER = HashingEmbeddingModel(64)
TOPICS = ['refund', 'shipping', 'warranty', 'invoice', 'return']


def _doc(name: str, source: str, text: str, tenant: str = 'acme') -> Document:
    b = DocumentBuilder(f'file:///{source}/{name}.md', name, metadata={'source': source, 'tenant': tenant})
    b.add_chunk(b.section('Body'), text)
    return b.build()


def _corpus() -> list[Document]:
    sources, tenants = ('docs', 'code', 'lance'), ('globex', 'acme', 'acme', 'acme')
    return [
        _doc(f'd{i}', sources[i % 3], f'{TOPICS[i % 5]} {TOPICS[(i * 3) % 5]} policy note {i}', tenants[i % 4])
        for i in range(30)
    ]


class _NoCensus(InMemoryStore):
    """A member whose text scores run ten times another's and whose text cannot be read whole (no census)."""

    async def text_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        return [SearchHit(h.record, h.score * 10, h.matches) for h in await super().text_search(request)]

    async def document_page(self, request: DocumentPageRequest) -> DocumentPage:
        raise AssertionError('a member reporting its own statistics is never census-read')


async def _same_scores(single: InMemoryStore, fed: Federated, query: str, f: Filter | None = None) -> None:
    one = {h.id: h.score for h in await single.text_search(SearchRequest(query, 100, filter=f))}
    many = await fed.text_search(SearchRequest(query, 10, filter=f))
    assert len(many) == min(10, len(one)) >= 3, query
    assert [h.score for h in many] == pytest.approx(sorted(one.values())[::-1][:10], rel=1e-5), query
    assert [h.score for h in many] == pytest.approx([one[h.id] for h in many], rel=1e-5), query


async def test_a_member_written_from_elsewhere_scores_as_in_one_store(tmp_path: Path) -> None:
    """Memory members answer their statistics per call (a write made straight to a member is seen);
    the LanceDB member keeps its census; together they score as one store holding every record."""
    single = InMemoryStore(EMBEDDER, language='en')
    docs, code = InMemoryStore(EMBEDDER, language='en'), _NoCensus(EMBEDDER, language='en')
    lance = LanceDBStore(tmp_path / 'lance', embedder=EMBEDDER)
    fed = Federated({'docs': docs, 'code': code, 'lance': lance}, route=ByMetadata('source'), fusion=MemberFusion(analyzer=analyzer_for('en')))  # fmt: skip
    corpus = _corpus()
    for store in (single, fed):
        await store.upsert(corpus)
    await _same_scores(single, fed, 'refund policy')
    await _same_scores(single, fed, 'shipping warranty note', F.eq('tenant', 'acme'))
    # Written from outside the federation: straight to the members, as another process would.
    extra = [_doc('x1', 'docs', 'refund refund refund policy'), _doc('x2', 'code', 'refund warranty refund')]
    await docs.upsert(extra[:1])
    await code.upsert(extra[1:])
    await single.upsert(extra)
    await code.delete_documents([corpus[1].id])
    await single.delete_documents([corpus[1].id])
    await _same_scores(single, fed, 'refund policy')
    await _same_scores(single, fed, 'refund warranty', F.eq('tenant', 'acme'))
    top = await fed.text_search(SearchRequest('refund policy', 2))
    assert {h.record.document_id for h in top} == {d.id for d in extra}


def _two(item: Document | Entity, members: Sequence[str]) -> str:
    return 'code' if item.metadata.get('source') == 'code' else 'docs'


async def test_auto_members_answer_under_their_own_analyzer() -> None:
    """With ``analyzer=None`` (the default) the one BM25 is the members' own ``'auto'`` analysis, which they report."""
    single = InMemoryStore(EMBEDDER)
    fed = Federated({'docs': InMemoryStore(EMBEDDER), 'code': _NoCensus(EMBEDDER)}, route=_two)  # fmt: skip
    assert single.text_analyzer.auto and fed.fusion.analyzer is None
    corpus = [*_corpus(), _doc('de', 'code', 'Die Rückerstattung der Rechnung erfolgt innerhalb von dreißig Tagen.')]
    for store in (single, fed):
        await store.upsert(corpus)
    await _same_scores(single, fed, 'refund shipping policy')
    await _same_scores(single, fed, 'invoice note', F.ne('tenant', 'acme'))


async def test_a_member_asked_for_its_share_is_asked_again_when_it_holds_more_of_the_pool() -> None:
    """Members are first asked for their share of the pool; one holding most of the best hits is asked
    for more, so merging by score gives exactly what the members' whole lists give (ties included)."""
    many = [_doc(f'r{i}', 'docs', f'refund refund policy {"note " * (i % 7)}{i}') for i in range(60)]
    few = [_doc(f's{i}', 'code', f'shipping {i} and one refund') for i in range(12)]
    members = {'docs': InMemoryStore(EMBEDDER, language='en'), 'code': InMemoryStore(EMBEDDER, language='en')}
    fed = Federated(members, route=_two)
    await fed.upsert([*many, *few])
    for top_k in (5, 30, 70):
        request = SearchRequest('refund policy note', top_k)
        whole = [h for m in members.values() for h in await m.vector_search(SearchRequest(request.query, 100))]
        expected = sorted(whole, key=lambda h: -h.score)[:top_k]  # stable: docs before code on ties
        found = await fed.vector_search(request)
        assert [h.id for h in found] == [h.id for h in expected], top_k
        assert top_k == 5 or fed.fusion.asks(top_k, 2)[0] < min(top_k, 60)  # docs was first asked for less


class _FailsWhenAskedAgain(InMemoryStore):
    """A member whose second vector search fails (a timeout, a dropped connection)."""

    calls = 0

    async def vector_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        self.calls += 1
        if self.calls > 1:
            raise ConnectionError('gone')
        return await super().vector_search(request)


async def test_a_member_failing_when_asked_again_keeps_its_first_answer() -> None:
    many = [_doc(f'r{i}', 'docs', f'refund refund policy {"note " * (i % 7)}{i}') for i in range(60)]
    few = [_doc(f's{i}', 'code', f'shipping {i} and one refund') for i in range(12)]
    shaky = _FailsWhenAskedAgain(EMBEDDER, language='en')
    events: list[MemberUnavailable] = []
    fed = Federated({'docs': shaky, 'code': InMemoryStore(EMBEDDER, language='en')}, route=_two, on_unavailable=events.append)  # fmt: skip
    await fed.upsert([*many, *few])
    found = await fed.vector_search(SearchRequest('refund policy note', 40))
    assert shaky.calls == 2 and [e.member for e in events] == ['docs']  # asked again, failed
    first = fed.fusion.asks(40, 2)[0]
    assert len(found) == 40 and sum(h.source == 'docs' for h in found) >= first - 2  # its first answer kept
