"""Filters the model may choose: `ModelFilters`, the declared keys' JSON schema, parser and words.

The deployer's hidden scope stays ANDed with whatever the model sends, so a model's filter can
only narrow it. The format, its bounds and why the schema is looser than the parser: docs/toolset.md.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..content import Scalar, validate_metadata_key
from ..errors import InvalidRequestError, echo
from ..filters import Eq, Exists, Filter, In, Nin, and_, not_, or_
from ..search import ID_RULE, ArgumentRule
from ..writes import INT64_MAX, INT64_MIN, describe_int
from ._filter_keys import (
    _GLOSSES,
    _LISTS,
    _MAX_LISTING,
    _RESERVED,
    _SAMPLES,
    _SINGLE,
    _TEXT,
    MAX_FILTER_CONDITIONS,
    MAX_FILTER_TEXT,
    MAX_FILTER_VALUES,
    OPERATORS,
    FilterableKey,
    FilterableSpec,
    _shown,
    _to_key,
)

__all__ = [
    'MAX_FILTER_CONDITIONS',
    'MAX_FILTER_TEXT',
    'MAX_FILTER_VALUES',
    'OPERATORS',
    'FilterableKey',
    'FilterableSpec',
    'ModelFilters',
]


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
