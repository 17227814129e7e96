"""Metadata columns and the translation of toolish-rag filters into LanceDB ``where`` clauses.

See docs/stores/lancedb.md (Design notes).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import pyarrow as pa

from toolish_rag import filters
from toolish_rag.content import Metadata, MetadataValue, Scalar, validate_metadata_key
from toolish_rag.filters import Filter, FilterTarget, FilterVisitor, filter_depth, matches
from toolish_rag.writes import INT64_MAX, INT64_MIN, int64_problem

__all__ = [
    'INT64_MAX',
    'INT64_MIN',
    'METADATA_PREFIX',
    'LIST_SEPARATOR',
    'ColumnKind',
    'Pushdown',
    'RowTarget',
    'column_name',
    'column_type',
    'filter_to_where',
    'has_literal',
    'metadata_columns',
    'sql_literal',
    'sql_string',
    'unstorable',
]

METADATA_PREFIX = 'md__'
LIST_SEPARATOR = '\x1f'
"""Separates string elements in the ``lsx``/``lsr`` helper columns (escaped inside elements)."""

ColumnKind = Literal['num', 'str', 'bool', 'lnum', 'lstr', 'lbool', 'lsx', 'lsr']

_ARROW_TYPES: dict[str, pa.DataType] = {
    'num': pa.float64(),
    'str': pa.string(),
    'bool': pa.bool_(),
    'lnum': pa.list_(pa.float64()),
    'lstr': pa.list_(pa.string()),
    'lbool': pa.list_(pa.bool_()),
    'lsx': pa.string(),
    'lsr': pa.string(),
}

_Kind = Literal['num', 'str', 'bool']

unstorable = int64_problem
"""Why the store cannot hold a scalar (written or filtered on): the core's 64-bit/UTF-8 rule."""


def column_name(key: str, kind: ColumnKind) -> str:
    """The column holding ``key``'s values of one kind (``key`` is re-validated)."""
    return f'{METADATA_PREFIX}{validate_metadata_key(key)}__{kind}'


def column_type(kind: str) -> pa.DataType:
    return _ARROW_TYPES[kind]


def _kind(value: Scalar) -> _Kind:
    if isinstance(value, bool):
        return 'bool'
    if isinstance(value, (int, float)):
        return 'num'
    if isinstance(value, str):
        return 'str'
    raise TypeError(f'unsupported metadata value {value!r}')


def _escape_element(text: str) -> str:
    # A prefix code: no escaped element contains the separator, and one escaped string is a
    # prefix of another exactly when the originals are, which makes starts_with exact.
    return text.replace('\\', '\\\\').replace(LIST_SEPARATOR, '\\u')


def _joined(elements: Iterable[str], *, reverse: bool) -> str:
    parts = [_escape_element(e[::-1] if reverse else e) for e in elements]
    return LIST_SEPARATOR + LIST_SEPARATOR.join(parts) + LIST_SEPARATOR


def metadata_columns(metadata: Mapping[str, MetadataValue]) -> dict[str, Any]:
    """The typed column values for one record's metadata (absent keys are simply missing)."""
    out: dict[str, Any] = {}
    for key, value in metadata.items():
        if value is None:
            continue
        if isinstance(value, list):
            nums = [float(v) for v in value if _kind(v) == 'num']
            strs = [v for v in value if isinstance(v, str)]
            bools = [v for v in value if isinstance(v, bool)]
            if nums:
                out[column_name(key, 'lnum')] = nums
            if strs:
                out[column_name(key, 'lstr')] = strs
                out[column_name(key, 'lsx')] = _joined(strs, reverse=False)
                out[column_name(key, 'lsr')] = _joined(strs, reverse=True)
            if bools:
                out[column_name(key, 'lbool')] = bools
        else:
            kind = _kind(value)
            out[column_name(key, kind)] = float(value) if kind == 'num' else value
    return out


def sql_string(text: str) -> str:
    """A SQL string literal: single quotes doubled (LanceDB takes backslashes literally).

    Raises ``ValueError`` for text no literal can carry (a NUL, a lone surrogate).
    """
    if '\x00' in text:
        raise ValueError('NUL characters cannot appear in a filter value')
    problem = unstorable(text)
    if problem is not None:
        raise ValueError(f'a filter value cannot be {problem}')
    return "'" + text.replace("'", "''") + "'"


def has_literal(text: str) -> bool:
    """Whether a SQL string literal carries ``text`` (see `sql_string`).

    The store writes no id without one, so a requested id without one names nothing: readers
    drop it instead of failing.
    """
    return '\x00' not in text and unstorable(text) is None


def sql_literal(value: Scalar) -> str:
    """``value`` as a SQL literal; ``ValueError`` for one the store cannot hold (see `unstorable`)."""
    if isinstance(value, bool):
        return 'TRUE' if value else 'FALSE'
    if isinstance(value, (int, float)):
        problem = unstorable(value)
        if problem is not None:
            raise ValueError(f'a filter value cannot be {problem}')
        number = float(value)
        if not math.isfinite(number):
            raise ValueError(f'filter numbers must be finite, got {value!r}')
        return repr(number)
    return sql_string(value)


class _Translator(FilterVisitor[str]):
    """One filter node to one ``where`` clause over the table's existing ``columns``."""

    def __init__(self, columns: Collection[str]) -> None:
        self.columns = columns
        self.negated = False
        """Whether an odd number of negations is above the node being translated."""

    def guarded(self, col: str, test: str) -> str:
        """``test`` on ``col``, made never-``NULL`` only where a negation above could flip a ``NULL``."""
        return f'({col} IS NOT NULL AND {test})' if self.negated else f'({test})'

    def negation(self, translate: Callable[[], str]) -> str:
        """``NOT`` of what ``translate`` renders with the polarity flipped."""
        self.negated = not self.negated
        try:
            return f'(NOT {translate()})'
        finally:
            self.negated = not self.negated

    def col(self, key: str, kind: ColumnKind) -> str | None:
        name = column_name(key, kind)
        return f'`{name}`' if name in self.columns else None

    @staticmethod
    def any_of(parts: list[str]) -> str:
        if not parts:
            return 'FALSE'
        return parts[0] if len(parts) == 1 else '(' + ' OR '.join(parts) + ')'

    def equals_any(self, key: str, values: Iterable[Scalar]) -> str:
        by_kind: dict[_Kind, list[str]] = {}
        for value in values:
            lit = sql_literal(value)
            bucket = by_kind.setdefault(_kind(value), [])
            if lit not in bucket:
                bucket.append(lit)
        parts: list[str] = []
        for kind, lits in by_kind.items():
            scalar = self.col(key, kind)
            listed = self.col(key, f'l{kind}')  # type: ignore[arg-type]
            if scalar is not None:
                test = f'{scalar} = {lits[0]}' if len(lits) == 1 else f'{scalar} IN ({", ".join(lits)})'
                parts.append(self.guarded(scalar, test))
            if listed is not None:
                if len(lits) == 1:
                    test = f'array_has({listed}, {lits[0]})'
                else:
                    test = f'array_has_any({listed}, make_array({", ".join(lits)}))'
                parts.append(self.guarded(listed, test))
        return self.any_of(parts)

    def ordered(self, key: str, op: str, value: Scalar) -> str:
        kind = _kind(value)
        if kind == 'bool':
            return 'FALSE'
        sym = {'gt': '>', 'gte': '>=', 'lt': '<', 'lte': '<='}[op]
        agg = 'array_max' if op in ('gt', 'gte') else 'array_min'
        lit = sql_literal(value)
        parts: list[str] = []
        scalar = self.col(key, kind)
        listed = self.col(key, f'l{kind}')  # type: ignore[arg-type]
        if scalar is not None:
            parts.append(self.guarded(scalar, f'{scalar} {sym} {lit}'))
        if listed is not None:
            parts.append(self.guarded(listed, f'{agg}({listed}) {sym} {lit}'))
        return self.any_of(parts)

    def affix(self, key: str, value: str, *, suffix: bool) -> str:
        parts: list[str] = []
        scalar = self.col(key, 'str')
        helper = self.col(key, 'lsr' if suffix else 'lsx')
        if scalar is not None:
            fn = 'ends_with' if suffix else 'starts_with'
            parts.append(self.guarded(scalar, f'{fn}({scalar}, {sql_string(value)})'))
        if helper is not None:
            needle = LIST_SEPARATOR + _escape_element(value[::-1] if suffix else value)
            parts.append(self.guarded(helper, f'strpos({helper}, {sql_string(needle)}) > 0'))
        return self.any_of(parts)

    # -- one method per node ------------------------------------------------------------

    def visit_eq(self, node: filters.Eq) -> str:
        return self.equals_any(node.key, [node.value])

    def visit_ne(self, node: filters.Ne) -> str:
        return self.negation(lambda: self.equals_any(node.key, [node.value]))

    def visit_gt(self, node: filters.Gt) -> str:
        return self.ordered(node.key, node.op, node.value)

    def visit_gte(self, node: filters.Gte) -> str:
        return self.ordered(node.key, node.op, node.value)

    def visit_lt(self, node: filters.Lt) -> str:
        return self.ordered(node.key, node.op, node.value)

    def visit_lte(self, node: filters.Lte) -> str:
        return self.ordered(node.key, node.op, node.value)

    def visit_in(self, node: filters.In) -> str:
        return self.equals_any(node.key, node.values)

    def visit_nin(self, node: filters.Nin) -> str:
        return self.negation(lambda: self.equals_any(node.key, node.values))

    def visit_contains(self, node: filters.Contains) -> str:
        key, value = node.key, node.value
        parts: list[str] = []
        listed = self.col(key, f'l{_kind(value)}')  # type: ignore[arg-type]
        if listed is not None:
            parts.append(self.guarded(listed, f'array_has({listed}, {sql_literal(value)})'))
        scalar = self.col(key, 'str')
        if isinstance(value, str) and scalar is not None:
            parts.append(self.guarded(scalar, f'strpos({scalar}, {sql_string(value)}) > 0'))
        return self.any_of(parts)

    def visit_starts_with(self, node: filters.StartsWith) -> str:
        return self.affix(node.key, node.value, suffix=False)

    def visit_ends_with(self, node: filters.EndsWith) -> str:
        return self.affix(node.key, node.value, suffix=True)

    def visit_exists(self, node: filters.Exists) -> str:
        kinds: tuple[ColumnKind, ...] = ('num', 'str', 'bool', 'lnum', 'lstr', 'lbool')
        parts = [f'{c} IS NOT NULL' for c in (self.col(node.key, k) for k in kinds) if c is not None]
        return self.any_of(parts)

    def visit_has_any_label(self, node: filters.HasAnyLabel) -> str:
        labels = ', '.join(sql_string(label) for label in sorted(node.labels))
        return self.guarded('labels', f'array_has_any(labels, make_array({labels}))')

    def visit_and(self, node: filters.And) -> str:
        if not node.filters:
            return 'TRUE'
        return '(' + ' AND '.join(self.visit(x) for x in node.filters) + ')'

    def visit_or(self, node: filters.Or) -> str:
        return self.any_of([self.visit(x) for x in node.filters])

    def visit_not(self, node: filters.Not) -> str:
        return self.negation(lambda: self.visit(node.filter))


def filter_to_where(f: Filter, columns: Collection[str]) -> str:
    """Translate ``f`` into a LanceDB ``where`` clause over a table with these ``columns``.

    The clause is true exactly for the rows `toolish_rag.filters.matches` accepts. Raises
    ``ValueError`` for an invalid key or a value no literal carries (a NUL, a lone surrogate,
    an integer beyond 64 bits: see `unstorable`), or for a clause nested deeper than LanceDB's
    SQL parser takes (`MAX_SQL_NESTING`), and ``TypeError`` for an unknown node. A store's
    ``supports_filter`` says no to such a filter, so the core evaluates it instead.
    """
    _ValueCheck().visit(f)
    worst = 2 * filter_depth(f) + 2
    if worst > MAX_SQL_NESTING:
        # Decided from the filter alone, never from the columns known now: a leaf of an unknown
        # column renders as FALSE (no nesting) and of a known one as up to two levels, so the
        # answer must not change as columns appear between supports_filter and the query.
        raise ValueError(
            f'the filter nests {filter_depth(f)} levels; LanceDB pushdown takes at most {MAX_SQL_NESTING // 2 - 1}'
        )
    where = _Translator(columns).visit(f)
    nesting = sql_nesting(where)
    if nesting > MAX_SQL_NESTING:
        raise ValueError(
            f'the filter becomes SQL nested {nesting} levels deep; LanceDB parses at most {MAX_SQL_NESTING}'
        )
    return where


MAX_SQL_NESTING = 16
"""Deepest parenthesis nesting a pushed-down clause may have. LanceDB's parser rejects some
shapes from about 24 levels (a chain of ``NOT``: "Error during planning") and others from
about 40; real scopes nest a few levels. Deeper filters are evaluated by the core."""


def sql_nesting(where: str) -> int:
    """The deepest parenthesis nesting of a clause, outside string literals (``'a(b'``)."""
    deepest = depth = 0
    quoted = False
    for ch in where:
        if ch == "'":
            quoted = not quoted  # an escaped quote ('') toggles twice
        elif quoted:
            continue
        elif ch == '(':
            depth += 1
            deepest = max(deepest, depth)
        elif ch == ')':
            depth -= 1
    return deepest


class _ValueCheck(FilterVisitor[None]):
    """Renders every key and value once, so an unrepresentable one fails whatever columns exist.

    The translator only renders values for columns that exist, so without this a bad value
    would be accepted or refused depending on what the table happens to hold.
    """

    @staticmethod
    def scalar(key: str, value: Scalar) -> None:
        validate_metadata_key(key)
        sql_literal(value)

    def visit_eq(self, node: filters.Eq) -> None:
        self.scalar(node.key, node.value)

    def visit_ne(self, node: filters.Ne) -> None:
        self.scalar(node.key, node.value)

    def visit_gt(self, node: filters.Gt) -> None:
        self.scalar(node.key, node.value)

    def visit_gte(self, node: filters.Gte) -> None:
        self.scalar(node.key, node.value)

    def visit_lt(self, node: filters.Lt) -> None:
        self.scalar(node.key, node.value)

    def visit_lte(self, node: filters.Lte) -> None:
        self.scalar(node.key, node.value)

    def visit_in(self, node: filters.In) -> None:
        validate_metadata_key(node.key)
        for v in node.values:
            sql_literal(v)

    def visit_nin(self, node: filters.Nin) -> None:
        validate_metadata_key(node.key)
        for v in node.values:
            sql_literal(v)

    def visit_contains(self, node: filters.Contains) -> None:
        self.scalar(node.key, node.value)

    def visit_starts_with(self, node: filters.StartsWith) -> None:
        self.scalar(node.key, node.value)

    def visit_ends_with(self, node: filters.EndsWith) -> None:
        self.scalar(node.key, node.value)

    def visit_exists(self, node: filters.Exists) -> None:
        validate_metadata_key(node.key)

    def visit_has_any_label(self, node: filters.HasAnyLabel) -> None:
        for label in node.labels:
            sql_string(label)

    def visit_and(self, node: filters.And) -> None:
        for x in node.filters:
            self.visit(x)

    def visit_or(self, node: filters.Or) -> None:
        for x in node.filters:
            self.visit(x)

    def visit_not(self, node: filters.Not) -> None:
        self.visit(node.filter)


@dataclass(frozen=True, slots=True)
class Pushdown:
    """A scope as one query runs it: the SQL that narrows, and what Python still decides.

    Readers that count, page or cut at a limit after the scope (navigation, graph reads) must
    apply it exactly, and not every filter has an exact SQL form (`filter_to_where` refuses a
    value no literal carries, or nesting too deep for LanceDB's parser). Then the conjuncts of an
    ``And`` that do translate still narrow the candidates (a scope is usually a tenant clause and
    a model's filter, and only one of them holds the odd value), and the whole filter is the
    ``residual``, evaluated with `toolish_rag.filters.matches` on every row read.
    """

    where: str | None
    """SQL for the scope over the table's columns (``None``: nothing to narrow with)."""
    residual: Filter | None = None
    """The whole filter, when ``where`` only narrows (``None``: ``where`` is exact)."""

    @classmethod
    def of(cls, f: Filter | None, columns: Collection[str]) -> Pushdown:
        if f is None:
            return cls(None)
        try:
            return cls(filter_to_where(f, columns))
        except (ValueError, TypeError):
            pass
        pushed: list[str] = []
        if isinstance(f, filters.And):
            for part in f.filters:
                try:
                    pushed.append(f'({filter_to_where(part, columns)})')
                except (ValueError, TypeError):
                    continue
        return cls(' AND '.join(pushed) if pushed else None, f)

    def keeps(self, target: FilterTarget) -> bool:
        """Whether a row read through ``where`` is in scope (always, when ``where`` is exact)."""
        return self.residual is None or matches(self.residual, target)


@dataclass(frozen=True, slots=True)
class RowTarget:
    """What a filter looks at (`toolish_rag.filters.FilterTarget`), from a row's exact columns.

    Built from ``metadata_json`` (exact types, as a reloaded record carries them) and ``labels``,
    so a `Pushdown` residual is evaluated without reading (or rebuilding) the whole record.
    """

    metadata: Metadata
    labels: frozenset[str]

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> RowTarget:
        return cls(json.loads(row['metadata_json'] or '{}'), frozenset(row['labels'] or ()))
