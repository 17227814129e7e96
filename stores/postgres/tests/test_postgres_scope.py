"""Scope in SQL, twice: compiled filters equal the reference evaluator (random filters, two tenants),
hostile keys and values stay data, and row-level security alone stops a deliberately unscoped query.

Range filters through indexes: random ``gt``/``gte``/``lt``/``lte``/``starts_with``/``exists`` filters over
mixed-type and list-valued metadata equal the reference on the row-by-row plan and on the range indexes' plan
(sequential scans switched off), and a store written before the range functions gets them at open
(docs/stores/postgres.md, Range filters)."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from toolish_rag import Document, DocumentBuilder, Entity, PropertyFilter as F, SearchRequest
from toolish_rag.content import MetadataValue, Scalar
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.filters import EntityFilter, Filter, and_, matches, not_, or_
from toolish_rag_postgres import PostgresStore
from toolish_rag_postgres._filters import compile_filter

_KEYS = ('tenant', 'n', 'tag', 'other', 'flag')
_VALUES: tuple[Scalar, ...] = (0, 1, 1.0, 2.5, -3, True, False, 'a', 'b', "x'); DROP TABLE records; --", 'Ä', '', 'ab')


def _metadata(rng: random.Random, tenant: str) -> dict[str, MetadataValue]:
    md: dict[str, MetadataValue] = {'tenant': tenant}
    for key in _KEYS[1:]:
        roll = rng.random()
        if roll < 0.25:
            continue  # absent
        if roll < 0.35:
            md[key] = None
        elif roll < 0.6:
            md[key] = [rng.choice(_VALUES) for _ in range(rng.randint(0, 3))]
        else:
            md[key] = rng.choice(_VALUES)
    return md


def _corpus(rng: random.Random) -> tuple[list[Document], list[Entity]]:
    docs = []
    for d in range(6):
        tenant = 'acme' if d % 2 else 'globex'
        b = DocumentBuilder(f'file:///{tenant}/{d}.md', f'Doc {d}', metadata={'tenant': tenant}, labels=[tenant])
        section = b.section('Part')
        for i in range(8):
            b.add_chunk(section, f'record {d} {i} words shared by every tenant', metadata=_metadata(rng, tenant))
        docs.append(b.build())
    entities = [
        Entity(id=f'e{i}', name=f'E{i}', description='entity words', metadata=_metadata(rng, 'acme'), labels={'Org'})
        for i in range(6)
    ]
    return docs, entities


def _leaf(rng: random.Random) -> Filter:
    key, value = rng.choice(_KEYS), rng.choice(_VALUES)
    op = rng.choice(
        ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'nin', 'contains', 'starts', 'ends', 'exists', 'label']
    )
    if op in ('in', 'nin'):
        values = [rng.choice(_VALUES) for _ in range(rng.randint(1, 3))]
        return F.in_(key, values) if op == 'in' else F.nin(key, values)
    if op in ('starts', 'ends'):
        text = rng.choice(['a', '', 'x', 'Ä', "x'"])
        return F.starts_with(key, text) if op == 'starts' else F.ends_with(key, text)
    if op == 'exists':
        return F.exists(key)
    if op == 'label':
        return EntityFilter.has_any_label(rng.choice(['acme', 'globex', 'Org', 'none']))
    return {'eq': F.eq, 'ne': F.ne, 'gt': F.gt, 'gte': F.gte, 'lt': F.lt, 'lte': F.lte, 'contains': F.contains}[op](
        key, value
    )


def _random_filter(
    rng: random.Random, depth: int = 2, leaf: Callable[[random.Random], Filter] = _leaf, leaves: float = 0.4
) -> Filter:
    if depth == 0 or rng.random() < leaves:
        return leaf(rng)
    parts = [_random_filter(rng, depth - 1, leaf, leaves) for _ in range(rng.randint(1, 3))]
    kind = rng.choice(['and', 'or', 'not'])
    if kind == 'not':
        return not_(parts[0])
    return and_(*parts) if kind == 'and' else or_(*parts)


@pytest.fixture
async def store(postgres_uri: str) -> PostgresStore:
    return PostgresStore(postgres_uri, schema=f'scope_{uuid.uuid4().hex[:12]}', embedder=HashingEmbeddingModel(32))


async def test_random_scoped_filters_equal_the_reference(store: PostgresStore) -> None:
    rng = random.Random(38)
    docs, entities = _corpus(rng)
    await store.upsert([*docs, *entities])
    records: list[Any] = [c for d in docs for c in d.chunks] + entities
    for _ in range(150):
        tenant = rng.choice(['acme', 'globex'])
        scoped = and_(F.eq('tenant', tenant), _random_filter(rng))
        compiled = compile_filter(scoped)
        got = await store._db.run(
            lambda tx, c=compiled: {r for (r,) in tx.execute(f'SELECT id FROM records WHERE {c.sql}', c.params)}
        )
        expected = {r.id for r in records if matches(scoped, r)}
        assert got == expected, f'{scoped!r}: SQL kept {sorted(got ^ expected)} unlike the reference'
        assert all(r.metadata.get('tenant') == tenant for r in records if r.id in got)


async def test_hostile_keys_and_values_stay_data(store: PostgresStore) -> None:
    b = DocumentBuilder('file:///h.md', 'H', metadata={'k': 'v%s%(x)s'})
    b.add_chunk(None, 'hostile words')
    await store.upsert([b.build()])
    hits = await store.text_search(SearchRequest('hostile', 5, F.eq('k', 'v%s%(x)s') & F.starts_with('z', "'")))
    assert hits == []
    hits = await store.text_search(SearchRequest('hostile', 5, F.eq('k', 'v%s%(x)s')))
    assert [h.record.text for h in hits] == [b.build().chunks[0].text]
    assert not store.supports_filter(F.eq('tenant', 'a\x00b'))  # PostgreSQL text holds no NUL: the core filters it


async def test_row_security_alone_stops_an_unscoped_query(postgres_uri: str) -> None:
    schema = f'rls_{uuid.uuid4().hex[:12]}'
    store = PostgresStore(
        postgres_uri, schema=schema, embedder=HashingEmbeddingModel(32), row_security=['tenant'], reader_role=schema
    )
    docs, entities = _corpus(random.Random(1))
    await store.upsert([*docs, *entities])

    def unscoped(tx: Any) -> list[tuple[str, str]]:  # a query built wrong: no WHERE at all
        return [(str(i), str(t)) for i, t in tx.execute("SELECT id, metadata ->> 'tenant' FROM records")]

    seen = await store._db.run(unscoped, scope={'tenant': ['globex']})
    assert seen and {t for _, t in seen} == {'globex'}
    assert await store._db.run(unscoped, scope={}) == []  # no scope value: the policy admits nothing
    assert await store._db.run(unscoped, scope=None) == []
    owner = await store._db.run(unscoped, write=True)  # the writer (owner) keeps every row
    assert {t for _, t in owner} == {'acme', 'globex'}
    hits = await store.text_search(SearchRequest('words', 100, F.eq('tenant', 'acme')))
    assert hits and all(h.record.metadata['tenant'] == 'acme' for h in hits)
    assert await store.text_search(SearchRequest('words', 100)) == []  # the run named no tenant: fail closed
    assert len(await store.list_documents()) == 6 and len(await store.list_entities()) == 6  # unscoped, as owner


async def test_row_security_admits_exactly_the_scope_values_through_the_index(postgres_uri: str) -> None:
    """The policy equals the reference ``in`` of the scope's values over mixed-type and list-valued metadata, and the
    GIN index serves it (PostgreSQL applies a policy before the filters, so only the policy can use an index)."""
    schema = f'rlsp_{uuid.uuid4().hex[:12]}'
    store = PostgresStore(
        postgres_uri, schema=schema, embedder=HashingEmbeddingModel(16), row_security=['tenant'], reader_role=schema
    )
    rng = random.Random(39)
    b = DocumentBuilder('file:///rls.md', 'R')
    for i in range(40):
        roll = rng.random()
        value: MetadataValue = rng.choice(_VALUES) if roll > 0.5 else None
        if 0.2 < roll <= 0.5:
            value = [rng.choice(_VALUES) for _ in range(rng.randint(0, 3))]
        b.add_chunk(None, f'rls {i}', metadata={} if roll < 0.1 else {'tenant': value})
    doc = b.build()
    await store.upsert([doc])

    def seen(tx: Any) -> set[str]:  # no WHERE: the policy alone
        return {str(r) for (r,) in tx.execute('SELECT id FROM records')}

    for _ in range(40):
        values = [rng.choice(_VALUES) for _ in range(rng.randint(0, 3))]
        expected = {c.id for c in doc.chunks if values and matches(F.in_('tenant', values), c)}
        assert await store._db.run(seen, scope={'tenant': values}) == expected, values

    def plan(tx: Any) -> str:
        tx.execute('SET LOCAL enable_seqscan = off')
        return '\n'.join(str(line) for (line,) in tx.execute('EXPLAIN SELECT id FROM records'))

    assert 'records_metadata' in await store._db.run(plan, scope={'tenant': ['a']})


_RANGE_KEYS = ('n', 'tag', 'plain')
_RANGE_VALUES: tuple[Scalar, ...] = (
    -3,
    0,
    1,
    1.0,
    2.5,
    0.1,
    10**20,
    -1e-7,
    True,
    False,
    '',
    'a',
    'Z',
    'ab',
    'Ä',
    '\uffff',
    '\U0001f600',
    '10',
    '9',
)
"""Numbers, booleans (never ordered against numbers) and strings whose code-point order differs from a locale's
(``'Z' < 'a'``) and from UTF-16's (``'\\uffff' < '\\U0001f600'``)."""


def _range_value(rng: random.Random) -> MetadataValue:
    roll = rng.random()
    if roll < 0.1:
        return None
    if roll < 0.45:
        return [rng.choice(_RANGE_VALUES) for _ in range(rng.randint(0, 3))]
    return rng.choice(_RANGE_VALUES)


def _range_documents(rng: random.Random) -> list[Document]:
    docs = []
    for d in range(4):
        b = DocumentBuilder(f'file:///{d}.md', f'Doc {d}', metadata={'tenant': f't{d % 2}'})
        for i in range(15):
            metadata = {key: _range_value(rng) for key in _RANGE_KEYS if rng.random() < 0.85}
            b.add_chunk(None, f'record {d} {i}', metadata=metadata)
        docs.append(b.build())
    return docs


def _range_leaf(rng: random.Random) -> Filter:
    key, value = rng.choice(_RANGE_KEYS), rng.choice(_RANGE_VALUES)
    op = rng.choice(['gt', 'gte', 'lt', 'lte', 'gt', 'lt', 'starts', 'exists'])
    if op == 'starts':
        return F.starts_with(key, rng.choice(['', 'a', 'Z', '1', '\U0001f600']))
    if op == 'exists':
        return F.exists(key)
    ordered: dict[str, Callable[[str, Scalar], Filter]] = {'gt': F.gt, 'gte': F.gte, 'lt': F.lt, 'lte': F.lte}
    return ordered[op](key, value)


async def _ids(store: PostgresStore, f: Filter, *, indexes_only: bool) -> set[str]:
    compiled = compile_filter(f)

    def read(tx: Any) -> set[str]:
        if indexes_only:  # the planner then takes the range indexes wherever they serve a clause
            tx.execute('SET LOCAL enable_seqscan = off')
        return {str(r) for (r,) in tx.execute(f'SELECT id FROM records WHERE {compiled.sql}', compiled.params)}

    return await store._db.run(read)


async def _plan(store: PostgresStore, f: Filter) -> str:
    compiled = compile_filter(f)

    def explain(tx: Any) -> str:
        tx.execute('SET LOCAL enable_seqscan = off')
        rows = tx.execute(f'EXPLAIN SELECT id FROM records WHERE {compiled.sql}', compiled.params)
        return '\n'.join(str(line) for (line,) in rows)

    return await store._db.run(explain)


async def test_range_filters_equal_the_reference_with_and_without_their_indexes(postgres_uri: str) -> None:
    store = PostgresStore(
        postgres_uri,
        schema=f'ranges_{uuid.uuid4().hex[:12]}',
        embedder=HashingEmbeddingModel(16),
        indexed_keys=_RANGE_KEYS[:2],
    )
    rng = random.Random(380)
    docs = _range_documents(rng)
    await store.upsert(docs)
    chunks = [c for d in docs for c in d.chunks]
    for _ in range(120):
        f = and_(F.eq('tenant', rng.choice(['t0', 't1'])), _random_filter(rng, leaf=_range_leaf, leaves=0.5))
        expected = {c.id for c in chunks if matches(f, c)}
        for indexes_only in (False, True):
            got = await _ids(store, f, indexes_only=indexes_only)
            assert got == expected, (
                f'{f!r} (indexes only: {indexes_only}): {sorted(got ^ expected)} unlike the reference'
            )
    assert 'records_range_n_' in await _plan(store, F.lt('n', 1))  # a declared key's range is read through its index
    assert 'records_range_tag_' in await _plan(store, F.gte('tag', 'a'))
    assert 'records_range_' not in await _plan(store, F.lt('plain', 1))  # an undeclared key is tested row by row


async def test_a_store_written_before_the_range_functions_gets_them_and_its_indexes(postgres_uri: str) -> None:
    schema = f'ranges_old_{uuid.uuid4().hex[:12]}'
    old = PostgresStore(postgres_uri, schema=schema, embedder=HashingEmbeddingModel(16))
    docs = _range_documents(random.Random(3))
    await old.upsert(docs)

    def to_old_layout(tx: Any) -> None:  # the functions (and so the indexes) did not exist then
        tx.execute('DROP FUNCTION toolish_number_bound(jsonb, boolean), toolish_string_bound(jsonb, boolean)')

    await old._db.run(to_old_layout, write=True)
    store = PostgresStore(postgres_uri, schema=schema, embedder=HashingEmbeddingModel(16), indexed_keys=['n'])
    chunks = [c for d in docs for c in d.chunks]
    for f in (F.lt('n', 1), F.gte('n', 'a'), not_(F.gt('n', 0)), F.lte('tag', 'Z') | F.gt('n', 2.5)):
        assert await _ids(store, f, indexes_only=True) == {c.id for c in chunks if matches(f, c)}
    assert 'records_range_n_' in await _plan(store, F.lt('n', 1))
