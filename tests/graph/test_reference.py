"""The graph oracle (`toolish_rag.graph.reference`) on hand-built records: every scope rule, one at a time.

The conformance kit and the store tests trust these two functions, so each rule of
`toolish_rag.graph.model` is pinned here on a world small enough to check by eye:

* document ``A`` (tenant a): sections ``Intro`` > ``Details``, chunks ``A-0`` (Intro) and
  ``A-1`` (Details);
* document ``M`` (mixed): chunk ``M-0`` of tenant a in section ``One``, chunk ``M-1`` of tenant b
  in section ``Two``;
* document ``B`` (tenant b): one chunk ``B-0`` in section ``Only``;
* entities ``acme`` (tenant a) and ``globex`` (tenant b).
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from toolish_rag import DocumentBuilder, Entity
from toolish_rag.content import Chunk, NodeKind, Relation
from toolish_rag.filters import EntityFilter, Eq, Filter
from toolish_rag.graph import (
    Direction,
    GraphNode,
    NeighbourRequest,
    Neighbours,
    NodeRequest,
    reference_neighbours,
    reference_nodes,
)

TENANT_A: Filter = Eq(key='tenant', value='a')


def _world() -> list[Chunk | Entity]:
    a = DocumentBuilder('file:///a.md', 'Alpha', id='A', metadata={'tenant': 'a'}, labels=['public'])
    intro = a.section('Intro')
    details = a.section('Details', parent=intro)
    a.add_chunk(intro, 'alpha intro')
    a.add_chunk(details, 'alpha details')
    m = DocumentBuilder('file:///m.md', 'Mixed', id='M')
    m.add_chunk(m.section('One'), 'mixed one', metadata={'tenant': 'a'})
    m.add_chunk(m.section('Two'), 'mixed two', metadata={'tenant': 'b'})
    b = DocumentBuilder('file:///b.md', 'Beta', id='B', metadata={'tenant': 'b'})
    b.add_chunk(b.section('Only'), 'beta only')
    chunks = [c for doc in (a.build(), m.build(), b.build()) for c in doc.chunks]
    entities = [
        Entity(id='acme', name='Acme', description='a company', metadata={'tenant': 'a'}, labels=frozenset({'org'})),
        Entity(id='globex', name='Globex', metadata={'tenant': 'b'}),
    ]
    return [*chunks, *entities]


RECORDS = _world()
CHUNKS = {r.id: r for r in RECORDS if isinstance(r, Chunk)}
ENTITIES = {r.id: r for r in RECORDS if isinstance(r, Entity)}


def rel(
    id: str,
    source: str,
    target: str,
    type: str = 'MENTIONS',
    *,
    tenant: str | None = 'a',
    source_kind: NodeKind = 'entity',
    target_kind: NodeKind = 'entity',
    weight: float = 1.0,
) -> Relation:
    metadata = {} if tenant is None else {'tenant': tenant}
    return Relation(
        id=id,
        source=source,
        source_kind=source_kind,
        target=target,
        target_kind=target_kind,
        type=type,
        weight=weight,
        metadata=metadata,
    )


def ids(nodes: Iterable[GraphNode]) -> list[str]:
    return [n.id for n in nodes]


def edge_ids(answer: Neighbours) -> list[str]:
    return [e.id for e in answer.edges]


# -- nodes ---------------------------------------------------------------------------------------


def test_every_kind_resolves_unscoped_and_sorted_by_id() -> None:
    wanted = ('globex', 'A-s1', 'B', 'A-0', 'acme', 'M-s0', 'nope')
    nodes = reference_nodes(RECORDS, NodeRequest(wanted))
    assert ids(nodes) == ['A-0', 'A-s1', 'B', 'M-s0', 'acme', 'globex']
    assert [n.kind for n in nodes] == ['chunk', 'section', 'document', 'section', 'entity', 'entity']


def test_nodes_are_built_with_the_shared_constructors() -> None:
    by_id = {n.id: n for n in reference_nodes(RECORDS, NodeRequest(('A-1', 'A-s1', 'A', 'acme')))}
    assert by_id['A-1'] == GraphNode.of_chunk(CHUNKS['A-1'])
    assert by_id['A-1'].title == 'Alpha > Intro > Details'
    assert by_id['A-s1'] == GraphNode.of_section(CHUNKS['A-1'], 'A-s1')
    assert by_id['A-s1'].title == 'Alpha > Intro > Details'
    assert by_id['A'] == GraphNode('A', 'document', 'Alpha', '', 'A', frozenset({'public'}))
    assert by_id['acme'] == GraphNode('acme', 'entity', 'Acme', 'a company', None, frozenset({'org'}))


def test_chunk_and_entity_scope_is_their_own_metadata() -> None:
    nodes = reference_nodes(RECORDS, NodeRequest(('A-0', 'M-0', 'M-1', 'B-0', 'acme', 'globex'), TENANT_A))
    assert ids(nodes) == ['A-0', 'M-0', 'acme']


def test_section_is_in_scope_when_some_chunk_inside_it_is() -> None:
    # A-s0 (Intro) holds A-0 directly and A-1 through Details; M-s0 holds the a chunk, M-s1 only the b chunk.
    nodes = reference_nodes(RECORDS, NodeRequest(('A-s0', 'A-s1', 'M-s0', 'M-s1', 'B-s0'), TENANT_A))
    assert ids(nodes) == ['A-s0', 'A-s1', 'M-s0']
    only_details = reference_nodes([CHUNKS['A-1']], NodeRequest(('A-s0',), TENANT_A))
    assert only_details == [GraphNode.of_section(CHUNKS['A-1'], 'A-s0')]


def test_document_is_in_scope_when_some_chunk_of_it_is() -> None:
    assert ids(reference_nodes(RECORDS, NodeRequest(('A', 'M', 'B'), TENANT_A))) == ['A', 'M']
    assert ids(reference_nodes(RECORDS, NodeRequest(('A', 'M', 'B'), Eq(key='tenant', value='b')))) == ['B', 'M']


def test_label_filters_apply_to_nodes() -> None:
    public = EntityFilter.has_any_label('public')
    assert ids(reference_nodes(RECORDS, NodeRequest(('A', 'A-0', 'M', 'acme'), public))) == ['A', 'A-0']


def test_duplicate_and_unknown_ids_answer_once_or_not_at_all() -> None:
    nodes = reference_nodes(RECORDS, NodeRequest(('acme', 'acme', 'ghost', 'globex'), TENANT_A))
    assert ids(nodes) == ['acme']


def test_an_id_naming_two_kinds_resolves_to_the_first_in_scope_and_foreign_hides_nothing() -> None:
    # An entity whose id is a chunk's: the chunk wins while in scope; when it is foreign, the entity answers.
    twin = Entity(id='M-1', name='Twin', metadata={'tenant': 'a'})
    records = [*RECORDS, twin]
    assert reference_nodes(records, NodeRequest(('M-1',))) == [GraphNode.of_chunk(CHUNKS['M-1'])]
    assert reference_nodes(records, NodeRequest(('M-1',), TENANT_A)) == [GraphNode.of_entity(twin)]


# -- neighbours ----------------------------------------------------------------------------------

ACME_MENTIONED = [
    rel('r1', 'A-0', 'acme', source_kind='chunk'),
    rel('r2', 'acme', 'A', 'DEFINED_IN', target_kind='document'),
    rel('r3', 'M-1', 'acme', source_kind='chunk'),  # chunk of tenant b
    rel('r4', 'acme', 'globex', 'RIVAL_OF'),  # entity of tenant b
    rel('r5', 'acme', 'M-s0', 'DEFINED_IN', tenant='b', target_kind='section'),  # relation of tenant b
    rel('r6', 'acme', 'M-s1', 'DEFINED_IN', target_kind='section'),  # section holding only tenant b
]


def test_an_edge_needs_the_relation_and_both_endpoints_in_scope() -> None:
    answer = reference_neighbours(RECORDS, ACME_MENTIONED, NeighbourRequest(('acme',), filter=TENANT_A))
    assert edge_ids(answer) == ['r1', 'r2']
    assert ids(answer.nodes) == ['A', 'A-0']
    assert not answer.truncated
    unscoped = reference_neighbours(RECORDS, ACME_MENTIONED, NeighbourRequest(('acme',)))
    assert edge_ids(unscoped) == ['r1', 'r2', 'r3', 'r4', 'r5', 'r6']
    assert ids(unscoped.nodes) == ['A', 'A-0', 'M-1', 'M-s0', 'M-s1', 'globex']


def test_a_foreign_frontier_node_has_no_edges() -> None:
    answer = reference_neighbours(RECORDS, ACME_MENTIONED, NeighbourRequest(('M-1', 'globex'), filter=TENANT_A))
    assert answer == Neighbours(edges=(), nodes=(), truncated=False)


def test_endpoints_resolve_by_their_declared_kind() -> None:
    # 'A-0' is a chunk: a relation claiming it is an entity points at nothing.
    wrong_kind = [rel('r1', 'acme', 'A-0', target_kind='entity'), rel('r2', 'acme', 'A-0', target_kind='chunk')]
    answer = reference_neighbours(RECORDS, wrong_kind, NeighbourRequest(('acme',)))
    assert edge_ids(answer) == ['r2']
    assert answer.nodes == (GraphNode.of_chunk(CHUNKS['A-0']),)


CHAIN = [
    rel('r-ab', 'acme', 'A-0', target_kind='chunk'),
    rel('r-ca', 'A-1', 'acme', source_kind='chunk'),
    rel('r-bc', 'A-0', 'A-1', 'NEXT', source_kind='chunk', target_kind='chunk'),
]


@pytest.mark.parametrize(
    ('direction', 'edges', 'nodes'),
    [
        ('out', ['r-ab'], ['A-0']),
        ('in', ['r-ca'], ['A-1']),
        ('both', ['r-ab', 'r-ca'], ['A-0', 'A-1']),
    ],
)
def test_direction_names_the_side_the_requested_ids_are_on(
    direction: Direction, edges: list[str], nodes: list[str]
) -> None:
    answer = reference_neighbours(RECORDS, CHAIN, NeighbourRequest(('acme',), direction=direction))
    assert edge_ids(answer) == edges
    assert ids(answer.nodes) == nodes


def test_an_edge_between_two_requested_ids_is_returned_once_and_adds_no_node() -> None:
    answer = reference_neighbours(RECORDS, CHAIN, NeighbourRequest(('acme', 'A-0')))
    assert edge_ids(answer) == ['r-ab', 'r-bc', 'r-ca']
    assert ids(answer.nodes) == ['A-1']
    out = reference_neighbours(RECORDS, CHAIN, NeighbourRequest(('acme', 'A-0'), direction='out'))
    assert edge_ids(out) == ['r-ab', 'r-bc']
    assert ids(out.nodes) == ['A-1']


def test_a_self_loop_is_returned_and_adds_no_node() -> None:
    loops = [rel('r0', 'acme', 'acme', 'SAME_AS'), rel('r1', 'globex', 'globex', 'SAME_AS', tenant='b')]
    directions: tuple[Direction, ...] = ('out', 'in', 'both')
    for direction in directions:
        answer = reference_neighbours(RECORDS, loops, NeighbourRequest(('acme', 'globex'), direction=direction))
        assert edge_ids(answer) == ['r0', 'r1']
        assert answer.nodes == ()
    scoped = reference_neighbours(RECORDS, loops, NeighbourRequest(('acme', 'globex'), filter=TENANT_A))
    assert edge_ids(scoped) == ['r0']


def test_edge_types_keep_only_those_types() -> None:
    answer = reference_neighbours(RECORDS, CHAIN, NeighbourRequest(('A-0',), edge_types=frozenset({'NEXT'})))
    assert edge_ids(answer) == ['r-bc']
    assert reference_neighbours(RECORDS, CHAIN, NeighbourRequest(('A-0',), edge_types=frozenset())).edges == ()


def test_limit_cuts_in_edge_order_and_truncated_counts_only_qualifying_edges() -> None:
    star = [
        rel('r3', 'acme', 'A', target_kind='document'),
        rel('r1', 'acme', 'A-0', target_kind='chunk'),
        rel('r9', 'acme', 'B', target_kind='document'),  # foreign endpoint under tenant a
        rel('r2', 'acme', 'A-1', target_kind='chunk'),
        rel('r0', 'acme', 'A-s0', tenant='b', target_kind='section'),  # foreign relation under tenant a
    ]
    cut = reference_neighbours(RECORDS, star, NeighbourRequest(('acme',), filter=TENANT_A, limit=2))
    assert edge_ids(cut) == ['r1', 'r2']
    assert ids(cut.nodes) == ['A-0', 'A-1']
    assert cut.truncated
    exact = reference_neighbours(RECORDS, star, NeighbourRequest(('acme',), filter=TENANT_A, limit=3))
    assert edge_ids(exact) == ['r1', 'r2', 'r3']
    assert not exact.truncated  # r0 and r9 qualify only without the filter
    assert reference_neighbours(RECORDS, star, NeighbourRequest(('acme',), limit=3)).truncated


def test_far_nodes_come_once_sorted_by_id_whatever_the_input_order() -> None:
    edges = [
        rel('r2', 'acme', 'A-1', target_kind='chunk'),
        rel('r1', 'A-1', 'acme', 'MENTIONS', source_kind='chunk'),
        rel('r0', 'acme', 'A', target_kind='document'),
    ]
    forward = reference_neighbours(RECORDS, edges, NeighbourRequest(('acme',)))
    backward = reference_neighbours(reversed(RECORDS), list(reversed(edges)), NeighbourRequest(('acme',)))
    assert forward == backward
    assert edge_ids(forward) == ['r0', 'r1', 'r2']
    assert ids(forward.nodes) == ['A', 'A-1']


def test_an_edge_touching_no_requested_id_is_not_returned() -> None:
    answer = reference_neighbours(RECORDS, CHAIN, NeighbourRequest(('globex', 'ghost')))
    assert answer == Neighbours(edges=(), nodes=())
