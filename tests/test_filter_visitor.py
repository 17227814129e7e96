"""`FilterVisitor` covers every filter node: the node list, the dispatch, and every implementation.

A node type that is defined but missing from the `Filter` union, from `FilterVisitor`, from its
dispatch, from the reference evaluator or from a store's translation fails a test here (and the
last three also fail mypy).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, get_type_hints

import pytest

from toolish_rag.content import Entity, MetadataValue
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.filters import FILTER_NODE_TYPES, Filter, FilterNode, FilterVisitor, matches
from toolish_rag.stores import InMemoryStore
from toolish_rag.testing._corpus import EDGE_FILTERS
from toolish_rag_lancedb import LanceDBStore
from toolish_rag_tantivy import TantivyStore

# One value per field name: enough to build one instance of every node type.
_FIELD_SAMPLES: dict[str, Any] = {
    'key': 'k',
    'value': 'ab',
    'values': ('ab', 2),
    'labels': frozenset({'L1'}),
    'filters': ({'op': 'eq', 'key': 'k', 'value': 'ab'}, {'op': 'exists', 'key': 'n'}),
    'filter': {'op': 'eq', 'key': 'k', 'value': 'ab'},
}


def sample(node: type[FilterNode]) -> Filter:
    fields = [name for name in node.model_fields if name != 'op']
    missing = set(fields) - _FIELD_SAMPLES.keys()
    assert not missing, f'{node.__name__} has fields {missing} this test cannot fill: add samples for them'
    built: Filter = node(**{name: _FIELD_SAMPLES[name] for name in fields})  # type: ignore[assignment]
    return built


SAMPLES = [sample(node) for node in FILTER_NODE_TYPES]
IDS = [node.__name__ for node in FILTER_NODE_TYPES]


def _concrete_subclasses(cls: type[FilterNode]) -> Iterator[type[FilterNode]]:
    for sub in cls.__subclasses__():
        if not sub.__name__.startswith('_'):
            yield sub
        yield from _concrete_subclasses(sub)


def test_node_types_are_every_filter_node_class() -> None:
    assert set(FILTER_NODE_TYPES) == set(_concrete_subclasses(FilterNode))
    ops = [node.model_fields['op'].default for node in FILTER_NODE_TYPES]
    assert len(set(ops)) == len(ops) == 16


def test_the_visitor_has_one_abstract_method_per_node_type() -> None:
    wanted = {f'visit_{node.model_fields["op"].default}': node for node in FILTER_NODE_TYPES}
    assert FilterVisitor.__abstractmethods__ == wanted.keys()
    for name, node in wanted.items():
        assert get_type_hints(getattr(FilterVisitor, name))['node'] is node, name


def _recording_visitor() -> FilterVisitor[tuple[str, Filter]]:
    """A visitor whose every method reports its own name and the node it received."""

    def method(name: str) -> Callable[[Any, Filter], tuple[str, Filter]]:
        return lambda self, node: (name, node)

    methods = {name: method(name) for name in FilterVisitor.__abstractmethods__}
    recorder: FilterVisitor[tuple[str, Filter]] = type('Recorder', (FilterVisitor,), methods)()
    return recorder


@pytest.mark.parametrize('node', SAMPLES, ids=IDS)
def test_visit_dispatches_each_node_to_its_own_method(node: Filter) -> None:
    assert _recording_visitor().visit(node) == (f'visit_{node.op}', node)


def test_visit_refuses_what_is_not_a_filter_node() -> None:
    with pytest.raises(TypeError, match='unknown filter node str'):
        _recording_visitor().visit('eq')  # type: ignore[arg-type]


def test_a_visitor_missing_a_method_cannot_be_instantiated() -> None:
    methods = {name: lambda self, node: None for name in FilterVisitor.__abstractmethods__ if name != 'visit_not'}
    partial = type('Partial', (FilterVisitor,), methods)
    with pytest.raises(TypeError, match='visit_not'):
        partial()


def test_the_conformance_kit_exercises_every_node_type() -> None:
    def node_types(f: Filter) -> set[type[FilterNode]]:
        children: tuple[Filter, ...] = getattr(f, 'filters', ())
        if hasattr(f, 'filter'):
            children = (f.filter,)
        return {type(f)}.union(*(node_types(c) for c in children))

    used = set().union(*(node_types(f) for _, f in EDGE_FILTERS))
    assert used == set(FILTER_NODE_TYPES)


# -- every implementation handles every node type, and agrees with the reference ----------------

_METADATA: list[dict[str, MetadataValue]] = [
    {'k': 'ab', 'n': 1},
    {'k': 'abc'},
    {'k': ['zz', 'ab'], 'n': 2},
    {},
    {'k': 2},
    {'k': 'b', 'n': None},
    {'k': 'a'},
]
RECORDS = [
    Entity(id=f'e{i}', name=f'entity {i}', metadata=md, labels=frozenset({'L1'} if i % 2 else {'L2'}))
    for i, md in enumerate(_METADATA)
]


def _stores(tmp_path: Path) -> dict[str, Any]:
    embedder = HashingEmbeddingModel(64)
    return {
        'memory': InMemoryStore(embedder),
        'lancedb': LanceDBStore(tmp_path / 'kb', embedder=embedder),
        'tantivy': TantivyStore(),
    }


async def test_every_node_type_is_translated_by_every_store_as_the_reference_says(tmp_path: Path) -> None:
    stores = _stores(tmp_path)
    ids = [r.id for r in RECORDS]
    for store in stores.values():
        await store.upsert(RECORDS)
    for node in SAMPLES:
        want = {r.id for r in RECORDS if matches(node, r)}
        assert 0 < len(want) < len(RECORDS), f'{node!r} does not tell the records apart: pick other samples'
        for name, store in stores.items():
            assert store.supports_filter(node), (name, node)
            got = {r.id for r in await store.get_records(ids, filter=node)}
            assert got == want, f'{name} on {node!r}: extra {got - want}, missing {want - got}'
