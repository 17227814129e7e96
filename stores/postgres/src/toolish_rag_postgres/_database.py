"""Connections: one pool per server (shared by the stores on it), and the transaction every call runs in.

psycopg 3 (binary) on a thread: a call takes a pooled connection, opens one transaction, sets
its ``search_path``, ``statement_timeout`` and (in row-level-security mode) its role and
``toolish.scope`` with ``set_config(..., true)`` (transaction-local; ``SET LOCAL`` takes no bind
parameter), runs, and commits. Reads run ``REPEATABLE READ, READ ONLY``: every statement of one
answer sees one snapshot. See docs/stores/postgres.md.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool

__all__ = ['Database', 'Tx', 'close_pool', 'close_pools', 'redacted']

_T = TypeVar('_T')
Tx = psycopg.Connection[tuple[Any, ...]]

_POOLS: dict[str, ConnectionPool[Tx]] = {}
_POOLS_LOCK = threading.Lock()


def redacted(conninfo: str) -> str:
    """``conninfo`` without its password, for messages and manifests (a spec's password is never shown)."""
    try:
        params = psycopg.conninfo.conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError:
        return '<unparsable connection string>'
    params.pop('password', None)
    return psycopg.conninfo.make_conninfo('', **{k: v for k, v in params.items() if v is not None})


def _pool(conninfo: str, max_size: int) -> ConnectionPool[Tx]:
    with _POOLS_LOCK:
        pool = _POOLS.get(conninfo)
        if pool is None or pool.closed:
            pool = ConnectionPool(
                conninfo, min_size=1, max_size=max_size, kwargs={'autocommit': True}, open=True, name='toolish-rag'
            )
            _POOLS[conninfo] = pool
        return pool


@dataclass(frozen=True)
class Database:
    """Where a store's tables are: a server (``conninfo``), a schema, and how each call is bounded."""

    conninfo: str
    search_path: str
    statement_timeout_ms: int = 30_000
    reader_role: str | None = None
    """Row-level-security mode: reads run as this role (see `toolish_rag_postgres._schema.enable_row_security`)."""
    scope_keys: tuple[str, ...] = ()
    max_connections: int = 8

    def run_sync(
        self,
        work: Callable[[Tx], _T],
        *,
        write: bool = False,
        scope: Mapping[str, Sequence[Any]] | None = None,
        timeout_ms: int | None = None,
    ) -> _T:
        """``work`` in one transaction on a pooled connection (see the module docstring)."""
        with _pool(self.conninfo, self.max_connections).connection() as conn, conn.transaction():
            timeout = str(timeout_ms if timeout_ms is not None else self.statement_timeout_ms)
            setup = sql.SQL("{}SELECT set_config('search_path', {}, true), set_config('statement_timeout', {}, true)")
            isolation = '' if write else 'SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY; '
            # One round trip; both values are the store's own settings, quoted as literals.
            conn.execute(setup.format(sql.SQL(isolation), sql.Literal(self.search_path), sql.Literal(timeout)))
            if not write and self.reader_role is not None:
                conn.execute(sql.SQL('SET LOCAL ROLE {}').format(sql.Identifier(self.reader_role)))
                conn.execute("SELECT set_config('toolish.scope', %s, true)", (json.dumps(dict(scope or {})),))
            return work(conn)

    async def run(
        self,
        work: Callable[[Tx], _T],
        *,
        write: bool = False,
        scope: Mapping[str, Sequence[Any]] | None = None,
        timeout_ms: int | None = None,
    ) -> _T:
        """`run_sync` on a thread: psycopg's blocking calls never stall the agent's event loop."""
        return await asyncio.to_thread(self.run_sync, work, write=write, scope=scope, timeout_ms=timeout_ms)


def close_pool(conninfo: str) -> None:
    """Close the pool of one server, if this process opened one."""
    with _POOLS_LOCK:
        pool = _POOLS.pop(conninfo, None)
    if pool is not None:
        pool.close()


def close_pools() -> None:
    """Close every pool this process opened (tests, and a process that wants its connections back now)."""
    with _POOLS_LOCK:
        pools = list(_POOLS.values())
        _POOLS.clear()
    for pool in pools:
        pool.close()
