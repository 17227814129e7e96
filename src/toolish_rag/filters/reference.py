"""The reference semantics of filters (`matches`): the one definition every store must agree with.

Absent equals None, negations are exact complements, no type coercion, lists match by element.
See docs/filters.md#one-semantics-every-store for the rules.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from ..content import MetadataValue, Scalar
from .nodes import (
    And,
    Contains,
    EndsWith,
    Eq,
    Exists,
    Filter,
    Gt,
    Gte,
    HasAnyLabel,
    In,
    Lt,
    Lte,
    Ne,
    Nin,
    Not,
    Or,
    StartsWith,
)
from .visitor import FilterVisitor

__all__ = ['FilterTarget', 'matches', 'scalar_equals']


class FilterTarget(Protocol):
    """What a filter looks at: a record's metadata and labels."""

    @property
    def metadata(self) -> Mapping[str, MetadataValue]: ...

    @property
    def labels(self) -> frozenset[str]: ...


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return 'bool'
    if isinstance(value, (int, float)):
        return 'number'
    if isinstance(value, str):
        return 'str'
    return 'other'


def scalar_equals(stored: Scalar, wanted: Scalar) -> bool:
    """Equality without coercion across kinds (numbers compare numerically)."""
    return _kind(stored) == _kind(wanted) and stored == wanted


def _ordered(stored: Scalar, wanted: Scalar, compare: Callable[[Any, Any], Any]) -> bool:
    kind = _kind(stored)
    if kind != _kind(wanted) or kind not in ('number', 'str'):
        return False
    return bool(compare(stored, wanted))


def _elements(value: MetadataValue) -> list[Scalar]:
    if value is None:
        return []
    if isinstance(value, list):
        return [v for v in value if v is not None]
    return [value]


def matches(f: Filter | None, target: FilterTarget) -> bool:
    """Whether ``target`` satisfies ``f`` (``None`` matches everything)."""
    if f is None:
        return True
    return _Evaluator(target.metadata, target.labels).visit(f)


class _Evaluator(FilterVisitor[bool]):
    """The rules above, node by node, for one record."""

    __slots__ = ('_labels', '_metadata')

    def __init__(self, metadata: Mapping[str, MetadataValue], labels: frozenset[str]) -> None:
        self._metadata = metadata
        self._labels = labels

    def _elements_of(self, key: str) -> list[Scalar]:
        return _elements(self._metadata.get(key))

    def _equals_any(self, key: str, values: tuple[Scalar, ...]) -> bool:
        return any(scalar_equals(e, v) for e in self._elements_of(key) for v in values)

    def _ordered(self, key: str, wanted: Scalar, compare: Callable[[Any, Any], Any]) -> bool:
        return any(_ordered(e, wanted, compare) for e in self._elements_of(key))

    def visit_eq(self, node: Eq) -> bool:
        return self._equals_any(node.key, (node.value,))

    def visit_ne(self, node: Ne) -> bool:
        return not self._equals_any(node.key, (node.value,))

    def visit_gt(self, node: Gt) -> bool:
        return self._ordered(node.key, node.value, operator.gt)

    def visit_gte(self, node: Gte) -> bool:
        return self._ordered(node.key, node.value, operator.ge)

    def visit_lt(self, node: Lt) -> bool:
        return self._ordered(node.key, node.value, operator.lt)

    def visit_lte(self, node: Lte) -> bool:
        return self._ordered(node.key, node.value, operator.le)

    def visit_in(self, node: In) -> bool:
        return self._equals_any(node.key, node.values)

    def visit_nin(self, node: Nin) -> bool:
        return not self._equals_any(node.key, node.values)

    def visit_contains(self, node: Contains) -> bool:
        stored = self._metadata.get(node.key)
        if isinstance(stored, list):
            return self._equals_any(node.key, (node.value,))
        return isinstance(stored, str) and isinstance(node.value, str) and node.value in stored

    def visit_starts_with(self, node: StartsWith) -> bool:
        return any(isinstance(e, str) and e.startswith(node.value) for e in self._elements_of(node.key))

    def visit_ends_with(self, node: EndsWith) -> bool:
        return any(isinstance(e, str) and e.endswith(node.value) for e in self._elements_of(node.key))

    def visit_exists(self, node: Exists) -> bool:
        return bool(self._elements_of(node.key))

    def visit_has_any_label(self, node: HasAnyLabel) -> bool:
        return not self._labels.isdisjoint(node.labels)

    def visit_and(self, node: And) -> bool:
        return all(self.visit(f) for f in node.filters)

    def visit_or(self, node: Or) -> bool:
        return any(self.visit(f) for f in node.filters)

    def visit_not(self, node: Not) -> bool:
        return not self.visit(node.filter)
