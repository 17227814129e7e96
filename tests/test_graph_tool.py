"""The ``graph_context`` tool: offered on graph stores only, seeded by query or ids, scoped, honest about budgets.

Real stores (InMemoryStore; LanceDB where its adapter implements `GraphSearch`), real agents
driven by pydantic-ai's `FunctionModel`, and direct `ToolishRag.run_tool` calls. Two tenants share
each store; the toolset is scoped to acme. The strongest scope check compares texts: a walk under
the acme scope must read exactly like the same walk over a store that never held globex (same
nodes, edges, counts and ``truncated``), so a foreign node can neither show nor be counted.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import FINAL, Call, Script, compose_store, handbook_corpus, handbook_entities, returns
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolish_rag import DocumentBuilder, PropertyFilter as F, RagEvent, ToolishRag
from toolish_rag.citations._model import GroundedAnswer
from toolish_rag.citations._verify import UngroundedAnswerError
from toolish_rag.content import Document, Entity, NodeKind, Relation
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.protocols import GraphSearch, StoreFeatures, StoreLike
from toolish_rag.stores import InMemoryStore
from toolish_rag.toolset._tools.graph import MAX_IDS

ACME = F.eq('tenant', 'acme')
MISSING_CHUNK = 'd' + '0' * 15 + '-1'
"""A chunk id of the real ones' shape that no chunk has."""
NODE_LINE = re.compile(r'^\[(.+?)\] (chunk|section|document|entity), hop (\d)', re.MULTILINE)


# -- the corpus: two handbooks, two people, and a graph with edges across the tenants ------------------------


def _edge(source: tuple[str, NodeKind], type: str, target: tuple[str, NodeKind], tenant: str, **extra: Any) -> Relation:
    return Relation(
        source=source[0],
        source_kind=source[1],
        target=target[0],
        target_kind=target[1],
        type=type,
        metadata={'tenant': tenant},
        **extra,
    )


def _tenant_graph(doc: Document, tenant: str, person: str) -> list[Relation]:
    """chunk PART_OF its section PART_OF the document; the first two chunks MENTION the tenant's person."""
    edges = [
        _edge((s.id, 'section'), 'PART_OF', (doc.id, 'document'), tenant, document_id=doc.id) for s in doc.sections
    ]
    edges += [
        _edge((c.id, 'chunk'), 'PART_OF', (c.section_ids[-1], 'section'), tenant, document_id=doc.id)
        for c in doc.chunks
    ]
    edges.append(_edge((doc.chunks[0].id, 'chunk'), 'MENTIONS', (person, 'entity'), tenant))
    edges.append(_edge((doc.chunks[1].id, 'chunk'), 'MENTIONS', (person, 'entity'), tenant, weight=0.5))
    return edges


def corpus() -> tuple[list[Document], list[Entity], list[Relation], list[Relation]]:
    """Documents, entities, every relation, and acme's own relations (what a store without globex would hold)."""
    acme, globex = handbook_corpus()
    acme_graph = _tenant_graph(acme, 'acme', 'ent-alice')
    hostile = [
        _edge((acme.chunks[0].id, 'chunk'), 'MENTIONS', ('ent-bob', 'entity'), 'acme'),  # to a globex node
        _edge((globex.chunks[0].id, 'chunk'), 'MENTIONS', ('ent-alice', 'entity'), 'globex'),  # from one
        _edge((acme.chunks[2].id, 'chunk'), 'SECRET', (acme.chunks[3].id, 'chunk'), 'globex'),  # globex's edge
        _edge((acme.id, 'document'), 'LINKS_TO', (globex.id, 'document'), 'acme'),
    ]
    relations = [*acme_graph, *_tenant_graph(globex, 'globex', 'ent-bob'), *hostile]
    return [acme, globex], handbook_entities(), relations, acme_graph


async def _memory(path: Path) -> StoreLike:
    return InMemoryStore(HashingEmbeddingModel(64))


async def _lancedb(path: Path) -> StoreLike:
    lancedb = pytest.importorskip('toolish_rag_lancedb', reason='needs the LanceDB adapter (stores/lancedb)')
    store: StoreLike = lancedb.LanceDBStore(path / 'kb', embedder=HashingEmbeddingModel(64))
    assert isinstance(store, GraphSearch), 'the LanceDB adapter must serve graph_context'
    return store


GRAPH_STORES: dict[str, Callable[[Path], Any]] = {'memory': _memory, 'lancedb': _lancedb}


async def _loaded(make: Callable[[Path], Any], path: Path, *, only_acme: bool = False) -> StoreLike:
    store = await make(path)
    docs, entities, relations, acme_graph = corpus()
    if only_acme:
        docs, entities, relations = docs[:1], entities[:1], acme_graph
    await store.upsert([*docs, *entities, *relations])
    await store.record_graph_built(['test'])  # relations written directly: the operator says the graph is built
    return store


@pytest.fixture(params=sorted(GRAPH_STORES))
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StoreLike]:
    loaded = await _loaded(GRAPH_STORES[request.param], tmp_path)
    yield loaded
    aclose = getattr(loaded, 'aclose', None)
    if aclose is not None:
        await aclose()


async def _memory_rag() -> ToolishRag[None]:
    rag: ToolishRag[None] = ToolishRag(await _loaded(_memory, Path()), name='kb')
    return rag.with_metadata_filter(ACME)


async def _retry(rag: ToolishRag[Any], arguments: dict[str, Any]) -> str:
    with pytest.raises(ModelRetry) as retry:
        await rag.run_tool('graph_context', arguments)
    return retry.value.message


# -- offered only where the store has a graph ---------------------------------------------------------------


async def test_offered_on_graph_stores_only(tmp_path: Path) -> None:
    store = InMemoryStore(HashingEmbeddingModel(64))
    assert 'kb_graph_context' not in ToolishRag(store, name='kb').tool_names  # no graph built yet
    await store.record_graph_built(['test'])
    memory: ToolishRag[None] = ToolishRag(store, name='kb')
    assert memory.store_features.graph and 'kb_graph_context' in memory.tool_names
    assert 'kb_graph_context' not in memory.without_tools('graph_context').tool_names
    no_graph = compose_store(frozenset({'vector', 'text', 'expand', 'sections'}))(
        InMemoryStore(HashingEmbeddingModel(64))
    )
    assert not StoreFeatures.of(no_graph).graph
    assert 'kb_graph_context' not in ToolishRag(no_graph, name='kb').tool_names
    tantivy = pytest.importorskip('toolish_rag_tantivy', reason='needs the Tantivy adapter (stores/tantivy)')
    rag: ToolishRag[None] = ToolishRag(tantivy.TantivyStore(), name='kb')
    definitions = await rag.tool_definitions()
    assert 'kb_graph_context' not in [d.name for d in definitions]
    assert 'graph_context' not in ((await rag.instructions()) or '')


async def test_instructions_and_description_name_the_tool() -> None:
    rag = await _memory_rag()
    instructions = await rag.instructions()
    assert instructions is not None and 'kb_graph_context' in instructions
    (definition,) = [d for d in await rag.tool_definitions() if d.name == 'kb_graph_context']
    description = definition.description or ''
    for needed in ('hop', 'via TYPE from X', 'truncated', 'read_section', 'broaden_chunk', 'MENTIONS', 'centrality'):
        assert needed in description, needed
    properties = definition.parameters_json_schema['properties']
    assert properties['ids']['items']['maxLength'] == 200
    assert properties['edge_types']['items']['maxLength'] == 64
    assert (properties['hops']['maximum'], properties['max_nodes']['maximum']) == (3, 200)


# -- agent runs: seeds by query and by ids ------------------------------------------------------------------


async def test_an_agent_walks_from_a_query_and_from_ids() -> None:
    rag = await _memory_rag()
    acme = handbook_corpus()[0]
    script = Script(
        [
            Call('kb_graph_context', {'query': 'refunds paid within 30 days', 'hops': 1}),
            Call('kb_graph_context', {'ids': ['ent-alice'], 'hops': 1}),
        ]
    )
    result = await Agent(script.model, toolsets=[rag]).run('who handles refunds?')
    assert result.output == FINAL
    by_query, by_ids = returns(result.all_messages())
    assert not by_query.retried and not by_ids.retried
    seeds = {node for node, _, hop in NODE_LINE.findall(by_query.text) if hop == '0'}
    assert acme.chunks[0].id in seeds  # the best match of the query seeds the walk
    assert by_ids.text.splitlines()[0] == 'Graph walk from 1 seed (hops=1, direction=both): 3 nodes, 2 edges.'
    assert f'[{acme.chunks[0].id}] chunk, hop 1, via MENTIONS to ent-alice' in by_ids.text
    assert f'{acme.chunks[1].id} -MENTIONS-> ent-alice (weight 0.5)' in by_ids.text
    assert by_ids.text.endswith('complete: every node within 1 hop of the seeds (over the edges asked for) is shown.')
    # the chunks whose text the answer shows are its hits: the chunks the model has now read
    assert [h.id for h in by_ids.metadata['hits']] == [acme.chunks[0].id, acme.chunks[1].id]


async def test_the_answer_shows_nodes_with_hop_and_via_and_the_edges_walked() -> None:
    rag = await _memory_rag()
    acme = handbook_corpus()[0]
    chunk, section = acme.chunks[2], acme.chunks[2].section_ids[-1]
    text = str(
        (await rag.run_tool('graph_context', {'ids': [chunk.id], 'hops': 2, 'edge_types': ['PART_OF']})).return_value
    )
    assert NODE_LINE.findall(text) == [
        (chunk.id, 'chunk', '0'),
        (section, 'section', '1'),
        (acme.id, 'document', '2'),
    ]
    assert f'[{section}] section, hop 1, via PART_OF from {chunk.id}' in text
    assert f'[{acme.id}] document, hop 2, via PART_OF from {section}' in text
    assert f'\n{chunk.id} -PART_OF-> {section}\n' in text and f'\n{section} -PART_OF-> {acme.id}\n' in text
    assert 'Edges walked (2):' in text
    assert f'    {chunk.urtext}' in text and '    title: acme handbook > Refunds > Eligibility' in text


async def test_ids_from_a_walk_work_with_the_reading_tools() -> None:
    rag = await _memory_rag()
    acme = handbook_corpus()[0]
    text = str((await rag.run_tool('graph_context', {'ids': ['ent-alice'], 'hops': 3})).return_value)
    shown = {kind: node for node, kind, _ in NODE_LINE.findall(text)}
    broadened = await rag.run_tool('broaden_chunk', {'chunk_id': shown['chunk']})
    assert shown['chunk'] in str(broadened.return_value)
    read = await rag.run_tool('read_section', {'section': shown['section']})
    assert acme.chunks[0].urtext in str(read.return_value) or acme.chunks[1].urtext in str(read.return_value)
    whole = await rag.run_tool('read_section', {'section': shown['document']})
    assert all(c.urtext in str(whole.return_value) for c in acme.chunks)


async def test_centrality_order_puts_the_hub_first_and_shows_scores() -> None:
    rag = await _memory_rag()
    acme = handbook_corpus()[0]
    text = str(
        (
            await rag.run_tool('graph_context', {'ids': [acme.chunks[0].id], 'hops': 2, 'order': 'centrality'})
        ).return_value
    )
    scored = re.findall(r'^\[(.+?)\] \w+, hop (\d), .*score ([0-9.]+) \(centrality ([0-9.]+)\)$', text, re.MULTILINE)
    assert len(scored) == len(NODE_LINE.findall(text)) == 5
    scores = [float(score) for _, _, score, _ in scored]
    assert scores == sorted(scores, reverse=True)  # best first
    for _, hop, score, centrality in scored:  # score = 1/(1+hop) x (1 + centrality), alpha 1
        assert float(score) == pytest.approx(1 / (1 + int(hop)) * (1 + float(centrality)), abs=0.01)
    # the section holding chunks 0 and 1 is the hub (in-degree 2; ent-alice has 1.5): it outranks the hop-1 entity
    hub = acme.chunks[0].section_ids[-1]
    assert (hub, '1', '1.000', '1.00') in scored
    assert [node for node, *_ in scored].index(hub) < [node for node, *_ in scored].index('ent-alice')


# -- scope: nothing foreign shows or counts, a foreign id answers like a missing one ------------------------------

_SCOPED_CALLS: list[dict[str, Any]] = [
    {'ids': ['ent-alice'], 'hops': 1},
    {'ids': ['ent-alice'], 'hops': 1, 'max_nodes': 3},  # a counted foreign neighbour would make this truncated
    {'ids': ['ent-alice'], 'hops': 3, 'order': 'centrality'},
    {'ids': ['DOC0-0'], 'hops': 3},
    {'ids': ['DOC0'], 'hops': 2, 'direction': 'out'},
    {'ids': ['DOC0'], 'hops': 2, 'direction': 'in', 'max_nodes': 4},
    {'ids': ['DOC0-2'], 'hops': 1, 'edge_types': ['SECRET', 'PART_OF']},
    {'ids': ['DOC0-0', 'ent-alice'], 'hops': 2, 'max_nodes': 5},
]


def _with_ids(arguments: dict[str, Any], doc: Document) -> dict[str, Any]:
    """``DOC0`` is acme's document id, ``DOC0-n`` its n-th chunk."""
    ids = [
        doc.chunks[int(i[5:])].id if i.startswith('DOC0-') else doc.id if i == 'DOC0' else i for i in arguments['ids']
    ]
    return {**arguments, 'ids': ids}


@pytest.mark.parametrize('store_name', sorted(GRAPH_STORES))
async def test_a_scoped_walk_reads_exactly_like_one_over_a_store_without_the_other_tenant(
    store_name: str, tmp_path: Path
) -> None:
    shared = await _loaded(GRAPH_STORES[store_name], tmp_path / 'shared')
    alone = await _loaded(GRAPH_STORES[store_name], tmp_path / 'alone', only_acme=True)
    scoped: ToolishRag[None] = ToolishRag(shared, name='kb').with_metadata_filter(ACME)
    unscoped: ToolishRag[None] = ToolishRag(alone, name='kb')
    acme, globex = handbook_corpus()
    truncated = 0
    for arguments in _SCOPED_CALLS:
        sent = _with_ids(arguments, acme)
        got = await scoped.run_tool('graph_context', sent)
        want = await unscoped.run_tool('graph_context', sent)
        assert got.return_value == want.return_value, sent
        assert [h.id for h in got.metadata['hits']] == [h.id for h in want.metadata['hits']]
        text = str(got.return_value)
        assert 'ent-bob' not in text and globex.id not in text and 'SECRET' not in text
        truncated += 'truncated: ' in text
    assert truncated  # not vacuous: a budget cut some walks, and the cut read the same
    for store in (shared, alone):
        aclose = getattr(store, 'aclose', None)
        if aclose is not None:
            await aclose()


async def test_a_query_seeded_walk_stays_in_scope(store: StoreLike) -> None:
    rag: ToolishRag[None] = ToolishRag(store, name='kb').with_metadata_filter(ACME)
    globex = handbook_corpus()[1]
    for query in ('globex refunds', 'refund claim receipt', 'Bob Example refunds clerk', 'ships parcels'):
        result = await rag.run_tool('graph_context', {'query': query, 'hops': 3, 'max_nodes': 200})
        text = str(result.return_value)
        assert globex.id not in text and 'ent-bob' not in text and 'SECRET' not in text, query
        assert all(h.record.metadata['tenant'] == 'acme' for h in result.metadata['hits'])


async def test_a_foreign_id_answers_exactly_like_a_missing_one(store: StoreLike) -> None:
    rag: ToolishRag[None] = ToolishRag(store, name='kb').with_metadata_filter(ACME)
    acme, globex = handbook_corpus()
    foreign_ids = [globex.chunks[1].id, globex.id, globex.sections[0].id, 'ent-bob']
    missing_ids = [MISSING_CHUNK, 'd' + '0' * 15, 'd' + '0' * 15 + '-s0', 'ent-zzz']
    for foreign, missing in zip(foreign_ids, missing_ids, strict=True):
        mine = await _retry(rag, {'ids': [foreign]})
        theirs = await _retry(rag, {'ids': [missing]})
        assert mine.replace(foreign, '<id>') == theirs.replace(missing, '<id>')
        assert 'was not found' in mine
        # beside an id in scope, the foreign one is a "not found" line, in the same words
        with_foreign = await rag.run_tool('graph_context', {'ids': [acme.chunks[0].id, foreign], 'hops': 1})
        with_missing = await rag.run_tool('graph_context', {'ids': [acme.chunks[0].id, missing], 'hops': 1})
        assert str(with_foreign.return_value).replace(foreign, '<id>') == str(with_missing.return_value).replace(
            missing, '<id>'
        )
        assert f"Not found (no node has this id): '{foreign}'." in str(with_foreign.return_value)


# -- truncated: said exactly when a budget cut the walk ----------------------------------------------------------


async def _star(spokes: int, foreign_spokes: int) -> ToolishRag[None]:
    """A hub entity mentioned by ``spokes`` acme chunks and ``foreign_spokes`` globex chunks (acme relations all)."""
    store = InMemoryStore(HashingEmbeddingModel(64))
    docs = []
    for n in range(spokes + foreign_spokes):
        tenant = 'acme' if n < spokes else 'globex'
        b = DocumentBuilder(f'file:///{tenant}/note-{n}.md', f'note {n}', metadata={'tenant': tenant})
        b.add_chunk(None, f'Note {n} mentions the hub.')
        docs.append(b.build())
    hub = Entity(id='hub', name='Hub', metadata={'tenant': 'acme'})
    relations = [_edge((d.chunks[0].id, 'chunk'), 'MENTIONS', ('hub', 'entity'), 'acme') for d in docs]
    await store.upsert([*docs, hub, *relations])
    await store.record_graph_built(['test'])  # relations written directly: the operator says a graph is built
    return ToolishRag(store, name='kb').with_metadata_filter(ACME)


async def test_truncated_appears_exactly_when_max_nodes_cut_the_walk() -> None:
    rag = await _star(spokes=6, foreign_spokes=3)
    for max_nodes in range(1, 10):
        text = str(
            (await rag.run_tool('graph_context', {'ids': ['hub'], 'hops': 1, 'max_nodes': max_nodes})).return_value
        )
        shown = len(NODE_LINE.findall(text))
        if max_nodes < 7:  # the hub and its 6 in-scope spokes; the 3 foreign spokes never count
            assert shown == max_nodes
            assert text.endswith(
                f'truncated: the walk hit its budget (max_nodes={max_nodes}); nodes beyond it were not visited '
                '— do not conclude they are unconnected.'
            )
            assert 'complete: ' not in text
        else:
            assert shown == 7 and 'truncated' not in text
            assert text.endswith('complete: every node within 1 hop of the seeds (over the edges asked for) is shown.')


async def test_running_out_of_hops_is_not_truncation() -> None:
    rag = await _memory_rag()
    acme = handbook_corpus()[0]
    text = str((await rag.run_tool('graph_context', {'ids': [acme.chunks[2].id], 'hops': 1})).return_value)
    assert len(NODE_LINE.findall(text)) == 2 and 'truncated' not in text and 'complete: ' in text


async def test_the_text_budget_keeps_every_node_line_and_says_what_it_left_out() -> None:
    store = await _loaded(_memory, Path())
    rag: ToolishRag[None] = ToolishRag(store, name='kb', max_expansion_chars=60).with_metadata_filter(ACME)
    result = await rag.run_tool('graph_context', {'ids': ['ent-alice'], 'hops': 3})
    text = str(result.return_value)
    nodes = NODE_LINE.findall(text)
    assert len(nodes) > 3
    assert '[Texts shown for the first node (output capped at about 60 characters)' in text
    assert result.metadata['hits'] == []  # the one text shown is the entity's: no chunk was read


# -- retries for bad arguments, through the one tool-call path ----------------------------------------------------


@pytest.mark.parametrize(
    ('arguments', 'expected'),
    [
        ({}, 'graph_context needs somewhere to start'),
        ({'ids': []}, 'graph_context needs somewhere to start'),
        ({'ids': ['ent-alice'], 'hops': 0}, 'hops must be between 1 and 3; you sent 0'),
        ({'ids': ['ent-alice'], 'hops': 4}, 'hops must be between 1 and 3; you sent 4'),
        ({'ids': ['ent-alice'], 'max_nodes': 0}, 'max_nodes must be between 1 and 200; you sent 0'),
        ({'ids': ['ent-alice'], 'max_nodes': 201}, 'max_nodes must be between 1 and 200; you sent 201'),
        (
            {'ids': ['ent-alice'], 'edge_types': ['mentions']},
            "edge type 'mentions' is not a relation type (did you mean MENTIONS?)",
        ),
        (
            {'ids': ['ent-alice'], 'edge_types': ['PART OF']},
            "edge type 'PART OF' is not a relation type: types are upper-case",
        ),
        ({'ids': ['ent-alice'], 'edge_types': []}, 'edge_types is an empty list'),
        ({'ids': ['ent-alice'], 'edge_types': ['  ']}, 'an edge type is empty'),
        ({'ids': ['ent-alice'], 'edge_types': ['A' * 65]}, 'an edge type is over 64 characters'),
        ({'ids': ['  ']}, 'the id is empty'),
        ({'ids': ['x' * 201]}, 'the id is over 200 characters'),
        ({'ids': ['ent\x00alice']}, 'control character (U+0000)'),
        ({'ids': [f'id-{n}' for n in range(MAX_IDS + 1)]}, f'at most {MAX_IDS} ids per call; you sent {MAX_IDS + 1}'),
        ({'ids': ['a', 'b', 'c'], 'max_nodes': 2}, 'max_nodes (2) is less than the 3 ids sent'),
        ({'query': '   '}, 'the query is empty'),
        ({'ids': ['ent-alice'], 'direction': 'sideways'}, "Input should be 'out', 'in' or 'both'"),
        ({'ids': ['ent-alice'], 'order': 'pagerank'}, "Input should be 'centrality'"),
    ],
)
async def test_bad_arguments_are_retries(arguments: dict[str, Any], expected: str) -> None:
    events: list[RagEvent] = []
    rag = (await _memory_rag()).with_listener(events.append)
    message = await _retry(rag, arguments)
    assert expected in message
    assert len(message) <= 2000
    if events:  # arguments pydantic accepted reached the tool: the refusal is an event too
        assert events[-1].tool == 'graph_context' and events[-1].error == message


async def test_a_query_on_a_store_without_search_is_refused_but_ids_work() -> None:
    no_search = compose_store(frozenset({'expand'}))
    inner = await _loaded(_memory, Path())

    class GraphOnly(no_search):  # type: ignore[misc, valid-type]
        """A store that can walk its graph and look records up, but not search."""

        async def graph_nodes(self, request: Any) -> Any:
            return await self.inner.graph_nodes(request)

        async def neighbours(self, request: Any) -> Any:
            return await self.inner.neighbours(request)

    rag: ToolishRag[None] = ToolishRag(GraphOnly(inner), name='kb').with_metadata_filter(ACME)
    assert rag.offered_tools == ['broaden_chunk', 'zoom_out', 'verify_citations', 'graph_context']
    assert 'cannot be searched' in await _retry(rag, {'query': 'refunds'})
    assert 'complete: ' in str((await rag.run_tool('graph_context', {'ids': ['ent-alice']})).return_value)


async def test_a_store_edge_outside_the_filter_is_an_error_never_shown() -> None:
    """Defence in depth: an edge a store returns despite the filter raises (no store text reaches the model)."""
    inner = await _loaded(_memory, Path())

    class Leaky:
        """Answers every neighbour request unscoped: a store bug."""

        async def graph_nodes(self, request: Any) -> Any:
            return await inner.graph_nodes(request)

        async def neighbours(self, request: Any) -> Any:
            from dataclasses import replace

            return await inner.neighbours(replace(request, filter=None))

    rag: ToolishRag[None] = ToolishRag(Leaky(), name='kb').with_metadata_filter(ACME)  # type: ignore[arg-type]
    acme = handbook_corpus()[0]
    with pytest.raises(Exception, match=r'which its NeighbourRequest\.filter excludes') as raised:
        await rag.run_tool('graph_context', {'ids': [acme.chunks[2].id], 'hops': 1})
    assert not isinstance(raised.value, ModelRetry)


# -- the chunks a walk shows are chunks the model has read --------------------------------------------------------


@pytest.mark.parametrize('budget', [6000, 60])
async def test_a_chunk_whose_text_a_walk_showed_can_be_cited_in_a_grounded_answer(budget: int) -> None:
    """With room, the walk shows the chunk's text and the citation verifies; without, it was never read."""
    store = await _loaded(_memory, Path())
    rag: ToolishRag[None] = ToolishRag(store, name='kb', max_expansion_chars=budget).with_metadata_filter(ACME)
    chunk = handbook_corpus()[0].chunks[0]
    claim = {'text': 'Refunds are paid within 30 days.', 'citations': [{'chunk_id': chunk.id, 'quote': chunk.urtext}]}

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart('kb_graph_context', {'ids': ['ent-alice'], 'hops': 1})])
        answer = {'status': 'answered', 'claims': [claim]}
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, answer)])

    agent = Agent(
        FunctionModel(respond), toolsets=[rag], output_type=GroundedAnswer, capabilities=[rag.grounding(repairs=0)]
    )
    if budget == 60:  # only ent-alice's text fitted: the chunk was named, not shown
        with pytest.raises(UngroundedAnswerError):
            await agent.run('how long do refunds take?')
        return
    result = await agent.run('how long do refunds take?')
    source = result.output.claims[0].citations[0].source
    assert source is not None and source.document_id == chunk.document_id
