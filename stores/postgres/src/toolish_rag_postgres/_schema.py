"""The tables, indexes and (optionally) row-level-security policies of one store, in its own schema.

A store lives in one PostgreSQL schema (default ``toolish_rag``): ``documents``, ``sections``,
``records`` (chunks and entities, with their vectors, tokens, ``jsonb`` metadata and labels),
``relations`` (the graph), ``graph_marks`` (the builders' ledger) and ``meta`` (the manifest, the
vector size). See docs/stores/postgres.md (Schema, Indexes, Scope and RLS).
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg
from psycopg import sql

__all__ = [
    'SCHEMA_VERSION',
    'create_schema',
    'create_vector_index',
    'enable_row_security',
    'index_vectors',
    'pgvector_missing',
    'search_path',
]

SCHEMA_VERSION = 1
"""The tables' layout this version writes, recorded in ``meta`` (key ``schema_version``) when a store is created.

A store without it was written before the version was recorded (an older layout, e.g. BM25 counts
as ``tf jsonb``): `toolish_rag_postgres._upgrade` brings it current. A later change of the tables
raises it and adds its step there.
"""

_TABLES = """
CREATE TABLE IF NOT EXISTS meta (key text PRIMARY KEY, value jsonb NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    id text PRIMARY KEY,
    uri text NOT NULL,
    title text NOT NULL,
    fingerprint text,
    content_hash text NOT NULL,
    chunk_count integer NOT NULL,
    metadata jsonb NOT NULL DEFAULT '{}',
    labels text[] NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS sections (
    id text PRIMARY KEY,
    document_id text NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    parent_id text,
    title text NOT NULL,
    level integer NOT NULL
);
CREATE TABLE IF NOT EXISTS records (
    id text PRIMARY KEY,
    kind text NOT NULL CHECK (kind IN ('chunk', 'entity')),
    document_id text REFERENCES documents (id) ON DELETE CASCADE,
    sequence_number bigint,
    section_ids text[] NOT NULL DEFAULT '{}',
    section_path text[] NOT NULL DEFAULT '{}',
    metadata jsonb NOT NULL DEFAULT '{}',
    labels text[] NOT NULL DEFAULT '{}',
    body text NOT NULL,
    regex_text text,
    tokens text[] NOT NULL,
    counts integer[] NOT NULL,
    length integer NOT NULL,
    language text NOT NULL,
    embedding vector
);
CREATE INDEX IF NOT EXISTS records_document ON records (document_id, sequence_number);
CREATE INDEX IF NOT EXISTS records_metadata ON records USING gin (metadata jsonb_path_ops);
CREATE INDEX IF NOT EXISTS records_labels ON records USING gin (labels);
CREATE INDEX IF NOT EXISTS records_tokens ON records USING gin (tokens);
CREATE INDEX IF NOT EXISTS records_sections ON records USING gin (section_ids);
CREATE INDEX IF NOT EXISTS records_language ON records (language);
CREATE INDEX IF NOT EXISTS records_census ON records (language) INCLUDE (length);
CREATE TABLE IF NOT EXISTS relations (
    id text PRIMARY KEY,
    source text NOT NULL,
    source_kind text NOT NULL,
    target text NOT NULL,
    target_kind text NOT NULL,
    type text NOT NULL,
    document_id text,
    origin text NOT NULL,
    metadata jsonb NOT NULL DEFAULT '{}',
    labels text[] NOT NULL DEFAULT '{}',
    body text NOT NULL
);
CREATE INDEX IF NOT EXISTS relations_source ON relations (source);
CREATE INDEX IF NOT EXISTS relations_target ON relations (target);
CREATE INDEX IF NOT EXISTS relations_document ON relations (document_id);
CREATE TABLE IF NOT EXISTS graph_marks (
    builder text NOT NULL,
    key text NOT NULL,
    value text NOT NULL,
    PRIMARY KEY (builder, key)
);
CREATE INDEX IF NOT EXISTS graph_marks_key ON graph_marks (key);
CREATE OR REPLACE FUNCTION toolish_elements(value jsonb) RETURNS SETOF jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT e FROM jsonb_array_elements(
        CASE jsonb_typeof(value) WHEN 'array' THEN value ELSE jsonb_build_array(value) END
    ) AS e WHERE jsonb_typeof(e) <> 'null'
$$;
"""


_BOUND = """
CREATE OR REPLACE FUNCTION toolish_{kind}_bound(value jsonb, top boolean) RETURNS {type}
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE e jsonb; v {type}; bound {type};
BEGIN
    FOR e IN SELECT x FROM jsonb_array_elements(
        CASE jsonb_typeof(value) WHEN 'array' THEN value ELSE jsonb_build_array(value) END) AS x LOOP
        IF jsonb_typeof(e) = '{kind}' THEN
            v := e #>> '{{}}';
            IF bound IS NULL OR (top AND v{collate} > bound{collate}) OR (NOT top AND v{collate} < bound{collate}) THEN
                bound := v;
            END IF;
        END IF;
    END LOOP;
    RETURN bound;
END $$;
"""
"""``toolish_number_bound`` / ``toolish_string_bound``: the least (or greatest) number / string among a metadata
value's elements (``NULL``: none of that kind), strings in code-point order. "Some element is below ``v``" is "the
least is below ``v``", so a range filter on a key is one comparison with these, which a btree index on them serves
(`toolish_rag_postgres._ranges`). They call only ``pg_catalog`` functions: ``CREATE INDEX`` runs them under a
``search_path`` of ``pg_catalog`` alone (PostgreSQL 17+). They are ``IMMUTABLE`` and indexed: a release that changes
what they return must raise `SCHEMA_VERSION` and ``REINDEX`` the range indexes in its upgrade step."""


def pgvector_missing(database: str) -> str:
    """The one line shown when the database has no pgvector and this role cannot create it."""
    return (
        f'the PostgreSQL database {database!r} has no pgvector: run CREATE EXTENSION vector; in it as a superuser '
        '(pgvector is not a trusted extension, so the role needs superuser rights once), then open the store again'
    )


def create_schema(conn: psycopg.Connection[tuple[object, ...]], schema: str, database: str) -> str:
    """Create the extension (if allowed), the schema and its tables; returns the extension's schema name.

    Runs under a transaction-scoped advisory lock, so two processes opening a new store at once
    do not race on ``CREATE TABLE IF NOT EXISTS`` (which is not atomic against itself).
    """
    with conn.transaction():
        conn.execute('SELECT pg_advisory_xact_lock(hashtext(%s))', (f'toolish_rag:{schema}',))
        found = conn.execute("SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'vector'")
        row = found.fetchone()
    if row is None:
        try:
            with conn.transaction():
                conn.execute('CREATE EXTENSION IF NOT EXISTS vector')
        except (psycopg.errors.InsufficientPrivilege, psycopg.errors.FeatureNotSupported, psycopg.errors.UndefinedFile):
            raise RuntimeError(pgvector_missing(database)) from None
        row = conn.execute(
            "SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'vector'"
        ).fetchone()
        assert row is not None
    extension_schema = str(row[0])
    with conn.transaction():
        conn.execute('SELECT pg_advisory_xact_lock(hashtext(%s))', (f'toolish_rag:{schema}',))
        conn.execute(sql.SQL('CREATE SCHEMA IF NOT EXISTS {}').format(sql.Identifier(schema)))
        conn.execute('SELECT set_config(%s, %s, false)', ('search_path', search_path(schema, extension_schema)))
        fresh = conn.execute("SELECT to_regclass('records') IS NULL").fetchone()
        conn.execute(_TABLES)
        conn.execute(_BOUND.format(kind='number', type='numeric', collate=''))
        conn.execute(_BOUND.format(kind='string', type='text', collate=' COLLATE "C"'))
        if fresh is not None and fresh[0]:  # a new store is current; an older one is brought current by upgrade()
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', %s::jsonb) ON CONFLICT (key) DO NOTHING",
                (str(SCHEMA_VERSION),),
            )
    return extension_schema


def search_path(schema: str, extension_schema: str) -> str:
    """The ``search_path`` every statement of a store runs under: its schema, then pgvector's."""
    names = dict.fromkeys((schema, extension_schema))
    return ', '.join(sql.Identifier(n).as_string() for n in names)


def index_vectors(conn: psycopg.Connection[tuple[object, ...]], dims: int, m: int, ef_construction: int) -> None:
    """Fix the vector column's size and build its HNSW cosine index (once, when the first vectors arrive)."""
    conn.execute(sql.SQL('ALTER TABLE records ALTER COLUMN embedding TYPE vector({})').format(sql.Literal(dims)))
    create_vector_index(conn, m, ef_construction)


def create_vector_index(conn: psycopg.Connection[tuple[object, ...]], m: int, ef_construction: int) -> None:
    """The HNSW cosine index on the (sized) vector column, when missing."""
    conn.execute(
        sql.SQL(
            'CREATE INDEX IF NOT EXISTS records_embedding ON records USING hnsw (embedding vector_cosine_ops) '
            'WITH (m = {}, ef_construction = {})'
        ).format(sql.Literal(m), sql.Literal(ef_construction))
    )


_SCOPE_CONTAINERS = """
CREATE OR REPLACE FUNCTION {schema}.toolish_scope_containers(key text) RETURNS jsonb[]
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT COALESCE(array_agg(c), '{{}}'::jsonb[]) FROM jsonb_array_elements(COALESCE(
        COALESCE(NULLIF(current_setting('toolish.scope', true), '')::jsonb, '{{}}'::jsonb) -> key, '[]'::jsonb
    )) AS v, LATERAL (VALUES (jsonb_build_object(key, v)), (jsonb_build_object(key, jsonb_build_array(v)))) AS t(c)
    WHERE jsonb_typeof(v) <> 'null'
$$
"""
"""The ``jsonb`` objects a row's metadata must contain for one of ``key``'s values in ``toolish.scope``:
``{key: value}`` and ``{key: [value]}`` for each (a scalar, or a list holding it), as the ``eq`` filters compile."""


def _policy(schema: str, keys: Sequence[str]) -> sql.Composable:
    """Admit a row when, for every key, one of its values is among those ``toolish.scope`` names.

    ``metadata @> ANY (...)`` with the array read once (a sub-select): the GIN index on ``metadata``
    serves it, and PostgreSQL applies a policy before any filter whose functions are not ``LEAKPROOF``
    (none of ours are), so an index the policy cannot use leaves every read scanning the whole table.
    """
    tests = [
        sql.SQL('metadata @> ANY ((SELECT {schema}.toolish_scope_containers({key}))::jsonb[])').format(
            schema=sql.Identifier(schema), key=sql.Literal(key)
        )
        for key in keys
    ]
    return sql.SQL(' AND ').join(tests)


def enable_row_security(
    conn: psycopg.Connection[tuple[object, ...]], schema: str, keys: Sequence[str], role: str
) -> None:
    """Row-level security on ``records``: ``role`` (no login, not the owner) reads only rows whose
    ``keys`` match ``toolish.scope``; the owner (the writer) keeps full access through its own policy.

    ``FORCE ROW LEVEL SECURITY`` subjects the table's owner to the policies too, so only roles with
    ``BYPASSRLS`` (superusers) pass them: the store reads as ``role``, which has neither.
    """
    ident = sql.Identifier(role)
    with conn.transaction():
        conn.execute('SELECT pg_advisory_xact_lock(hashtext(%s))', (f'toolish_rag:{schema}',))
        exists = conn.execute('SELECT 1 FROM pg_roles WHERE rolname = %s', (role,)).fetchone()
        if exists is None:
            conn.execute(sql.SQL('CREATE ROLE {} NOLOGIN NOSUPERUSER NOBYPASSRLS').format(ident))
        conn.execute(sql.SQL('GRANT {} TO CURRENT_USER').format(ident))
        conn.execute(sql.SQL('GRANT USAGE ON SCHEMA {} TO {}').format(sql.Identifier(schema), ident))
        conn.execute(sql.SQL('GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}').format(sql.Identifier(schema), ident))
        conn.execute('ALTER TABLE records ENABLE ROW LEVEL SECURITY')
        conn.execute('ALTER TABLE records FORCE ROW LEVEL SECURITY')
        conn.execute('DROP POLICY IF EXISTS toolish_writer ON records')
        conn.execute('CREATE POLICY toolish_writer ON records TO CURRENT_USER USING (true) WITH CHECK (true)')
        conn.execute(sql.SQL(_SCOPE_CONTAINERS.format(schema=sql.Identifier(schema).as_string(conn))))
        conn.execute(sql.SQL('DROP POLICY IF EXISTS toolish_scope ON records'))
        conn.execute(
            sql.SQL('CREATE POLICY toolish_scope ON records FOR SELECT TO {} USING ({})').format(
                ident, _policy(schema, keys)
            )
        )
