"""Graph reads in SQL: node resolution and one hop of edges, scoped, in one snapshot.

The hop reads the relations touching the requested ids (indexed by source and target), then
resolves their endpoints with as few rows as the reference needs: the chunks and entities named,
and the first in-scope chunk (reading order) of each section and document named. The reference
functions (`toolish_rag.graph.reference`) then decide, so every answer equals the oracle's. The
core's walk (multi-hop, `graph_context`) calls this hop repeatedly. See docs/graph.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated

from pydantic import Field, TypeAdapter

from toolish_rag import Chunk, Entity, Relation
from toolish_rag.filters import Filter
from toolish_rag.graph import (
    GraphNode,
    NeighbourRequest,
    Neighbours,
    NodeRequest,
    reference_neighbours,
    reference_nodes,
)

from ._database import Tx
from ._filters import compile_filter
from ._reads import parse

__all__ = ['graph_nodes', 'neighbours', 'parse_relation']

_RELATION: TypeAdapter[Relation] = TypeAdapter(Annotated[Relation, Field()])


def parse_relation(body: str) -> Relation:
    return _RELATION.validate_json(body)


def _resolving(tx: Tx, ids: Iterable[str], f: Filter | None) -> list[Chunk | Entity]:
    """The in-scope records that resolve ``ids`` as chunks, entities, sections or documents."""
    wanted = [i for i in dict.fromkeys(ids) if '\x00' not in i]
    if not wanted:
        return []
    scope = compile_filter(f)
    rows = tx.execute(
        f'SELECT body FROM records WHERE id = ANY(%(ids)s::text[]) AND {scope.sql} '
        'UNION ALL '
        'SELECT body FROM (SELECT DISTINCT ON (sid) body FROM records, unnest(section_ids) AS sid '
        f"WHERE kind = 'chunk' AND section_ids && %(ids)s::text[] AND sid = ANY(%(ids)s::text[]) AND {scope.sql} "
        'ORDER BY sid, document_id COLLATE "C", sequence_number, id COLLATE "C") AS s '
        'UNION ALL '
        'SELECT body FROM (SELECT DISTINCT ON (document_id) body FROM records '
        f"WHERE kind = 'chunk' AND document_id = ANY(%(ids)s::text[]) AND {scope.sql} "
        'ORDER BY document_id, sequence_number, id COLLATE "C") AS d',
        {**scope.params, 'ids': wanted},
    )
    return [parse(body) for (body,) in rows]


def graph_nodes(tx: Tx, request: NodeRequest) -> list[GraphNode]:
    return reference_nodes(_resolving(tx, request.ids, request.filter), request)


def neighbours(tx: Tx, request: NeighbourRequest) -> Neighbours:
    ids = [i for i in dict.fromkeys(request.ids) if '\x00' not in i]
    if not ids:
        return Neighbours((), ())
    scope = compile_filter(request.filter)
    sides = {'out': 'source = ANY(%(ids)s::text[])', 'in': 'target = ANY(%(ids)s::text[])'}
    touching = sides.get(request.direction, f'({sides["out"]} OR {sides["in"]})')
    types = sorted(request.edge_types) if request.edge_types is not None else None
    rows = tx.execute(
        f'SELECT body FROM relations WHERE {touching} '
        'AND (%(types)s::text[] IS NULL OR type = ANY(%(types)s::text[])) '
        f'AND {scope.sql} ORDER BY id COLLATE "C"',
        {**scope.params, 'ids': ids, 'types': types},
    )
    relations = [parse_relation(body) for (body,) in rows]
    ends = {end for r in relations for end in (r.source, r.target)}
    records = _resolving(tx, ends, request.filter)
    return reference_neighbours(records, relations, request)
