"""`PostgresStore.upgrade`: bring a store's tables written by an older toolish-rag-postgres to the current layout.

The layout's version is recorded in ``meta`` (``schema_version``, `toolish_rag_postgres._schema.SCHEMA_VERSION`).
A store without one predates the record: each step below checks the catalog for what it changes,
so it runs only where needed, and all of them run in one transaction under the store's advisory
lock: a crash leaves the old layout, a second run does nothing. Records and vectors are kept.
See docs/stores/postgres.md (Upgrades and migrations).
"""

from __future__ import annotations

import json

from ._database import Tx
from ._schema import SCHEMA_VERSION

__all__ = ['NewerSchema', 'recorded_version', 'upgrade_schema']


class NewerSchema(RuntimeError):
    """The store was written by a newer toolish-rag-postgres (its schema version is above this one's)."""


def recorded_version(tx: Tx, location: str) -> int | None:
    """The schema version ``meta`` records (``None``: written before it was recorded); a newer one is refused."""
    row = tx.execute("SELECT value::text FROM meta WHERE key = 'schema_version'").fetchone()
    version = int(json.loads(row[0])) if row is not None else None
    if version is not None and version > SCHEMA_VERSION:
        raise NewerSchema(
            f'{location} has schema version {version}, written by a newer toolish-rag-postgres (this one reads '
            f'{SCHEMA_VERSION}): upgrade toolish-rag-postgres to open it'
        )
    return version


def _columns(tx: Tx, table: str) -> set[str]:
    rows = tx.execute(
        'SELECT attname FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attnum > 0 AND NOT attisdropped',
        (table,),
    )
    return {str(name) for (name,) in rows}


def _counts_from_tf(tx: Tx) -> list[str]:
    """BM25's term counts moved from a ``tf jsonb`` object to ``counts integer[]`` beside ``tokens``."""
    columns = _columns(tx, 'records')
    if 'tf' not in columns:
        return []
    if 'counts' not in columns:
        tx.execute('ALTER TABLE records ADD COLUMN counts integer[]')
    tx.execute(
        'UPDATE records SET counts = ARRAY(SELECT (tf ->> t)::integer FROM unnest(tokens) WITH ORDINALITY AS u(t, n) '
        'ORDER BY n) WHERE counts IS NULL'
    )
    tx.execute('ALTER TABLE records ALTER COLUMN counts SET NOT NULL')
    tx.execute('ALTER TABLE records DROP COLUMN tf')
    return ['records: term counts moved from tf (jsonb) to counts (integer[])']


def upgrade_schema(tx: Tx, schema: str, location: str) -> list[str]:
    """Every step an older layout needs, then the current version recorded: what was done (``[]``: current)."""
    tx.execute('SELECT pg_advisory_xact_lock(hashtext(%s))', (f'toolish_rag:{schema}',))
    if recorded_version(tx, location) == SCHEMA_VERSION:
        return []
    done = _counts_from_tf(tx)
    tx.execute(
        "INSERT INTO meta (key, value) VALUES ('schema_version', %s::jsonb) "
        'ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value',
        (str(SCHEMA_VERSION),),
    )
    return [*done, f'recorded schema version {SCHEMA_VERSION}']
