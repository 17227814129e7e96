"""Reads that run inside one transaction: records by id, expansion windows, navigation pages.

Each function takes the caller's transaction (one ``REPEATABLE READ`` snapshot) and the compiled
scope, so an anchored expansion reads its anchor and window from one version, and counts and pages
count in-scope chunks only. See docs/custom-store.md (Expansion) and docs/navigation.md.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import Field, TypeAdapter

from toolish_rag import Chunk, Entity, ExpansionRequest
from toolish_rag.sections import (
    ChunkOutline,
    DocumentPage,
    DocumentPageRequest,
    DocumentSummary,
    OutlineRequest,
    SectionPage,
    SectionReadRequest,
    document_order,
    title_matches,
)

from ._database import Tx
from ._filters import Compiled, compile_filter

__all__ = ['document_page', 'expand', 'outlines', 'parse', 'records_by_id', 'section_page']

_RECORD: TypeAdapter[Chunk | Entity] = TypeAdapter(Annotated[Chunk | Entity, Field(discriminator='kind')])


def parse(body: str) -> Chunk | Entity:
    """A stored record (its ``model_dump_json``): types survive (``2`` stays an int, ``True`` a bool)."""
    return _RECORD.validate_json(body)


def _chunk(body: str) -> Chunk:
    record = parse(body)
    assert isinstance(record, Chunk)
    return record


def records_by_id(tx: Tx, ids: Sequence[str], scope: Compiled) -> list[Chunk | Entity]:
    wanted = [i for i in dict.fromkeys(ids) if '\x00' not in i]
    if not wanted:
        return []
    rows = tx.execute(
        f'SELECT body FROM records WHERE id = ANY(%(ids)s::text[]) AND {scope.sql}', {**scope.params, 'ids': wanted}
    )
    return [parse(body) for (body,) in rows]


def _plain(tx: Tx, request: ExpansionRequest) -> list[Chunk]:
    """A plain request: its document's (or section's) chunks within the range, in scope, in order."""
    scope = compile_filter(request.filter)
    params: dict[str, Any] = {
        **scope.params,
        'doc': request.document_id,
        'section': request.section_id,
        'first': request.first,
        'last': request.last,
        'limit': request.limit,
    }
    for value in (request.document_id, request.section_id):
        if value is not None and '\x00' in value:
            return []
    rows = tx.execute(
        "SELECT body FROM records WHERE kind = 'chunk' "
        'AND (%(doc)s::text IS NULL OR document_id = %(doc)s::text) '
        'AND (%(section)s::text IS NULL OR section_ids @> ARRAY[%(section)s::text]) '
        'AND (%(first)s::bigint IS NULL OR sequence_number >= %(first)s::bigint) '
        'AND (%(last)s::bigint IS NULL OR sequence_number <= %(last)s::bigint) '
        f'AND {scope.sql} ORDER BY sequence_number, id LIMIT %(limit)s',
        params,
    )
    return [_chunk(body) for (body,) in rows]


def expand(tx: Tx, request: ExpansionRequest) -> list[Chunk]:
    """docs/custom-store.md's three steps, in the caller's one snapshot."""
    if request.around is None:
        return _plain(tx, request)
    anchor: Chunk | None = None
    if '\x00' not in request.around:
        row = tx.execute("SELECT body FROM records WHERE kind = 'chunk' AND id = %s", (request.around,)).fetchone()
        anchor = _chunk(row[0]) if row else None
    probe = request.section_probe()
    if anchor is None and probe is not None:
        anchor = next(iter(_plain(tx, probe)), None)
    return [] if anchor is None else _plain(tx, request.window(anchor))


def document_page(tx: Tx, request: DocumentPageRequest, scope: Compiled) -> DocumentPage:
    """Documents with an in-scope chunk: chunk and section counts from ids and positions, no text read."""
    if request.document_id is not None and '\x00' in request.document_id:
        return DocumentPage((), 0)
    rows = tx.execute(
        'WITH s AS (SELECT document_id, section_ids FROM records '
        f"WHERE kind = 'chunk' AND (%(doc)s::text IS NULL OR document_id = %(doc)s::text) AND {scope.sql}), "
        'c AS (SELECT document_id, count(*) AS n FROM s GROUP BY document_id), '
        'x AS (SELECT document_id, count(DISTINCT sid) AS m FROM s, unnest(section_ids) AS sid GROUP BY document_id) '
        'SELECT d.id, d.title, d.uri, c.n, COALESCE(x.m, 0), d.metadata::text FROM c JOIN documents AS d ON d.id = c.document_id '
        'LEFT JOIN x ON x.document_id = c.document_id',
        {**scope.params, 'doc': request.document_id},
    )
    summaries = [
        DocumentSummary(str(i), str(title), str(uri), int(n), int(m), json.loads(md))
        for i, title, uri, n, m, md in rows
        if title_matches(str(title), request.title_contains)
    ]
    summaries.sort(key=lambda s: document_order(s.title, s.id))
    return DocumentPage(tuple(summaries[request.offset : request.offset + request.limit]), len(summaries))


def outlines(tx: Tx, request: OutlineRequest) -> list[ChunkOutline]:
    scope = compile_filter(request.filter, alias='r.')
    for value in (request.document_id, request.section_id, request.section_title):
        if value is not None and '\x00' in value:
            return []
    rows = tx.execute(
        'SELECT r.id, r.document_id, d.title, r.sequence_number, r.section_ids, r.section_path '
        "FROM records AS r JOIN documents AS d ON d.id = r.document_id WHERE r.kind = 'chunk' "
        'AND (%(doc)s::text IS NULL OR r.document_id = %(doc)s::text) '
        'AND (%(section)s::text IS NULL OR r.section_ids @> ARRAY[%(section)s::text]) '
        'AND (%(title)s::text IS NULL OR r.section_path @> ARRAY[%(title)s::text]) '
        f'AND {scope.sql} ORDER BY r.document_id COLLATE "C", r.sequence_number LIMIT %(limit)s',
        {
            **scope.params,
            'doc': request.document_id,
            'section': request.section_id,
            'title': request.section_title,
            'limit': request.limit,
        },
    )
    return [ChunkOutline(i, doc, title, int(seq), tuple(sids), tuple(path)) for i, doc, title, seq, sids, path in rows]


def section_page(tx: Tx, request: SectionReadRequest, scope: Compiled) -> SectionPage:
    for value in (request.document_id, request.section_id):
        if value is not None and '\x00' in value:
            return SectionPage((), 0)
    params: Mapping[str, Any] = {
        **scope.params,
        'doc': request.document_id,
        'section': request.section_id,
        'offset': request.offset,
        'limit': request.limit,
    }
    where = (
        "kind = 'chunk' AND (%(doc)s::text IS NULL OR document_id = %(doc)s::text) "
        'AND (%(section)s::text IS NULL OR section_ids @> ARRAY[%(section)s::text]) '
        f'AND {scope.sql}'
    )
    total = tx.execute(f'SELECT count(*) FROM records WHERE {where}', params).fetchone()
    rows = tx.execute(
        f'SELECT body FROM records WHERE {where} ORDER BY sequence_number, document_id COLLATE "C", id '
        'OFFSET %(offset)s LIMIT %(limit)s',
        params,
    )
    return SectionPage(tuple(_chunk(body) for (body,) in rows), int(total[0]) if total else 0)
