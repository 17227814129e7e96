"""Connections: one pool per server (shared by the stores on it), and the transaction every call runs in.

psycopg 3 (binary) on a thread: a call takes a pooled connection, opens one transaction, sets
its ``search_path``, ``statement_timeout`` and (in row-level-security mode) its role and
``toolish.scope`` with ``set_config(..., true)`` (transaction-local; ``SET LOCAL`` takes no bind
parameter), runs, and commits. Reads run ``REPEATABLE READ, READ ONLY``: every statement of one
answer sees one snapshot. A read that is one statement (the searches) runs alone in autocommit, one
round trip: the connection's session settings are set only when they differ from what that
connection last held (`Database.query`), on psycopg's own asynchronous connection (no thread: a
search wakes the event loop once, when its rows arrive). See docs/stores/postgres.md.
"""

from __future__ import annotations

import asyncio
import json
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import psycopg
from psycopg import sql
from psycopg.pq import TransactionStatus
from psycopg_pool import ConnectionPool

__all__ = ['Database', 'Tx', 'close_pool', 'close_pools', 'redacted']

_T = TypeVar('_T')
Tx = psycopg.Connection[tuple[Any, ...]]

_POOLS: dict[str, ConnectionPool[Tx]] = {}
_POOLS_LOCK = threading.Lock()
AsyncTx = psycopg.AsyncConnection[tuple[Any, ...]]
_IDLE: dict[str, list[AsyncTx]] = {}
"""Idle asynchronous connections by server (`Database.query`): each is used by one search at a time, so it is
bound to no event loop (psycopg waits on whichever loop is running)."""
_BUSY: dict[str, int] = {}
_SESSIONS: weakref.WeakKeyDictionary[Tx | AsyncTx, dict[str, str]] = weakref.WeakKeyDictionary()
"""The session settings each pooled connection holds (set with ``set_config(..., false)`` by `Database.query`)."""


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
        settings: Mapping[str, str] | None = None,
    ) -> _T:
        """``work`` in one transaction on a pooled connection (see the module docstring).

        ``settings``: more server settings for this transaction only (``hnsw.ef_search``...).
        """
        with _pool(self.conninfo, self.max_connections).connection() as conn, conn.transaction():
            local = {**self._settings(timeout_ms), **(settings or {})}
            calls = sql.SQL(', ').join(
                sql.SQL('set_config({}, {}, true)').format(sql.Literal(k), sql.Literal(v)) for k, v in local.items()
            )
            isolation = '' if write else 'SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY; '
            # One round trip; every value is the store's own setting, quoted as a literal.
            conn.execute(sql.SQL('{}SELECT {}').format(sql.SQL(isolation), calls))
            if not write and self.reader_role is not None:
                conn.execute(sql.SQL('SET LOCAL ROLE {}').format(sql.Identifier(self.reader_role)))
                conn.execute("SELECT set_config('toolish.scope', %s, true)", (json.dumps(dict(scope or {})),))
            return work(conn)

    def _settings(self, timeout_ms: int | None) -> dict[str, str]:
        timeout = timeout_ms if timeout_ms is not None else self.statement_timeout_ms
        return {
            'search_path': self.search_path,
            'statement_timeout': str(timeout),
            'plan_cache_mode': 'force_custom_plan',
        }

    def query_sync(
        self,
        statement: str,
        params: Mapping[str, Any],
        *,
        scope: Mapping[str, Sequence[Any]] | None = None,
        settings: Mapping[str, str] | None = None,
    ) -> list[tuple[Any, ...]]:
        """One read-only statement's rows: a single statement sees one snapshot, so no transaction is opened.

        The connection's session settings (``search_path``, ``statement_timeout``, ``settings``) are
        set only when they differ from those it holds: a repeated search is one round trip. In
        row-level-security mode the role and scope are transaction-local, so the statement runs
        through `run_sync`.
        """
        if self.reader_role is not None:
            return self.run_sync(lambda tx: tx.execute(statement, params).fetchall(), scope=scope, settings=settings)
        with _pool(self.conninfo, self.max_connections).connection() as conn:
            held = _SESSIONS.setdefault(conn, {})
            changed = {k: v for k, v in {**self._settings(None), **(settings or {})}.items() if held.get(k) != v}
            if changed:  # one statement in autocommit: all of it applies, or none
                conn.execute(
                    sql.SQL('SELECT {}').format(
                        sql.SQL(', ').join(sql.SQL('set_config(%s, %s, false)') for _ in changed)
                    ),
                    [x for kv in changed.items() for x in kv],
                )
                held.update(changed)
            return conn.execute(statement, params).fetchall()

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

    async def query(
        self,
        statement: str,
        params: Mapping[str, Any],
        *,
        scope: Mapping[str, Sequence[Any]] | None = None,
        settings: Mapping[str, str] | None = None,
    ) -> list[tuple[Any, ...]]:
        """`query_sync`'s rows, on an idle asynchronous connection: one wake-up of the event loop, where a thread
        took three (the worker's, the socket's, the loop's). In row-level-security mode, or with ``max_connections``
        searches already running, `query_sync` on a thread."""
        admitted, conn = _checkout(self.conninfo, self.max_connections) if self.reader_role is None else (False, None)
        if not admitted:
            return await asyncio.to_thread(self.query_sync, statement, params, scope=scope, settings=settings)
        try:
            if conn is None:
                conn = await psycopg.AsyncConnection.connect(self.conninfo, autocommit=True)
            held = _SESSIONS.setdefault(conn, {})
            changed = {k: v for k, v in {**self._settings(None), **(settings or {})}.items() if held.get(k) != v}
            if changed:  # as in `query_sync`, but sent with the statement, in one round trip (a pipeline)
                calls = sql.SQL(', ').join(sql.SQL('set_config(%s, %s, false)') for _ in changed)
                async with conn.pipeline():
                    await conn.execute(sql.SQL('SELECT {}').format(calls), [x for kv in changed.items() for x in kv])
                    cursor = await conn.execute(statement, params)
                held.update(changed)
            else:
                cursor = await conn.execute(statement, params)
            rows = await cursor.fetchall()
        except BaseException:  # cancelled or failed mid-statement: its state is unknown, it is not reused
            _checkin(self.conninfo, conn, reuse=False)
            raise
        _checkin(self.conninfo, conn, reuse=True)
        return rows


def _checkout(conninfo: str, most: int) -> tuple[bool, AsyncTx | None]:
    """Whether a search may run on an asynchronous connection to ``conninfo`` (not when ``most`` are busy: it then
    waits on the pool), and an idle one (``None``: open one)."""
    with _POOLS_LOCK:
        if _BUSY.get(conninfo, 0) >= most:
            return False, None
        _BUSY[conninfo] = _BUSY.get(conninfo, 0) + 1
        idle = _IDLE.setdefault(conninfo, [])
        return True, idle.pop() if idle else None


def _checkin(conninfo: str, conn: AsyncTx | None, *, reuse: bool) -> None:
    with _POOLS_LOCK:
        _BUSY[conninfo] = max(_BUSY.get(conninfo, 0) - 1, 0)
        idle = _IDLE.get(conninfo)
        if conn is None:
            return
        if reuse and idle is not None and not conn.closed and conn.info.transaction_status == TransactionStatus.IDLE:
            idle.append(conn)
            return
    conn.pgconn.finish()  # what `AsyncConnection.close` does, without a loop: a pool closed meanwhile is no matter


def _close_idle(conninfo: str | None) -> None:
    with _POOLS_LOCK:
        keys = list(_IDLE) if conninfo is None else [conninfo]
        idle = [c for key in keys for c in _IDLE.pop(key, [])]
    for conn in idle:
        conn.pgconn.finish()


def close_pool(conninfo: str) -> None:
    """Close the pool of one server, if this process opened one."""
    _close_idle(conninfo)
    with _POOLS_LOCK:
        pool = _POOLS.pop(conninfo, None)
    if pool is not None:
        pool.close()


def close_pools() -> None:
    """Close every pool this process opened (tests, and a process that wants its connections back now)."""
    _close_idle(None)
    with _POOLS_LOCK:
        pools = list(_POOLS.values())
        _POOLS.clear()
    for pool in pools:
        pool.close()
