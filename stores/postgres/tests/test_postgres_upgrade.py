"""Re-embedding (`Reembeddable`) and upgrading (`Upgradable`) a PostgresStore, through the API and the CLI.

docs/stores/postgres.md (Re-embedding; Upgrades and migrations).
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.types.json import Jsonb
from pydantic_ai.embeddings import EmbeddingResult

from toolish_rag import Chunk, Document, DocumentBuilder, Entity, PropertyFilter as F, SearchRequest
from toolish_rag.cli import main
from toolish_rag.embedding import HashingEmbeddingModel, embedder_identity
from toolish_rag.manifest import EmbedderMismatch
from toolish_rag.stores import open_store
from toolish_rag_postgres import PostgresStore
from toolish_rag_postgres._schema import SCHEMA_VERSION
from toolish_rag_postgres._upgrade import NewerSchema

_TEXTS = {
    'refunds': 'The refund window is thirty days after delivery; refunds go to the original card.',
    'shipping': 'Parcels ship from Lyon within two working days, tracked by the carrier.',
    'warranty': 'A warranty claim needs the receipt and a photo of the fault.',
}


class NaNAfter(HashingEmbeddingModel):
    """The hashing embedder, whose vectors for documents hold a NaN once it has embedded ``good`` texts."""

    def __init__(self, dims: int, good: int) -> None:
        super().__init__(dims)
        self.good = good

    async def embed(self, inputs: str | Sequence[str], *, input_type: Any, settings: Any = None) -> EmbeddingResult:
        result = await super().embed(inputs, input_type=input_type, settings=settings)
        if input_type == 'document':
            self.good -= len(result.embeddings)
            if self.good < 0:
                spoilt = [list(v) for v in result.embeddings]
                spoilt[-1][0] = float('nan')  # pgvector refuses it, inside the switch's transaction
                return dataclasses.replace(result, embeddings=spoilt)
        return result


def _document(name: str, text: str) -> Document:
    builder = DocumentBuilder(f'file:///{name}.md', name.title(), id=name)
    builder.add_chunk(builder.section(name.title()), text)
    return builder.build()


async def _loaded(uri: str, embedder: Any) -> PostgresStore:
    store = PostgresStore(uri, schema=f's_{uuid.uuid4().hex[:12]}', embedder=embedder)
    docs = [_document(name, text) for name, text in _TEXTS.items()]
    await store.upsert(
        [*docs, Entity(id='lyon', name='Lyon', labels={'City'}, description='A city in France', metadata={})]
    )
    return store


def _column(uri: str, schema: str) -> tuple[str, bool]:
    """The vector column's type and whether its HNSW index exists."""
    with psycopg.connect(uri) as conn:
        kind = conn.execute(
            'SELECT format_type(atttypid, atttypmod) FROM pg_attribute '
            "WHERE attrelid = to_regclass(%s) AND attname = 'embedding'",
            (f'{schema}.records',),
        ).fetchone()
        index = conn.execute('SELECT to_regclass(%s) IS NOT NULL', (f'{schema}.records_embedding',)).fetchone()
    assert kind is not None and index is not None
    return str(kind[0]), bool(index[0])


async def _top(store: PostgresStore, query: str) -> list[str]:
    return [h.id for h in await store.vector_search(SearchRequest(query, 3))]


async def test_reembed_resizes_the_column_rebuilds_the_index_and_records_the_embedder(postgres_uri: str) -> None:
    store = await _loaded(postgres_uri, HashingEmbeddingModel(32))
    assert _column(postgres_uri, store.schema) == ('vector(32)', True)
    assert await store.reembed(HashingEmbeddingModel(48)) == 4  # three chunks and the entity
    assert _column(postgres_uri, store.schema) == ('vector(48)', True)
    reopened = PostgresStore(postgres_uri, schema=store.schema)  # the embedder the manifest records
    assert reopened.manifest is not None and reopened.manifest.embedder is not None
    assert reopened.manifest.embedder.dimensions == 48
    fresh = await _loaded(postgres_uri, HashingEmbeddingModel(48))  # the same records embedded from the start
    assert await _top(reopened, 'refund window') == await _top(fresh, 'refund window')
    with pytest.raises(EmbedderMismatch, match='--reembed'):
        PostgresStore(postgres_uri, schema=store.schema, embedder=HashingEmbeddingModel(32))


async def test_a_reembed_failing_inside_its_transaction_leaves_the_old_store(postgres_uri: str) -> None:
    store = await _loaded(postgres_uri, HashingEmbeddingModel(32))
    before = await _top(store, 'refund window')
    with pytest.raises(psycopg.DataError):
        await store.reembed(NaNAfter(48, good=3))  # the fourth vector holds a NaN: the UPDATE fails, after the ALTER
    assert _column(postgres_uri, store.schema) == ('vector(32)', True)
    reopened = PostgresStore(postgres_uri, schema=store.schema)
    assert reopened.manifest is not None and reopened.manifest.embedder is not None
    assert reopened.manifest.embedder.dimensions == 32
    assert await _top(reopened, 'refund window') == before


async def test_a_process_holding_the_old_embedder_cannot_write_after_a_reembed(postgres_uri: str) -> None:
    store = await _loaded(postgres_uri, HashingEmbeddingModel(32))
    other = PostgresStore(postgres_uri, schema=store.schema)  # another process's view: opened with 32 dimensions
    await store.reembed(HashingEmbeddingModel(48))
    with pytest.raises(EmbedderMismatch, match='re-embedded'):
        await other.upsert([_document('late', 'A late document written with the old model.')])
    assert 'late' not in {d.id for d in await store.list_documents()}
    await PostgresStore(postgres_uri, schema=store.schema).upsert([_document('late', 'Written after reopening.')])
    assert 'late' in {d.id for d in await store.list_documents()}


class Renamed(HashingEmbeddingModel):
    """The hashing embedder under another name: vectors of the same size, from another model as far as a store knows."""

    @property
    def model_name(self) -> str:
        return f'renamed-{super().model_name}'


@pytest.mark.parametrize('new', [HashingEmbeddingModel(48), Renamed(32)], ids=['other size', 'same size'])
async def test_a_reader_holding_the_old_embedder_is_refused_after_a_reembed(postgres_uri: str, new: Any) -> None:
    """The vector statement carries the embedder the reader holds: after another store object re-embedded the store,
    every search (scoped or not) is refused, naming both models, instead of ranking new vectors with an old query."""
    store = await _loaded(postgres_uri, HashingEmbeddingModel(32))
    other = PostgresStore(postgres_uri, schema=store.schema)  # another process's view: opened with 32 dimensions
    before = await _top(other, 'refund window')
    assert before == await _top(store, 'refund window')
    await store.reembed(new)
    for scope in (None, F.eq('tenant', 'acme')):
        with pytest.raises(EmbedderMismatch) as refused:
            await other.vector_search(SearchRequest('refund window', 3, scope))
        said = str(refused.value)
        assert embedder_identity(new).describe() in said and 'toolish-rag:hashing-32, 32 dimensions' in said
        assert 'open the store again' in said and other.location in said
    reopened = PostgresStore(postgres_uri, schema=store.schema, embedder=new)  # a renamed model is not in the registry
    assert await _top(reopened, 'refund window') == await _top(store, 'refund window')


async def test_the_same_embedder_written_otherwise_in_the_manifest_is_not_refused(postgres_uri: str) -> None:
    """A manifest naming the reader's embedder in other words (an older release's unknown normalisation) is taken
    as the same embedder: the search answers as before, and the next one sends the manifest's own words."""
    store = await _loaded(postgres_uri, HashingEmbeddingModel(32))
    before = await _top(store, 'refund window')
    with psycopg.connect(postgres_uri, autocommit=True) as conn:
        conn.execute(
            sql.SQL(
                "UPDATE {}.meta SET value = jsonb_set(value, '{{embedder,normalized}}', 'null') WHERE key = 'manifest'"
            ).format(sql.Identifier(store.schema))
        )
    assert await _top(store, 'refund window') == before
    assert store._held is not None and '"normalized": null' in store._held[1]
    assert await _top(store, 'refund window') == before


def test_a_reader_in_this_process_is_refused_after_another_process_reembeds(postgres_uri: str) -> None:
    import asyncio

    store = asyncio.run(_loaded(postgres_uri, HashingEmbeddingModel(32)))
    reembed = (
        'import asyncio, sys\n'
        'from toolish_rag.embedding import HashingEmbeddingModel\n'
        'from toolish_rag_postgres import PostgresStore\n'
        'print(asyncio.run(PostgresStore(sys.argv[1], schema=sys.argv[2]).reembed(HashingEmbeddingModel(32 + 16))))\n'
    )
    done = subprocess.run(
        [sys.executable, '-c', reembed, postgres_uri, store.schema], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == '4'
    with pytest.raises(EmbedderMismatch, match='hashing-48, 48 dimensions since this process opened it'):
        asyncio.run(store.vector_search(SearchRequest('refund window', 3)))


async def test_reembed_of_an_empty_store_records_the_new_size(postgres_uri: str) -> None:
    store = PostgresStore(postgres_uri, schema=f's_{uuid.uuid4().hex[:12]}', embedder=HashingEmbeddingModel(32))
    assert await store.reembed(HashingEmbeddingModel(24)) == 0
    assert _column(postgres_uri, store.schema) == ('vector(24)', True)
    await store.upsert([_document('refunds', _TEXTS['refunds'])])
    hits = await store.vector_search(SearchRequest('refund window', 3))
    (hit,) = hits  # the one chunk, found by the new vector size
    assert isinstance(hit.record, Chunk) and hit.record.document_id == 'refunds'


def _make_older(uri: str, schema: str) -> None:
    """The layout before the schema version was recorded: BM25 counts in a ``tf jsonb`` object (an older release)."""
    with psycopg.connect(uri) as conn:
        conn.execute(sql.SQL('SET search_path = {}, public').format(sql.Identifier(schema)))
        conn.execute('ALTER TABLE records ADD COLUMN tf jsonb')
        for record_id, tokens, counts in conn.execute('SELECT id, tokens, counts FROM records').fetchall():
            tf = Jsonb(dict(zip(tokens, counts, strict=True)))
            conn.execute('UPDATE records SET tf = %s WHERE id = %s', (tf, record_id))
        conn.execute('ALTER TABLE records ALTER COLUMN tf SET NOT NULL')
        conn.execute('ALTER TABLE records DROP COLUMN counts')
        conn.execute("DELETE FROM meta WHERE key = 'schema_version'")


async def test_upgrade_brings_an_older_layout_current_and_keeps_every_record(postgres_uri: str) -> None:
    store = await _loaded(postgres_uri, HashingEmbeddingModel(32))
    assert store.schema_version == SCHEMA_VERSION and await store.upgrade() == []
    request = SearchRequest('refund window delivery Lyon', 10)
    before = [(h.id, round(h.score, 6)) for h in await store.text_search(request)]
    vectors = await _top(store, 'refund window')
    _make_older(postgres_uri, store.schema)
    older = PostgresStore(postgres_uri, schema=store.schema)
    assert older.schema_version is None
    with pytest.raises(psycopg.errors.UndefinedColumn):  # what upgrade is for: this release reads counts
        await older.text_search(request)
    assert await older.upgrade() == [
        'records: term counts moved from tf (jsonb) to counts (integer[])',
        f'recorded schema version {SCHEMA_VERSION}',
    ]
    assert await older.upgrade() == []
    assert [(h.id, round(h.score, 6)) for h in await older.text_search(request)] == before
    assert await _top(older, 'refund window') == vectors
    assert PostgresStore(postgres_uri, schema=store.schema).schema_version == SCHEMA_VERSION


async def test_a_store_of_a_newer_schema_version_is_refused(postgres_uri: str) -> None:
    store = await _loaded(postgres_uri, HashingEmbeddingModel(32))
    with psycopg.connect(postgres_uri) as conn:
        conn.execute(
            sql.SQL("UPDATE {}.meta SET value = %s::jsonb WHERE key = 'schema_version'").format(
                sql.Identifier(store.schema)
            ),
            (str(SCHEMA_VERSION + 1),),
        )
    with pytest.raises(NewerSchema, match='newer toolish-rag-postgres'):
        PostgresStore(postgres_uri, schema=store.schema)


@pytest.fixture
def own_database(postgres_uri: str) -> Iterator[str]:
    """A database of this test's own: the CLI opens the default schema, which other tests' stores use too."""
    name = f'toolish_cli_{uuid.uuid4().hex[:10]}'
    with psycopg.connect(postgres_uri, autocommit=True) as conn:
        conn.execute(sql.SQL('CREATE DATABASE {}').format(sql.Identifier(name)))
    params = psycopg.conninfo.conninfo_to_dict(postgres_uri)
    uri = psycopg.conninfo.make_conninfo('', **{**{k: v for k, v in params.items() if v is not None}, 'dbname': name})
    try:
        with psycopg.connect(uri, autocommit=True) as conn:
            conn.execute('CREATE EXTENSION IF NOT EXISTS vector')
        yield uri
    finally:
        from toolish_rag_postgres._database import close_pool

        close_pool(uri)
        with psycopg.connect(postgres_uri, autocommit=True) as conn:
            conn.execute(sql.SQL('DROP DATABASE IF EXISTS {} WITH (FORCE)').format(sql.Identifier(name)))


def test_the_cli_reembeds_and_upgrades_a_postgres_store(
    own_database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a writer's lock of a folder named after the connection string would land here
    docs = tmp_path / 'docs'
    docs.mkdir()
    for name, text in _TEXTS.items():
        (docs / f'{name}.md').write_text(f'# {name.title()}\n\n{text}\n', 'utf-8')
    spec = f'postgres:{own_database}'
    assert main(['ingest', str(docs), '--store', spec, '--embedder', 'hashing:64', '--no-progress']) == 0
    with pytest.raises(EmbedderMismatch, match='--reembed'):
        open_store(spec, embedder='hashing:96')
    argv = ['ingest', str(docs), '--store', spec, '--embedder', 'hashing:96', '--reembed', '--no-progress']
    assert main(argv) == 0
    store = open_store(spec)
    assert store.manifest.embedder.dimensions == 96
    _make_older(own_database, 'toolish_rag')
    capsys.readouterr()
    secret = f'postgres:{own_database} password=s3cret-pw'  # the test server trusts local connections: unused
    assert main(['upgrade', '--store', secret]) == 0
    said = capsys.readouterr().out
    assert 'recorded schema version' in said and 's3cret' not in said
    assert main(['upgrade', '--store', secret]) == 0
    assert 'already current' in capsys.readouterr().out
    assert open_store(spec).schema_version == SCHEMA_VERSION
    assert sorted(p.name for p in tmp_path.iterdir()) == ['docs']  # no lock folder named after the spec (its password)
