"""Filters the model may choose: the keys a developer declares (`FilterableKey`) and `ModelFilters`, their
JSON schema, parser and words.

The operators, values and bounds of one key, then the filter over the declared keys. The deployer's
hidden scope stays ANDed with whatever the model sends, so a model's filter can only narrow it. The
format, its bounds and why the schema is looser than the parser: docs/toolset.md.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, get_args, get_origin

from ..content import Scalar, validate_metadata_key
from ..errors import InvalidRequestError, echo
from ..filters import (
    Contains,
    EndsWith,
    Eq,
    Exists,
    Filter,
    Gt,
    Gte,
    In,
    Lt,
    Lte,
    Ne,
    Nin,
    StartsWith,
    and_,
    not_,
    or_,
)
from ..search import ID_RULE, ArgumentRule
from ..writes import INT64_MAX, INT64_MIN, describe_int

if TYPE_CHECKING:
    from typing import _SpecialForm

__all__ = [
    'MAX_FILTER_CONDITIONS',
    'MAX_FILTER_TEXT',
    'MAX_FILTER_VALUES',
    'OPERATORS',
    'FilterableKey',
    'FilterableSpec',
    'ModelFilters',
]

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


@dataclass(frozen=True, slots=True)
class ModelFilters:
    """The metadata keys a model may filter on, and the schema, parser and words that go with them.

    Build it with `declare`; ``keys`` keeps the declaration order (the schema lists keys in it)
    and cannot be changed after construction.
    """

    keys: Mapping[str, FilterableKey]

    def __post_init__(self) -> None:
        if not isinstance(self.keys, Mapping):
            raise TypeError(f'filterable keys are a mapping of names to keys, not a {type(self.keys).__name__}')
        if not self.keys:
            raise ValueError('declare at least one filterable key')
        checked: dict[str, FilterableKey] = {}
        for name, key in self.keys.items():
            validate_metadata_key(name)
            if name in _RESERVED:
                raise ValueError(
                    f'{name!r} cannot be a filterable key: the filter format uses it for combining conditions'
                )
            if not isinstance(key, FilterableKey):
                raise TypeError(f'filterable key {name!r} is a {type(key).__name__}, not a FilterableKey (use declare)')
            checked[name] = key
        object.__setattr__(self, 'keys', MappingProxyType(checked))

    def __hash__(self) -> int:
        return hash(frozenset(self.keys.items()))

    @classmethod
    def declare(cls, spec: Mapping[str, FilterableSpec]) -> ModelFilters:
        """``{'year': int, 'product': Literal['a', 'b'], 'path': FilterableKey(str, operators=...)}`` as `ModelFilters`."""
        return cls({name: _to_key(name, s) for name, s in spec.items()})

    def json_schema(self) -> dict[str, Any]:
        """The JSON schema of one filter object (a fresh dict on every call: callers may transform it)."""
        used = [op for op in OPERATORS if any(op in k.effective_operators for k in self.keys.values())]
        operators = ', '.join(_GLOSSES.get(op, op) for op in used)
        properties: dict[str, Any] = {name: key._schema() for name, key in self.keys.items()}
        properties['any_of'] = {
            'type': 'array',
            'description': 'Match any one of these condition objects (each like this filter, without any_of or not).',
            'items': self._nested_schema(),
            'minItems': 1,
            'maxItems': MAX_FILTER_CONDITIONS,
        }
        properties['not'] = {
            **self._nested_schema(),
            'description': 'Exclude what matches all the conditions of this object (no any_of or not inside).',
        }
        return {
            'type': 'object',
            'description': (
                'Narrow the results by metadata; every condition must hold. Each key takes a value (equals) '
                f'or an object of operators, all of which must hold: {operators}. '
                f'At most {MAX_FILTER_CONDITIONS} conditions.'
            ),
            'properties': properties,
            'additionalProperties': False,
        }

    def _nested_schema(self) -> dict[str, Any]:
        return {
            'type': 'object',
            'properties': {name: key._schema(described=False) for name, key in self.keys.items()},
            'additionalProperties': False,
        }

    def parse(self, value: object) -> Filter | None:
        """The model's filter as a core `Filter`; ``None`` for ``{}`` (no condition).

        Raises `InvalidRequestError` with a short message that says what to send instead.
        ``None`` is refused like any other non-object: the toolset handles an omitted filter.
        """
        if not isinstance(value, dict):
            raise InvalidRequestError(
                f'the filter must be a JSON object of conditions, such as {self._example()}; got {_described(value)}'
            )
        return _Reader(self).top(value)

    def describe(self) -> str:
        """A few sentences for the instructions: the keys, their types, values and operators, and an example."""
        keys = ', '.join(f'{name} ({self._summary(key)})' for name, key in self.keys.items())
        groups: dict[tuple[str, ...], list[str]] = {}
        for name, key in self.keys.items():
            groups.setdefault(key.effective_operators, []).append(name)
        takes = '; '.join(
            f'{_joined(names)} {"takes" if len(names) == 1 else "take"} {", ".join(ops)}'
            for ops, names in groups.items()
        )
        return (
            f'The filter argument narrows results by metadata: {keys}. '
            f'Give a key a value (equals) or an object of operators, all of which must hold ({takes}). '
            'All conditions must hold; "any_of": [{...}, {...}] matches any one of several condition objects '
            f'and "not": {{...}} excludes one; for example {self._example()}.'
        )

    @staticmethod
    def _summary(key: FilterableKey) -> str:
        return f'{key.kind()}; {key.description}' if key.description else key.kind()

    def _example(self) -> str:
        """A valid filter on the first two keys, as JSON: the format shown by example."""
        names = list(self.keys)[:2]
        return json.dumps({name: _example_condition(self.keys[name]) for name in names}, ensure_ascii=False)


def _example_condition(key: FilterableKey) -> object:
    operators = key.effective_operators
    low, high = key.values[:1] * 2 if key.values else _SAMPLES[key.type]
    if key.values is not None and 'eq' in operators:
        return low
    if key.type in (int, float) and key.values is None and {'gte', 'lt'} <= set(operators):
        return {'gte': low, 'lt': high}
    if 'starts_with' in operators:
        return {'starts_with': _SAMPLES[str][0]}
    if 'eq' in operators:
        return low
    op = operators[0]
    if op == 'exists':
        return {'exists': True}
    if op in _TEXT:
        return {op: _SAMPLES[str][0]}
    return {op: [low] if op in _LISTS else low}


def _joined(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f'{", ".join(names[:-1])} and {names[-1]}'


def _described(value: object) -> str:
    """What the model sent, for a message: bounded whatever it was."""
    if value is None:
        return 'null'
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, int):
        return str(value) if abs(value) < 10**20 else describe_int(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return f'{echo(value)} (text)'
    if isinstance(value, list):
        return f'a list of {len(value)} item{"" if len(value) == 1 else "s"}'
    if isinstance(value, dict):
        return 'an object'
    return f'a {type(value).__name__}'


def _name(value: object) -> str:
    return echo(value) if isinstance(value, str) else _described(value)


def _refuse(at: str, message: str) -> InvalidRequestError:
    return InvalidRequestError(f'filter {at}: {message}' if at else f'the filter: {message}')


@dataclass(slots=True)
class _Reader:
    """One parse of one filter: checks as it goes, and counts conditions against the bound."""

    filters: ModelFilters
    count: int = field(default=0)

    def top(self, obj: dict[Any, Any]) -> Filter | None:
        """The whole filter: its keys' conditions (declaration order), then ``any_of``, then ``not``."""
        any_of = self._any_of(obj['any_of']) if 'any_of' in obj else None
        negated = not_(self._nested(obj['not'], 'not')) if 'not' in obj else None
        leaves = self._conditions({k: v for k, v in obj.items() if k not in _RESERVED}, '')
        return and_(*leaves, any_of, negated) if leaves or any_of or negated else None

    def _any_of(self, value: object) -> Filter:
        if not isinstance(value, list) or not 1 <= len(value) <= MAX_FILTER_CONDITIONS:
            raise _refuse(
                'any_of',
                f'give a list of 1 to {MAX_FILTER_CONDITIONS} condition objects (each like the filter itself, '
                f'without any_of or not); got {_described(value)}',
            )
        return or_(*(self._nested(item, f'any_of[{i}]') for i, item in enumerate(value)))

    def _nested(self, value: object, at: str) -> Filter:
        if not isinstance(value, dict):
            raise _refuse(at, f'give a condition object such as {self.filters._example()}; got {_described(value)}')
        if not value:
            raise _refuse(
                at, f'the condition object is empty: give at least one key, such as {self.filters._example()}'
            )
        for name in value:
            if name in _RESERVED:
                raise _refuse(at, 'any_of and not may only be used at the top level of the filter, not inside them')
        return and_(*self._conditions(value, f'{at}.'))

    def _conditions(self, obj: dict[Any, Any], prefix: str) -> list[Filter]:
        """Each key's conditions, checked in the order sent, returned in declaration order."""
        by_key: dict[str, list[Filter]] = {}
        for name, value in obj.items():
            key = self.filters.keys.get(name) if isinstance(name, str) else None
            if key is None:
                raise InvalidRequestError(f'unknown key {_name(name)}; {self._keys_sentence()}')
            by_key[name] = self._key(name, key, value, f'{prefix}{name}')
        return [f for name in self.filters.keys if name in by_key for f in by_key[name]]

    def _keys_sentence(self) -> str:
        listed = [f'{name} ({key.kind()})' for name, key in self.filters.keys.items()]
        if sum(len(item) + 2 for item in listed) > _MAX_LISTING:  # many keys or long values: names only
            listed = list(self.filters.keys)
        shown: list[str] = []
        for item in listed:
            if sum(len(s) + 2 for s in shown) + len(item) > _MAX_LISTING:
                shown.append(f'and {len(listed) - len(shown)} more (see the schema)')
                break
            shown.append(item)
        return f'you may filter on: {", ".join(shown)}; combine conditions with any_of and not'

    def _key(self, name: str, key: FilterableKey, value: object, at: str) -> list[Filter]:
        operators = key.effective_operators
        if not isinstance(value, dict):
            if 'eq' not in operators:
                raise _refuse(
                    at,
                    f'give an object of operators such as {{"{operators[0]}": ...}}; {name} takes {", ".join(operators)}',
                )
            if isinstance(value, list):
                raise _refuse(at, 'for any of several values give {"in": [...]}; a bare value means equals')
            self._counted()
            return [Eq(key=name, value=_operand(key, value, at))]
        if not value:
            raise _refuse(at, f'the operator object is empty: give at least one of {", ".join(operators)}')
        built: list[tuple[int, Filter]] = []
        for op, operand in value.items():
            if op not in operators:
                raise _refuse(at, f'{_name(op)} is not an operator {name} takes; use {", ".join(operators)}')
            self._counted()
            built.append((OPERATORS.index(op), _condition(name, key, op, operand, f'{at}.{op}')))
        return [f for _, f in sorted(built, key=lambda pair: pair[0])]

    def _counted(self) -> None:
        self.count += 1
        if self.count > MAX_FILTER_CONDITIONS:
            raise InvalidRequestError(
                f'the filter has more than {MAX_FILTER_CONDITIONS} conditions: keep the ones that matter '
                '(several values of one key fit in one "in" condition)'
            )


def _condition(name: str, key: FilterableKey, op: str, operand: object, at: str) -> Filter:
    """One operator's condition: its operand checked, translated to the filter algebra."""
    if op == 'exists':
        if not isinstance(operand, bool):
            raise _refuse(at, f'give true (the key has a value) or false (it has none); got {_described(operand)}')
        return Exists(key=name) if operand else not_(Exists(key=name))
    if op in _LISTS:
        if not isinstance(operand, list) or not 1 <= len(operand) <= MAX_FILTER_VALUES:
            raise _refuse(
                at, f'give a list of 1 to {MAX_FILTER_VALUES} values ({key.kind()}); got {_described(operand)}'
            )
        values = tuple(_operand(key, v, f'{at}[{i}]') for i, v in enumerate(operand))
        return In(key=name, values=values) if op == 'in' else Nin(key=name, values=values)
    if op in _TEXT:
        return _SINGLE[op](key=name, value=_text(operand, at))
    return _SINGLE[op](key=name, value=_operand(key, operand, at))


def _text(value: object, at: str) -> str:
    if not isinstance(value, str):
        raise _refuse(at, f'expected text; got {_described(value)}')
    if len(value) > MAX_FILTER_TEXT:
        raise _refuse(at, f'the text is over {MAX_FILTER_TEXT} characters: filter on a short value, name or prefix')
    return ArgumentRule(f'filter {at}', ID_RULE.forbidden, 'send filter values as plain text in valid Unicode').check(
        value
    )


def _operand(key: FilterableKey, value: object, at: str) -> Scalar:
    """``value`` as a value of ``key``: its type (an integral float counts as an integer), bounds and enum."""
    checked: Scalar
    if key.type is str:
        checked = _text(value, at)
    elif key.type is bool:
        if not isinstance(value, bool):
            raise _refuse(at, f'expected true or false; got {_described(value)}')
        checked = value
    else:
        checked = _number(key, value, at)
    if key.values is not None and checked not in key.values:
        raise _refuse(at, f'{_shown(checked)} is not allowed; use {key.kind()}')
    return checked


def _number(key: FilterableKey, value: object, at: str) -> int | float:
    integral = key.type is int
    expected = 'an integer' if integral else 'a number'
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _refuse(at, f'expected {expected}; got {_described(value)}')
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _refuse(at, f'expected a finite number; got {_described(value)}')
        if integral:
            if not value.is_integer():
                raise _refuse(at, f'expected an integer; got {_described(value)}')
            value = int(value)
    if isinstance(value, int) and not INT64_MIN <= value <= INT64_MAX:
        raise _refuse(at, f'{_described(value)} is outside the signed 64-bit range (about ±9.2e18)')
    return value
