"""A federation's sources, scopes and failures: each hit names its member, a view hides what it leaves
out, a failing or slow member degrades the answer without failing it. See docs/federation.md."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from toolish_rag.builder import DocumentBuilder
from toolish_rag.content import Document
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.errors import QuerySyntaxError
from toolish_rag.filters import Filter, PropertyFilter as F, matches
from toolish_rag.protocols import StoreFeatures
from toolish_rag.retriever import Retriever
from toolish_rag.search import RegexRequest, SearchHit, SearchRequest
from toolish_rag.stores import InMemoryStore
from toolish_rag.stores.federated import ByMetadata, Federated, MemberUnavailable, SourcedHit
from toolish_rag_tantivy import TantivyStore

EMBEDDER = HashingEmbeddingModel(32)
MEMBERS = ('docs', 'code', 'tickets')
TENANTS = ('acme', 'globex')


def _doc(i: int, member: str, tenant: str) -> Document:
    b = DocumentBuilder(f'file:///{member}/{i}.md', f'{member} {i}', metadata={'home': member, 'tenant': tenant})
    b.add_chunk(b.section('Body'), f'refund policy note {i} for {tenant}')
    return b.build()


def _corpus() -> list[Document]:
    return [_doc(i, MEMBERS[i % 3], TENANTS[i % 2]) for i in range(12)]


async def _loaded(**options: Any) -> Any:
    fed = Federated({m: InMemoryStore(EMBEDDER) for m in MEMBERS}, route=ByMetadata('home'), **options)
    await fed.upsert(_corpus())
    return fed


async def test_every_hit_names_its_member_and_record_metadata_cannot_claim_another() -> None:
    fed = await _loaded()
    forged = _doc(99, 'docs', 'acme').model_copy(update={'metadata': {'home': 'docs', 'source': 'code'}})
    await fed.upsert([forged])
    for search in (fed.vector_search, fed.text_search, fed.hybrid_search):
        hits = await search(SearchRequest('refund policy note', 20))
        assert hits and all(isinstance(h, SourcedHit) for h in hits)
        assert all(h.source == h.record.metadata['home'] for h in hits)  # where it is, not what it says
    regex = await fed.regex_search(RegexRequest('note 9', 5))
    assert [(h.source, h.record.metadata['home']) for h in regex] == [('docs', 'docs'), ('docs', 'docs')]


class _Broken(InMemoryStore):
    async def text_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        raise RuntimeError('disk of tenant globex unreadable at /secret/path')


class _Slow(InMemoryStore):
    async def text_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        await asyncio.sleep(5)
        return await super().text_search(request)


async def test_a_failing_or_slow_member_does_not_fail_the_search() -> None:
    events: list[MemberUnavailable] = []
    members = {'docs': InMemoryStore(EMBEDDER), 'code': _Broken(EMBEDDER), 'tickets': _Slow(EMBEDDER)}
    fed = Federated(members, route=ByMetadata('home'), timeout=0.2, on_unavailable=events.append)
    await fed.upsert(_corpus())
    hits = await fed.text_search(SearchRequest('refund policy', 20))
    assert {h.source for h in hits} == {'docs'} and len(hits) == 4
    assert sorted((e.member, e.reason, e.error_type) for e in events) == [
        ('code', 'error', 'RuntimeError'),
        ('tickets', 'timeout', 'TimeoutError'),
    ]
    assert 'secret' not in repr(events)
    with pytest.raises(QuerySyntaxError):  # the caller's mistake is not a member failure
        await fed.regex_search(RegexRequest('(unclosed', 5))


async def test_the_tool_text_and_a_rag_event_name_the_unavailable_source_without_its_error() -> None:
    from toolish_rag import RagEvent, ToolishRag

    members = {'docs': InMemoryStore(EMBEDDER), 'code': _Broken(EMBEDDER), 'tickets': _Slow(EMBEDDER)}
    fed = Federated(members, route=ByMetadata('home'), timeout=0.2)
    await fed.upsert(_corpus())
    seen: list[RagEvent] = []
    rag = ToolishRag(fed, name='kb').with_listener(seen.append)
    shown = str((await rag.run_tool('text_search', {'query': 'refund policy', 'top_k': 20})).return_value)
    assert shown.count('| source: docs') == 4 and '| source: code' not in shown
    assert shown.endswith("\n\n(sources 'code', 'tickets' unavailable; results from the other sources)")
    assert 'globex unreadable' not in shown and 'secret' not in shown and 'RuntimeError' not in shown
    assert seen[-1].unavailable == ('code', 'tickets') and seen[-1].result_text == shown

    one = str(
        (await rag.run_tool('hybrid_search', {'query': 'refund policy', 'sources': ['docs', 'code']})).return_value
    )
    assert one.endswith("\n\n(source 'code' unavailable; results from the other sources)")
    assert seen[-1].unavailable == ('code',)
    fine = str((await rag.run_tool('vector_search', {'query': 'refund policy'})).return_value)
    assert 'unavailable' not in fine and seen[-1].unavailable == ()  # vector search reached every member
    view = ToolishRag(fed.narrowed({'docs'}), name='kb').with_listener(seen.append)
    alone = str((await view.run_tool('text_search', {'query': 'refund policy'})).return_value)
    assert 'unavailable' not in alone and seen[-1].unavailable == ()  # a left-out member is never named


async def test_a_view_hides_the_members_it_leaves_out() -> None:
    fed = await _loaded()
    view = fed.narrowed({'docs'}, scopes={'docs': F.eq('tenant', 'acme')})
    assert list(view.members) == ['docs']
    hits = await view.hybrid_search(SearchRequest('refund policy note', 50))
    assert {h.source for h in hits} == {'docs'}
    assert {h.record.metadata['tenant'] for h in hits} == {'acme'}
    everything = [c.id for d in _corpus() for c in d.chunks]
    assert {r.metadata['home'] for r in await view.get_records(everything)} == {'docs'}
    assert 'code' not in repr(view)
    with pytest.raises(ValueError, match='no such members'):
        fed.narrowed({'nope'})
    text_only = Federated({'docs': InMemoryStore(EMBEDDER), 'code': TantivyStore()})
    assert not StoreFeatures.of(text_only.narrowed({'code'})).vector  # a capability leaves with its member


_FILTERS: list[Filter | None] = [None, F.eq('tenant', 'acme'), F.eq('tenant', 'globex'), F.ne('tenant', 'acme')]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    visible=st.sets(st.sampled_from(MEMBERS), min_size=1),
    member_scope=st.dictionaries(st.sampled_from(MEMBERS), st.sampled_from(_FILTERS[1:])),
    run_filter=st.sampled_from(_FILTERS),
    top_k=st.integers(1, 15),
)
def test_no_hit_count_or_name_outside_the_scope(
    visible: set[str], member_scope: dict[str, Filter], run_filter: Filter | None, top_k: int
) -> None:
    """Through any view and run filter, every search and read by id answers exactly from what the view admits."""

    async def run() -> None:
        view = (await _loaded()).narrowed(visible, scopes={m: f for m, f in member_scope.items() if m in visible})
        admitted = {
            c.id
            for d in _corpus()
            for c in d.chunks
            if d.metadata['home'] in visible
            and matches(member_scope.get(str(d.metadata['home'])), c)
            and matches(run_filter, c)
        }
        retriever = Retriever(view, run_filter)
        for search in (retriever.vector_search, retriever.text_search, retriever.hybrid_search):
            hits = await search('refund policy note', top_k)
            assert {h.id for h in hits} <= admitted
            assert len(hits) == min(top_k, len(admitted))  # exact top_k: no count from outside either
            assert all(isinstance(h, SourcedHit) and h.source in visible for h in hits)
        every = [c.id for d in _corpus() for c in d.chunks]
        assert {r.id for r in await retriever.records(every)} == admitted
        assert set(view.members) == visible

    asyncio.run(run())


async def test_the_model_reads_each_hits_source() -> None:
    from toolish_rag import ToolishRag

    rag = ToolishRag(await _loaded(), name='kb')
    result = await rag.run_tool('hybrid_search', {'query': 'refund policy note 3', 'top_k': 3})
    shown = str(result.return_value)
    assert '| source: docs' in shown and '| source: code' in shown


async def test_sources_narrow_the_search_tools_and_name_only_what_the_scope_sees() -> None:
    from pydantic_ai import ModelRetry

    from toolish_rag import ToolishRag

    fed = await _loaded()
    fed = Federated(fed.members, route=fed.route, descriptions={'docs': 'product manuals', 'code': 'the code base'})
    rag = ToolishRag(fed, name='kb')
    tools = {t.name: t for t in await rag.tool_definitions()}
    hybrid = tools['kb_hybrid_search']
    assert 'sources' in hybrid.parameters_json_schema['properties']
    assert 'docs (product manuals); code (the code base); tickets.' in (hybrid.description or '')
    result = await rag.run_tool('hybrid_search', {'query': 'refund policy note', 'top_k': 10, 'sources': ['code']})
    shown = str(result.return_value)
    assert '| source: code' in shown and '| source: docs' not in shown
    regex = await rag.run_tool('regex_search', {'pattern': 'note [0-9]+', 'top_k': 20, 'sources': ['tickets']})
    assert str(regex.return_value).count('| source: tickets') == 4

    view = ToolishRag(fed.narrowed({'docs', 'tickets'}), name='kb')
    described = ' '.join(t.description or '' for t in await view.tool_definitions())
    assert 'code' not in described.replace('error code', '').replace(
        'code symbols', ''
    )  # an excluded member is never named
    with pytest.raises(ModelRetry) as refused:
        await view.run_tool('text_search', {'query': 'refund', 'sources': ['code']})
    assert "'code' is not a source here: choose among docs, tickets" in str(refused.value)
    with pytest.raises(ModelRetry, match='sources is empty'):
        await view.run_tool('text_search', {'query': 'refund', 'sources': []})


async def test_a_store_that_is_no_federation_offers_no_sources_and_refuses_them() -> None:
    from pydantic_ai import ModelRetry

    from toolish_rag import ToolishRag

    store = InMemoryStore(EMBEDDER)
    await store.upsert(_corpus())
    rag = ToolishRag(store, name='kb')
    for tool in await rag.tool_definitions():
        assert 'sources' not in tool.parameters_json_schema.get('properties', {}), tool.name
    with pytest.raises(ModelRetry, match='this tool takes no sources argument'):
        await rag.run_tool('text_search', {'query': 'refund', 'sources': ['docs']})


async def test_citations_are_verified_across_members() -> None:
    from toolish_rag import ToolishRag

    fed = await _loaded()
    rag = ToolishRag(fed, name='kb')
    corpus = _corpus()
    docs_chunk, code_chunk = corpus[0].chunks[0], corpus[1].chunks[0]  # homes: docs, code
    claims = {
        'claims': [
            {
                'text': 'Both notes cover refunds.',
                'citations': [
                    {'chunk_id': docs_chunk.id, 'quote': 'refund policy note 0'},
                    {'chunk_id': code_chunk.id, 'quote': 'refund policy note 1'},
                ],
            }
        ]
    }
    text = str((await rag.run_tool('verify_citations', claims)).return_value)
    assert 'Citation check: 2 of 2 citations verified.' in text
    hidden = str(
        (await ToolishRag(fed.narrowed({'docs'}), name='kb').run_tool('verify_citations', claims)).return_value
    )
    assert 'Citation check: 1 of 2 citations verified.' in hidden  # the excluded member's chunk is not found
