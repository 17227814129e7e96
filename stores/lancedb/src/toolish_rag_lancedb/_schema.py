"""The tables' Arrow schemas, and how records, documents and relations map to their rows and back.

See docs/stores/lancedb.md (Design notes).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from toolish_rag.analysis import TextAnalyzer
from toolish_rag.content import Chunk, Document, Entity, Record, Relation, Section
from toolish_rag.protocols import DocumentInfo
from toolish_rag.regex import regex_text
from toolish_rag.writes import check_storable

from ._filters import metadata_columns, sql_string
from ._text_query import WORDS_COLUMN

__all__ = [
    'DOCUMENTS_SCHEMA',
    'DOCUMENTS_TABLE',
    'FORMAT_VERSION',
    'IN_LIST_BATCH',
    'MARKS_SCHEMA',
    'MARKS_TABLE',
    'META_DIMS',
    'META_MODEL',
    'PENDING_FIELDS',
    'RECORDS_TABLE',
    'RELATIONS_SCHEMA',
    'RELATIONS_TABLE',
    'RELATION_COLUMNS',
    'RESULT_COLUMNS',
    'META_TEXT_ANALYZER',
    'check_storable',
    'document_from_row',
    'document_info',
    'document_table',
    'in_list',
    'in_lists',
    'record_from_row',
    'record_table',
    'records_schema',
    'relation_from_row',
    'relation_table',
    'saved_text_analyzer',
    'with_words',
]

RECORDS_TABLE = 'records'
DOCUMENTS_TABLE = 'documents'
RELATIONS_TABLE = 'relations'
MARKS_TABLE = 'graph_marks'
FORMAT_VERSION = '1'
META_DIMS = b'toolish_rag.embedding_dims'
META_MODEL = b'toolish_rag.embedding_model'
_META_FORMAT = b'toolish_rag.format'
META_TEXT_ANALYZER = b'toolish_rag.text_analyzer'
"""Schema metadata: the `TextAnalyzer.identity` whose tokens ``words`` holds (absent: LanceDB's own FTS analyzer)."""

RESULT_COLUMNS = ['id', 'kind', 'text', 'urtext', 'payload', 'metadata_json', 'labels']
"""What a search reads per hit: enough for `record_from_row`, and no vector."""
_PAYLOAD_EXCLUDE = {'id', 'text', 'urtext', 'metadata', 'labels'}

IN_LIST_BATCH = 1000
"""Ids per ``IN (...)`` clause: longer lists are split into several queries."""


def records_schema(dims: int, model_name: str) -> pa.Schema:
    """The records table's schema for ``dims``-dimensional embeddings from ``model_name``."""
    return pa.schema(
        [
            pa.field('id', pa.string(), nullable=False),
            pa.field('kind', pa.string(), nullable=False),
            pa.field('document_id', pa.string()),
            pa.field('text', pa.string()),
            pa.field('urtext', pa.string()),
            pa.field('sequence_number', pa.int64()),
            pa.field('section_ids', pa.list_(pa.string())),
            pa.field('labels', pa.list_(pa.string())),
            pa.field('metadata_json', pa.string()),
            pa.field('payload', pa.string()),
            pa.field('vector', pa.list_(pa.float32(), dims)),
        ],
        metadata={
            META_DIMS: str(dims).encode(),
            META_MODEL: model_name.encode(),
            _META_FORMAT: FORMAT_VERSION.encode(),
        },
    )


def with_words(schema: pa.Schema, analyzer: TextAnalyzer) -> pa.Schema:
    """``schema`` plus the ``words`` column ``analyzer``'s tokens fill, and its identity in the metadata."""
    return schema.append(pa.field(WORDS_COLUMN, pa.string())).with_metadata(
        {**(schema.metadata or {}), META_TEXT_ANALYZER: analyzer.identity.encode()}
    )


def saved_text_analyzer(schema: pa.Schema) -> TextAnalyzer | None:
    """The analyzer a records table was built with (``None``: LanceDB's own English FTS analyzer)."""
    identity = (schema.metadata or {}).get(META_TEXT_ANALYZER)
    return None if identity is None else TextAnalyzer.from_identity(identity.decode())


PENDING_FIELDS = ('pending_version', 'previous_json')
"""A documents row written before its chunks carries the records-table version it was written
at and the row it replaces (JSON, ``NULL`` for a new document); see `toolish_rag_lancedb._settling`."""

DOCUMENTS_SCHEMA = pa.schema(
    [
        pa.field('id', pa.string(), nullable=False),
        pa.field('uri', pa.string()),
        pa.field('title', pa.string()),
        pa.field('fingerprint', pa.string()),
        pa.field('metadata_json', pa.string()),
        pa.field('labels', pa.list_(pa.string())),
        pa.field('sections_json', pa.string()),
        pa.field('chunk_count', pa.int64()),
        pa.field('pending_version', pa.int64()),
        pa.field('previous_json', pa.string()),
    ],
    metadata={_META_FORMAT: FORMAT_VERSION.encode()},
)


def in_list(values: Iterable[str]) -> str:
    """A SQL ``(...)`` list of string literals, for ``IN``."""
    return '(' + ', '.join(sql_string(v) for v in values) + ')'


def in_lists(values: Sequence[str]) -> list[str]:
    """``values`` as SQL ``IN`` lists of at most `IN_LIST_BATCH` each (one query per list)."""
    return [in_list(values[start : start + IN_LIST_BATCH]) for start in range(0, len(values), IN_LIST_BATCH)]


def record_from_row(row: Mapping[str, Any]) -> Record:
    """The record a records row (with at least `RESULT_COLUMNS`) stands for."""
    data: dict[str, Any] = json.loads(row['payload'])
    data['id'] = row['id']
    data['metadata'] = json.loads(row['metadata_json'] or '{}')
    data['labels'] = row['labels'] or []
    if row['kind'] == 'entity':
        return Entity.model_validate(data)
    data['text'] = row['text']
    data['urtext'] = row['urtext']
    return Chunk.model_validate(data)


def record_table(
    records: Sequence[Record],
    vectors: np.ndarray[Any, Any],
    schema: pa.Schema,
    words: Sequence[str] | None = None,
) -> pa.Table:
    """Records rows for ``records`` (embedded as ``vectors``), with every column of ``schema``.

    Typed metadata columns the records do not use stay ``NULL``; the caller has added any
    column they need to ``schema`` first. ``words``: each record's analysed text, for a table
    with a ``words`` column (`with_words`).
    """
    n = len(records)
    columns: dict[str, list[Any]] = {name: [None] * n for name in schema.names if name != 'vector'}
    for i, record in enumerate(records):
        payload = record.model_dump(mode='json', exclude=_PAYLOAD_EXCLUDE)
        columns['id'][i] = record.id
        columns['kind'][i] = record.kind
        columns['text'][i] = record.text
        columns['urtext'][i] = regex_text(record)
        columns['labels'][i] = sorted(record.labels)
        columns['metadata_json'][i] = json.dumps(record.metadata, ensure_ascii=False)
        columns['payload'][i] = json.dumps(payload, ensure_ascii=False)
        if isinstance(record, Chunk):
            columns['document_id'][i] = record.document_id
            columns['sequence_number'][i] = record.sequence_number
            columns['section_ids'][i] = list(record.section_ids)
        else:
            columns['section_ids'][i] = []
        for name, value in metadata_columns(record.metadata).items():
            columns[name][i] = value
    if WORDS_COLUMN in columns:
        if words is None or len(words) != n:
            raise ValueError('this records table indexes analysed words: give each record its words')
        columns[WORDS_COLUMN] = list(words)
    arrays = [
        pa.array(columns[f.name], type=f.type)
        if f.name != 'vector'
        else pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), type=pa.float32()), f.type.list_size)
        for f in schema
    ]
    return pa.Table.from_arrays(arrays, schema=schema)


def document_table(documents: Sequence[Document], *, pending: tuple[int, Mapping[str, str]] | None = None) -> pa.Table:
    """Documents rows for ``documents``; ``pending`` marks them (records version, rows replaced)."""
    rows: list[dict[str, Any]] = [
        {
            'id': d.id,
            'uri': d.uri,
            'title': d.title,
            'fingerprint': d.fingerprint,
            'metadata_json': json.dumps(d.metadata, ensure_ascii=False),
            'labels': sorted(d.labels),
            'sections_json': json.dumps([s.model_dump(mode='json') for s in d.sections], ensure_ascii=False),
            'chunk_count': len(d.chunks),
        }
        for d in documents
    ]
    if pending is not None:
        version, previous = pending
        for row in rows:
            row['pending_version'] = version
            row['previous_json'] = previous.get(row['id'])
    return pa.Table.from_pylist(rows, schema=DOCUMENTS_SCHEMA)


def document_info(row: Mapping[str, Any]) -> DocumentInfo:
    """What ``list_documents`` reports for a (settled) documents row."""
    return DocumentInfo(
        id=row['id'],
        uri=row['uri'],
        title=row['title'],
        fingerprint=row['fingerprint'],
        chunk_count=int(row['chunk_count'] or 0),
        metadata=json.loads(row['metadata_json'] or '{}'),
    )


def document_from_row(row: Mapping[str, Any], chunks: Sequence[Chunk]) -> Document:
    """The whole `Document` of a (settled) documents row, given its stored chunks."""
    return Document(
        id=row['id'],
        uri=row['uri'],
        title=row['title'],
        fingerprint=row['fingerprint'],
        metadata=json.loads(row['metadata_json'] or '{}'),
        labels=frozenset(row['labels'] or []),
        sections=tuple(Section.model_validate(s) for s in json.loads(row['sections_json'] or '[]')),
        chunks=tuple(chunks),
    )


RELATIONS_SCHEMA = pa.schema(
    [
        pa.field('id', pa.string(), nullable=False),
        pa.field('source', pa.string(), nullable=False),
        pa.field('source_kind', pa.string(), nullable=False),
        pa.field('target', pa.string(), nullable=False),
        pa.field('target_kind', pa.string(), nullable=False),
        pa.field('type', pa.string(), nullable=False),
        pa.field('weight', pa.float64(), nullable=False),
        pa.field('provenance', pa.string()),
        pa.field('document_id', pa.string()),
        pa.field('origin', pa.string(), nullable=False),
        pa.field('labels', pa.list_(pa.string())),
        pa.field('metadata_json', pa.string()),
    ],
    metadata={_META_FORMAT: FORMAT_VERSION.encode()},
)
"""The relations table as created; typed ``md__*`` metadata columns are added as values need them."""

RELATION_COLUMNS = [f.name for f in RELATIONS_SCHEMA]
"""What `relation_from_row` reads: the whole relation, never the typed filter columns."""

MARKS_SCHEMA = pa.schema(
    [
        pa.field('builder', pa.string(), nullable=False),
        pa.field('key', pa.string(), nullable=False),
        pa.field('value', pa.string(), nullable=False),
    ],
    metadata={_META_FORMAT: FORMAT_VERSION.encode()},
)


def relation_table(relations: Sequence[Relation], schema: pa.Schema) -> pa.Table:
    """Relations rows with every column of ``schema`` (typed metadata columns they do not use are ``NULL``)."""
    rows: list[dict[str, Any]] = []
    for relation in relations:
        row: dict[str, Any] = {name: None for name in schema.names}
        row.update(relation.model_dump(mode='json', exclude={'kind', 'metadata', 'labels'}))
        row['labels'] = sorted(relation.labels)
        row['metadata_json'] = json.dumps(relation.metadata, ensure_ascii=False)
        row.update(metadata_columns(relation.metadata))
        rows.append(row)
    return pa.Table.from_pylist(rows, schema=schema)


def relation_from_row(row: Mapping[str, Any]) -> Relation:
    """The relation a relations row (with at least `RELATION_COLUMNS`) stands for."""
    data = {name: row[name] for name in RELATION_COLUMNS if name not in ('labels', 'metadata_json')}
    return Relation.model_validate(
        {**data, 'labels': row['labels'] or [], 'metadata': json.loads(row['metadata_json'] or '{}')}
    )
