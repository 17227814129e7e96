"""A text search remembers each scope's census of languages and the BM25 statement checks it.

With the ``'auto'`` analyzer a query is read in the languages of the scope's records. The census a
search remembers goes stale when writes add a language; the statement counts it again in its own
scan and a search whose languages would change runs again, so every answer equals the one a store
object that remembers nothing gives (docs/stores/postgres.md, Text search).
"""

from __future__ import annotations

import uuid

import psycopg

from toolish_rag import Document, DocumentBuilder, PropertyFilter as F, SearchRequest
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag_postgres import PostgresStore

GERMAN = 'Die Rückerstattung wird innerhalb von dreißig Tagen nach dem Antrag gezahlt, sagt die Richtlinie.'
ENGLISH = 'Refunds are paid within thirty days of the request, the policy says, and never later than that.'


def _doc(name: str, tenant: str, text: str) -> Document:
    b = DocumentBuilder(f'file:///{name}.md', name, metadata={'tenant': tenant})
    b.add_chunk(None, text)
    return b.build()


async def _hits(store: PostgresStore, query: str, tenant: str) -> list[tuple[str, float]]:
    return [(h.id, h.score) for h in await store.text_search(SearchRequest(query, 5, F.eq('tenant', tenant)))]


async def test_a_stale_census_is_caught_by_the_statement(postgres_uri: str) -> None:
    schema = f't_{uuid.uuid4().hex[:12]}'
    store = PostgresStore(postgres_uri, schema=schema, embedder=HashingEmbeddingModel(32))
    await store.upsert([_doc('en', 'acme', ENGLISH), _doc('other', 'globex', GERMAN)])
    query = 'Wann wird die Rückerstattung gezahlt?'
    assert await _hits(store, query, 'acme') == []  # acme holds English only: the German stems match nothing
    await store.upsert([_doc('de', 'acme', GERMAN)])
    fresh = PostgresStore(postgres_uri, schema=schema, embedder=HashingEmbeddingModel(32))
    want = await _hits(fresh, query, 'acme')
    assert want and await _hits(store, query, 'acme') == want  # the remembered census said English only
    assert await _hits(store, query, 'acme') == want
    store.close()


async def test_opening_a_store_without_the_census_index_builds_it(postgres_uri: str) -> None:
    """An unscoped search's count, mean length and census read ``records (language) INCLUDE (length)`` (an
    index-only scan instead of the table); a store written before it gets it when opened, answers unchanged."""
    schema = f't_{uuid.uuid4().hex[:12]}'
    store = PostgresStore(postgres_uri, schema=schema, embedder=HashingEmbeddingModel(32))
    await store.upsert([_doc('en', 'acme', ENGLISH), _doc('de', 'globex', GERMAN)])
    want = [(h.id, h.score) for h in await store.text_search(SearchRequest('refunds paid', 5))]
    store.close()
    find = 'SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND indexname = %s'
    with psycopg.connect(postgres_uri, autocommit=True) as conn:
        assert conn.execute(find, (schema, 'records_census')).fetchone() is not None
        conn.execute(f'DROP INDEX "{schema}".records_census')
    reopened = PostgresStore(postgres_uri, schema=schema, embedder=HashingEmbeddingModel(32))
    assert want and [(h.id, h.score) for h in await reopened.text_search(SearchRequest('refunds paid', 5))] == want
    reopened.close()
    with psycopg.connect(postgres_uri, autocommit=True) as conn:
        row = conn.execute(find, (schema, 'records_census')).fetchone()
    assert row is not None and 'INCLUDE (length)' in row[0]
