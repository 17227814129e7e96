"""Filters compiled to parameterised SQL over ``jsonb`` metadata and a ``text[]`` of labels.

Every value, key and label travels as a bind parameter (psycopg's named ``%(pN)s``); the SQL text
holds only fixed fragments, so nothing a model or tenant writes can change a statement's shape.
The translation follows the reference semantics (`toolish_rag.filters.matches`) node by node:
absent equals ``None``, a list matches by element, no coercion across kinds, negations are exact
complements (every leaf is ``TRUE`` or ``FALSE``, never ``NULL``). ``eq``/``in`` are ``jsonb`` containment
(the GIN index); ranges, ``starts_with`` and ``exists`` are jsonpath tests, ranges ANDed with a comparison a
range index can serve (`toolish_rag_postgres._ranges`). See docs/stores/postgres.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from toolish_rag import filters
from toolish_rag.content import Scalar
from toolish_rag.filters import Filter, FilterVisitor, scalar_equals

__all__ = ['Compiled', 'compile_filter', 'scope_values', 'unstorable']

_ELEMENTS = 'toolish_elements({metadata} -> %({key})s::text)'
"""The non-null elements of a key's value: a list's elements, a scalar alone, nothing when absent."""


def unstorable(value: Scalar) -> str | None:
    """Why a metadata value cannot be stored or filtered on here (``jsonb`` holds no NUL, UTF-8 no surrogate)."""
    if isinstance(value, str):
        if '\x00' in value:
            return 'a string with a NUL character, which PostgreSQL text cannot hold'
        if any('\ud800' <= ch <= '\udfff' for ch in value):
            return 'a string with a lone UTF-16 surrogate, which UTF-8 cannot encode'
    return None


@dataclass
class Compiled:
    """A ``WHERE`` fragment and its parameters (names ``p0``, ``p1``...; unique within one statement)."""

    sql: str
    params: dict[str, Any] = field(default_factory=dict)


class _Compiler(FilterVisitor[str]):
    """One filter to one boolean SQL expression over a row's ``metadata`` and ``labels``."""

    def __init__(self, prefix: str, alias: str) -> None:
        self.params: dict[str, Any] = {}
        self.prefix = prefix
        self.metadata = f'{alias}metadata'
        self.labels = f'{alias}labels'

    def bind(self, value: Any) -> str:
        name = f'{self.prefix}{len(self.params)}'
        self.params[name] = value
        return f'%({name})s'

    def _json(self, value: Any) -> str:
        return self.bind(json.dumps(value, allow_nan=False)) + '::jsonb'

    def _equals_any(self, key: str, values: Iterable[Scalar]) -> str:
        # `@>` compares numbers numerically and keeps booleans, numbers and strings apart, as the
        # reference does; the GIN index on metadata serves both forms (a scalar, a list holding it).
        parts = []
        for value in dict.fromkeys((type(v), v) for v in values):
            parts.append(f'{self.metadata} @> {self._json({key: value[1]})}')
            parts.append(f'{self.metadata} @> {self._json({key: [value[1]]})}')
        return '(' + ' OR '.join(parts) + ')' if parts else 'FALSE'

    def _element_test(self, key: str, test: str) -> str:
        return (
            f'EXISTS (SELECT 1 FROM {_ELEMENTS.format(metadata=self.metadata, key=self._key(key))} AS e WHERE {test})'
        )

    def _key(self, key: str) -> str:
        name = f'{self.prefix}{len(self.params)}'
        self.params[name] = key
        return name

    def _path(self, key: str, path: str, value: Scalar | None = None) -> str:
        """``path`` (a fixed jsonpath over the key's value, ``$v`` bound to ``value``) holds: never ``NULL``."""
        bound = '' if value is None else ', ' + self._json({'v': value})
        return f"COALESCE(jsonb_path_exists({self._value(key)}, '{path}'{bound}), FALSE)"

    def _value(self, key: str) -> str:
        return f'{self.metadata} -> {self.bind(key)}::text'

    def _ordered(self, key: str, value: Scalar, op: str) -> str:
        # Two equal tests (`toolish_rag_postgres._ranges`): the jsonpath one is cheap per row and comes first;
        # the bound's comparison is what a range index on the key serves. The bound is NULL only where the
        # jsonpath test is FALSE (no element of the value's kind), so the conjunction is never NULL.
        if isinstance(value, bool):
            return 'FALSE'
        path = self._path(key, f'lax $[*] ? (@ {op} $v)', value)
        top = 'TRUE' if op in ('>', '>=') else 'FALSE'
        if isinstance(value, (int, float)):
            bound = f'toolish_number_bound({self._value(key)}, {top}) {op} {self._json(value)}::numeric'
        else:
            bound = (
                f'toolish_string_bound({self._value(key)}, {top}) COLLATE "C" {op} {self.bind(value)}::text COLLATE "C"'
            )
        return f'({path} AND {bound})'

    def visit_eq(self, node: filters.Eq) -> str:
        return self._equals_any(node.key, (node.value,))

    def visit_ne(self, node: filters.Ne) -> str:
        return f'(NOT {self._equals_any(node.key, (node.value,))})'

    def visit_gt(self, node: filters.Gt) -> str:
        return self._ordered(node.key, node.value, '>')

    def visit_gte(self, node: filters.Gte) -> str:
        return self._ordered(node.key, node.value, '>=')

    def visit_lt(self, node: filters.Lt) -> str:
        return self._ordered(node.key, node.value, '<')

    def visit_lte(self, node: filters.Lte) -> str:
        return self._ordered(node.key, node.value, '<=')

    def visit_in(self, node: filters.In) -> str:
        return self._equals_any(node.key, node.values)

    def visit_nin(self, node: filters.Nin) -> str:
        return f'(NOT {self._equals_any(node.key, node.values)})'

    def visit_contains(self, node: filters.Contains) -> str:
        key = self.bind(node.key) + '::text'
        listed = f"(jsonb_typeof({self.metadata} -> {key}) = 'array' AND {self.metadata} @> {self._json({node.key: [node.value]})})"
        if not isinstance(node.value, str):
            return f'COALESCE({listed}, FALSE)'
        text = f"(jsonb_typeof({self.metadata} -> {key}) = 'string' AND strpos({self.metadata} ->> {key}, {self.bind(node.value)}::text) > 0)"
        return f'COALESCE({listed} OR {text}, FALSE)'

    def visit_starts_with(self, node: filters.StartsWith) -> str:
        return self._path(node.key, 'lax $[*] ? (@ starts with $v)', node.value)

    def visit_ends_with(self, node: filters.EndsWith) -> str:
        value = self.bind(node.value)
        test = f"jsonb_typeof(e) = 'string' AND right(e #>> '{{}}', char_length({value}::text)) = {value}::text"
        return self._element_test(node.key, test)

    def visit_exists(self, node: filters.Exists) -> str:
        return self._path(node.key, 'lax $[*] ? (@ != null)')

    def visit_has_any_label(self, node: filters.HasAnyLabel) -> str:
        return f'({self.labels} && {self.bind(sorted(node.labels))}::text[])'

    def visit_and(self, node: filters.And) -> str:
        return '(' + ' AND '.join(self.visit(f) for f in node.filters) + ')' if node.filters else 'TRUE'

    def visit_or(self, node: filters.Or) -> str:
        return '(' + ' OR '.join(self.visit(f) for f in node.filters) + ')' if node.filters else 'FALSE'

    def visit_not(self, node: filters.Not) -> str:
        return f'(NOT {self.visit(node.filter)})'


def compile_filter(f: Filter | None, prefix: str = 'p', alias: str = '') -> Compiled:
    """``f`` as a ``WHERE`` fragment with its parameters (``TRUE`` for no filter); ``alias``: ``'r.'`` names
    the columns of a table aliased ``r``."""
    if f is None:
        return Compiled('TRUE')
    compiler = _Compiler(prefix, alias)
    return Compiled(compiler.visit(f), compiler.params)


def scope_values(f: Filter | None, keys: Iterable[str]) -> dict[str, list[Scalar]]:
    """The values a filter pins each of ``keys`` to, from its top-level ``eq``/``in`` conjuncts.

    What row-level security enforces (`toolish.scope`): a key the filter does not pin is absent,
    and the policy then admits no row for it (fail closed).
    """
    wanted = set(keys)
    found: dict[str, list[Scalar]] = {}
    parts = f.filters if isinstance(f, filters.And) else (() if f is None else (f,))
    for part in parts:
        if isinstance(part, filters.Eq) and part.key in wanted:
            values: list[Scalar] = [part.value]
        elif isinstance(part, filters.In) and part.key in wanted:
            values = list(part.values)
        else:
            continue
        previous = found.get(part.key)
        found[part.key] = (
            values if previous is None else [v for v in previous if any(scalar_equals(v, w) for w in values)]
        )
    return found
