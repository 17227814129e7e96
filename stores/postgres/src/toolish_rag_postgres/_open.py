"""Opening a store: connect once, create what is missing, read the manifest, set up row-level security."""

from __future__ import annotations

import json
from dataclasses import dataclass

import psycopg

from toolish_rag.content import validate_metadata_key
from toolish_rag.manifest import StoreManifest

from ._database import Database, redacted
from ._ranges import create_range_indexes
from ._schema import create_schema, enable_row_security, search_path
from ._upgrade import recorded_version

__all__ = ['Opened', 'open_database']


@dataclass(frozen=True)
class Opened:
    database: Database
    manifest: StoreManifest | None
    schema_version: int | None
    """The layout's version ``meta`` records (``None``: older than the record; `PostgresStore.upgrade`)."""


def _connect(conninfo: str) -> psycopg.Connection[tuple[object, ...]]:
    try:
        return psycopg.connect(conninfo, autocommit=True)
    except psycopg.OperationalError:
        # libpq's message can quote the connection string (with its password): name the server only.
        raise ConnectionError(f'cannot connect to PostgreSQL at {redacted(conninfo)}') from None


def open_database(
    conninfo: str,
    schema: str,
    row_security: tuple[str, ...],
    reader_role: str,
    statement_timeout_ms: int,
    indexed_keys: tuple[str, ...] = (),
) -> Opened:
    """The store's `Database` on ``conninfo``, its tables (and the range indexes of ``indexed_keys``) created if
    missing (see `toolish_rag_postgres._schema`, `toolish_rag_postgres._ranges`)."""
    keys = tuple(validate_metadata_key(k) for k in row_security)
    ranged = tuple(validate_metadata_key(k) for k in indexed_keys)
    with _connect(conninfo) as conn:
        database = str(conn.info.dbname)
        extension_schema = create_schema(conn, schema, database)
        if ranged:
            create_range_indexes(conn, schema, ranged)
        if keys:
            enable_row_security(conn, schema, keys, reader_role)
        row = conn.execute("SELECT value::text FROM meta WHERE key = 'manifest'").fetchone()
        version = recorded_version(conn, f'{redacted(conninfo)} (schema {schema})')
    manifest = StoreManifest.from_json(json.loads(str(row[0])), f'{schema}.meta') if row is not None else None
    return Opened(
        Database(
            conninfo,
            search_path(schema, extension_schema),
            statement_timeout_ms,
            reader_role if keys else None,
            keys,
        ),
        manifest,
        version,
    )
