"""Filters the model may choose (`ModelFilters`): declarations, the JSON schema, the parser and its messages.

The property at the end checks the translation against an oracle that shares nothing with it:
`interpret` reads the JSON format directly (its own rules for equality, lists and absent keys,
written from the format's documentation and `toolish_rag.filters.reference`'s rules), so a
mapping mistake (``not_in`` to ``In``, ``exists: false`` to ``Exists``) shows up as a record the
two disagree on. It also checks that the schema a model is shown accepts exactly what the parser
accepts, except for the documented differences, computed here independently (`schema_only`).
"""

from __future__ import annotations

import json
import math
import random
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from toolish_rag.content import MetadataValue
from toolish_rag.errors import InvalidRequestError
from toolish_rag.filters import And, Filter, Not, Or, PropertyFilter as F, and_, matches, not_, or_
from toolish_rag.toolset._filterable import (
    MAX_FILTER_CONDITIONS,
    MAX_FILTER_TEXT,
    MAX_FILTER_VALUES,
    OPERATORS,
    FilterableKey,
    ModelFilters,
)

FILTERS = ModelFilters.declare(
    {
        'year': int,
        'price': float,
        'product': Literal['a', 'b', 'c'],
        'rating': Literal[1, 2, 3],
        'path': str,
        'tags': str,
        'draft': bool,
        'date': FilterableKey(str, description='ISO date', operators=frozenset({'gte', 'lt', 'exists'})),
        'lang': FilterableKey(str, values=('en', 'de'), operators=frozenset({'eq', 'in', 'starts_with'})),
    }
)
"""Every type, declared values of text and numbers, a key without ``eq``, and text operators on a key with values."""

VALIDATOR = jsonschema.Draft202012Validator(FILTERS.json_schema())

UNKNOWN = (
    "you may filter on: year (integer), price (number), product (one of 'a', 'b', 'c'), rating (one of 1, 2, 3), "
    "path (text), tags (text), draft (true or false), date (text), lang (one of 'en', 'de'); "
    'combine conditions with any_of and not'
)


def refused(value: object) -> str:
    with pytest.raises(InvalidRequestError) as caught:
        FILTERS.parse(value)
    return str(caught.value)


# -- declarations -----------------------------------------------------------------------------------------


def test_declare_reads_types_literals_and_keys_in_order() -> None:
    filters = ModelFilters.declare(
        {
            'b': int,
            'a': Literal['x', 'y'],
            'flag': Literal[True],
            'n': Literal[1, 2],
            'f': float,
            'k': FilterableKey(str, description='d'),
        }
    )
    assert list(filters.keys) == ['b', 'a', 'flag', 'n', 'f', 'k']
    assert filters.keys['b'] == FilterableKey(int)
    assert filters.keys['a'] == FilterableKey(str, values=('x', 'y'))
    assert filters.keys['flag'] == FilterableKey(bool, values=(True,))
    assert filters.keys['n'] == FilterableKey(int, values=(1, 2))
    assert filters.keys['k'].description == 'd'


def test_declarations_are_immutable_and_hashable() -> None:
    filters = ModelFilters.declare({'year': int})
    with pytest.raises(TypeError):
        filters.keys['tenant'] = FilterableKey(str)  # type: ignore[index]
    source = {'year': FilterableKey(int)}
    built = ModelFilters(source)
    source['tenant'] = FilterableKey(str)
    assert list(built.keys) == ['year']
    assert built == filters and hash(built) == hash(filters)
    assert ModelFilters.declare({'year': float}) != filters
    key = FilterableKey(str, values=['a', 'b'], operators={'eq', 'in'})  # type: ignore[arg-type]
    assert key.values == ('a', 'b') and key.operators == frozenset({'eq', 'in'})
    assert hash(key) == hash(FilterableKey(str, values=('a', 'b'), operators=frozenset({'eq', 'in'})))


@pytest.mark.parametrize(
    ('key', 'operators'),
    [
        (FilterableKey(int), ('eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'not_in', 'exists')),
        (FilterableKey(float), ('eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'not_in', 'exists')),
        (FilterableKey(str), ('eq', 'ne', 'in', 'not_in', 'starts_with', 'ends_with', 'contains', 'exists')),
        (FilterableKey(str, values=('a',)), ('eq', 'ne', 'in', 'not_in', 'exists')),
        (FilterableKey(bool), ('eq', 'ne', 'exists')),
        (FilterableKey(str, operators=frozenset({'exists', 'gte', 'eq'})), ('eq', 'gte', 'exists')),
    ],
)
def test_default_and_chosen_operators(key: FilterableKey, operators: tuple[str, ...]) -> None:
    assert key.effective_operators == operators


@pytest.mark.parametrize(
    ('spec', 'error', 'fragment'),
    [
        ({}, ValueError, 'at least one filterable key'),
        ({'bad-key': int}, ValueError, 'invalid metadata key'),
        ({'x' * 65: int}, ValueError, 'invalid metadata key'),
        ({'any_of': int}, ValueError, "'any_of' cannot be a filterable key"),
        ({'not': str}, ValueError, "'not' cannot be a filterable key"),
        ({'x': list[str]}, TypeError, "filterable key 'x': declare int, float, str, bool"),
        ({'x': None}, TypeError, 'got None'),
        ({'x': 'int'}, TypeError, "got 'int'"),
        ({'x': dict}, TypeError, 'declare int, float, str, bool'),
        ({'x': Literal[1, 'a']}, TypeError, 'a Literal lists values of one type'),
        ({'x': Literal[1, 2.5]}, TypeError, 'FilterableKey(float, values=...) for mixed numbers'),
        ({'x': Literal[None]}, TypeError, 'a Literal lists values of one type'),
        ({'x': Literal['a' * (MAX_FILTER_TEXT + 1)]}, ValueError, 'is over 200 characters'),
    ],
)
def test_bad_declarations_are_refused(spec: dict[str, Any], error: type[Exception], fragment: str) -> None:
    with pytest.raises(error, match=re.escape(fragment)):
        ModelFilters.declare(spec)


@pytest.mark.parametrize(
    ('arguments', 'error', 'fragment'),
    [
        ({'type': list}, TypeError, 'type int, float, str or bool'),
        ({'type': 'str'}, TypeError, 'type int, float, str or bool'),
        ({'type': int, 'values': ()}, ValueError, 'at least one value'),
        ({'type': int, 'values': (True,)}, TypeError, 'value True of a int key is a bool'),
        ({'type': int, 'values': (1.5,)}, TypeError, 'is a float'),
        ({'type': float, 'values': ('1',)}, TypeError, 'is a str'),
        ({'type': bool, 'values': (1,)}, TypeError, 'is a int'),
        ({'type': float, 'values': (math.inf,)}, ValueError, 'is not finite'),
        ({'type': int, 'values': (2**63,)}, ValueError, 'outside the signed 64-bit range'),
        ({'type': str, 'values': ('a\x00',)}, ValueError, 'control character'),
        ({'type': str, 'values': ('\ud800',)}, ValueError, 'lone surrogate'),
        ({'type': str, 'values': ('a', 'a')}, ValueError, 'values repeat a value'),
        ({'type': float, 'values': (1, 1.0)}, ValueError, 'values repeat a value'),
        ({'type': int, 'description': 3}, TypeError, 'description is a str'),
        ({'type': int, 'operators': frozenset()}, ValueError, 'operators (none) are not available for a int key'),
        ({'type': int, 'operators': frozenset({'starts_with'})}, ValueError, "['starts_with'] are not available"),
        ({'type': bool, 'operators': frozenset({'gt', 'eq'})}, ValueError, 'choose from eq, ne, exists'),
        ({'type': str, 'operators': frozenset({'between'})}, ValueError, "['between']"),
    ],
)
def test_bad_keys_are_refused(arguments: dict[str, Any], error: type[Exception], fragment: str) -> None:
    with pytest.raises(error, match=re.escape(fragment)):
        FilterableKey(**arguments)


def test_model_filters_holds_only_filterable_keys() -> None:
    with pytest.raises(TypeError, match='is a type, not a FilterableKey'):
        ModelFilters({'x': int})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match='a mapping of names to keys, not a list'):
        ModelFilters([('x', FilterableKey(int))])  # type: ignore[arg-type]


# -- the schema -----------------------------------------------------------------------------------------

ALLOWED_KEYWORDS = {
    'type',
    'properties',
    'additionalProperties',
    'enum',
    'anyOf',
    'items',
    'minItems',
    'maxItems',
    'maxLength',
    'description',
}


def keywords(schema: Mapping[str, Any]) -> set[str]:
    """Every keyword a schema uses, walking its subschemas."""
    found = set(schema)
    for sub in schema.get('properties', {}).values():
        found |= keywords(sub)
    for sub in schema.get('anyOf', []):
        found |= keywords(sub)
    if 'items' in schema:
        found |= keywords(schema['items'])
    return found


DECLARATIONS = [
    FILTERS,
    ModelFilters.declare({'year': int}),
    ModelFilters.declare({'path': FilterableKey(str, operators=frozenset({'starts_with'}))}),
    ModelFilters.declare(
        {'flag': bool, 'score': Literal[0.5, 1.5], 'many': Literal[tuple(f'v{i}' for i in range(30))]}
    ),  # type: ignore[misc]
]


@pytest.mark.parametrize('filters', DECLARATIONS)
def test_schema_is_valid_flat_and_uses_common_keywords(filters: ModelFilters) -> None:
    schema = filters.json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert keywords(schema) <= ALLOWED_KEYWORDS
    assert list(schema['properties']) == [*filters.keys, 'any_of', 'not']
    for nested in (schema['properties']['any_of']['items'], schema['properties']['not']):
        assert list(nested['properties']) == list(filters.keys)  # one level: no any_of or not inside
    assert filters.json_schema() == schema and filters.json_schema() is not schema
    assert schema['properties']['any_of']['items'] is not schema['properties']['not']


def test_schema_of_one_key_in_full() -> None:
    schema = ModelFilters.declare(
        {'n': FilterableKey(int, values=(1, 2), operators=frozenset({'eq', 'in'}))}
    ).json_schema()
    value = {'type': 'integer', 'enum': [1, 2]}
    condition = {
        'anyOf': [
            value,
            {
                'type': 'object',
                'properties': {'eq': value, 'in': {'type': 'array', 'items': value, 'minItems': 1, 'maxItems': 50}},
                'additionalProperties': False,
            },
        ]
    }
    nested = {'type': 'object', 'properties': {'n': condition}, 'additionalProperties': False}
    assert schema == {
        'type': 'object',
        'description': (
            'Narrow the results by metadata; every condition must hold. Each key takes a value (equals) or an '
            'object of operators, all of which must hold: eq, in (a list of values). At most 20 conditions.'
        ),
        'properties': {
            'n': {**condition, 'description': 'One of 1, 2. A value (equals) or an object of operators: eq, in.'},
            'any_of': {
                'type': 'array',
                'description': (
                    'Match any one of these condition objects (each like this filter, without any_of or not).'
                ),
                'items': nested,
                'minItems': 1,
                'maxItems': MAX_FILTER_CONDITIONS,
            },
            'not': {
                **nested,
                'description': 'Exclude what matches all the conditions of this object (no any_of or not inside).',
            },
        },
        'additionalProperties': False,
    }


def test_schema_of_a_key_without_eq_is_an_operator_object() -> None:
    schema = FILTERS.json_schema()['properties']['date']
    assert schema == {
        'type': 'object',
        'properties': {
            'gte': {'type': 'string', 'maxLength': MAX_FILTER_TEXT},
            'lt': {'type': 'string', 'maxLength': MAX_FILTER_TEXT},
            'exists': {'type': 'boolean'},
        },
        'additionalProperties': False,
        'description': 'ISO date. Text. An object of operators: gte, lt, exists.',
    }
    # text operators take free text even on a key with declared values: a prefix is not a value
    lang = FILTERS.json_schema()['properties']['lang']['anyOf'][1]['properties']
    assert lang['starts_with'] == {'type': 'string', 'maxLength': MAX_FILTER_TEXT}
    assert lang['eq'] == {'type': 'string', 'enum': ['en', 'de']}


# -- parse: results ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ('value', 'expected'),
    [
        ({}, None),
        ({'year': 2024}, F.eq('year', 2024)),
        ({'year': {'eq': 2024}}, F.eq('year', 2024)),
        ({'price': 3}, F.eq('price', 3)),
        ({'price': 2.5}, F.eq('price', 2.5)),
        ({'year': {'gte': 2023, 'lt': 2025}}, and_(F.gte('year', 2023), F.lt('year', 2025))),
        ({'year': {'lt': 2025, 'gte': 2023}}, and_(F.gte('year', 2023), F.lt('year', 2025))),
        ({'year': {'ne': 1, 'gt': 2, 'lte': 9}}, and_(F.ne('year', 1), F.gt('year', 2), F.lte('year', 9))),
        ({'product': {'in': ['a', 'b']}}, F.in_('product', ['a', 'b'])),
        ({'product': {'not_in': ['c']}}, F.nin('product', ['c'])),
        ({'rating': {'gte': 2}}, F.gte('rating', 2)),
        ({'path': {'starts_with': 'docs/'}}, F.starts_with('path', 'docs/')),
        ({'path': {'ends_with': '.md'}}, F.ends_with('path', '.md')),
        ({'tags': {'contains': 'ml'}}, F.contains('tags', 'ml')),
        ({'path': ''}, F.eq('path', '')),
        ({'draft': False}, F.eq('draft', False)),
        ({'draft': {'ne': True}}, F.ne('draft', True)),
        ({'year': {'exists': True}}, F.exists('year')),
        ({'year': {'exists': False}}, not_(F.exists('year'))),
        (
            {'date': {'gte': '2024-01-01', 'lt': '2025-01-01'}},
            and_(F.gte('date', '2024-01-01'), F.lt('date', '2025-01-01')),
        ),
        ({'lang': {'starts_with': 'e'}}, F.starts_with('lang', 'e')),
        ({'product': 'a', 'year': 2024}, and_(F.eq('year', 2024), F.eq('product', 'a'))),
        (
            {'any_of': [{'product': 'a'}, {'year': 2024, 'draft': False}]},
            or_(F.eq('product', 'a'), and_(F.eq('year', 2024), F.eq('draft', False))),
        ),
        ({'any_of': [{'product': 'a'}]}, F.eq('product', 'a')),
        ({'not': {'path': {'starts_with': 'tmp/'}}}, not_(F.starts_with('path', 'tmp/'))),
        (
            {'not': {'draft': True}, 'any_of': [{'year': 1}, {'year': 2}], 'product': 'b'},
            and_(F.eq('product', 'b'), or_(F.eq('year', 1), F.eq('year', 2)), not_(F.eq('draft', True))),
        ),
    ],
)
def test_parse_builds_the_filter(value: dict[str, Any], expected: Filter | None) -> None:
    assert FILTERS.parse(value) == expected


def test_an_integral_float_is_an_integer_for_an_int_key() -> None:
    """JSON Schema's ``integer`` accepts 2024.0, so parse does too, and passes the store an int."""
    parsed = FILTERS.parse({'year': 2024.0, 'rating': {'in': [2.0]}})
    # filter equality compares value types (eq('year', 2024.0) is not eq('year', 2024)), so this checks the int
    assert parsed == and_(F.eq('year', 2024), F.in_('rating', [2]))
    assert parsed != and_(F.eq('year', 2024.0), F.in_('rating', [2.0]))


def test_the_largest_filter_parses() -> None:
    top = {'year': {op: 1 for op in ('eq', 'ne', 'gt', 'gte', 'lt', 'lte')}}
    any_of = [{'product': {'in': ['a'] * MAX_FILTER_VALUES}} for _ in range(MAX_FILTER_CONDITIONS - 7)]
    parsed = FILTERS.parse({**top, 'any_of': any_of, 'not': {'draft': True}})
    assert isinstance(parsed, And) and len(parsed.filters) == 8
    assert isinstance(parsed.filters[-2], Or) and isinstance(parsed.filters[-1], Not)


# -- parse: refusals -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ('value', 'message'),
    [
        (
            [1],
            'the filter must be a JSON object of conditions, such as {"year": {"gte": 1, "lt": 10}, '
            '"price": {"gte": 0.5, "lt": 2.5}}; got a list of 1 item',
        ),
        (None, 'the filter must be a JSON object of conditions, such as'),
        ({'tenant': 'acme'}, f"unknown key 'tenant'; {UNKNOWN}"),
        ({'any_of': [{'Year': 1}]}, f"unknown key 'Year'; {UNKNOWN}"),
        ({1: 2}, f'unknown key 1; {UNKNOWN}'),
        ({'any_of': {'year': 1}}, 'filter any_of: give a list of 1 to 20 condition objects'),
        (
            {'any_of': []},
            'filter any_of: give a list of 1 to 20 condition objects (each like the filter itself, without any_of or not); got a list of 0 items',
        ),
        (
            {'any_of': [{'year': 1}] * 21},
            'filter any_of: give a list of 1 to 20 condition objects (each like the filter itself, '
            'without any_of or not); got a list of 21 items',
        ),
        ({'any_of': ['year']}, 'filter any_of[0]: give a condition object such as {"year"'),
        ({'not': 3}, 'filter not: give a condition object such as'),
        (
            {'any_of': [{'year': 1}, {}]},
            'filter any_of[1]: the condition object is empty: give at least one key, such as',
        ),
        ({'not': {}}, 'filter not: the condition object is empty'),
        (
            {'not': {'any_of': [{'year': 1}]}},
            'filter not: any_of and not may only be used at the top level of the filter, not inside them',
        ),
        ({'any_of': [{'year': 1}, {'not': {'year': 2}}]}, 'filter any_of[1]: any_of and not may only be used'),
        (
            {'date': '2024-01-01'},
            'filter date: give an object of operators such as {"gte": ...}; date takes gte, lt, exists',
        ),
        (
            {'product': ['a', 'b']},
            'filter product: for any of several values give {"in": [...]}; a bare value means equals',
        ),
        (
            {'year': {}},
            'filter year: the operator object is empty: give at least one of eq, ne, gt, gte, lt, lte, in, not_in, exists',
        ),
        (
            {'year': {'between': [1, 2]}},
            "filter year: 'between' is not an operator year takes; use eq, ne, gt, gte, lt, lte, in, not_in, exists",
        ),
        ({'draft': {'gt': False}}, "filter draft: 'gt' is not an operator draft takes; use eq, ne, exists"),
        (
            {'product': {'starts_with': 'a'}},
            "filter product: 'starts_with' is not an operator product takes; use eq, ne, in, not_in, exists",
        ),
        (
            {'year': {'exists': 'yes'}},
            "filter year.exists: give true (the key has a value) or false (it has none); got 'yes' (text)",
        ),
        (
            {'product': {'in': 'a'}},
            "filter product.in: give a list of 1 to 50 values (one of 'a', 'b', 'c'); got 'a' (text)",
        ),
        (
            {'year': {'not_in': []}},
            'filter year.not_in: give a list of 1 to 50 values (integer); got a list of 0 items',
        ),
        (
            {'year': {'in': list(range(51))}},
            'filter year.in: give a list of 1 to 50 values (integer); got a list of 51 items',
        ),
        ({'year': {'in': [1, 'x']}}, "filter year.in[1]: expected an integer; got 'x' (text)"),
        ({'path': {'starts_with': 5}}, 'filter path.starts_with: expected text; got 5'),
        ({'path': 'x' * 201}, 'filter path: the text is over 200 characters: filter on a short value, name or prefix'),
        (
            {'path': 'a\x00b'},
            'filter path holds a control character (U+0000) at character 2: send filter values as plain text in valid Unicode',
        ),
        ({'tags': {'contains': '\x85'}}, 'filter tags.contains holds a control character (U+0085) at character 1'),
        (
            {'path': {'ends_with': 'a\udc00'}},
            'filter path.ends_with holds a lone UTF-16 surrogate (U+DC00) at character 2',
        ),
        ({'product': 'd'}, "filter product: 'd' is not allowed; use one of 'a', 'b', 'c'"),
        ({'rating': {'in': [1, 4]}}, 'filter rating.in[1]: 4 is not allowed; use one of 1, 2, 3'),
        ({'lang': 'e'}, "filter lang: 'e' is not allowed; use one of 'en', 'de'"),
        ({'draft': 1}, 'filter draft: expected true or false; got 1'),
        ({'draft': 'true'}, "filter draft: expected true or false; got 'true' (text)"),
        ({'year': True}, 'filter year: expected an integer; got true'),
        ({'year': '2024'}, "filter year: expected an integer; got '2024' (text)"),
        ({'year': 2024.5}, 'filter year: expected an integer; got 2024.5'),
        ({'year': None}, 'filter year: expected an integer; got null'),
        ({'price': {'gt': {'value': 1}}}, 'filter price.gt: expected a number; got an object'),
        ({'price': math.nan}, 'filter price: expected a finite number; got nan'),
        ({'year': 2**63}, 'filter year: 9223372036854775808 is outside the signed 64-bit range (about ±9.2e18)'),
        ({'year': 1e300}, 'filter year: an integer of 301 digits is outside the signed 64-bit range'),
        ({'price': -(10**30)}, 'filter price: a negative integer of 31 digits is outside the signed 64-bit range'),
        (
            {'any_of': [{'year': {'eq': 1, 'ne': 2}} for _ in range(10)], 'product': 'a'},
            'the filter has more than 20 conditions: keep the ones that matter (several values of one key fit in one "in" condition)',
        ),
    ],
)
def test_refusals_say_how_to_fix_the_call(value: object, message: str) -> None:
    assert refused(value).startswith(message)


def test_a_guessed_scope_key_is_unknown_like_any_other() -> None:
    """The module knows nothing of the hidden scope: 'tenant' gets the answer 'colour' gets."""
    assert refused({'tenant': 'acme'}) == refused({'colour': 'acme'}).replace("'colour'", "'tenant'")
    assert refused({'not': {'tenant': 'acme'}}) == refused({'tenant': 'acme'})


@pytest.mark.parametrize(
    'value',
    [
        {'k' * 1_000_000: 1},
        {'path': 'x' * 1_000_000},
        {'product': 'c' * 1_000_000},
        {'year': {'in': list(range(1_000_000))}},
        {'any_of': [{'year': 1}] * 1_000_000},
        {'year': {'x' * 1_000_000: 1}},
        {'year': 10**5000},
        {'year': 'x' * 1_000_000},
        ['x' * 1_000_000],
    ],
)
def test_messages_stay_short_whatever_was_sent(value: object) -> None:
    assert len(refused(value)) < 500


def test_the_list_of_keys_in_a_refusal_is_bounded() -> None:
    long_values = tuple('v' * 150 + str(i) for i in range(10))
    few = ModelFilters.declare({'a': FilterableKey(str, values=long_values), 'b': int})
    with pytest.raises(InvalidRequestError) as caught:
        few.parse({'tenant': 1})
    assert str(caught.value) == "unknown key 'tenant'; you may filter on: a, b; combine conditions with any_of and not"
    many = ModelFilters.declare({f'key_{i:03}': int for i in range(200)})
    with pytest.raises(InvalidRequestError) as caught:
        many.parse({'tenant': 1})
    message = str(caught.value)
    assert len(message) < 800
    assert message.startswith("unknown key 'tenant'; you may filter on: key_000, key_001, ")
    assert re.search(r', and \d+ more \(see the schema\); combine conditions with any_of and not$', message)


# -- describe ------------------------------------------------------------------------------------------


def test_describe_names_keys_values_operators_and_shows_an_example() -> None:
    filters = ModelFilters.declare(
        {
            'year': FilterableKey(int, description='publication year'),
            'product': Literal['a', 'b'],
            'path': FilterableKey(str, operators=frozenset({'starts_with', 'exists'})),
            'price': float,
        }
    )
    text = filters.describe()
    assert text == (
        "The filter argument narrows results by metadata: year (integer; publication year), product (one of 'a', 'b'), "
        'path (text), price (number). Give a key a value (equals) or an object of operators, all of which must hold '
        '(year and price take eq, ne, gt, gte, lt, lte, in, not_in, exists; product takes eq, ne, in, not_in, exists; '
        'path takes starts_with, exists). All conditions must hold; "any_of": [{...}, {...}] matches any one of '
        'several condition objects and "not": {...} excludes one; for example {"year": {"gte": 1, "lt": 10}, '
        '"product": "a"}.'
    )


@pytest.mark.parametrize(
    'filters', [*DECLARATIONS, ModelFilters.declare({'n': FilterableKey(int, operators=frozenset({'not_in'}))})]
)
def test_the_described_example_is_a_valid_filter(filters: ModelFilters) -> None:
    found = re.search(r'for example (\{.*\})\.$', filters.describe())
    assert found is not None
    example = json.loads(found.group(1))
    assert filters.parse(example) is not None
    assert jsonschema.Draft202012Validator(filters.json_schema()).is_valid(example)


def test_long_value_lists_are_cut_in_words_but_not_in_the_schema() -> None:
    filters = DECLARATIONS[-1]
    assert (
        "many (one of 'v0', 'v1', 'v2', 'v3', 'v4', 'v5', 'v6', 'v7', 'v8', 'v9' (and 20 more))" in filters.describe()
    )
    assert len(filters.json_schema()['properties']['many']['anyOf'][0]['enum']) == 30


# -- the property: the parser against an independent reading of the format ---------------------------------


def kind(value: object) -> str:
    if isinstance(value, bool):
        return 'bool'
    if isinstance(value, int | float):
        return 'number'
    return 'str' if isinstance(value, str) else 'other'


def elements(stored: MetadataValue) -> list[Any]:
    """Absent and None are no value; a list is its non-None elements; a scalar is itself."""
    if stored is None:
        return []
    if isinstance(stored, list):
        return [e for e in stored if e is not None]
    return [stored]


def same(a: object, b: object) -> bool:
    return kind(a) == kind(b) and a == b


def compared(a: object, b: object, op: str) -> bool:
    if kind(a) != kind(b) or kind(a) not in ('number', 'str'):
        return False
    x: Any = a
    return {'gt': x > b, 'gte': x >= b, 'lt': x < b, 'lte': x <= b}[op]  # type: ignore[operator]


def holds(op: str, operand: Any, stored: MetadataValue) -> bool:
    found = elements(stored)
    if op == 'eq':
        return any(same(e, operand) for e in found)
    if op == 'ne':
        return not holds('eq', operand, stored)
    if op in ('gt', 'gte', 'lt', 'lte'):
        return any(compared(e, operand, op) for e in found)
    if op == 'in':
        return any(same(e, v) for e in found for v in operand)
    if op == 'not_in':
        return not holds('in', operand, stored)
    if op == 'starts_with':
        return any(isinstance(e, str) and e.startswith(operand) for e in found)
    if op == 'ends_with':
        return any(isinstance(e, str) and e.endswith(operand) for e in found)
    if op == 'contains':  # a substring of a string; an element of a list
        if isinstance(stored, list):
            return any(same(e, operand) for e in found)
        return isinstance(stored, str) and operand in stored
    assert op == 'exists'
    return bool(found) == operand


def conditions_hold(obj: Mapping[str, Any], metadata: Mapping[str, MetadataValue]) -> bool:
    def key_holds(key: str, condition: Any) -> bool:
        if isinstance(condition, dict):
            return all(holds(op, operand, metadata.get(key)) for op, operand in condition.items())
        return holds('eq', condition, metadata.get(key))

    return all(key_holds(k, c) for k, c in obj.items())


def interpret(value: Mapping[str, Any], metadata: Mapping[str, MetadataValue]) -> bool:
    """Whether a record meets a (valid) model filter, read straight from the JSON."""
    plain = {k: v for k, v in value.items() if k not in ('any_of', 'not')}
    if not conditions_hold(plain, metadata):
        return False
    if 'any_of' in value and not any(conditions_hold(c, metadata) for c in value['any_of']):
        return False
    return not ('not' in value and conditions_hold(value['not'], metadata))


FORBIDDEN = re.compile('[\x00-\x1f\x7f-\x9f\ud800-\udfff]')


def schema_only(value: Mapping[str, Any]) -> bool:
    """Whether a schema-valid filter breaks a rule the schema cannot state (the module docstring lists them)."""
    objects = [value] + list(value.get('any_of', [])) + ([value['not']] if 'not' in value else [])
    if any(not o for o in objects[1:]):
        return True
    conditions = 0
    for obj in objects:
        for key, condition in obj.items():
            if key in ('any_of', 'not'):
                continue
            pairs = list(condition.items()) if isinstance(condition, dict) else [('eq', condition)]
            if not pairs:
                return True
            conditions += len(pairs)
            for _, operand in pairs:
                for v in operand if isinstance(operand, list) else [operand]:
                    if isinstance(v, str) and FORBIDDEN.search(v):
                        return True
                    if FILTERS.keys[key].type is int and isinstance(v, float):
                        v = int(v)
                    if isinstance(v, int) and not isinstance(v, bool) and not -(2**63) <= v < 2**63:
                        return True
    return conditions > MAX_FILTER_CONDITIONS


def keys_in(f: Filter) -> set[str]:
    if isinstance(f, And | Or):
        return set().union(*(keys_in(c) for c in f.filters))
    if isinstance(f, Not):
        return keys_in(f.filter)
    return {f.key}  # type: ignore[union-attr]


NUMBERS = [0, 1, 2, 3, -1, 2023, 2024, 2025, 2.0, 2.5, -0.0, 0.5, 1e300, 1e20, 2**63, -(2**63) - 1, 10**20]
TEXTS = ['', 'a', 'b', 'c', 'd', 'docs/', 'docs/a.md', 'faq/b.md', 'ml', 'en', 'de', 'e', '2024-01-01', '2025-06-30']
ODD_TEXTS = ['x' * MAX_FILTER_TEXT, 'x' * (MAX_FILTER_TEXT + 1), 'a\x00', '\ud800', 'a\x7f', 'é\t']
SCALARS = [*NUMBERS, *TEXTS, *ODD_TEXTS, True, False, None]
# Filters are generated by a plain `random.Random` seeded by hypothesis: about ten times faster than
# composing strategies, and with the odds below (hypothesis's own random values lean to the extremes,
# which made most filters invalid). Each choice is good most of the time and bad some of the time, so
# most filters are valid and the translation is checked, while every refusal path is still reached.
# A failure prints the filter itself (the assertion messages quote it), which is what shrinking would give.


def junk(rnd: random.Random, depth: int = 0) -> Any:
    """Any JSON value: what a confused model might send anywhere."""
    roll = rnd.random()
    if depth > 1 or roll < 0.6:
        return rnd.choice(SCALARS)
    if roll < 0.8:
        return [junk(rnd, depth + 1) for _ in range(rnd.randint(0, 3))]
    return {rnd.choice(TEXTS): junk(rnd, depth + 1) for _ in range(rnd.randint(0, 2))}


def bad(rnd: random.Random, one_in: int) -> bool:
    return rnd.randrange(one_in) == 0


def good_scalar(rnd: random.Random, key: FilterableKey) -> Any:
    if key.values is not None:
        return rnd.choice([*key.values, 2.0] if key.type is int else key.values)
    if key.type is bool:
        return rnd.choice([True, False])
    if key.type is str:
        return rnd.choice(TEXTS)
    if key.type is float and bad(rnd, 4):
        return rnd.uniform(-5, 5)
    return rnd.choice([*NUMBERS[:13], -2, -3])


def operand(rnd: random.Random, key: FilterableKey, op: str) -> Any:
    if bad(rnd, 20):
        return junk(rnd)
    if op == 'exists':
        return rnd.choice([True, False])
    if op in ('in', 'not_in'):
        if bad(rnd, 10):
            return rnd.choice([[], [1] * MAX_FILTER_VALUES, [1] * (MAX_FILTER_VALUES + 1)])
        return [good_scalar(rnd, key) for _ in range(rnd.randint(1, 3))]
    if op in ('starts_with', 'ends_with', 'contains'):
        return rnd.choice(TEXTS)
    return good_scalar(rnd, key)


def key_condition(rnd: random.Random, name: str) -> Any:
    key = FILTERS.keys.get(name)
    if key is None or bad(rnd, 15):
        return junk(rnd)
    if 'eq' in key.effective_operators and rnd.random() < 0.4:
        return good_scalar(rnd, key)
    if bad(rnd, 20):
        return {}
    ops = [*key.effective_operators] * 8 + [*OPERATORS, 'between']
    return {op: operand(rnd, key, op) for op in rnd.choices(ops, k=rnd.randint(1, 3))}


def condition_object(rnd: random.Random, min_size: int) -> dict[str, Any]:
    names = [*FILTERS.keys] * 15 + ['tenant', 'Year', 'any_of', 'not']
    return {name: key_condition(rnd, name) for name in rnd.choices(names, k=rnd.randint(min_size, 4))}


def model_filter(rnd: random.Random) -> Any:
    if bad(rnd, 20):
        return junk(rnd)
    value: dict[str, Any] = condition_object(rnd, 0)
    if rnd.random() < 0.4:
        count = rnd.randint(1, 4)
        value['any_of'] = junk(rnd) if bad(rnd, 20) else [condition_object(rnd, 1 - bad(rnd, 20)) for _ in range(count)]
    if rnd.random() < 0.3:
        value['not'] = junk(rnd) if bad(rnd, 20) else condition_object(rnd, 1 - bad(rnd, 20))
    return value


model_filters = st.integers(0, 2**32 - 1).map(lambda seed: model_filter(random.Random(seed)))


@dataclass(frozen=True)
class Record:
    metadata: dict[str, MetadataValue]
    labels: frozenset[str] = field(default_factory=frozenset)


def random_records(count: int) -> list[Record]:
    """Records with each key absent, None, of its type, of another type, or a list of mixed values."""
    rng = random.Random(13)
    pools: dict[str, list[Any]] = {
        'year': [2023, 2024, 2025, 2024.0, 2.5, 2, 1, 0, -0.0],
        'price': [0.5, 2.5, 2.0, 2, 1e20, 3],
        'product': ['a', 'b', 'c', 'd'],
        'rating': [1, 2, 3, 2.0, 4],
        'path': ['docs/a.md', 'faq/b.md', 'docs/', '', 'e'],
        'tags': ['ml', 'a', 'docs/a.md'],
        'draft': [True, False],
        'date': ['2024-01-01', '2025-06-30', '2023-12-31'],
        'lang': ['en', 'de', 'e'],
    }
    other = [True, 1, 'a', 2.5, '2024', 'en']
    records = []
    for _ in range(count):
        metadata: dict[str, MetadataValue] = {'tenant': rng.choice(['acme', 'other', None])}
        for key, pool in pools.items():
            roll = rng.random()
            if roll < 0.15:
                continue
            if roll < 0.2:
                metadata[key] = None
            elif roll < 0.75:
                metadata[key] = rng.choice(pool)
            elif roll < 0.85:
                metadata[key] = rng.choice(other)
            else:
                metadata[key] = [rng.choice(pool + other) for _ in range(rng.randint(0, 3))]
        records.append(Record(metadata))
    return records


RECORDS = random_records(60)
SCOPE = F.eq('tenant', 'acme')


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(model_filters)
def test_parse_agrees_with_the_schema_and_an_independent_reading(value: Any) -> None:
    valid = VALIDATOR.is_valid(value)
    try:
        parsed = FILTERS.parse(value)
    except InvalidRequestError as e:
        assert len(str(e)) < 500
        assert not valid or schema_only(value), f'the schema accepts {value!r} but parse refused it: {e}'
        return
    assert valid, f'parse accepted {value!r}, which the schema refuses'
    assert not schema_only(value), f'parse accepted {value!r}, which breaks a rule beyond the schema'
    if parsed is None:
        assert value == {}
        return
    assert keys_in(parsed) <= set(FILTERS.keys)
    scoped = and_(SCOPE, parsed)
    for record in RECORDS:
        expected = interpret(value, record.metadata)
        assert matches(parsed, record) == expected, (value, record.metadata)
        assert matches(scoped, record) == (expected and record.metadata['tenant'] == 'acme')


def test_the_strategy_reaches_both_outcomes() -> None:
    """A guard on the property's strategy: it must reach accepted filters that select some records, and refusals."""
    outcomes: Counter[str] = Counter()

    @settings(max_examples=200, deadline=None, database=None, derandomize=True)
    @given(model_filters)
    def run(value: Any) -> None:
        try:
            parsed = FILTERS.parse(value)
        except InvalidRequestError:
            outcomes['refused'] += 1
            return
        outcomes['accepted'] += 1
        if parsed is not None and 0 < sum(matches(parsed, r) for r in RECORDS) < len(RECORDS):
            outcomes['selective'] += 1

    run()
    assert outcomes['accepted'] >= 40 and outcomes['refused'] >= 40 and outcomes['selective'] >= 10, outcomes
