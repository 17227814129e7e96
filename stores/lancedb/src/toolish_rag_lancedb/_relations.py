"""The graph's write side (`toolish_rag.protocols.GraphStore`): relations and the builders' ledger.

See docs/stores/lancedb.md (Design notes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from toolish_rag.content import Relation
from toolish_rag.errors import UnsupportedValueError
from toolish_rag.writes import int64_problem

from ._filters import column_type, has_literal, metadata_columns, sql_string
from ._schema import MARKS_SCHEMA, RELATION_COLUMNS, in_lists, relation_from_row, relation_table
from ._tables import Tables

__all__ = [
    'check_relations',
    'delete_relations',
    'list_relations',
    'read_marks',
    'set_marks',
    'unlink_documents',
    'write_relations',
]

_ID_FIELDS = ('id', 'source', 'target', 'document_id', 'origin')
"""Fields the store looks relations up by in SQL: each needs a string literal (no NUL)."""


def check_relations(relations: Sequence[Relation]) -> None:
    """Refuse relations holding a value the table cannot hold, before anything is written.

    The rule chunks follow (`toolish_rag.writes.check_storable`: 64-bit integers, valid UTF-8)
    for metadata, plus a SQL literal for every id the store queries by. Raises
    `UnsupportedValueError` naming the relation and the key or field.
    """
    for relation in relations:
        where = f'relation {relation.id!r}'
        for name in _ID_FIELDS:
            value = getattr(relation, name)
            if value is not None and not has_literal(value):
                raise UnsupportedValueError(f'{name} of {where}: a NUL character cannot be stored in an id', key=name)
        for key, value in relation.metadata.items():
            for element in value if isinstance(value, list) else [value]:
                reason = None if element is None else int64_problem(element)
                if reason is not None:
                    raise UnsupportedValueError(f'metadata {key!r} of {where}: {reason}', key=key)


async def write_relations(tables: Tables, relations: Sequence[Relation]) -> None:
    """Insert or replace relations by id (one commit), adding the typed metadata columns they need."""
    await tables.create_relations()
    table = tables.relations
    schema = await table.schema()
    wanted: set[str] = set()
    for relation in relations:
        wanted.update(metadata_columns(relation.metadata))
    missing = sorted(wanted - set(schema.names))
    if missing:
        await table.add_columns(pa.schema([pa.field(n, column_type(n.rsplit('__', 1)[1])) for n in missing]))
        schema = await table.schema()
    data = relation_table(relations, schema)
    await table.merge_insert('id').when_matched_update_all().when_not_matched_insert_all().execute(data)


async def unlink_documents(tables: Tables, document_ids: Sequence[str]) -> None:
    """Remove these documents' ledger marks (every builder's) and then their relations.

    The first commits of a document's upsert or deletion (see docs/stores/lancedb.md, Graph writes, for why
    first, and why marks before relations).
    """
    for batch in in_lists(document_ids):
        if tables.marks is not None:
            await tables.marks.delete(f'key IN {batch}')
    for batch in in_lists(document_ids):
        if tables.relations is not None:
            await tables.relations.delete(f'document_id IN {batch}')


async def list_relations(tables: Tables, document_ids: Sequence[str] | None, origin: str | None) -> list[Relation]:
    """Stored relations of these documents (``None``: all) and origin (``None``: any), by id."""
    table = await tables.relations_for_read()
    if table is None or (origin is not None and not has_literal(origin)):
        return []
    scopes: list[str | None] = [None]
    if document_ids is not None:
        scopes = [f'document_id IN {batch}' for batch in in_lists([i for i in document_ids if has_literal(i)])]
    found: dict[str, Relation] = {}
    for scope in scopes:
        parts = [p for p in (scope, None if origin is None else f'origin = {sql_string(origin)}') if p]
        query = table.query().select(RELATION_COLUMNS)
        if parts:
            query = query.where(' AND '.join(parts))
        for row in (await query.to_arrow()).to_pylist():
            found[row['id']] = relation_from_row(row)
    return [found[i] for i in sorted(found)]


async def delete_relations(tables: Tables, ids: Sequence[str]) -> int:
    """Delete relations by id; how many of them were stored."""
    table = tables.relations
    existed = 0
    if table is None:
        return 0
    for batch in in_lists([i for i in ids if has_literal(i)]):
        count = int(await table.count_rows(f'id IN {batch}'))
        if count:
            existed += count
            await table.delete(f'id IN {batch}')
    return existed


async def read_marks(tables: Tables, builder: str) -> dict[str, str]:
    """The ledger of ``builder``: key -> value."""
    table = await tables.marks_for_read()
    if table is None or not has_literal(builder):
        return {}
    rows = await table.query().where(f'builder = {sql_string(builder)}').select(['key', 'value']).to_arrow()
    return {row['key']: row['value'] for row in rows.to_pylist()}


async def set_marks(tables: Tables, builder: str, marks: Mapping[str, str | None]) -> None:
    """Set (or, with ``None``, delete) ledger keys of ``builder``: one commit.

    Raises ``ValueError`` for a builder name or key holding a NUL (no SQL literal carries it).
    """
    for name in (builder, *marks):
        sql_string(name)  # refuse what could not be looked up again before writing anything
    rows: list[dict[str, Any]] = [
        {'builder': builder, 'key': key, 'value': value} for key, value in marks.items() if value is not None
    ]
    dropped = [key for key, value in marks.items() if value is None]
    if tables.marks is None:
        if not rows:
            return
        await tables.create_marks()
    table = tables.marks
    gone = ' OR '.join(f'key IN {batch}' for batch in in_lists(dropped))
    gone_where = f'builder = {sql_string(builder)} AND ({gone})' if gone else None
    if not rows:
        if gone_where is not None:
            await table.delete(gone_where)
        return
    merge = table.merge_insert(['builder', 'key']).when_matched_update_all().when_not_matched_insert_all()
    if gone_where is not None:
        merge = merge.when_not_matched_by_source_delete(gone_where)
    await merge.execute(pa.Table.from_pylist(rows, schema=MARKS_SCHEMA))
