"""Graph reads in SQL: node resolution, one hop of edges, and a walk's whole neighbourhood, scoped.

The hop reads the first ``limit + 1`` relations touching the requested ids (indexed by source and
target) whose own metadata and both endpoints are in scope, in SQL, then resolves their endpoints
with as few rows as the reference needs: the chunks and entities named, and the first in-scope
chunk (reading order) of each section and document named. A walk reads everything it can reach in
one statement first (`neighbourhood`: a recursive CTE bounded by the walk's hops and a row cap),
and the core's walk then runs on that. The reference functions (`toolish_rag.graph.reference`)
decide every answer, so each equals the oracle's. See docs/graph.md and docs/stores/postgres.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field, TypeAdapter

from toolish_rag import Chunk, Entity, Relation
from toolish_rag.filters import Filter
from toolish_rag.graph import (
    GraphNode,
    NeighbourRequest,
    Neighbours,
    NodeRequest,
    WalkRequest,
    reference_neighbours,
    reference_nodes,
)

from ._database import Tx
from ._filters import compile_filter
from ._reads import parse

__all__ = ['Neighbourhood', 'graph_nodes', 'neighbourhood', 'neighbours', 'parse_relation']

_RELATION: TypeAdapter[Relation] = TypeAdapter(Annotated[Relation, Field()])


def parse_relation(body: str) -> Relation:
    return _RELATION.validate_json(body)


_RESOLVING = (
    'SELECT body FROM records WHERE id = ANY({ids}) AND {f} '
    'UNION ALL '
    'SELECT body FROM (SELECT DISTINCT ON (sid) body FROM records, unnest(section_ids) AS sid '
    "WHERE kind = 'chunk' AND section_ids && {ids} AND sid = ANY({ids}) AND {f} "
    'ORDER BY sid, document_id COLLATE "C", sequence_number, id COLLATE "C") AS s '
    'UNION ALL '
    'SELECT body FROM (SELECT DISTINCT ON (document_id) body FROM records '
    "WHERE kind = 'chunk' AND document_id = ANY({ids}) AND {f} "
    'ORDER BY document_id, sequence_number, id COLLATE "C") AS d'
)
"""The in-scope records that resolve the ids ``{ids}`` as chunks, entities, sections or documents: the
chunk or entity itself, and the first in-scope chunk (reading order) of each section and document."""


def _in_scope(node: str, kind: str, f: str) -> str:
    """SQL: the node whose id and kind are the columns ``node`` and ``kind`` resolves in scope (`reference_nodes`)."""
    return (
        f'CASE {kind} '
        f"WHEN 'entity' THEN EXISTS (SELECT 1 FROM records WHERE id = {node} AND kind = 'entity' AND {f}) "
        f"WHEN 'chunk' THEN EXISTS (SELECT 1 FROM records WHERE id = {node} AND kind = 'chunk' AND {f}) "
        f"WHEN 'section' THEN EXISTS (SELECT 1 FROM records WHERE kind = 'chunk' AND section_ids @> ARRAY[{node}] "
        f'AND {f}) '
        f"WHEN 'document' THEN EXISTS (SELECT 1 FROM records WHERE kind = 'chunk' AND document_id = {node} AND {f}) "
        'ELSE FALSE END'
    )


def _qualifying(f: Filter | None) -> tuple[str, dict[str, Any]]:
    """SQL over a relation aliased ``e``: of a wanted type, in scope itself, and both its endpoints in scope."""
    records, edge = compile_filter(f), compile_filter(f, alias='e.')  # the same parameters, other columns
    sql = (
        '(%(types)s::text[] IS NULL OR e.type = ANY(%(types)s::text[])) '
        f'AND {edge.sql} AND {_in_scope("e.source", "e.source_kind", records.sql)} '
        f'AND {_in_scope("e.target", "e.target_kind", records.sql)}'
    )
    return sql, records.params


def _types(edge_types: frozenset[str] | None) -> list[str] | None:
    return sorted(edge_types) if edge_types is not None else None


def _resolving(tx: Tx, ids: Iterable[str], f: Filter | None) -> list[Chunk | Entity]:
    """The in-scope records that resolve ``ids`` as chunks, entities, sections or documents."""
    wanted = [i for i in dict.fromkeys(ids) if '\x00' not in i]
    if not wanted:
        return []
    scope = compile_filter(f)
    rows = tx.execute(_RESOLVING.format(ids='%(ids)s::text[]', f=scope.sql), {**scope.params, 'ids': wanted})
    return [parse(body) for (body,) in rows]


def graph_nodes(tx: Tx, request: NodeRequest) -> list[GraphNode]:
    return reference_nodes(_resolving(tx, request.ids, request.filter), request)


def neighbours(tx: Tx, request: NeighbourRequest) -> Neighbours:
    """One hop: the first ``limit + 1`` qualifying edges (scope on the edge and both endpoints in SQL)."""
    ids = [i for i in dict.fromkeys(request.ids) if '\x00' not in i]
    if not ids:
        return Neighbours((), ())
    sides = {'out': 'e.source = ANY(%(ids)s::text[])', 'in': 'e.target = ANY(%(ids)s::text[])'}
    touching = sides.get(request.direction, f'({sides["out"]} OR {sides["in"]})')
    qualifying, params = _qualifying(request.filter)
    rows = tx.execute(
        f'SELECT e.body FROM relations AS e WHERE {touching} AND {qualifying} '
        'ORDER BY e.id COLLATE "C" LIMIT %(limit)s',
        {**params, 'ids': ids, 'types': _types(request.edge_types), 'limit': request.limit + 1},
    )
    relations = [parse_relation(body) for (body,) in rows]
    ends = {end for r in relations for end in (r.source, r.target)}
    records = _resolving(tx, ends, request.filter)
    return reference_neighbours(records, relations, request)


_WALK = """
WITH RECURSIVE reach(node, depth) AS (
    SELECT DISTINCT s, 0 FROM unnest(%(seeds)s::text[]) AS s
  UNION
    SELECT step.node, reach.depth + 1 FROM reach
    JOIN relations AS e ON (%(out)s AND e.source = reach.node) OR (%(in)s AND e.target = reach.node)
    CROSS JOIN LATERAL (VALUES
        (CASE WHEN %(out)s AND e.source = reach.node THEN e.target END),
        (CASE WHEN %(in)s AND e.target = reach.node THEN e.source END)
    ) AS step(node)
    WHERE reach.depth + 1 < %(hops)s AND step.node IS NOT NULL AND {qualifying}
),
walked AS MATERIALIZED (SELECT node FROM reach LIMIT %(cap)s),
nodes AS MATERIALIZED (SELECT DISTINCT node FROM walked),
edges AS MATERIALIZED (
    SELECT e.source, e.target, e.body FROM relations AS e
    WHERE ((%(out)s AND e.source IN (SELECT node FROM nodes)) OR (%(in)s AND e.target IN (SELECT node FROM nodes)))
    AND {qualifying} LIMIT %(cap)s
),
ends AS MATERIALIZED (
    SELECT array_agg(DISTINCT x) AS ids
    FROM (SELECT unnest(%(seeds)s::text[]) UNION SELECT source FROM edges UNION SELECT target FROM edges) AS t(x)
)
SELECT 'count', (SELECT count(*) FROM walked)::text || ' ' || (SELECT count(*) FROM edges)::text
UNION ALL SELECT 'edge', body FROM edges
UNION ALL SELECT 'record', body FROM ({resolving}) AS resolved
"""
"""A walk's neighbourhood in one statement: a recursive CTE (bounded by the walk's hops: depth below ``hops``,
and by ``cap`` rows) reaches every node within ``hops - 1`` qualifying edges of the seeds, then reads
every qualifying edge around those nodes and the in-scope records that resolve their endpoints."""


@dataclass(frozen=True)
class Neighbourhood:
    """The records and edges a walk can reach, read at once: answers the walk's node and hop requests as the
    store would (the reference functions over them), so the core's walk runs on it unchanged."""

    records: tuple[Chunk | Entity, ...]
    relations: tuple[Relation, ...]

    async def graph_nodes(self, request: NodeRequest) -> Sequence[GraphNode]:
        return reference_nodes(self.records, request)

    async def neighbours(self, request: NeighbourRequest) -> Neighbours:
        return reference_neighbours(self.records, self.relations, request)


def neighbourhood(tx: Tx, request: WalkRequest, cap: int) -> Neighbourhood | None:
    """`_WALK` for ``request``; ``None`` past ``cap`` nodes or edges (the walk then reads hop by hop)."""
    seeds = [i for i in dict.fromkeys(request.seeds) if '\x00' not in i]
    qualifying, params = _qualifying(request.filter)
    resolving = _RESOLVING.format(ids='(SELECT ids FROM ends)::text[]', f=compile_filter(request.filter).sql)
    rows = tx.execute(
        _WALK.format(qualifying=qualifying, resolving=resolving),
        {
            **params,
            'seeds': seeds,
            'hops': request.hops,
            'out': request.direction in ('out', 'both'),
            'in': request.direction in ('in', 'both'),
            'types': _types(request.edge_types),
            'cap': cap + 1,
        },
    ).fetchall()
    nodes, edges = (int(n) for n in rows[0][1].split())
    if nodes > cap or edges > cap:
        return None
    relations = tuple(parse_relation(body) for what, body in rows if what == 'edge')
    return Neighbourhood(tuple(parse(body) for what, body in rows if what == 'record'), relations)
