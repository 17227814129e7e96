"""The write side: one transaction per document, idempotent by content, safe beside other writers.

Each document is replaced in its own transaction under a transaction-scoped advisory lock on its
id: a killed writer leaves the document's old version or its new one, never a mix, and two writers
of one document take turns (the last commit wins whole), while writers of different documents run
side by side. An unchanged document (same content hash, which covers its fingerprint) is not embedded
or rewritten again. See docs/stores/postgres.md (Writes).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from toolish_rag import Chunk, Document, Entity, Relation
from toolish_rag.analysis import TextAnalyzer
from toolish_rag.regex import regex_text

from ._database import Tx

__all__ = [
    'RECORD_COLUMNS',
    'Analysed',
    'analyse',
    'content_hash',
    'delete_documents',
    'insert_records',
    'replace_document',
    'replacing',
    'vector_literal',
    'write_relations',
]

RECORD_COLUMNS = (
    'id, kind, document_id, sequence_number, section_ids, section_path, metadata, labels, body, regex_text, '
    'tokens, counts, length, language, embedding'
)
_INSERT_RECORD = (
    f'INSERT INTO records ({RECORD_COLUMNS}) VALUES '
    '(%s, %s, %s, %s, %s::text[], %s::text[], %s::jsonb, %s::text[], %s, %s, %s::text[], %s::int4[], %s, %s, %s::vector) '
    'ON CONFLICT (id) DO UPDATE SET ' + ', '.join(f'{c} = EXCLUDED.{c}' for c in RECORD_COLUMNS.split(', ')[1:])
)


def content_hash(item: Document) -> str:
    """What makes a re-ingest of a document a no-op: the hash of everything it holds."""
    return hashlib.sha256(item.model_dump_json().encode()).hexdigest()


def vector_literal(vector: Sequence[float]) -> str:
    """pgvector's text form of a vector."""
    return '[' + ','.join(repr(float(x)) for x in vector) + ']'


@dataclass(frozen=True)
class Analysed:
    """A record ready to insert: its analyzer tokens and language, and its vector's text."""

    record: Chunk | Entity
    tokens: list[str]
    language: str
    vector: str | None

    def row(self) -> tuple[Any, ...]:
        r = self.record
        counts = Counter(self.tokens)
        text = regex_text(r)
        common = (json.dumps(r.metadata), sorted(r.labels), r.model_dump_json())
        regex = None if '\x00' in text else text  # PostgreSQL text holds no NUL: such a record is matched from its body
        tokens = sorted(counts)  # distinct, with their counts alongside (what BM25 reads)
        tail = (regex, tokens, [counts[t] for t in tokens], len(self.tokens), self.language, self.vector)
        head: tuple[Any, ...]
        if isinstance(r, Chunk):
            head = (r.id, 'chunk', r.document_id, r.sequence_number, list(r.section_ids), list(r.section_path))
        else:
            head = (r.id, 'entity', None, None, [], [])
        return (*head, *common, *tail)


def insert_records(tx: Tx, records: Sequence[Analysed]) -> None:
    if records:
        with tx.cursor() as cursor:
            cursor.executemany(_INSERT_RECORD, [a.row() for a in records])


def _lock(tx: Tx, document_id: str) -> None:
    tx.execute('SELECT pg_advisory_xact_lock(hashtext(%s))', (f'toolish_rag_document:{document_id}',))


def _forget(tx: Tx, document_ids: list[str]) -> int:
    """Remove documents (their records and sections cascade), their relations and ledger keys."""
    tx.execute('DELETE FROM relations WHERE document_id = ANY(%s::text[])', (document_ids,))
    tx.execute('DELETE FROM graph_marks WHERE key = ANY(%s::text[])', (document_ids,))
    return tx.execute('DELETE FROM documents WHERE id = ANY(%s::text[])', (document_ids,)).rowcount


def replace_document(tx: Tx, document: Document, digest: str, records: Sequence[Analysed] | None) -> None:
    """Write ``document`` whole in the caller's transaction (``records`` ``None``: its content is unchanged)."""
    _lock(tx, document.id)
    if records is None:
        tx.execute('DELETE FROM relations WHERE document_id = %s', (document.id,))
        tx.execute('DELETE FROM graph_marks WHERE key = %s', (document.id,))
        return
    _forget(tx, [document.id])
    tx.execute(
        'INSERT INTO documents (id, uri, title, fingerprint, content_hash, chunk_count, metadata, labels) '
        'VALUES (%s, %s, %s, %s, %s, %s, %s::jsonb, %s::text[])',
        (
            document.id,
            document.uri,
            document.title,
            document.fingerprint,
            digest,
            len(document.chunks),
            json.dumps(document.metadata),
            sorted(document.labels),
        ),
    )
    with tx.cursor() as cursor:
        cursor.executemany(
            'INSERT INTO sections (id, document_id, parent_id, title, level) VALUES (%s, %s, %s, %s, %s) '
            'ON CONFLICT (id) DO UPDATE SET document_id = EXCLUDED.document_id, parent_id = EXCLUDED.parent_id, '
            'title = EXCLUDED.title, level = EXCLUDED.level',
            [(s.id, document.id, s.parent_id, s.title, s.level) for s in document.sections],
        )
    insert_records(tx, records)


def replacing(document: Document, digest: str, records: Sequence[Analysed] | None) -> Callable[[Tx], None]:
    """`replace_document` as the work of one transaction."""
    return lambda tx: replace_document(tx, document, digest, records)


def delete_documents(tx: Tx, document_ids: list[str]) -> int:
    for document_id in sorted(set(document_ids)):
        _lock(tx, document_id)
    return _forget(tx, document_ids)


def write_relations(tx: Tx, relations: Sequence[Relation]) -> None:
    rows = [
        (
            r.id,
            r.source,
            r.source_kind,
            r.target,
            r.target_kind,
            r.type,
            r.document_id,
            r.origin,
            json.dumps(r.metadata),
            sorted(r.labels),
            r.model_dump_json(),
        )
        for r in relations
    ]
    if rows:
        with tx.cursor() as cursor:
            cursor.executemany(
                'INSERT INTO relations (id, source, source_kind, target, target_kind, type, document_id, origin, '
                'metadata, labels, body) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s::text[], %s) '
                'ON CONFLICT (id) DO UPDATE SET source = EXCLUDED.source, source_kind = EXCLUDED.source_kind, '
                'target = EXCLUDED.target, target_kind = EXCLUDED.target_kind, type = EXCLUDED.type, '
                'document_id = EXCLUDED.document_id, origin = EXCLUDED.origin, metadata = EXCLUDED.metadata, '
                'labels = EXCLUDED.labels, body = EXCLUDED.body',
                rows,
            )


def analyse(analyzer: TextAnalyzer, records: Sequence[Chunk | Entity], vectors: Sequence[str | None]) -> list[Analysed]:
    """Tokenise ``records`` with the core analyzer (``'auto'`` names each document's language once)."""
    documents = [r.document_id if isinstance(r, Chunk) else r.id for r in records]
    analysis = analyzer.analyse([r.text for r in records], documents)
    return [
        Analysed(r, tokens, language, vector)
        for r, tokens, language, vector in zip(records, analysis.tokens, analysis.languages, vectors, strict=True)
    ]
