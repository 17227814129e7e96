"""Which budget cut a walk is said, and search seeds leave room for the walk.

* A hop cut by the per-hop edge limit used to read "truncated ... (max_nodes=200)", advice that
  cannot help; the walk now reports ``cut_by`` and the tool names the budget that applied.
* Search seeds used to fill ``max_nodes`` by themselves (5 seeds, ``max_nodes=5``), so the walk
  never left them; they now take at most half the room the ids leave.
"""

from __future__ import annotations

from toolish_rag import DocumentBuilder, Entity, Relation, ToolishRag
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.graph import WalkRequest, walk
from toolish_rag.stores import InMemoryStore


async def _hub_store(parallel: int) -> tuple[InMemoryStore, str]:
    store = InMemoryStore(HashingEmbeddingModel(32))
    b = DocumentBuilder('file:///hub.md', 'Hub')
    b.add_chunk(b.section('Intro'), 'The hub names Acme many times.')
    document = b.build()
    chunk = document.chunks[0].id
    acme = Entity(id='acme', name='Acme')
    edges = [
        Relation(
            id=f'r{i:05d}', source=chunk, source_kind='chunk', target='acme', target_kind='entity', type='MENTIONS'
        )
        for i in range(parallel)
    ]
    await store.upsert([document, acme, *edges])
    await store.record_graph_built(['test'])  # relations written directly: the operator says a graph is built
    return store, chunk


async def test_an_edge_limit_cut_is_named_as_such() -> None:
    store, chunk = await _hub_store(1_001)
    result = await walk(store, WalkRequest((chunk,), hops=1, max_nodes=200))
    assert result.truncated and result.cut_by == ('edge_limit',)
    text = (await ToolishRag(store, name='kb').run_tool('graph_context', {'ids': [chunk], 'hops': 1})).return_value
    ending = text.rstrip().splitlines()[-1]
    assert ending.startswith('truncated') and 'the edges one hop reads' in ending and 'max_nodes=' not in ending


async def test_a_max_nodes_cut_is_named_as_such() -> None:
    store, chunk = await _hub_store(3)
    result = await walk(store, WalkRequest((chunk,), hops=1, max_nodes=1))
    assert result.truncated and result.cut_by == ('max_nodes',)
    complete = await walk(store, WalkRequest((chunk,), hops=1, max_nodes=2))
    assert not complete.truncated and complete.cut_by == ()


async def test_search_seeds_leave_room_for_the_walk() -> None:
    store = InMemoryStore(HashingEmbeddingModel(32))
    documents = []
    for n in range(8):
        b = DocumentBuilder(f'file:///p{n}.md', f'Page {n}')
        b.add_chunk(b.section('Body'), f'Refund rules, part {n}: refunds are paid within {n + 10} days.')
        documents.append(b.build())
    edges = [
        Relation(source=d.chunks[0].id, source_kind='chunk', target='refunds', target_kind='entity', type='MENTIONS')
        for d in documents
    ]
    await store.upsert([*documents, Entity(id='refunds', name='Refunds'), *edges])
    await store.record_graph_built(['test'])  # relations written directly: the operator says a graph is built
    text = (
        await ToolishRag(store, name='kb').run_tool('graph_context', {'query': 'refunds', 'hops': 1, 'max_nodes': 5})
    ).return_value
    assert text.startswith('Graph walk from 2 seeds')  # half of max_nodes (rounded down), not graph_seeds=5
    assert ', hop 1, via MENTIONS' in text  # the walk got past its seeds
