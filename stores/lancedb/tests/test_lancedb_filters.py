"""Filter translation: randomised equivalence with the reference, injection, keys, list helpers."""

from __future__ import annotations

import random
from typing import Any

import pytest

from toolish_rag.content import Entity, MetadataValue
from toolish_rag.filters import (
    Contains,
    EndsWith,
    EntityFilter,
    Eq,
    Filter,
    In,
    PropertyFilter as F,
    StartsWith,
    and_,
    matches,
    not_,
    or_,
)
from toolish_rag.search import SearchRequest
from toolish_rag_lancedb import LanceDBStore, filter_to_where
from toolish_rag_lancedb._filters import LIST_SEPARATOR, column_name

KEYS = ['a', 'b', 'Price', 'price', 'tags']
STRINGS = ['', 'x', 'xy', 'y', '5', "x' OR '1'='1", 'back\\slash', '%_', 'é', LIST_SEPARATOR + 'z', '\\u']
NUMBERS: list[int | float] = [0, 1, 1.0, 5, 2.5, -3, 10**6]


def _scalar(rng: random.Random) -> Any:
    kind = rng.randrange(3)
    if kind == 0:
        return rng.choice(STRINGS)
    if kind == 1:
        return rng.choice(NUMBERS)
    return rng.choice([True, False])


def _value(rng: random.Random) -> MetadataValue:
    roll = rng.random()
    if roll < 0.15:
        return None
    if roll < 0.4:
        return [_scalar(rng) for _ in range(rng.randrange(0, 4))]
    return _scalar(rng)  # type: ignore[no-any-return]


def _records(rng: random.Random, n: int) -> list[Entity]:
    out = []
    for i in range(n):
        md = {k: _value(rng) for k in KEYS if rng.random() < 0.7}
        labels = frozenset(rng.sample(['L1', 'L2', "L'3"], rng.randrange(0, 3)))
        out.append(Entity(id=f'e{i}', name=f'entity {i} common', metadata=md, labels=labels))
    return out


def _leaf(rng: random.Random) -> Filter:
    key = rng.choice(KEYS)
    op = rng.randrange(13)
    v = _scalar(rng)
    s = rng.choice(STRINGS)
    if op == 0:
        return F.eq(key, v)
    if op == 1:
        return F.ne(key, v)
    if op == 2:
        return F.gt(key, v)
    if op == 3:
        return F.gte(key, v)
    if op == 4:
        return F.lt(key, v)
    if op == 5:
        return F.lte(key, v)
    if op == 6:
        return F.in_(key, [_scalar(rng) for _ in range(rng.randrange(1, 4))])
    if op == 7:
        return F.nin(key, [_scalar(rng) for _ in range(rng.randrange(1, 4))])
    if op == 8:
        return F.contains(key, v if rng.random() < 0.5 else s)
    if op == 9:
        return F.starts_with(key, s)
    if op == 10:
        return F.ends_with(key, s)
    if op == 11:
        return F.exists(key)
    return EntityFilter.has_any_label(*rng.sample(['L1', 'L2', "L'3", 'none'], rng.randrange(1, 3)))


def _filter(rng: random.Random, depth: int = 0) -> Filter:
    roll = rng.random()
    if depth >= 2 or roll < 0.55:
        return _leaf(rng)
    if roll < 0.7:
        return not_(_filter(rng, depth + 1))
    parts = [_filter(rng, depth + 1) for _ in range(rng.randrange(2, 4))]
    return and_(*parts) if roll < 0.85 else or_(*parts)


async def test_random_filters_match_the_reference(store: LanceDBStore) -> None:
    rng = random.Random(1234)
    records = _records(rng, 80)
    await store.upsert(records)
    ids = [r.id for r in records]
    for round_ in range(2):
        if round_:
            await store.optimize()  # now the scalar and label indexes answer too
            assert (await store.index_stats())['labels_idx']['unindexed_rows'] == 0
        for _ in range(150):
            f = _filter(rng)
            assert store.supports_filter(f)
            got = {r.id for r in await store.get_records(ids, filter=f)}
            want = {r.id for r in records if matches(f, r)}
            assert got == want, f'{f!r}\n{store.filter_sql(f)}\nextra {got - want} missing {want - got}'


async def test_injection_in_values_is_only_data(store: LanceDBStore) -> None:
    evil = ["x' OR '1'='1", "'; DROP TABLE records; --", "a'b", "\\'", '`id`', 'x")--', '%', '_']
    await store.upsert(
        [Entity(id=f'e{i}', name=f'thing {i}', metadata={'s': v, 'l': [v, 'other']}) for i, v in enumerate(evil)]
        + [Entity(id='plain', name='thing plain', metadata={'s': 'x', 'l': ['x']})]
    )
    ids = [f'e{i}' for i in range(len(evil))] + ['plain']
    for i, v in enumerate(evil):
        for f in (
            F.eq('s', v),
            F.eq('l', v),
            F.contains('l', v),
            F.in_('s', [v]),
            F.starts_with('s', v),
            F.ends_with('s', v),
        ):
            got = {r.id for r in await store.get_records(ids, filter=f)}
            assert got == {f'e{i}'}, (f, got)
        negated = {r.id for r in await store.get_records(ids, filter=F.ne('s', v))}
        assert negated == set(ids) - {f'e{i}'}
    # Filters also go through vector and text search unchanged.
    hits = await store.vector_search(SearchRequest('thing', 50, F.eq('s', "x' OR '1'='1")))
    assert [h.id for h in hits] == ['e0']
    hits = await store.text_search(SearchRequest('thing', 50, F.eq('s', "x' OR '1'='1")))
    assert [h.id for h in hits] == ['e0']


async def test_filter_sql_is_the_clause_the_store_runs(store: LanceDBStore) -> None:
    await store.upsert(
        [Entity(id='p5', name='n', metadata={'Price': 5}), Entity(id='p6', name='n', metadata={'Price': 6})]
    )
    f = F.lt('Price', 6)
    where = store.filter_sql(f)
    assert '`md__Price__num`' in where
    table = await store.records_table()
    raw = await table.query().where(where).select(['id']).to_arrow()
    assert raw.column('id').to_pylist() == [r.id for r in await store.get_records(['p5', 'p6'], filter=f)] == ['p5']


def test_keys_are_revalidated_and_quoted() -> None:
    # Bypass the node's own validation, as a buggy caller might.
    bad = Eq.model_construct(key='a` = 1 OR `b', value=1, op='eq')
    with pytest.raises(ValueError):
        filter_to_where(bad, ())
    store = LanceDBStore('/nonexistent-not-opened', embedder='test')
    assert not store.supports_filter(bad)
    where = filter_to_where(F.eq('Price', 5), {column_name('Price', 'num')})
    assert '`md__Price__num`' in where
    nul = StartsWith.model_construct(key='a', value='x\x00', op='starts_with')
    assert not store.supports_filter(nul)


async def test_case_distinct_keys(store: LanceDBStore) -> None:
    await store.upsert(
        [
            Entity(id='upper', name='n', metadata={'Price': 5}),
            Entity(id='lower', name='n', metadata={'price': 5.0}),
        ]
    )
    assert [r.id for r in await store.get_records(['upper', 'lower'], filter=F.eq('Price', 5))] == ['upper']
    assert [r.id for r in await store.get_records(['upper', 'lower'], filter=F.eq('price', 5))] == ['lower']


async def test_list_prefix_and_suffix_are_exact(store: LanceDBStore) -> None:
    # Elements holding the helper column's separator and escape characters must not leak
    # matches across element boundaries or through the escaping.
    tricky = {
        't1': ['ab' + LIST_SEPARATOR + 'cd'],
        't2': ['x\\', 'u'],
        't3': ['a\\u', 'zz'],
        't4': ['pre', 'post'],
        't5': [1, 'mixed', True],
    }
    await store.upsert([Entity(id=k, name=k, metadata={'l': v}) for k, v in tricky.items()])
    ids = list(tricky)
    cases: list[Filter] = [
        F.starts_with('l', 'cd'),
        F.starts_with('l', LIST_SEPARATOR + 'cd'),
        F.ends_with('l', 'ab'),
        F.ends_with('l', '\\'),
        F.starts_with('l', '\\u'),
        F.ends_with('l', 'u'),
        F.starts_with('l', 'u'),
        F.ends_with('l', '\\u'),
        F.starts_with('l', 'po'),
        F.ends_with('l', 're'),
        F.starts_with('l', ''),
        F.contains('l', 'mixed'),
        F.contains('l', 'mix'),
        F.contains('l', 1.0),
        F.contains('l', True),
        F.eq('l', 1),
        F.gt('l', 'pos'),
        F.lt('l', 'b'),
        In(key='l', values=('zz', 7)),
        Contains(key='l', value='z'),
        EndsWith(key='l', value=''),
    ]
    for f in cases:
        got = {r.id for r in await store.get_records(ids, filter=f)}
        want = {k for k, v in tricky.items() if matches(f, Entity(id=k, name=k, metadata={'l': v}))}
        assert got == want, f


async def test_metadata_types_survive_and_filter(store: LanceDBStore) -> None:
    md: dict[str, MetadataValue] = {'i': 5, 'f': 5.0, 's': '5', 'b': True, 'l': [1, 1.5, 'x', False], 'n': None}
    await store.upsert([Entity(id='e', name='n', metadata=md)])
    (got,) = await store.get_records(['e'])
    assert got.metadata == md
    assert [type(v) for v in got.metadata.values()] == [type(v) for v in md.values()]
    assert [type(x) for x in got.metadata['l']] == [int, float, str, bool]  # type: ignore[union-attr]
    for f, expected in [
        (F.eq('i', '5'), False),
        (F.eq('s', 5), False),
        (F.eq('b', 1), False),
        (F.eq('i', 5.0), True),
        (F.exists('n'), False),
        (F.ne('n', 1), True),
        (F.eq('l', False), True),
        (F.eq('l', 0), False),
    ]:
        assert bool(await store.get_records(['e'], filter=f)) is expected, f
