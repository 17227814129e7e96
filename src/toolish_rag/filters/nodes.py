"""The filter algebra: property and label predicates combined with ``&``, ``|`` and ``~``.

Frozen pydantic models with an ``op`` discriminator (`Filter` is the union, `parse_filter` reads
one), so a filter round-trips through JSON. See docs/filters.md.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable
from typing import Annotated, Any, Literal, TypeAlias, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_serializer, field_validator, model_validator

from ..content import Scalar, validate_metadata_key

__all__ = [
    'FILTER_NODE_TYPES',
    'MAX_FILTER_DEPTH',
    'And',
    'Contains',
    'EndsWith',
    'EntityFilter',
    'Eq',
    'Exists',
    'Filter',
    'FilterNode',
    'Gt',
    'Gte',
    'HasAnyLabel',
    'In',
    'Lt',
    'Lte',
    'Ne',
    'Nin',
    'Not',
    'Or',
    'PropertyFilter',
    'StartsWith',
    'and_',
    'combine_all',
    'filter_depth',
    'not_',
    'or_',
    'parse_filter',
]


def _identity(value: object) -> Hashable:
    """What makes a filter (or a value inside one) *this* filter: its structure, with types.

    Python says ``1 == True == 1.0`` and ``0.0 == -0.0``, and pydantic's model equality
    inherits that, so ``eq('level', 1)`` and ``eq('level', True)`` were equal and hashed
    alike, while the reference semantics tell them apart (``True`` is not ``1``). Anything
    keyed by a filter (a store's mask cache) then served one filter's records for the
    other. Here every value carries its type and a float is compared by its exact bits
    (``float.hex``, so the sign of zero counts): deliberately conservative, two filters are
    equal only when they are the same filter, never merely when they select the same records.
    """
    if isinstance(value, FilterNode):
        return (type(value), tuple(_identity(getattr(value, name)) for name in type(value).model_fields))
    if isinstance(value, float):
        return (float, value.hex())
    if isinstance(value, tuple):
        return (tuple, tuple(_identity(v) for v in value))
    if isinstance(value, frozenset):
        return (frozenset, frozenset(_identity(v) for v in value))
    return (type(value), value)


class FilterNode(BaseModel):
    """Base of every filter node; gives the ``&``, ``|`` and ``~`` operators.

    Equality and hashing are structural *with types* (see `_identity`): pydantic's own
    would make ``eq('level', 1)`` equal to ``eq('level', True)``.
    """

    model_config = ConfigDict(frozen=True, extra='forbid')

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FilterNode):
            return NotImplemented
        return _identity(self) == _identity(other)

    def __hash__(self) -> int:
        return hash(_identity(self))

    def __and__(self, other: FilterNode) -> Filter:
        return and_(self, other)  # type: ignore[arg-type]

    def __or__(self, other: FilterNode) -> Filter:
        return or_(self, other)  # type: ignore[arg-type]

    def __invert__(self) -> Not:
        return Not(filter=self)  # type: ignore[arg-type]

    def to_json(self) -> str:
        return self.model_dump_json()


class _KeyNode(FilterNode):
    key: str

    @field_validator('key')
    @classmethod
    def _plain_key(cls, key: str) -> str:
        return validate_metadata_key(key)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f'filter values must be finite numbers, got {value!r}')
    return value


class _ScalarNode(_KeyNode):
    value: Scalar

    @field_validator('value')
    @classmethod
    def _finite_value(cls, value: Scalar) -> Scalar:
        checked: Scalar = _finite(value)
        return checked


class Eq(_ScalarNode):
    """``key`` equals ``value`` (for a list-valued key: some element equals it)."""

    op: Literal['eq'] = 'eq'


class Ne(_ScalarNode):
    """Exactly ``not eq``: also true when the key is absent."""

    op: Literal['ne'] = 'ne'


class Gt(_ScalarNode):
    op: Literal['gt'] = 'gt'


class Gte(_ScalarNode):
    op: Literal['gte'] = 'gte'


class Lt(_ScalarNode):
    op: Literal['lt'] = 'lt'


class Lte(_ScalarNode):
    op: Literal['lte'] = 'lte'


class _ValuesNode(_KeyNode):
    values: tuple[Scalar, ...]

    @field_validator('values')
    @classmethod
    def _finite_values(cls, values: tuple[Scalar, ...]) -> tuple[Scalar, ...]:
        return tuple(_finite(v) for v in values)


class In(_ValuesNode):
    """``key`` equals one of ``values``."""

    op: Literal['in'] = 'in'


class Nin(_ValuesNode):
    """Exactly ``not in``: also true when the key is absent."""

    op: Literal['nin'] = 'nin'


class Contains(_ScalarNode):
    """A string value contains ``value`` as a substring; a list value has ``value`` as an element."""

    op: Literal['contains'] = 'contains'


class StartsWith(_KeyNode):
    op: Literal['starts_with'] = 'starts_with'
    value: str


class EndsWith(_KeyNode):
    op: Literal['ends_with'] = 'ends_with'
    value: str


class Exists(_KeyNode):
    """The key is present with a value other than ``None``."""

    op: Literal['exists'] = 'exists'


class HasAnyLabel(FilterNode):
    """The record carries at least one of ``labels``."""

    op: Literal['has_any_label'] = 'has_any_label'
    labels: frozenset[str]

    @field_serializer('labels')
    def _sorted_labels(self, labels: frozenset[str]) -> list[str]:
        # Sets iterate in a per-process order: sort so equal filters give equal JSON.
        return sorted(labels)

    @model_validator(mode='after')
    def _non_empty(self) -> HasAnyLabel:
        if not self.labels:
            raise ValueError('has_any_label needs at least one label')
        return self


MAX_FILTER_DEPTH = 32
"""How deeply ``and``/``or``/``not`` may nest. A real scope is a few levels deep; a filter
nested hundreds deep (from a token file, a request, or a model's filter) would exhaust the
recursion of every evaluator and translator, and no store's query parser takes it."""


def filter_depth(f: FilterNode) -> int:
    """Levels of nesting: 1 for a predicate, 1 + the deepest child for ``and``/``or``/``not``."""
    if isinstance(f, And | Or):
        return 1 + max((filter_depth(c) for c in f.filters), default=0)
    if isinstance(f, Not):
        return 1 + filter_depth(f.filter)
    return 1


class _Compound(FilterNode):
    @model_validator(mode='after')
    def _bounded_depth(self) -> Any:
        # Children were validated first, so each is at most MAX_FILTER_DEPTH deep: bounded recursion.
        depth = filter_depth(self)
        if depth > MAX_FILTER_DEPTH:
            raise ValueError(f'filters may nest at most {MAX_FILTER_DEPTH} levels deep; this one nests {depth}')
        return self


class And(_Compound):
    op: Literal['and'] = 'and'
    filters: tuple[Filter, ...]


class Or(_Compound):
    op: Literal['or'] = 'or'
    filters: tuple[Filter, ...]


class Not(_Compound):
    op: Literal['not'] = 'not'
    filter: Filter


Filter: TypeAlias = Annotated[
    Eq | Ne | Gt | Gte | Lt | Lte | In | Nin | Contains | StartsWith | EndsWith | Exists | HasAnyLabel | And | Or | Not,
    Field(discriminator='op'),
]
"""Any filter node. Use `PropertyFilter` and `EntityFilter` to build them."""

for _model in (And, Or, Not):
    _model.model_rebuild()

FILTER_NODE_TYPES: tuple[type[FilterNode], ...] = get_args(get_args(Filter)[0])
"""Every node class, in `Filter`'s order: read from the union itself, so it cannot drift from it."""

_FILTER_ADAPTER: TypeAdapter[Any] = TypeAdapter(Filter)


def parse_filter(data: str | bytes | dict[str, Any]) -> Filter:
    """Read a filter from its JSON text or its ``model_dump()`` dict."""
    if isinstance(data, (str, bytes)):
        return _FILTER_ADAPTER.validate_json(data)  # type: ignore[no-any-return]
    return _FILTER_ADAPTER.validate_python(data)  # type: ignore[no-any-return]


def _flatten(kind: type[And] | type[Or], filters: Iterable[Filter | None]) -> list[Filter]:
    out: list[Filter] = []
    for f in filters:
        if f is None:
            continue
        if isinstance(f, kind):
            out.extend(f.filters)
        else:
            out.append(f)
    return out


def and_(*filters: Filter | None) -> Filter:
    """All of ``filters`` (``None`` entries are ignored). Raises on none."""
    parts = _flatten(And, filters)
    if not parts:
        raise ValueError('and_ needs at least one filter')
    return parts[0] if len(parts) == 1 else And(filters=tuple(parts))


def or_(*filters: Filter) -> Filter:
    """Any of ``filters``."""
    parts = _flatten(Or, filters)
    if not parts:
        raise ValueError('or_ needs at least one filter')
    return parts[0] if len(parts) == 1 else Or(filters=tuple(parts))


def not_(filter: Filter) -> Filter:
    """The negation of ``filter``."""
    return Not(filter=filter)


def combine_all(filters: Iterable[Filter | None]) -> Filter | None:
    """AND together the non-``None`` filters; ``None`` when there are none."""
    parts = _flatten(And, filters)
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else And(filters=tuple(parts))


class PropertyFilter:
    """Builders for metadata predicates: ``PropertyFilter.eq("tenant", "acme")``.

    Keys must be plain metadata names (see `toolish_rag.content.validate_metadata_key`);
    anything else is rejected when the filter is built, before any store sees it.
    """

    @staticmethod
    def eq(key: str, value: Scalar) -> Eq:
        return Eq(key=key, value=value)

    @staticmethod
    def ne(key: str, value: Scalar) -> Ne:
        return Ne(key=key, value=value)

    @staticmethod
    def gt(key: str, value: Scalar) -> Gt:
        return Gt(key=key, value=value)

    @staticmethod
    def gte(key: str, value: Scalar) -> Gte:
        return Gte(key=key, value=value)

    @staticmethod
    def lt(key: str, value: Scalar) -> Lt:
        return Lt(key=key, value=value)

    @staticmethod
    def lte(key: str, value: Scalar) -> Lte:
        return Lte(key=key, value=value)

    @staticmethod
    def in_(key: str, values: Iterable[Scalar]) -> In:
        """``key`` equals one of ``values`` (``in`` is a Python keyword, hence the underscore)."""
        return In(key=key, values=tuple(values))

    @staticmethod
    def nin(key: str, values: Iterable[Scalar]) -> Nin:
        return Nin(key=key, values=tuple(values))

    @staticmethod
    def contains(key: str, value: Scalar) -> Contains:
        return Contains(key=key, value=value)

    @staticmethod
    def starts_with(key: str, value: str) -> StartsWith:
        return StartsWith(key=key, value=value)

    @staticmethod
    def ends_with(key: str, value: str) -> EndsWith:
        return EndsWith(key=key, value=value)

    @staticmethod
    def exists(key: str) -> Exists:
        return Exists(key=key)

    and_ = staticmethod(and_)
    or_ = staticmethod(or_)
    not_ = staticmethod(not_)
    parse = staticmethod(parse_filter)


class EntityFilter:
    """Builders for label predicates; they compose with `PropertyFilter` nodes."""

    @staticmethod
    def has_any_label(*labels: str | Iterable[str]) -> HasAnyLabel:
        flat: set[str] = set()
        for label in labels:
            if isinstance(label, str):
                flat.add(label)
            else:
                flat.update(label)
        return HasAnyLabel(labels=frozenset(flat))
