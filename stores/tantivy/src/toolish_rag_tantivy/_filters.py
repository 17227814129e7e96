"""Filters to tantivy queries, with exactly the reference semantics.

See docs/stores/tantivy.md#how-the-adapter-is-built for each node's translation.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from decimal import Decimal

import tantivy
from tantivy import Occur, Query

from toolish_rag import filters
from toolish_rag.content import Scalar
from toolish_rag.filters import Filter, FilterVisitor

from ._schema import SEP, scalar_terms, unstorable

__all__ = ['CompiledFilters', 'FilterCompiler', 'translatable']


def _regex_escape(text: str) -> str:
    return ''.join(ch if ch.isascii() and ch.isalnum() else f'\\x{{{ord(ch):x}}}' for ch in text)


def _format_number(value: int | float) -> str:
    """A number as tantivy's query parser reads it: plain positional notation.

    An integer is an ``i64`` here: a filter with a larger one is not `translatable`.
    """
    if isinstance(value, int):
        return str(value)
    return format(Decimal(repr(value + 0.0)), 'f')  # + 0.0 turns -0.0 into 0.0


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


class FilterCompiler(FilterVisitor[Query]):
    """Compiles filters against one index and one searcher (string ranges read its terms)."""

    def __init__(self, index: tantivy.Index, searcher: tantivy.Searcher) -> None:
        self._index = index
        self._schema = index.schema
        self._searcher = searcher

    def compile(self, f: Filter) -> Query:
        """The query matching exactly the records `toolish_rag.filters.matches` accepts.

        Raises ``ValueError`` for a filter that is not `translatable`.
        """
        if not translatable(f):
            raise ValueError('the filter holds a value this store cannot hold: evaluate it with toolish_rag.filters')
        return self.visit(f)

    # -- one method per node ------------------------------------------------------------

    def visit_eq(self, node: filters.Eq) -> Query:
        return self._eq(node.key, node.value)

    def visit_ne(self, node: filters.Ne) -> Query:
        return _not(self._eq(node.key, node.value))

    def visit_gt(self, node: filters.Gt) -> Query:
        return self._ordered(node.key, node.value, node.op)

    def visit_gte(self, node: filters.Gte) -> Query:
        return self._ordered(node.key, node.value, node.op)

    def visit_lt(self, node: filters.Lt) -> Query:
        return self._ordered(node.key, node.value, node.op)

    def visit_lte(self, node: filters.Lte) -> Query:
        return self._ordered(node.key, node.value, node.op)

    def visit_in(self, node: filters.In) -> Query:
        return self._in(node.key, node.values)

    def visit_nin(self, node: filters.Nin) -> Query:
        return _not(self._in(node.key, node.values))

    def visit_contains(self, node: filters.Contains) -> Query:
        return self._contains(node.key, node.value)

    def visit_starts_with(self, node: filters.StartsWith) -> Query:
        value = node.value
        return self._string_match(node.key, _regex_escape(value) + '.*', lambda s: s.startswith(value))

    def visit_ends_with(self, node: filters.EndsWith) -> Query:
        value = node.value
        return self._string_match(node.key, '.*' + _regex_escape(value), lambda s: s.endswith(value))

    def visit_exists(self, node: filters.Exists) -> Query:
        return self._term('m_keys', node.key)

    def visit_has_any_label(self, node: filters.HasAnyLabel) -> Query:
        return Query.term_set_query(self._schema, 'labels', sorted(node.labels))

    def visit_and(self, node: filters.And) -> Query:
        return _and([self.visit(x) for x in node.filters])

    def visit_or(self, node: filters.Or) -> Query:
        return _or([self.visit(x) for x in node.filters])

    def visit_not(self, node: filters.Not) -> Query:
        return _not(self.visit(node.filter))

    # -- leaves -------------------------------------------------------------------------

    def _term(self, field: str, term: str) -> Query:
        return Query.term_query(self._schema, field, term)

    def _eq(self, key: str, value: Scalar) -> Query:
        field, term = scalar_terms(key, value)
        return self._term(field, term)

    def _in(self, key: str, values: tuple[Scalar, ...]) -> Query:
        by_field: dict[str, set[str]] = {}
        for value in values:
            field, term = scalar_terms(key, value)
            by_field.setdefault(field, set()).add(term)
        return _or([Query.term_set_query(self._schema, field, sorted(terms)) for field, terms in by_field.items()])

    def _ordered(self, key: str, value: Scalar, op: str) -> Query:
        if isinstance(value, bool):
            return Query.empty_query()  # booleans are not ordered
        if isinstance(value, str):
            return self._string_range(key, value, op)
        # Numbers are finite here: filter nodes refuse inf and nan when they are built.
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


class CompiledFilters:
    """A bounded cache of compiled filter queries for one index, each valid for one committed version.

    Keyed by the index version and the filter's JSON (why: docs/stores/tantivy.md#how-the-adapter-is-built).
    Thread-safe; least recently used entries are dropped beyond ``max_entries``.
    """

    def __init__(self, max_entries: int = 256) -> None:
        if max_entries < 1:
            raise ValueError('max_entries must be at least 1')
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[int, str], Query] = OrderedDict()
        self.hits = 0
        """Lookups answered from the cache (for tests and inspection)."""
        self.misses = 0
        """Lookups that compiled the filter."""

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def get(self, version: int, f: Filter, compile: Callable[[], Query]) -> Query:
        """The query compiled for ``f`` at ``version``; ``compile()`` (outside the lock) when there is none."""
        key = (version, f.to_json())
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return found
        query = compile()
        with self._lock:
            self.misses += 1
            self._entries[key] = query
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return query

    def clear(self) -> None:
        """Forget every entry (a new version was committed: none of them is needed any more)."""
        with self._lock:
            self._entries.clear()


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def translatable(f: Filter) -> bool:
    """Whether every value in ``f`` is one the index can hold (see `toolish_rag_tantivy._schema.unstorable`)."""
    return _Holdable().visit(f)


class _Holdable(FilterVisitor[bool]):
    """True when no value of the filter is `unstorable`."""

    @staticmethod
    def holds(*values: Scalar) -> bool:
        return all(unstorable(v) is None for v in values)

    @classmethod
    def bound(cls, value: Scalar) -> bool:
        """A range bound the index compares correctly: a holdable value, and a number within 64-bit range.

        Tantivy's range query on a column holding only integers reads a bound beyond the signed
        64-bit range wrongly (``gt 1e19`` matched every record); the core evaluates such a filter.
        """
        if isinstance(value, bool) or not isinstance(value, int | float):
            return cls.holds(value)
        return cls.holds(value) and _INT64_MIN <= value <= _INT64_MAX

    def visit_eq(self, node: filters.Eq) -> bool:
        return self.holds(node.value)

    def visit_ne(self, node: filters.Ne) -> bool:
        return self.holds(node.value)

    def visit_gt(self, node: filters.Gt) -> bool:
        return self.bound(node.value)

    def visit_gte(self, node: filters.Gte) -> bool:
        return self.bound(node.value)

    def visit_lt(self, node: filters.Lt) -> bool:
        return self.bound(node.value)

    def visit_lte(self, node: filters.Lte) -> bool:
        return self.bound(node.value)

    def visit_in(self, node: filters.In) -> bool:
        return self.holds(*node.values)

    def visit_nin(self, node: filters.Nin) -> bool:
        return self.holds(*node.values)

    def visit_contains(self, node: filters.Contains) -> bool:
        return self.holds(node.value)

    def visit_starts_with(self, node: filters.StartsWith) -> bool:
        return self.holds(node.value)

    def visit_ends_with(self, node: filters.EndsWith) -> bool:
        return self.holds(node.value)

    def visit_exists(self, node: filters.Exists) -> bool:
        return True

    def visit_has_any_label(self, node: filters.HasAnyLabel) -> bool:
        return self.holds(*node.labels)

    def visit_and(self, node: filters.And) -> bool:
        return all(self.visit(x) for x in node.filters)

    def visit_or(self, node: filters.Or) -> bool:
        return all(self.visit(x) for x in node.filters)

    def visit_not(self, node: filters.Not) -> bool:
        return self.visit(node.filter)
