"""Filters to tantivy queries, with exactly the reference semantics.

Every node of `toolish_rag.filters` has a native translation over the metadata fields
described in `toolish_rag_tantivy.schema`:

* ``eq``/``in`` are term queries on the field of the value's type (so ``5`` never
  matches ``"5"`` and ``True`` never matches ``1``; ``1`` and ``1.0`` share a term);
* ``gt``/``gte``/``lt``/``lte`` on numbers are range queries over the numeric JSON fast
  field; on strings, the key's distinct values are read from the term dictionary,
  compared by code point and matched with a term-set query; on booleans they are empty;
* ``contains`` is element equality on list keys (``m_list``) and a substring regex over
  the terms of scalar string keys; ``starts_with``/``ends_with`` are term-dictionary
  regexes;
* ``exists`` is a term on ``m_keys``, ``has_any_label`` a term set on ``labels``;
* ``ne``, ``nin`` and ``not`` are ``all - positive``, so records without the key are
  kept: exact complements.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal

import tantivy
from tantivy import Occur, Query

from toolish_rag.content import Scalar
from toolish_rag.filters import (
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

from .schema import SEP, scalar_terms

__all__ = ['FilterCompiler']


def _regex_escape(text: str) -> str:
    return ''.join(ch if ch.isascii() and ch.isalnum() else f'\\x{{{ord(ch):x}}}' for ch in text)


def _format_number(value: int | float) -> str:
    """A number as tantivy's query parser reads it: plain positional notation."""
    if isinstance(value, int):
        if -(2**63) <= value < 2**63:
            return str(value)
        value = float(value)
    text = format(Decimal(repr(value + 0.0)), 'f')  # + 0.0 turns -0.0 into 0.0
    return text


def _not(q: Query) -> Query:
    return Query.boolean_query([(Occur.Must, Query.all_query()), (Occur.MustNot, q)])


def _and(parts: list[Query]) -> Query:
    if not parts:
        return Query.all_query()
    if len(parts) == 1:
        return parts[0]
    return Query.boolean_query([(Occur.Must, p) for p in parts])


def _or(parts: list[Query]) -> Query:
    if not parts:
        return Query.empty_query()
    if len(parts) == 1:
        return parts[0]
    return Query.boolean_query([(Occur.Should, p) for p in parts])


class FilterCompiler:
    """Compiles filters against one index and one searcher (string ranges read its terms)."""

    def __init__(self, index: tantivy.Index, searcher: tantivy.Searcher) -> None:
        self._index = index
        self._schema = index.schema
        self._searcher = searcher

    def compile(self, f: Filter) -> Query:
        if isinstance(f, And):
            return _and([self.compile(x) for x in f.filters])
        if isinstance(f, Or):
            return _or([self.compile(x) for x in f.filters])
        if isinstance(f, Not):
            return _not(self.compile(f.filter))
        if isinstance(f, HasAnyLabel):
            return Query.term_set_query(self._schema, 'labels', sorted(f.labels))
        if isinstance(f, Exists):
            return self._term('m_keys', f.key)
        if isinstance(f, Eq):
            return self._eq(f.key, f.value)
        if isinstance(f, Ne):
            return _not(self._eq(f.key, f.value))
        if isinstance(f, In):
            return self._in(f.key, f.values)
        if isinstance(f, Nin):
            return _not(self._in(f.key, f.values))
        if isinstance(f, (Gt, Gte, Lt, Lte)):
            return self._ordered(f.key, f.value, f.op)
        if isinstance(f, Contains):
            return self._contains(f.key, f.value)
        if isinstance(f, StartsWith):
            return self._string_match(f.key, _regex_escape(f.value) + '.*', lambda s: s.startswith(f.value))
        if isinstance(f, EndsWith):
            return self._string_match(f.key, '.*' + _regex_escape(f.value), lambda s: s.endswith(f.value))
        raise TypeError(f'unknown filter node {type(f).__name__}')  # pragma: no cover

    # -- leaves -------------------------------------------------------------------------

    def _term(self, field: str, term: str) -> Query:
        return Query.term_query(self._schema, field, term)

    def _eq(self, key: str, value: Scalar) -> Query:
        if isinstance(value, float) and not math.isfinite(value):
            return Query.empty_query()  # stored numbers are finite: nothing equals inf or nan
        field, term = scalar_terms(key, value)
        return self._term(field, term)

    def _in(self, key: str, values: tuple[Scalar, ...]) -> Query:
        by_field: dict[str, set[str]] = {}
        for value in values:
            if isinstance(value, float) and not math.isfinite(value):
                continue
            field, term = scalar_terms(key, value)
            by_field.setdefault(field, set()).add(term)
        return _or([Query.term_set_query(self._schema, field, sorted(terms)) for field, terms in by_field.items()])

    def _ordered(self, key: str, value: Scalar, op: str) -> Query:
        if isinstance(value, bool):
            return Query.empty_query()  # booleans are not ordered
        if isinstance(value, str):
            return self._string_range(key, value, op)
        if math.isnan(value):
            return Query.empty_query()
        if math.isinf(value):
            every_number = self._index.parse_query(f'm_ord.{key}:*')
            below = value > 0
            return every_number if (op in ('lt', 'lte')) == below else Query.empty_query()
        symbol = {'gt': '>', 'gte': '>=', 'lt': '<', 'lte': '<='}[op]
        return self._index.parse_query(f'm_ord.{key}:{symbol}{_format_number(value)}')

    def _string_terms(self, key: str, keep: Callable[[str], bool]) -> Query:
        """Term set of ``key``'s string values that ``keep`` accepts, read from the term dictionary."""
        prefix = f'{key}{SEP}'
        terms = [t for t, _ in self._searcher.terms_with_prefix('m_str', prefix) if keep(t[len(prefix) :])]
        if not terms:
            return Query.empty_query()
        return Query.term_set_query(self._schema, 'm_str', terms)

    def _string_range(self, key: str, value: str, op: str) -> Query:
        compare: dict[str, Callable[[str], bool]] = {
            'gt': lambda s: s > value,
            'gte': lambda s: s >= value,
            'lt': lambda s: s < value,
            'lte': lambda s: s <= value,
        }
        return self._string_terms(key, compare[op])

    def _string_match(self, key: str, body: str, keep: Callable[[str], bool]) -> Query:
        pattern = f'(?s){_regex_escape(key + SEP)}{body}'
        try:
            return Query.regex_query(self._schema, 'm_str', pattern)
        except ValueError:
            # The automaton grew past tantivy's size limit (very long values): compare in Python.
            return self._string_terms(key, keep)

    def _contains(self, key: str, value: Scalar) -> Query:
        as_element = _and([self._eq(key, value), self._term('m_list', key)])
        if not isinstance(value, str):
            return as_element
        substring = self._string_match(key, '.*' + _regex_escape(value) + '.*', lambda s: value in s)
        on_scalar = Query.boolean_query([(Occur.Must, substring), (Occur.MustNot, self._term('m_list', key))])
        return _or([as_element, on_scalar])
