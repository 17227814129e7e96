"""Filter equality and hashing respect the semantics: ``True`` is not ``1``, ``-0.0`` is not ``0``.

Python (and so pydantic's model equality) says ``1 == True == 1.0`` and ``0 == False ==
-0.0``. Filters must not: the reference semantics tell ``eq('level', True)`` from
``eq('level', 1)``, and anything keyed by a filter (the InMemoryStore's mask cache) served
the records of one for the other. Equality is deliberately conservative: two filters are
equal only when they are the same filter, value types and float bits included.

The oracle here is independent of the implementation: two scalars are the same when they
have the same type and the same ``repr`` (which tells ``-0.0`` from ``0.0`` and
round-trips every float exactly).
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from toolish_rag import DocumentBuilder, Retriever, matches, parse_filter
from toolish_rag.content import Chunk, Scalar
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.filters import EntityFilter, Filter, PropertyFilter as F
from toolish_rag.search import RegexRequest, SearchRequest
from toolish_rag.stores import InMemoryStore

# Small pools, so drawn pairs often coincide in Python's eyes (1 == True == 1.0, 0 == -0.0).
scalars = st.one_of(
    st.booleans(),
    st.integers(-2, 2),
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.0, 2.5]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(['', '1', 'True', 'a']),
)
value_lists = st.lists(scalars, max_size=3)


def same(a: Any, b: Any) -> bool:
    """The spec: same type and the same repr (recursively for lists)."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and repr(a) == repr(b)


def assert_identity(f: Filter, g: Filter, expected_equal: bool) -> None:
    assert (f == g) is expected_equal, f'{f!r} == {g!r} should be {expected_equal}'
    assert (f != g) is not expected_equal
    if expected_equal:
        assert hash(f) == hash(g)
    # A dict keyed by filters (what a mask cache is) keeps them apart exactly when they differ.
    cache = {f: 'f', g: 'g'}
    assert len(cache) == (1 if expected_equal else 2)
    assert cache[g] == 'g'
    if not expected_equal:
        assert cache[f] == 'f'


@pytest.mark.parametrize(
    ('a', 'b'),
    [(1, True), (0, False), (0, -0.0), (0.0, -0.0), (False, -0.0), (1.0, True), (1, 1.0), (2, 2.0)],
)
def test_python_equal_values_make_different_filters(a: Scalar, b: Scalar) -> None:
    assert a == b  # Python conflates them; the filters must not.
    for build in (F.eq, F.ne, F.gt, F.lte, F.contains):
        assert_identity(build('level', a), build('level', b), expected_equal=False)
    assert_identity(F.in_('level', [a, 'x']), F.in_('level', [b, 'x']), expected_equal=False)
    assert_identity(F.nin('level', [a]), F.nin('level', [b]), expected_equal=False)
    assert_identity(~F.eq('level', a), ~F.eq('level', b), expected_equal=False)
    assert_identity(F.eq('t', 'x') & F.eq('level', a), F.eq('t', 'x') & F.eq('level', b), expected_equal=False)
    assert_identity(F.eq('t', 'x') | ~F.eq('level', a), F.eq('t', 'x') | ~F.eq('level', b), expected_equal=False)


def test_identical_filters_are_equal_and_hash_alike() -> None:
    def build() -> Filter:
        return (F.eq('a', True) & ~F.in_('b', [1, -0.0, 'x'])) | EntityFilter.has_any_label('L2', 'L1')

    assert_identity(build(), build(), expected_equal=True)
    assert_identity(build(), parse_filter(build().to_json()), expected_equal=True)
    assert_identity(EntityFilter.has_any_label('L1', 'L2'), EntityFilter.has_any_label('L2', 'L1'), True)
    # Different node types with the same fields are different filters.
    assert_identity(F.eq('a', 1), F.ne('a', 1), expected_equal=False)
    assert_identity(F.in_('a', [1]), F.nin('a', [1]), expected_equal=False)
    assert F.eq('a', 1) != ('eq', 'a', 1)


@settings(max_examples=300, deadline=None)
@given(a=scalars, b=scalars)
def test_scalar_filters_equal_exactly_when_values_are_the_same(a: Scalar, b: Scalar) -> None:
    expected = same(a, b)
    assert_identity(F.eq('k', a), F.eq('k', b), expected)
    assert_identity(F.gte('k', a), F.gte('k', b), expected)
    assert_identity(~(F.eq('t', 'x') & F.eq('k', a)), ~(F.eq('t', 'x') & F.eq('k', b)), expected)


@settings(max_examples=300, deadline=None)
@given(a=value_lists, b=value_lists)
def test_list_filters_equal_exactly_when_every_value_is_the_same(a: list[Scalar], b: list[Scalar]) -> None:
    expected = same(a, b)
    assert_identity(F.in_('k', a), F.in_('k', b), expected)
    assert_identity(F.nin('k', a), F.nin('k', b), expected)
    assert_identity(F.exists('z') | F.in_('k', a), F.exists('z') | F.in_('k', b), expected)


@settings(max_examples=100, deadline=None)
@given(a=scalars, values=value_lists)
def test_json_round_trip_keeps_identity(a: Scalar, values: list[Scalar]) -> None:
    f = ~F.eq('k', a) & F.in_('k', values)
    assert_identity(f, parse_filter(f.to_json()), expected_equal=True)


# -- end to end: a mask cache keyed by the filter serves each scope its own records ---------------------

LEVELS: list[tuple[str, Any]] = [
    ('alpha', True),
    ('bravo', 1),
    ('charlie', 1.0),
    ('delta', False),
    ('echo', 0),
    ('foxtrot', 0.0),
    ('golf', -0.0),
    ('hotel', [True, 'x']),
    ('india', None),
]
"""(a word only that record's text holds, its ``level``): every value Python conflates."""


async def level_store() -> tuple[InMemoryStore, list[Chunk]]:
    b = DocumentBuilder('file:///levels.md', 'Levels')
    section = b.section('All')
    for word, level in LEVELS:
        b.add_chunk(section, f'zebrafish {word} record', metadata={} if level is None else {'level': level})
    doc = b.build()
    store = InMemoryStore(HashingEmbeddingModel(64))
    await store.upsert([doc])
    return store, list(doc.chunks)


async def assert_scope_is_exact(store: InMemoryStore, chunks: list[Chunk], f: Filter) -> None:
    expected = {c.id for c in chunks if matches(f, c)}
    total = len(chunks)
    direct = {
        'vector_search': await store.vector_search(SearchRequest('zebrafish', total, f)),
        'text_search': await store.text_search(SearchRequest('zebrafish', total, f)),
        'regex_search': await store.regex_search(RegexRequest('zebrafish', total, f)),
    }
    for method, hits in direct.items():
        got = {h.id for h in hits}
        assert got == expected, f'{method} under {f!r}: extra {got - expected}, missing {expected - got}'
    # Through the Retriever (the tools' path): each record's own word finds it exactly when in scope.
    retriever = Retriever(store, f)
    for chunk, (word, _) in zip(chunks, LEVELS, strict=True):
        got = {h.id for h in await retriever.text_search(word, 3)}
        assert got == ({chunk.id} if chunk.id in expected else set()), f'text_search({word!r}) under {f!r}'


@pytest.mark.parametrize(
    'order',
    [
        *itertools.permutations([True, 1, 1.0]),
        *itertools.permutations([False, 0, -0.0, 0.0]),
    ],
    ids=repr,
)
async def test_scopes_that_python_conflates_each_get_their_own_records(order: tuple[Scalar, ...]) -> None:
    store, chunks = await level_store()
    for value in order:
        await assert_scope_is_exact(store, chunks, F.eq('level', value))
        await assert_scope_is_exact(store, chunks, ~F.in_('level', [value]))
