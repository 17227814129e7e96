"""The reference semantics of filters: one definition that every store must agree with.

The rules, chosen so that every store (columnar, inverted index, SQL) can translate them
natively and so that no rule depends on a store's quirks:

* **Absent and None are the same.** A key missing from a record and a key set to ``None``
  both make every positive predicate false (``eq``, ``in``, ``gt``..., ``contains``,
  ``starts_with``, ``ends_with``, ``exists``).
* **Negations are exact complements.** ``ne`` is ``not eq``, ``nin`` is ``not in`` and
  ``~f`` is ``not f``: so ``ne("status", "deleted")`` keeps records with no status.
* **Types do not coerce.** Numbers compare with numbers (``1 == 1.0``), strings with
  strings, booleans only with booleans (``True`` is not ``1``). A predicate whose value has
  another type than the stored one is false (and its negation true).
* **Ordering** (``gt``, ``gte``, ``lt``, ``lte``) is numeric for numbers and by code point
  for strings; booleans are not ordered (always false).
* **Lists match by element.** For a list-valued key, a positive predicate is true when some
  element satisfies it; ``contains`` on a list means "has this element".
* **Strings** match case-sensitively; ``contains``/``starts_with``/``ends_with`` apply to
  string values (or string elements of a list) only.
* **Labels.** ``has_any_label`` is true when the record carries one of the labels.
"""

from __future__ import annotations

from collections.abc import Mapping
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


def _ordered(stored: Scalar, wanted: Scalar, op: str) -> bool:
    kind = _kind(stored)
    if kind != _kind(wanted) or kind not in ('number', 'str'):
        return False
    a: Any = stored
    b: Any = wanted
    if op == 'gt':
        return bool(a > b)
    if op == 'gte':
        return bool(a >= b)
    if op == 'lt':
        return bool(a < b)
    return bool(a <= b)


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
    return _eval(f, target.metadata, target.labels)


def _eval(f: Filter, md: Mapping[str, MetadataValue], labels: frozenset[str]) -> bool:
    if isinstance(f, And):
        return all(_eval(x, md, labels) for x in f.filters)
    if isinstance(f, Or):
        return any(_eval(x, md, labels) for x in f.filters)
    if isinstance(f, Not):
        return not _eval(f.filter, md, labels)
    if isinstance(f, HasAnyLabel):
        return not labels.isdisjoint(f.labels)
    elements = _elements(md.get(f.key))
    if isinstance(f, Exists):
        return bool(elements)
    if isinstance(f, Eq):
        return any(scalar_equals(e, f.value) for e in elements)
    if isinstance(f, Ne):
        return not any(scalar_equals(e, f.value) for e in elements)
    if isinstance(f, In):
        return any(scalar_equals(e, v) for e in elements for v in f.values)
    if isinstance(f, Nin):
        return not any(scalar_equals(e, v) for e in elements for v in f.values)
    if isinstance(f, (Gt, Gte, Lt, Lte)):
        return any(_ordered(e, f.value, f.op) for e in elements)
    if isinstance(f, Contains):
        stored = md.get(f.key)
        if isinstance(stored, list):
            return any(scalar_equals(e, f.value) for e in elements)
        return isinstance(stored, str) and isinstance(f.value, str) and f.value in stored
    if isinstance(f, StartsWith):
        return any(isinstance(e, str) and e.startswith(f.value) for e in elements)
    if isinstance(f, EndsWith):
        return any(isinstance(e, str) and e.endswith(f.value) for e in elements)
    raise TypeError(f'unknown filter node {type(f).__name__}')  # pragma: no cover
