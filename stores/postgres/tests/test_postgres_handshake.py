"""`toolish-rag mcp`'s handshake cache keys a ``postgres:`` store by its database's identity, not its spec's text.

docs/mcp.md#start-up-time, docs/stores/postgres.md (MCP).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from toolish_rag.cli._mcp_startup import _store_key
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag_postgres import PostgresStore


def _on(uri: str, database: str) -> str:
    params = {k: v for k, v in psycopg.conninfo.conninfo_to_dict(uri).items() if v is not None}
    return psycopg.conninfo.make_conninfo('', **{**params, 'dbname': database})


@pytest.fixture
def databases(postgres_uri: str) -> Iterator[list[str]]:
    """Names of databases the test creates on the session's server (dropped after it)."""
    names: list[str] = []
    yield names
    from toolish_rag_postgres._database import close_pools

    close_pools()
    with psycopg.connect(postgres_uri, autocommit=True) as conn:
        for name in names:
            conn.execute(sql.SQL('DROP DATABASE IF EXISTS {} WITH (FORCE)').format(sql.Identifier(name)))


def _create(postgres_uri: str, name: str) -> str:
    with psycopg.connect(postgres_uri, autocommit=True) as conn:
        conn.execute(sql.SQL('DROP DATABASE IF EXISTS {} WITH (FORCE)').format(sql.Identifier(name)))
        conn.execute(sql.SQL('CREATE DATABASE {}').format(sql.Identifier(name)))
    with psycopg.connect(_on(postgres_uri, name), autocommit=True) as conn:
        conn.execute('CREATE EXTENSION IF NOT EXISTS vector')
    return _on(postgres_uri, name)


async def test_the_key_is_the_databases_identity(postgres_uri: str, databases: list[str]) -> None:
    one, two = f'toolish_hs_{uuid.uuid4().hex[:8]}', f'toolish_hs_{uuid.uuid4().hex[:8]}'
    databases += [one, two]
    first, second = _create(postgres_uri, one), _create(postgres_uri, two)
    key = _store_key(f'postgres:{first}')
    assert key == _store_key(f'postgres:{first}')  # read again: the same (a later start hits the cache)
    assert key != _store_key(f'postgres:{second}')  # another database on the server
    with psycopg.connect(first) as conn:
        row = conn.execute('SELECT system_identifier FROM pg_control_system()').fetchone()
    assert row is not None and row[0] in key[1]

    store = PostgresStore(first, embedder=HashingEmbeddingModel(32))
    created = _store_key(f'postgres:{first}')  # the schema now exists
    assert created != key
    await store.reembed(HashingEmbeddingModel(16))  # the manifest changes what the instructions may say
    assert _store_key(f'postgres:{first}') != created
    store.close()

    again = _create(postgres_uri, one)  # dropped and created again under its name, at the same URL
    assert again == first and _store_key(f'postgres:{again}') not in (key, created)


def test_an_embedded_folder_is_keyed_by_its_system_identifier(postgres_uri: str, tmp_path: Path) -> None:
    params = psycopg.conninfo.conninfo_to_dict(postgres_uri)
    data = Path(str(params['host']))  # the session's embedded server listens in its data folder
    if data.name != 'pgdata':
        pytest.skip('the tests run on a server given by TOOLISH_RAG_TEST_POSTGRES, not an embedded one')
    with psycopg.connect(postgres_uri) as conn:
        row = conn.execute('SELECT system_identifier FROM pg_control_system()').fetchone()
    assert row is not None
    assert _store_key(f'postgres:{data.parent}') == ['postgres', ['folder', str(data), row[0], 'toolish_rag']]
    assert _store_key(f'postgres:{tmp_path}') == ['postgres', ['folder', str(tmp_path / 'pgdata'), None]]


def test_an_unreachable_server_never_hits_the_cache(tmp_path: Path) -> None:
    spec = f'postgres:postgresql://someone:pw@/nowhere?host={tmp_path}'
    first, second = _store_key(spec), _store_key(spec)
    assert first[1][0] == 'unreachable' and first != second
