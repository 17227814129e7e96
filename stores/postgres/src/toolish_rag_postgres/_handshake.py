"""What identifies a ``postgres:`` store for `toolish-rag mcp`'s handshake cache, read without opening the store.

The cache keeps the instructions each start computes, keyed by what they depend on
(docs/mcp.md#start-up-time). A spec's location does not identify a PostgreSQL store: two servers
(or a database dropped and created again) answer at one URL. So the key is the server's system
identifier, the database's name and OID, the store schema's OID and its manifest, read in one
connection; for ``postgres:./folder`` the system identifier in the data folder's ``pg_control``
(the embedded server is not started for it). Only ``psycopg`` is imported.
"""

from __future__ import annotations

import struct
import uuid
from pathlib import Path
from typing import Any

__all__ = ['handshake_key']

_IDENTITY = (
    'SELECT (SELECT system_identifier FROM pg_control_system()), pg_postmaster_start_time()::text, '
    'current_database(), (SELECT oid FROM pg_database WHERE datname = current_database()), '
    'to_regnamespace(%(schema)s)::oid, to_regclass(%(meta)s) IS NOT NULL'
)


def handshake_key(location: str, schema: str = 'toolish_rag') -> list[Any]:
    """The identity of the store a ``postgres:LOCATION`` spec opens (``schema``: the spec's, the default)."""
    from ._spec import DATA_FOLDER, is_server

    location = location.strip()
    if is_server(location):
        return _server_identity(location, schema)
    control = Path(location).expanduser().resolve() / DATA_FOLDER / 'global' / 'pg_control'
    try:
        (system,) = struct.unpack('<Q', control.read_bytes()[:8])  # ControlFileData begins with it
    except (OSError, struct.error):
        return ['folder', str(control.parents[1]), None]  # no server yet: the first start builds first
    return ['folder', str(control.parents[1]), system, schema]


def _server_identity(conninfo: str, schema: str) -> list[Any]:
    import psycopg
    from psycopg import sql

    try:
        with psycopg.connect(conninfo, autocommit=True, connect_timeout=5) as conn:
            row = conn.execute(_IDENTITY, {'schema': schema, 'meta': f'{schema}.meta'}).fetchone()
            assert row is not None
            system, started, database, database_oid, schema_oid, has_meta = row
            manifest = None
            if has_meta:
                query = sql.SQL("SELECT value::text FROM {}.meta WHERE key = 'manifest'").format(sql.Identifier(schema))
                found = conn.execute(query).fetchone()
                manifest = found[0] if found is not None else None
    except psycopg.Error:
        return ['unreachable', uuid.uuid4().hex]  # never a cache hit: the start builds first, and says why it fails
    # The start time stands in for the system identifier only where a role may not read it.
    return ['server', system if system is not None else started, database, database_oid, schema, schema_oid, manifest]
