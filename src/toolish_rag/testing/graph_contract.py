"""The graph contract (`GraphSearch` and `GraphStore`), checked on direct calls against the reference.

Every answer must *equal* the reference answer over what the store holds (an edge's visibility
depends on both endpoints, which nothing downstream can re-check). `GraphReference` is that
reference, `GraphCalls` the requests to make, and the ``*_problems`` functions the write side.
`StoreConformance` runs it all for a graph store; see docs/testing.md ("The graph checks").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Protocol

from ..builder import DocumentBuilder
from ..content import Chunk, Document, Entity, Relation
from ..filters import Filter, matches
from ..graph.model import MAX_EDGE_LIMIT, GraphNode, NeighbourRequest, Neighbours, NodeRequest
from ..graph.reference import reference_neighbours, reference_nodes
from ..graph.walk import GraphWalk, WalkRequest, walk
from ..protocols import GraphSearch, GraphStore
from ._corpus import COMMON_WORD
from ._graph_corpus import GHOST_ID, GRAPH_SCOPES, HUB_ID, GraphCorpus, graph_corpus, graph_entities, structure
from .sections_contract import UNKNOWN_ID, typed

__all__ = [
    'GHOST_ID',
    'GRAPH_SCOPES',
    'GraphCalls',
    'GraphCorpus',
    'GraphReference',
    'GraphStoreUnderTest',
    'HUB_ID',
    'graph_corpus',
    'graph_entities',
    'graph_scope_calls',
    'ledger_problems',
    'neighbour_calls',
    'node_calls',
    'relation_write_problems',
    'replaced_document',
    'replacement_problems',
    'stored_problems',
    'walk_calls',
]

_SHOWN = 8
"""How many ids or edges a problem line lists before it says how many more there were."""


class GraphStoreUnderTest(GraphSearch, GraphStore, Protocol):
    """What the graph checks take: a store that both reads (`GraphSearch`) and writes (`GraphStore`) a graph.

    Also a `toolish_rag.protocols.DocumentStore` (``delete_documents``, ``delete_entities``), which the
    write checks call.
    """

    async def delete_documents(self, document_ids: Iterable[str]) -> int: ...

    async def delete_entities(self, entity_ids: Iterable[str]) -> int: ...


# -- the reference ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class GraphReference:
    """What a graph store holding exactly ``records`` and ``relations`` answers, by the reference functions.

    It is a `GraphSearch` itself, so a walk over it (`toolish_rag.graph.walk.walk`) is what a walk
    over the store must return.
    """

    records: tuple[Chunk | Entity, ...]
    relations: tuple[Relation, ...]
    _scoped: dict[Filter | None, tuple[list[Chunk | Entity], list[Relation]]] = field(
        default_factory=dict, init=False, repr=False
    )
    _in_scope: dict[Filter | None, frozenset[str]] = field(default_factory=dict, init=False, repr=False)
    _hops: dict[NeighbourRequest, Neighbours] = field(default_factory=dict, init=False, repr=False)

    @classmethod
    def of(
        cls,
        corpus: GraphCorpus | Iterable[Document],
        entities: Iterable[Entity] = (),
        relations: Iterable[Relation] = (),
    ) -> GraphReference:
        """From a corpus, or from documents, entities and relations."""
        if isinstance(corpus, GraphCorpus):
            return cls.of(corpus.documents, corpus.entities, corpus.relations)
        records: list[Chunk | Entity] = [*(c for d in corpus for c in d.chunks), *entities]
        return cls(tuple(records), tuple(relations))

    @cached_property
    def relation(self) -> dict[str, Relation]:
        return {r.id: r for r in self.relations}

    @cached_property
    def node_ids(self) -> tuple[str, ...]:
        """Every id naming a node: chunks, their sections and documents, entities."""
        ids: set[str] = set()
        for record in self.records:
            ids.add(record.id)
            if isinstance(record, Chunk):
                ids.update((record.document_id, *record.section_ids))
        return tuple(sorted(ids))

    def scoped(self, f: Filter | None) -> tuple[list[Chunk | Entity], list[Relation]]:
        """The records and relations ``f`` admits (remembered: the reference then runs on them with no filter,
        which is the same answer, many times faster over the hundreds of calls the kit makes)."""
        if f not in self._scoped:
            self._scoped[f] = [r for r in self.records if matches(f, r)], [r for r in self.relations if matches(f, r)]
        return self._scoped[f]

    def nodes(self, request: NodeRequest) -> list[GraphNode]:
        return reference_nodes(self.scoped(request.filter)[0], replace(request, filter=None))

    def hop(self, request: NeighbourRequest) -> Neighbours:
        if request not in self._hops:
            records, relations = self.scoped(request.filter)
            self._hops[request] = reference_neighbours(records, relations, replace(request, filter=None))
        return self._hops[request]

    async def graph_nodes(self, request: NodeRequest) -> Sequence[GraphNode]:
        return self.nodes(request)

    async def neighbours(self, request: NeighbourRequest) -> Neighbours:
        return self.hop(request)

    def in_scope(self, f: Filter | None) -> frozenset[str]:
        """The ids of the nodes ``f`` admits (remembered per filter)."""
        if f not in self._in_scope:
            self._in_scope[f] = frozenset(n.id for n in self.nodes(NodeRequest(self.node_ids, f)))
        return self._in_scope[f]

    def count(self, request: NeighbourRequest) -> int:
        """How many edges qualify for ``request`` before its ``limit``."""
        return len(self.hop(replace(request, limit=MAX_EDGE_LIMIT)).edges)


# -- describing answers ----------------------------------------------------------------------------


def _listed(items: Sequence[str]) -> str:
    shown = list(items[:_SHOWN])
    more = len(items) - len(shown)
    return '[' + ', '.join([*shown, *([f'... {more} more'] if more else [])]) + ']'


def _edge(relation: Relation) -> str:
    return f'{relation.source} -{relation.type}-> {relation.target}'


def _edges(relations: Iterable[Relation]) -> str:
    return _listed([_edge(r) for r in relations])


def _ids(items: Iterable[Any]) -> list[str]:
    return [item.id for item in items]


def _show_ids(ids: Sequence[str]) -> str:
    return repr(tuple(ids)) if len(ids) <= 3 else f'({", ".join(map(repr, ids[:3]))}, ... {len(ids) - 3} more)'


def _show_nodes(request: NodeRequest) -> str:
    return f'graph_nodes(ids={_show_ids(request.ids)}, filter={request.filter!r})'


def _show_hop(request: NeighbourRequest) -> str:
    types = None if request.edge_types is None else sorted(request.edge_types)
    return (
        f'neighbours(ids={_show_ids(request.ids)}, direction={request.direction!r}, edge_types={types}, '
        f'limit={request.limit}, filter={request.filter!r})'
    )


def _show_walk(request: WalkRequest) -> str:
    types = None if request.edge_types is None else sorted(request.edge_types)
    return (
        f'walk(seeds={_show_ids(request.seeds)}, hops={request.hops}, direction={request.direction!r}, '
        f'edge_types={types}, max_nodes={request.max_nodes}, edge_limit={request.edge_limit}, '
        f'order={request.order!r}, alpha={request.alpha}, filter={request.filter!r})'
    )


def _leaks(reference: GraphReference, f: Filter | None, node_ids: Iterable[str], edges: Iterable[Relation]) -> str:
    """What an answer showed from outside the scope, as a suffix of a problem line ('' if nothing)."""
    in_scope = reference.in_scope(f)
    nodes = sorted({i for i in node_ids if i not in in_scope})
    rejected, foreign_end, unknown = [], [], []
    for edge in edges:
        stored = reference.relation.get(edge.id)
        if stored is None:
            unknown.append(_edge(edge))
        elif not matches(f, stored):
            rejected.append(_edge(stored))
        elif stored.source not in in_scope or stored.target not in in_scope:
            foreign_end.append(_edge(stored))
    parts = [
        f'nodes {_listed(nodes)}' if nodes else '',
        f'edges whose relation the filter rejects {_listed(rejected)}' if rejected else '',
        f'edges to nodes outside the scope {_listed(foreign_end)}' if foreign_end else '',
        f'edges the store does not hold {_listed(unknown)}' if unknown else '',
    ]
    shown = '; '.join(p for p in parts if p)
    return f' (outside the scope: {shown})' if shown else ''


def _first_difference(got: Sequence[object], want: Sequence[object]) -> str:
    for g, w in zip(got, want, strict=False):
        if g != w:
            return f'; first difference: got {g!r}, expected {w!r}'
    return ''


def _node_problem(request: NodeRequest, got: Sequence[GraphNode], reference: GraphReference) -> list[str]:
    want = reference.nodes(request)
    found = sorted(got, key=lambda n: n.id)
    if found == want:
        return []
    return [
        f'{_show_nodes(request)} returned {_listed(_ids(found))}, expected {_listed(_ids(want))}'
        f'{_first_difference(found, want)}{_leaks(reference, request.filter, _ids(found), ())}'
    ]


def _hop_details(request: NeighbourRequest, got: Neighbours, want: Neighbours) -> list[str]:
    """What is wrong with a hop's answer beyond scope: types, sides, order, duplicates, ``truncated``."""
    details: list[str] = []
    edges = tuple(got.edges)
    if request.edge_types is not None:
        wrong = [e for e in edges if e.type not in request.edge_types]
        if wrong:
            details.append(f'edges of types not asked for {_edges(wrong)}')
    ids = set(request.ids)
    sides: dict[str, Callable[[Relation], bool]] = {
        'out': lambda e: e.source in ids,
        'in': lambda e: e.target in ids,
        'both': lambda e: e.source in ids or e.target in ids,
    }
    off = [e for e in edges if not sides[request.direction](e)]
    if off:
        details.append(f'edges not touching the ids on the {request.direction!r} side {_edges(off)}')
    if len({e.id for e in edges}) != len(edges):
        details.append('an edge returned twice')
    elif [e.id for e in edges] != sorted(e.id for e in edges):
        details.append('edges not in edge_order (by relation id)')
    if got.truncated != want.truncated:
        details.append(f'truncated {got.truncated}, expected {want.truncated}')
    if tuple(got.edges) == want.edges and typed([e.metadata for e in edges]) != typed([e.metadata for e in want.edges]):
        details.append('relation metadata came back with other types')
    return details


def _hop_problem(request: NeighbourRequest, got: Neighbours, reference: GraphReference) -> list[str]:
    want = reference.hop(request)
    nodes = tuple(sorted(got.nodes, key=lambda n: n.id))
    same = tuple(got.edges) == want.edges and nodes == want.nodes and got.truncated == want.truncated
    details = _hop_details(request, got, want)
    if same and not details:
        return []
    difference = _first_difference(tuple(got.edges), want.edges) or _first_difference(nodes, want.nodes)
    return [
        f'{_show_hop(request)} returned edges {_edges(got.edges)}, nodes {_listed(_ids(nodes))} '
        f'(truncated {got.truncated}); expected edges {_edges(want.edges)}, nodes {_listed(_ids(want.nodes))} '
        f'(truncated {want.truncated})'
        + ''.join(f'; {d}' for d in details)
        + difference
        + _leaks(reference, request.filter, _ids(nodes), got.edges)
    ]


def _walked(result: GraphWalk) -> str:
    return _listed([f'{w.node.id}@{w.hop}' for w in result.nodes]) + f' (truncated {result.truncated})'


def _walk_problem(request: WalkRequest, got: GraphWalk, want: GraphWalk, reference: GraphReference) -> list[str]:
    if got == want:
        return []
    detail = _first_difference(got.nodes, want.nodes) or _first_difference(got.edges, want.edges)
    return [
        f'{_show_walk(request)} reached {_walked(got)}, expected {_walked(want)}{detail}'
        f'{_leaks(reference, request.filter, [w.node.id for w in got.nodes], got.edges)}'
    ]


# -- which calls to make ---------------------------------------------------------------------------


@dataclass(frozen=True)
class GraphCalls:
    """Requests to make on a graph store: each answer is compared with the reference's."""

    nodes: tuple[NodeRequest, ...] = ()
    hops: tuple[NeighbourRequest, ...] = ()
    walks: tuple[WalkRequest, ...] = ()

    def __add__(self, other: GraphCalls) -> GraphCalls:
        return GraphCalls(self.nodes + other.nodes, self.hops + other.hops, self.walks + other.walks)

    def __len__(self) -> int:
        return len(self.nodes) + len(self.hops) + len(self.walks)

    async def problems(self, store: GraphSearch, reference: GraphReference) -> list[str]:
        """Make every call on ``store``; one line per answer that differs from ``reference``."""
        out: list[str] = []
        for node_request in self.nodes:
            out += _node_problem(node_request, await store.graph_nodes(node_request), reference)
        for hop in self.hops:
            out += _hop_problem(hop, await store.neighbours(hop), reference)
        for walk_request in self.walks:
            got, want = await walk(store, walk_request), await walk(reference, walk_request)
            out += _walk_problem(walk_request, got, want, reference)
        return out


def _limits(reference: GraphReference, request: NeighbourRequest) -> list[NeighbourRequest]:
    """``request`` cut just below, at and above the number of edges that qualify (where ``truncated`` flips)."""
    n = reference.count(request)
    return [replace(request, limit=k) for k in sorted({n - 1, n, n + 1}) if 1 <= k <= MAX_EDGE_LIMIT]


def node_calls(corpus: GraphCorpus, f: Filter | None) -> GraphCalls:
    """Every id at once; the ids of each kind; each probe group; no id at all."""
    requests = [NodeRequest(corpus.every_id, f), NodeRequest((), f)]
    requests += [NodeRequest(ids, f) for ids in corpus.node_ids.values()]
    requests += [NodeRequest(ids, f) for ids in corpus.probes[:-1]]
    return GraphCalls(nodes=tuple(requests))


def neighbour_calls(corpus: GraphCorpus, reference: GraphReference, f: Filter | None) -> GraphCalls:
    """Around each probe group: each direction; some edge types (none too); limits where ``truncated`` flips."""
    requests: list[NeighbourRequest] = []
    kinds: list[frozenset[str] | None] = [frozenset({'MENTIONS'}), frozenset({'WORKS_FOR', 'KNOWS'}), frozenset()]
    for ids in corpus.probes:
        requests += [NeighbourRequest(ids, direction, None, f) for direction in ('out', 'in', 'both')]
        requests += [NeighbourRequest(ids, 'both', kind, f) for kind in kinds]
        requests += _limits(reference, NeighbourRequest(ids, 'both', None, f))
        requests += _limits(reference, NeighbourRequest(ids, 'in', frozenset({'MENTIONS', 'WORKS_FOR'}), f))
    requests.append(NeighbourRequest(corpus.probes[0], 'both', None, f, limit=1))
    return GraphCalls(hops=tuple(requests))


def walk_calls(corpus: GraphCorpus, reference: GraphReference, f: Filter | None) -> GraphCalls:
    """Walks from a few seeds: every hop count, each budget cutting (or just not), centrality, directions, types."""
    acme = corpus.documents[0]
    first, hub = acme.chunks[0].id, HUB_ID
    seeds: list[tuple[str, ...]] = [
        ('ent-alice',),
        (first,),
        (hub, acme.chunks[3].id),
        (acme.id,),
        (GHOST_ID, UNKNOWN_ID, 'ent-bob', 'ent-alice', 'ent-alice'),  # unknown, foreign and repeated seeds
    ]
    requests = [WalkRequest(s, hops=h, filter=f) for s in seeds for h in (0, 1, 2, 3)]
    requests += [WalkRequest((first,), hops=3, max_nodes=m, filter=f) for m in (1, 2, 3, 5, 8)]
    requests += [WalkRequest((hub,), hops=2, edge_limit=k, filter=f) for k in (1, 2, 3, 5)]
    # An edge limit of exactly the in-scope edges around the hub: not cut, however many foreign ones there are.
    around = reference.count(NeighbourRequest((hub,), 'both', None, f))
    requests += [WalkRequest((hub,), hops=1, edge_limit=k, filter=f) for k in sorted({max(around, 1), around + 1})]
    requests.append(WalkRequest(tuple(c.id for c in acme.chunks), hops=1, max_nodes=3, filter=f))
    requests += [WalkRequest((hub,), hops=2, order='centrality', alpha=a, filter=f) for a in (0.0, 1.0, 10.0)]
    requests += [WalkRequest((acme.chunks[1].id,), hops=3, direction=d, filter=f) for d in ('out', 'in')]
    requests += [
        WalkRequest(('ent-alice',), hops=3, edge_types=frozenset({t}), filter=f) for t in ('MENTIONS', 'PART_OF')
    ]
    return GraphCalls(walks=tuple(requests))


def graph_scope_calls(corpus: GraphCorpus, reference: GraphReference, f: Filter | None) -> GraphCalls:
    """A handful of calls, cheap enough to make under every edge filter.

    Every id resolved at once; the edges around every id (whole, and cut where ``truncated``
    flips); the hub's in-edges; the documents' edges; one two-hop walk. A store that ignores the
    filter on nodes, on relations or on far endpoints, or counts what it hides, shows here.
    """
    acme, globex = corpus.documents[:2]
    everything = NeighbourRequest(corpus.every_id, 'both', None, f, MAX_EDGE_LIMIT)
    count = reference.count(everything)
    hops = [
        everything,
        NeighbourRequest((HUB_ID,), 'in', None, f),
        NeighbourRequest((acme.id, globex.id), 'both', None, f),
    ]
    if count:
        hops.append(replace(everything, limit=count))
    return GraphCalls(
        nodes=(NodeRequest(corpus.every_id, f),),
        hops=tuple(hops),
        walks=(WalkRequest(('ent-alice', acme.chunks[0].id), hops=2, filter=f),),
    )


# -- the write side --------------------------------------------------------------------------------


def replaced_document(old: Document) -> Document:
    """``old`` replaced: the same id, a new title, fewer chunks and sections."""
    b = DocumentBuilder(old.uri, f'{old.title}, second edition', metadata=old.metadata, labels=old.labels)
    summary = b.section('Summary')
    b.add_chunk(summary, f'{COMMON_WORD} summary of the second edition', metadata={'n': 40})
    b.add_chunk(b.section('Contacts', parent=summary), f'{COMMON_WORD} contacts', metadata={'n': 41})
    new = b.build()
    assert new.id == old.id, 'the kit corpus changed: the replaced document must keep its id'
    return new


def _relation_difference(call: str, got: Sequence[Relation], want: Sequence[Relation]) -> list[str]:
    """A problem line when two sets of relations differ (as a set: no order is promised)."""
    found, expected = {r.id: r for r in got}, {r.id: r for r in want}
    if len(got) == len(found) and found == expected:
        return []
    extra = [found[i] for i in sorted(found.keys() - expected.keys())]
    missing = [expected[i] for i in sorted(expected.keys() - found.keys())]
    changed = [found[i] for i in sorted(found.keys() & expected.keys()) if found[i] != expected[i]]
    parts = [
        f'holds {_edges(extra)} it should not' if extra else '',
        f'lacks {_edges(missing)}' if missing else '',
        f'changed {_edges(changed)}' if changed else '',
        'lists a relation twice' if len(got) != len(found) else '',
    ]
    return [f'{call} ' + '; '.join(p for p in parts if p)]


async def stored_problems(
    store: GraphStore,
    when: str,
    relations: Sequence[Relation],
    marks: Mapping[str, Mapping[str, str]],
    document_ids: Iterable[str] = (),
) -> list[str]:
    """The store holds exactly ``relations`` (whole, by document, by origin) and the ledgers ``marks``.

    ``document_ids`` are asked for too (a deleted document's relations must be gone).
    """
    problems = _relation_difference(f'{when}: list_relations()', await store.list_relations(), relations)
    owners = sorted({r.document_id for r in relations if r.document_id is not None} | set(document_ids))
    for document_id in owners:
        want = [r for r in relations if r.document_id == document_id]
        got = await store.list_relations(document_ids=[document_id])
        problems += _relation_difference(f'{when}: list_relations(document_ids=[{document_id!r}])', got, want)
    for origin in sorted({r.origin for r in relations}):
        got = await store.list_relations(origin=origin)
        problems += _relation_difference(
            f'{when}: list_relations(origin={origin!r})', got, [r for r in relations if r.origin == origin]
        )
    if owners:
        both = owners[:2]
        got = await store.list_relations(document_ids=both, origin='structure')
        want = [r for r in relations if r.document_id in both and r.origin == 'structure']
        problems += _relation_difference(f"{when}: list_relations(document_ids={both}, origin='structure')", got, want)
    for builder, want_marks in marks.items():
        got_marks = dict(await store.graph_marks(builder))
        if got_marks != dict(want_marks):
            problems.append(f'{when}: graph_marks({builder!r}) is {got_marks}, expected {dict(want_marks)}')
    return problems


def _without(relations: Iterable[Relation], document_ids: set[str]) -> list[Relation]:
    """``relations`` without those the documents ``document_ids`` own."""
    return [r for r in relations if r.document_id not in document_ids]


async def replacement_problems(store: GraphStoreUnderTest, corpus: GraphCorpus) -> list[str]:
    """Documents replaced, re-upserted unchanged and deleted: their relations and ledger marks go with them.

    ``store`` must hold ``corpus`` and nothing else. The new relations of the replaced document
    come *before* it in the batch: they are still written after its old relations are dropped.
    A document upserted unchanged loses its relations and marks all the same (the ledger rule: an
    upserted document is always rebuilt). Standalone relations, other documents' relations and
    ledger keys that are not a document id stay. After each step every answer must equal the
    reference over what is left, the old ids included.
    """
    acme, globex, initech = corpus.documents[:3]
    owners = [d.id for d in corpus.documents]
    await store.set_graph_marks('exact', {acme.id: 'fp-acme', globex.id: 'fp-globex', 'names': 'names-1'})
    await store.set_graph_marks('structure', {acme.id: 'fp-acme-structure', initech.id: 'fp-initech'})
    new = replaced_document(acme)
    fresh = [_mention(new.chunks[0], 'ent-alice'), *structure(new)]
    await store.upsert([*fresh, new])
    relations = [*_without(corpus.relations, {acme.id}), *fresh]
    marks = {'exact': {globex.id: 'fp-globex', 'names': 'names-1'}, 'structure': {initech.id: 'fp-initech'}}
    problems = await stored_problems(store, f'after upserting document {acme.id!r} again', relations, marks, owners)
    problems += await _answers_problems(
        store, corpus, GraphReference.of([new, globex, initech], corpus.entities, relations)
    )

    await store.upsert([initech])
    relations = _without(relations, {initech.id})
    marks = {'exact': {globex.id: 'fp-globex', 'names': 'names-1'}, 'structure': {}}
    when = f'after upserting document {initech.id!r} unchanged'
    problems += await stored_problems(store, when, relations, marks, owners)

    if await store.delete_documents([globex.id]) != 1:
        problems.append(f'delete_documents([{globex.id!r}]) did not count the one document it deleted')
    relations = _without(relations, {globex.id})
    marks = {'exact': {'names': 'names-1'}, 'structure': {}}
    problems += await stored_problems(store, f'after deleting document {globex.id!r}', relations, marks, owners)
    problems += await _answers_problems(store, corpus, GraphReference.of([new, initech], corpus.entities, relations))

    # An entity deleted: relations naming it may stay stored, but never come back as edges.
    await store.delete_entities(['ent-alice'])
    entities = [e for e in corpus.entities if e.id != 'ent-alice']
    return problems + await _answers_problems(store, corpus, GraphReference.of([new, initech], entities, relations))


def _mention(chunk: Chunk, entity_id: str) -> Relation:
    """What the exact-name linker writes for ``chunk`` naming ``entity_id``."""
    return Relation(
        source=chunk.id,
        source_kind='chunk',
        target=entity_id,
        target_kind='entity',
        type='MENTIONS',
        metadata=chunk.metadata,
        labels=chunk.labels,
        provenance=chunk.id,
        document_id=chunk.document_id,
        origin='exact',
    )


async def _answers_problems(store: GraphSearch, corpus: GraphCorpus, reference: GraphReference) -> list[str]:
    calls = GraphCalls()
    for _, f in GRAPH_SCOPES[:2]:
        calls += graph_scope_calls(corpus, reference, f) + GraphCalls(
            hops=tuple(NeighbourRequest(ids, 'both', None, f) for ids in corpus.probes[:-1])
        )
    return await calls.problems(store, reference)


async def relation_write_problems(store: GraphStoreUnderTest, corpus: GraphCorpus) -> list[str]:
    """Relations upserted by id (the last of an id in a batch wins), deleted by id, entities listed.

    ``store`` must hold ``corpus`` and nothing else.
    """
    problems: list[str] = []
    entities = await store.list_entities()
    if _ids(sorted(entities, key=lambda e: e.id)) != sorted(e.id for e in corpus.entities):
        problems.append(
            f'list_entities() lists {sorted(_ids(entities))}, expected {sorted(e.id for e in corpus.entities)}'
        )
    elif sorted(entities, key=lambda e: e.id) != sorted(corpus.entities, key=lambda e: e.id):
        problems.append('list_entities() changed an entity')
    works_for = next(r for r in corpus.relations if r.type == 'WORKS_FOR' and r.source == 'ent-alice')
    heavier = works_for.model_copy(update={'weight': 3.5, 'metadata': {'tenant': 'acme', 'since': 2020}})
    await store.upsert([heavier.model_copy(update={'weight': 9.0}), heavier])
    gone = [r for r in corpus.relations if r.type == 'KNOWS']
    deleted = await store.delete_relations([*(r.id for r in gone), 'no-such-relation'])
    if deleted != len(gone):
        problems.append(f'delete_relations of {len(gone)} stored ids and an unknown one returned {deleted}')
    relations = [heavier if r.id == heavier.id else r for r in corpus.relations if r not in gone]
    problems += await stored_problems(store, 'after rewriting and deleting relations', relations, {})
    reference = GraphReference.of(corpus.documents, corpus.entities, relations)
    return problems + await _answers_problems(store, corpus, reference)


async def ledger_problems(store: GraphStore) -> list[str]:
    """Ledger keys set, overwritten and deleted (``None``) per builder, each builder's apart from the others'."""
    problems: list[str] = []
    if await store.graph_marks('never-used'):
        problems.append("graph_marks('never-used') is not empty")
    await store.set_graph_marks('first', {'k1': 'v1', 'k2': 'v2', 'empty': '', 'text': 'ü\n\x1f"\''})
    await store.set_graph_marks('second', {'k1': 'other'})
    await store.set_graph_marks('first', {'k1': None, 'k3': 'v3', 'k2': 'v2b', 'missing': None})
    expected = {
        'first': {'k2': 'v2b', 'k3': 'v3', 'empty': '', 'text': 'ü\n\x1f"\''},
        'second': {'k1': 'other'},
        'never-used': {},
    }
    for builder, want in expected.items():
        got = dict(await store.graph_marks(builder))
        if got != want:
            problems.append(f'graph_marks({builder!r}) is {got}, expected {want}')
    return problems
