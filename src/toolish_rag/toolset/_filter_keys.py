"""Filterable keys: how a developer declares the metadata keys a model may filter on (`FilterableKey`).

The operators, values and bounds of one key; `ModelFilters` (in `filterable`) builds on them. See docs/toolset.md.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, get_args, get_origin

from ..content import Scalar
from ..errors import echo
from ..filters import (
    Contains,
    EndsWith,
    Eq,
    Filter,
    Gt,
    Gte,
    Lt,
    Lte,
    Ne,
    StartsWith,
)
from ..search import ID_RULE
from ..writes import INT64_MAX, INT64_MIN

if TYPE_CHECKING:
    from typing import _SpecialForm


MAX_FILTER_CONDITIONS = 20
"""The most conditions one model filter may hold (each operator, and each bare value, is one)."""
MAX_FILTER_VALUES = 50
"""The most values an ``in`` or ``not_in`` list may hold."""
MAX_FILTER_TEXT = 200
"""The longest string a model filter may hold (a value, a prefix, a substring)."""

OPERATORS = ('eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'not_in', 'starts_with', 'ends_with', 'contains', 'exists')
"""Every operator of the format, in the order schemas, messages and translated filters list them."""

_ORDERING = frozenset({'gt', 'gte', 'lt', 'lte'})
_LISTS = frozenset({'in', 'not_in'})
_TEXT = frozenset({'starts_with', 'ends_with', 'contains'})
"""Operators whose operand is free text, never one of a key's declared values (a prefix is not a value)."""
_NUMBER_OPERATORS = frozenset({'eq', 'ne', 'exists'} | _ORDERING | _LISTS)
_ALLOWED: Mapping[type, frozenset[str]] = {
    int: _NUMBER_OPERATORS,
    float: _NUMBER_OPERATORS,
    str: frozenset(OPERATORS),
    bool: frozenset({'eq', 'ne', 'exists'}),
}
"""The operators each type can take. Ordering on text (by code point) is allowed but not a default:
it suits ISO dates stored as text, and a developer who has those says so."""
_RESERVED = frozenset({'any_of', 'not'})

_SINGLE: Mapping[str, Callable[..., Filter]] = {
    'eq': Eq,
    'ne': Ne,
    'gt': Gt,
    'gte': Gte,
    'lt': Lt,
    'lte': Lte,
    'starts_with': StartsWith,
    'ends_with': EndsWith,
    'contains': Contains,
}
_GLOSSES = {
    'ne': 'ne (not equal; also true when the key is missing)',
    'in': 'in (a list of values)',
    'not_in': 'not_in (none of a list; also true when the key is missing)',
    'contains': 'contains (a substring; on a list, an element)',
    'exists': 'exists (true: the key has a value; false: it has none)',
}
_TYPE_NAMES: Mapping[type, str] = {int: 'integer', float: 'number', str: 'text', bool: 'true or false'}
_JSON_TYPES: Mapping[type, str] = {int: 'integer', float: 'number', str: 'string', bool: 'boolean'}
_SAMPLES: Mapping[type, tuple[Scalar, Scalar]] = {
    int: (1, 10),
    float: (0.5, 2.5),
    str: ('abc', 'xyz'),
    bool: (True, False),
}
_LISTED_VALUES = 10
"""How many declared values a message or the instructions list before '…' (the schema lists all)."""
_MAX_LISTING = 600
"""The longest list of keys an "unknown key" message spells out (it goes back to the model as a retry)."""

ScalarType: TypeAlias = type[str] | type[int] | type[float] | type[bool]


def _declared_value_problem(value_type: ScalarType, value: object) -> TypeError | ValueError | None:
    """Why ``value`` cannot be a declared value of a ``value_type`` key, or ``None``."""
    where = f'value {value!r} of a {value_type.__name__} key'
    if value_type is int:
        fits = isinstance(value, int) and not isinstance(value, bool)
    elif value_type is float:
        fits = isinstance(value, int | float) and not isinstance(value, bool)
    else:
        fits = isinstance(value, value_type)
    if not fits:
        return TypeError(f'{where} is a {type(value).__name__}')
    if isinstance(value, float) and not math.isfinite(value):
        return ValueError(f'{where} is not finite')
    if isinstance(value, int) and not isinstance(value, bool) and not INT64_MIN <= value <= INT64_MAX:
        return ValueError(f'{where} is outside the signed 64-bit range')
    if isinstance(value, str) and (len(value) > MAX_FILTER_TEXT or ID_RULE.forbidden.search(value)):
        return ValueError(
            f'{where} is over {MAX_FILTER_TEXT} characters or holds a control character or lone surrogate'
        )
    return None


@dataclass(frozen=True, slots=True)
class FilterableKey:
    """One metadata key the model may filter on: its type and, optionally, its values and operators.

    ``FilterableKey(str, values=('a', 'b'))`` is what ``Literal['a', 'b']`` declares. A key holding
    lists of ``type`` is declared the same way: ``eq`` and ``in`` then match any element, and
    ``contains`` a whole element (on a string value ``contains`` is a substring test; see
    `toolish_rag.filters.reference`).
    """

    type: ScalarType
    values: tuple[Scalar, ...] | None = None
    """The values the model may use (an enum in the schema); ``None``: any value of ``type``."""
    description: str | None = None
    """What the key means, shown to the model in the schema and the instructions."""
    operators: frozenset[str] | None = None
    """The operators the model may use; ``None``: the defaults for ``type`` (see `effective_operators`)."""

    def __post_init__(self) -> None:
        if not (isinstance(self.type, type) and self.type in _ALLOWED):
            raise TypeError(f'a filterable key has type int, float, str or bool, not {self.type!r}')
        if self.values is not None:
            self._check_values(tuple(self.values))
        if self.description is not None and not isinstance(self.description, str):
            raise TypeError(f'a filterable key description is a str, not {type(self.description).__name__}')
        if self.operators is not None:
            self._check_operators(frozenset(self.operators))

    def _check_values(self, values: tuple[Scalar, ...]) -> None:
        if not values:
            raise ValueError('values, when given, list at least one value (None means any value)')
        for value in values:
            problem = _declared_value_problem(self.type, value)
            if problem is not None:
                raise problem
        if len({(type(v) is bool, v) for v in values}) != len(values):
            raise ValueError(f'values repeat a value: {values!r}')
        object.__setattr__(self, 'values', values)

    def _check_operators(self, operators: frozenset[str]) -> None:
        allowed = _ALLOWED[self.type]
        unknown = sorted(str(op) for op in operators if op not in allowed)
        if unknown or not operators:
            raise ValueError(
                f'operators {unknown or "(none)"} are not available for a {self.type.__name__} key; '
                f'choose from {", ".join(op for op in OPERATORS if op in allowed)}'
            )
        object.__setattr__(self, 'operators', operators)

    @property
    def effective_operators(self) -> tuple[str, ...]:
        """The operators the model may use, in `OPERATORS` order.

        By default: every operator the type takes, except ordering on text, and, for a key with
        declared values, the text operators (a categorical key is matched by value, not by part).
        """
        if self.operators is not None:
            chosen = self.operators
        elif self.type is str:
            chosen = _ALLOWED[str] - _ORDERING - (_TEXT if self.values is not None else frozenset())
        else:
            chosen = _ALLOWED[self.type]
        return tuple(op for op in OPERATORS if op in chosen)

    def kind(self) -> str:
        """The key's type as the model reads it: ``integer``, ``text``, ``one of 'a', 'b'``."""
        if self.values is None:
            return _TYPE_NAMES[self.type]
        shown = ', '.join(_shown(v) for v in self.values[:_LISTED_VALUES])
        more = len(self.values) - _LISTED_VALUES
        return f'one of {shown}' + (f' (and {more} more)' if more > 0 else '')

    def _value_schema(self) -> dict[str, Any]:
        """The JSON schema of one value of this key."""
        schema: dict[str, Any] = {'type': _JSON_TYPES[self.type]}
        if self.values is not None:
            schema['enum'] = list(self.values)  # declared values are checked short and plain
        elif self.type is str:
            schema['maxLength'] = MAX_FILTER_TEXT
        return schema

    def _operand_schema(self, op: str) -> dict[str, Any]:
        if op == 'exists':
            return {'type': 'boolean'}
        if op in _TEXT:
            return {'type': 'string', 'maxLength': MAX_FILTER_TEXT}
        if op in _LISTS:
            return {'type': 'array', 'items': self._value_schema(), 'minItems': 1, 'maxItems': MAX_FILTER_VALUES}
        return self._value_schema()

    def _schema(self, *, described: bool = True) -> dict[str, Any]:
        """The JSON schema of this key's condition: a value (if it takes ``eq``) or an operator object."""
        operators = self.effective_operators
        operator_object = {
            'type': 'object',
            'properties': {op: self._operand_schema(op) for op in operators},
            'additionalProperties': False,
        }
        schema: dict[str, Any] = (
            {'anyOf': [self._value_schema(), operator_object]} if 'eq' in operators else operator_object
        )
        if described:
            meaning = f'{self.description.rstrip(".")}. ' if self.description else ''
            kind = self.kind()
            form = 'A value (equals) or an object of operators' if 'eq' in operators else 'An object of operators'
            schema['description'] = f'{meaning}{kind[0].upper()}{kind[1:]}. {form}: {", ".join(operators)}.'
        return schema


if TYPE_CHECKING:
    FilterableSpec: TypeAlias = type[str] | type[int] | type[float] | type[bool] | FilterableKey | _SpecialForm
else:
    FilterableSpec: TypeAlias = type | FilterableKey | object
"""How a filterable key is declared: ``int``, ``float``, ``str``, ``bool``, a ``Literal[...]`` of
values of one of those types, or a `FilterableKey` (mypy sees ``Literal['a']`` as a special form)."""


def _to_key(name: str, spec: object) -> FilterableKey:
    """The `FilterableKey` a declaration ``spec`` means; ``TypeError`` for anything else."""
    if isinstance(spec, FilterableKey):
        return spec
    if isinstance(spec, type) and spec in _ALLOWED:
        return FilterableKey(spec)  # type: ignore[arg-type]
    if get_origin(spec) is Literal:
        values = get_args(spec)
        kinds = {bool if isinstance(v, bool) else type(v) for v in values}
        if len(kinds) != 1 or not kinds <= _ALLOWED.keys():
            raise TypeError(
                f'filterable key {name!r}: a Literal lists values of one type, int, float, str or bool; '
                f'got {spec!r} (declare FilterableKey(float, values=...) for mixed numbers)'
            )
        return FilterableKey(kinds.pop(), values=values)
    raise TypeError(
        f'filterable key {name!r}: declare int, float, str, bool, a Literal[...] of values of one of those '
        f'types, or a FilterableKey; got {spec!r}'
    )


def _shown(value: Scalar) -> str:
    """A declared or sent value as the model would write it: 'a', 12, true."""
    return echo(value) if isinstance(value, str) else json.dumps(value)
