"""Range indexes: btree indexes serving ``gt``/``gte``/``lt``/``lte`` on metadata keys the user declares.

A range filter compiles to a cheap jsonpath test AND a comparison with the least (``lt``, ``lte``) or
greatest (``gt``, ``gte``) number or string among the key's elements (`toolish_rag_postgres._filters`;
``toolish_number_bound`` / ``toolish_string_bound`` in `toolish_rag_postgres._schema`): both are exact, a list
matching by any element. For a declared key (``PostgresStore(..., indexed_keys=['published'])``) four
expression indexes on those bounds let the planner read only the rows in range; every other key is
tested row by row with the jsonpath test. See docs/stores/postgres.md (Range filters).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import psycopg
from psycopg import sql

__all__ = ['create_range_indexes', 'range_index_names']

_BOUNDS = (
    ('nmin', 'toolish_number_bound', 'FALSE', ''),
    ('nmax', 'toolish_number_bound', 'TRUE', ''),
    ('smin', 'toolish_string_bound', 'FALSE', ' COLLATE "C"'),
    ('smax', 'toolish_string_bound', 'TRUE', ' COLLATE "C"'),
)


def range_index_names(key: str) -> list[str]:
    """The names of ``key``'s four range indexes (``records_range_<key>_<hash>_<bound>``, within 63 bytes)."""
    digest = hashlib.sha256(key.encode()).hexdigest()[:8]
    return [f'records_range_{key[:32]}_{digest}_{name}' for name, *_ in _BOUNDS]


def create_range_indexes(conn: psycopg.Connection[tuple[object, ...]], schema: str, keys: Sequence[str]) -> None:
    """The range indexes of ``keys`` that are missing, built in one transaction under the store's advisory lock.

    A build reads the whole table and holds writers off until it commits (``CREATE INDEX``, not
    ``CONCURRENTLY``; then ``ANALYZE``, so that the planner knows the new expressions' values): declare keys
    when the store is created, or open it once with them at a quiet time.
    """
    with conn.transaction():
        conn.execute('SELECT pg_advisory_xact_lock(hashtext(%s))', (f'toolish_rag:{schema}',))
        built = False
        for key in keys:
            for index, (_, function, top, collate) in zip(range_index_names(key), _BOUNDS, strict=True):
                found = conn.execute('SELECT to_regclass(%s) IS NOT NULL', (sql.Identifier(index).as_string(conn),))
                row = found.fetchone()
                if row is not None and row[0]:
                    continue
                conn.execute(
                    sql.SQL('CREATE INDEX {} ON records (({}(metadata -> {}, {})){})').format(
                        sql.Identifier(index),
                        sql.Identifier(function),
                        sql.Literal(key),
                        sql.SQL(top),
                        sql.SQL(collate),
                    )
                )
                built = True
        if built:  # the planner's statistics of the new expressions, so that it knows when they are selective
            conn.execute('ANALYZE records')
