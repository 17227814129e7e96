"""`Federated`: capabilities per member combination, routed writes, reads by id, fusion of incomparable scores.

The conformance kit over federations is in tests/test_federated_conformance.py. See docs/federation.md.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from toolish_rag.builder import DocumentBuilder
from toolish_rag.content import Chunk, Document
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.filters import PropertyFilter as F
from toolish_rag.protocols import FilterPushdown, StoreFeatures
from toolish_rag.search import ExpansionRequest, SearchHit, SearchRequest
from toolish_rag.stores import InMemoryStore
from toolish_rag.stores.federated import ByHash, ByMetadata, Federated, MemberFusion
from toolish_rag.testing import ConformanceFailure, check_store
from toolish_rag_lancedb import LanceDBStore
from toolish_rag_tantivy import TantivyStore

EMBEDDER = HashingEmbeddingModel(64)


def _doc(name: str, source: str, *texts: str, tenant: str = 'acme') -> Document:
    b = DocumentBuilder(f'file:///{source}/{name}.md', name, metadata={'source': source, 'tenant': tenant})
    section = b.section('Body')
    for text in texts:
        b.add_chunk(section, text)
    return b.build()


def _kinds(tmp_path: Path) -> dict[str, Any]:
    return {
        'memory': InMemoryStore(EMBEDDER),
        'lancedb': LanceDBStore(tmp_path / 'lance', embedder=EMBEDDER),
        'tantivy': TantivyStore(),
    }


async def test_capabilities_are_those_some_member_serves_for_every_combination(tmp_path: Path) -> None:
    kinds = _kinds(tmp_path)
    for size in (1, 2, 3):
        for names in itertools.combinations(kinds, size):
            members = {name: kinds[name] for name in names}
            caps = StoreFeatures.of(Federated(members))
            each = [StoreFeatures.of(s) for s in members.values()]
            assert caps.vector == any(c.vector for c in each), names
            assert caps.text == any(c.text for c in each), names
            assert caps.regex == any(c.regex for c in each), names
            assert caps.expand == any(c.expand for c in each), names
            assert caps.native_hybrid == any(c.any_search for c in each), names
            assert caps.sections == any(c.sections for c in each), names
            assert caps.graph == any(c.graph for c in each), names
            assert isinstance(Federated(members), FilterPushdown)
    assert not StoreFeatures.of(Federated({'code': kinds['tantivy']})).vector


async def test_a_text_only_member_adds_to_text_and_hybrid_never_to_vector() -> None:
    fed = Federated({'docs': InMemoryStore(EMBEDDER), 'code': TantivyStore()}, route=ByMetadata('source'))
    await fed.upsert(
        [
            _doc('manual', 'docs', 'refund policy for parcels', 'shipping takes two days'),
            _doc('handler', 'code', 'def refund policy handler', 'raise ParcelError'),
        ]
    )
    vector = {h.record.metadata['source'] for h in await fed.vector_search(SearchRequest('refund policy', 10))}
    text = {h.record.metadata['source'] for h in await fed.text_search(SearchRequest('refund policy', 10))}
    hybrid = await fed.hybrid_search(SearchRequest('refund policy', 10))
    assert vector == {'docs'}
    assert text == {'docs', 'code'}
    assert {h.record.metadata['source'] for h in hybrid} == {'docs', 'code'}
    assert all(0.0 <= h.score <= 1.0 for h in hybrid)


async def test_writes_follow_the_route_and_a_moved_document_leaves_its_old_member() -> None:
    docs, code = InMemoryStore(EMBEDDER), InMemoryStore(EMBEDDER)
    fed = Federated({'docs': docs, 'code': code}, route=ByMetadata('source'))
    await fed.upsert([_doc('a', 'docs', 'alpha text')])
    moved = _doc('a', 'code', 'alpha text again')
    moved = moved.model_copy(update={'id': (await docs.list_documents())[0].id})  # the same document, new route
    await fed.upsert([moved])
    assert [d.id for d in await docs.list_documents()] == []
    assert [d.id for d in await code.list_documents()] == [moved.id]
    assert [d.id for d in await fed.list_documents()] == [moved.id]
    with pytest.raises(ValueError, match='not a writable member'):
        await fed.upsert([_doc('b', 'docs', 'fine'), _doc('c', 'tickets', 'no such member')])
    assert [d.id for d in await fed.list_documents()] == [moved.id]  # nothing of the refused batch was written
    assert await fed.delete_documents([moved.id]) == 1
    assert await fed.list_documents() == []


async def test_hash_route_is_stable_and_spreads() -> None:
    docs = [_doc(f'd{i}', 'docs', f'text {i}') for i in range(40)]
    route = ByHash()
    placed = [route(d, ['a', 'b', 'c']) for d in docs]
    assert placed == [ByHash()(d, ['a', 'b', 'c']) for d in docs]
    assert set(placed) == {'a', 'b', 'c'}


async def test_reads_by_id_go_to_the_owner_and_keep_the_scope() -> None:
    fed = Federated({'docs': InMemoryStore(EMBEDDER), 'code': InMemoryStore(EMBEDDER)}, route=ByMetadata('source'))
    a, b = _doc('a', 'docs', 'one', 'two', 'three'), _doc('b', 'code', 'four', tenant='globex')
    await fed.upsert([a, b])
    ids = [c.id for c in (*a.chunks, *b.chunks)]
    assert {r.id for r in await fed.get_records(ids)} == set(ids)
    assert {r.id for r in await fed.get_records(ids, filter=F.eq('tenant', 'acme'))} == {c.id for c in a.chunks}
    window = await fed.expand(ExpansionRequest.around_chunk(a.chunks[1].id, 1, 1))
    assert [c.id for c in window] == [c.id for c in a.chunks]
    assert await fed.expand(ExpansionRequest.around_chunk(b.chunks[0].id, 1, 1, filter=F.eq('tenant', 'acme'))) == []


def _hits(prefix: str, scores: Sequence[float]) -> list[SearchHit]:
    chunks = [
        Chunk(
            id=f'{prefix}{i}',
            text='t',
            urtext='t',
            chunk_index=i,
            sequence_number=i,
            metadata={},
            document_id=prefix,
            document_uri='u',
            document_title='t',
        )
        for i in range(len(scores))
    ]
    return [SearchHit(c, s) for c, s in zip(chunks, scores, strict=True)]


def test_zscore_fusion_standardises_each_member_so_a_scale_does_not_win() -> None:
    bm25 = _hits('big', [40.0, 30.0, 20.0, 10.0])  # one corpus's BM25 scale
    cosine = _hits('small', [0.9, 0.7, 0.5, 0.3])  # another's: the same shape, a hundredth of the scale
    fused = MemberFusion(method='zscore').fuse(['a', 'b'], [bm25, cosine], 4)
    assert [h.id for h in fused] == ['big0', 'small0', 'big1', 'small1']  # ties: members in declared order
    assert [h.score for h in fused] == sorted((h.score for h in fused), reverse=True)
    assert all(0.0 <= h.score <= 1.0 for h in fused)
    assert len(MemberFusion(method='zscore').fuse(['a', 'b'], [bm25, cosine], 7)) == 7
    assert [h.id for h in MemberFusion(method='rrf').fuse(['b', 'a'], [cosine, bm25], 3)] == [
        'small0',
        'big0',
        'small1',
    ]


def test_raw_fusion_merges_by_the_members_own_scores_exact_top_k_stable_ties() -> None:
    one, other = _hits('a', [0.9, 0.5, 0.5]), _hits('b', [0.7, 0.5, 0.1])
    fused = MemberFusion().fuse(['docs', 'code'], [one, other], 5)
    assert [(h.id, h.score, h.source) for h in fused] == [
        ('a0', 0.9, 'docs'),
        ('b0', 0.7, 'code'),
        ('a1', 0.5, 'docs'),
        ('a2', 0.5, 'docs'),
        ('b1', 0.5, 'code'),
    ]


def test_fusion_keeps_an_id_two_members_return_once() -> None:
    fused = MemberFusion().fuse(['a', 'b'], [_hits('x', [2.0, 1.0]), _hits('x', [5.0, 1.0])], 5)
    assert [(h.id, h.source) for h in fused] == [('x0', 'b'), ('x1', 'a')]  # each at its best place


def test_member_names_and_options_are_checked() -> None:
    with pytest.raises(ValueError, match='member name'):
        Federated({'Docs!': InMemoryStore(EMBEDDER)})
    with pytest.raises(ValueError, match='at least one member'):
        Federated({})
    with pytest.raises(ValueError, match='fusion method'):
        MemberFusion(method='max')  # type: ignore[arg-type]


class _Leaky(InMemoryStore):
    """Ignores the filter it claims to evaluate: a leaking member."""

    async def text_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        return await super().text_search(SearchRequest(request.query, request.top_k))


class _Losing(InMemoryStore):
    """Drops every other hit of its text search: a member that loses in-scope records."""

    async def text_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        return list(await super().text_search(request))[::2]


async def test_a_leaking_member_fails_the_kit_and_the_tools_never_show_its_leak() -> None:
    """The federation passes on what a member that evaluates filters returns, so the kit's direct checks
    see a member's leak; the tools read through a scoped Retriever, which re-checks every hit.
    A member that loses records fails the kit too: the kit examines every member's answers."""
    from toolish_rag import ToolishRag
    from toolish_rag.protocols import TextSearch

    def federation(member: type[InMemoryStore]) -> Any:
        return lambda path, embedder: Federated({'docs': InMemoryStore(embedder), 'code': member(embedder)})

    chosen: dict[str, Any] = {'protocols': {TextSearch}, 'aspects': {'scope'}}
    with pytest.raises(ConformanceFailure, match='scope'):
        await check_store(federation(_Leaky), **chosen)
    with pytest.raises(ConformanceFailure, match='missing'):
        await check_store(federation(_Losing), **chosen)

    fed = Federated({'docs': InMemoryStore(EMBEDDER), 'code': _Leaky(EMBEDDER)}, route=ByMetadata('source'))
    await fed.upsert(
        [
            _doc('acme', 'code', 'refund rules for acme'),
            _doc('globex', 'code', 'refund rules for globex', tenant='globex'),
            _doc('manual', 'docs', 'refund rules in the manual', tenant='globex'),
        ]
    )
    leaked = await fed.text_search(SearchRequest('refund rules', 10, filter=F.eq('tenant', 'acme')))
    assert {h.record.metadata['tenant'] for h in leaked} == {'acme', 'globex'}  # the member's leak, passed on
    rag = ToolishRag(fed, name='kb').with_metadata_filter(F.eq('tenant', 'acme'))
    for tool in ('text_search', 'hybrid_search'):
        shown = str((await rag.run_tool(tool, {'query': 'refund rules', 'top_k': 10})).return_value)
        assert 'for acme' in shown and 'globex' not in shown and 'manual' not in shown, tool


async def test_graph_reads_route_to_each_member_and_a_walk_stays_in_its_member() -> None:
    """Each member holds one tenant's handbook and graph (written to the member); the federation's hops
    are the members' merged in edge order and cut at the limit, and a view's walk reads exactly like
    the walk over its member alone (the left-out member adds no node, edge or count)."""
    from helpers import handbook_corpus, handbook_entities

    from toolish_rag import ToolishRag
    from toolish_rag.content import Relation
    from toolish_rag.graph.model import NeighbourRequest, NodeRequest, edge_order

    acme, globex = handbook_corpus()
    alice, bob = handbook_entities()[:2]

    def graph(doc: Document, person: str) -> list[Relation]:
        edges = [
            Relation(source=c.id, source_kind='chunk', target=c.section_ids[-1], target_kind='section',
                     type='PART_OF', document_id=doc.id)
            for c in doc.chunks
        ]  # fmt: skip
        return [*edges, Relation(source=doc.chunks[0].id, source_kind='chunk', target=person, target_kind='entity', type='MENTIONS')]  # fmt: skip

    a, b = InMemoryStore(EMBEDDER), InMemoryStore(EMBEDDER)
    await a.upsert([acme, alice, *graph(acme, alice.id)])
    await b.upsert([globex, bob, *graph(globex, bob.id)])
    for member in (a, b):
        await member.record_graph_built(['test'])  # relations written directly: the operator says a graph is built
    fed = Federated({'a': a, 'b': b})
    assert StoreFeatures.of(fed).graph and StoreFeatures.of(fed).sections

    seeds = (acme.chunks[0].id, globex.chunks[0].id)
    whole = await fed.neighbours(NeighbourRequest(seeds))
    own = [*(await a.neighbours(NeighbourRequest(seeds))).edges, *(await b.neighbours(NeighbourRequest(seeds))).edges]
    assert list(whole.edges) == sorted(own, key=edge_order) and not whole.truncated
    assert {n.id for n in whole.nodes} == {alice.id, bob.id, acme.chunks[0].section_ids[-1], globex.chunks[0].section_ids[-1]}  # fmt: skip
    cut = await fed.neighbours(NeighbourRequest(seeds, limit=2))
    assert list(cut.edges) == list(whole.edges[:2]) and cut.truncated
    assert {n.id for n in cut.nodes} == {e.target for e in cut.edges}
    nodes = await fed.graph_nodes(NodeRequest((*seeds, bob.id, acme.id, 'nowhere')))
    assert [(n.id, n.kind) for n in nodes] == sorted([(seeds[0], 'chunk'), (seeds[1], 'chunk'), (bob.id, 'entity'), (acme.id, 'document')])  # fmt: skip
    assert await fed.narrowed({'a'}).graph_nodes(NodeRequest((bob.id, seeds[1]))) == []

    walk = {'ids': [seeds[0], seeds[1]], 'hops': 2}
    in_view = str((await ToolishRag(fed.narrowed({'a'}), name='kb').run_tool('graph_context', walk)).return_value)
    alone = str((await ToolishRag(a, name='kb').run_tool('graph_context', walk)).return_value)
    assert in_view == alone and bob.name not in in_view
    both = str((await ToolishRag(fed, name='kb').run_tool('graph_context', walk)).return_value)
    assert alice.name in both and bob.name in both


class _Scaled(InMemoryStore):
    """A member whose text scores run ten times another's (another BM25 formula or tokenizer)."""

    async def text_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        return [SearchHit(h.record, h.score * 10, h.matches) for h in await super().text_search(request)]


async def test_corpus_text_scores_are_one_stores_bm25_whatever_the_members_scales() -> None:
    """``text='corpus'`` (the default): text hits re-scored with one BM25 over every member's in-scope
    records rank and score as one store holding them all, under a filter too; a write through the
    federation refreshes the statistics. ``text='member'`` lets the scaled member win."""
    topics = ['refund', 'shipping', 'warranty', 'invoice', 'return']
    docs = [
        _doc(
            f'd{i}',
            'docs' if i % 2 else 'code',
            *(f'{topics[i % 5]} {topics[(i * 3) % 5]} policy note {i}' for _ in range(1 + i % 3)),
            tenant='acme' if i % 3 else 'globex',
        )
        for i in range(24)
    ]
    single = InMemoryStore(EMBEDDER, language='en')
    fed = Federated({'docs': InMemoryStore(EMBEDDER, language='en'), 'code': _Scaled(EMBEDDER, language='en')}, route=ByMetadata('source'))  # fmt: skip
    for store in (single, fed):
        await store.upsert(docs)
    for query, f in [('refund policy', None), ('shipping warranty note', F.eq('tenant', 'acme')), ('invoice', F.ne('tenant', 'acme'))]:  # fmt: skip
        one = {h.id: h.score for h in await single.text_search(SearchRequest(query, 100, filter=f))}
        many = await fed.text_search(SearchRequest(query, 10, filter=f))
        assert len(many) == min(10, len(one)) >= 4
        assert [h.score for h in many] == pytest.approx(sorted(one.values())[::-1][:10], rel=1e-5), query
        assert [h.score for h in many] == pytest.approx([one[h.id] for h in many], rel=1e-5), query  # ties aside
    raw = Federated(fed.members, fusion=MemberFusion(text='member'))
    assert {h.source for h in (await raw.text_search(SearchRequest('refund policy', 5)))} == {'code'}
    extra = _doc('extra', 'docs', 'refund refund refund policy')
    for store in (single, fed):
        await store.upsert([extra])
    one, many = [await s.text_search(SearchRequest('refund policy', 3)) for s in (single, fed)]
    assert [h.score for h in many] == pytest.approx([h.score for h in one], rel=1e-5)
    assert many[0].record.document_id == extra.id
