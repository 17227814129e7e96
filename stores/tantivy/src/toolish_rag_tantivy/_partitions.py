"""Partition values of a metadata key, and which partitions a filter can reach.

See docs/stores/tantivy.md#how-the-adapter-is-built.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Literal

from toolish_rag import filters
from toolish_rag.content import MetadataValue
from toolish_rag.errors import echo
from toolish_rag.filters import FilterVisitor

from ._schema import canonical_number

__all__ = ['MAX_VALUE_BYTES', 'PartitionId', 'PartitionPruner', 'partition_value_problem']

Kind = Literal['str', 'num', 'bool', 'none']
_TAGS: dict[Kind, str] = {'str': 's-', 'num': 'n-', 'bool': 'b-', 'none': 'none'}
MAX_VALUE_BYTES = 120
"""Longest partition value (UTF-8 bytes): its directory name must fit every file system."""


@dataclass(frozen=True, order=True)
class PartitionId:
    """One partition: the kind of the value and its canonical spelling."""

    kind: Kind
    value: str

    @classmethod
    def of(cls, value: MetadataValue, *, key: str) -> PartitionId:
        """The partition of a record whose ``key`` is ``value`` (``None``: the key is absent).

        Raises ``ValueError`` for a value no partition can have (`partition_value_problem`).
        """
        problem = partition_value_problem(value)
        if problem is not None:
            raise ValueError(f'metadata {key!r} is the partition key: {problem}')
        if value is None:
            return cls('none', '')
        if isinstance(value, bool):
            return cls('bool', 't' if value else 'f')
        if isinstance(value, (int, float)):
            return cls('num', canonical_number(value))
        assert isinstance(value, str)
        return cls('str', value)

    @property
    def dirname(self) -> str:
        """A file name that spells the value reversibly, on case-insensitive file systems too."""
        if self.kind == 'none':
            return _TAGS['none']
        encoded = base64.b32encode(self.value.encode('utf-8')).decode('ascii').rstrip('=').lower()
        return _TAGS[self.kind] + encoded

    @classmethod
    def from_dirname(cls, name: str) -> PartitionId | None:
        """The partition a directory holds, ``None`` for a name this module did not write."""
        if name == _TAGS['none']:
            return cls('none', '')
        for kind, tag in _TAGS.items():
            if kind != 'none' and name.startswith(tag):
                body = name[len(tag) :].upper()
                try:
                    value = base64.b32decode(body + '=' * (-len(body) % 8)).decode('utf-8')
                except ValueError:
                    return None
                return cls(kind, value)
        return None

    def describe(self, key: str) -> str:
        """How the partition reads in a message: ``tenant='acme'``, ``year=2024``, no ``tenant``."""
        if self.kind == 'none':
            return f'no {key!r}'
        if self.kind == 'str':
            return f'{key}={self.value!r}'
        if self.kind == 'bool':
            return f'{key}={self.value == "t"}'
        return f'{key}={self.value}'


def partition_value_problem(value: MetadataValue) -> str | None:
    """Why no partition can hold a record whose partition key is ``value`` (a clause), or ``None``."""
    if isinstance(value, list):
        return f'it must be one value, not a list (of {len(value)}), since a record lives in exactly one partition'
    if isinstance(value, str) and len(value.encode('utf-8')) > MAX_VALUE_BYTES:
        return (
            f'a value is at most {MAX_VALUE_BYTES} bytes (it names a directory), '
            f'got {len(value.encode("utf-8"))}: {echo(value)}'
        )
    return None


Reach = frozenset[PartitionId] | None
"""The partitions a filter can match records in; ``None``: any."""


class PartitionPruner(FilterVisitor[Reach]):
    """Which partitions of ``key`` a filter can match (see docs/stores/tantivy.md#how-the-adapter-is-built)."""

    def __init__(self, key: str) -> None:
        self._key = key

    def _named(self, value: MetadataValue) -> frozenset[PartitionId]:
        try:
            return frozenset({PartitionId.of(value, key=self._key)})
        except ValueError:  # a value no partition can have (too long): it matches nothing
            return frozenset()

    def visit_eq(self, node: filters.Eq) -> Reach:
        return self._named(node.value) if node.key == self._key else None

    def visit_in(self, node: filters.In) -> Reach:
        if node.key != self._key:
            return None
        return frozenset().union(*(self._named(v) for v in node.values))

    def visit_and(self, node: filters.And) -> Reach:
        reach: Reach = None
        for child in node.filters:
            found = self.visit(child)
            if found is not None:
                reach = found if reach is None else reach & found
        return reach

    def visit_or(self, node: filters.Or) -> Reach:
        reach: frozenset[PartitionId] = frozenset()
        for child in node.filters:
            found = self.visit(child)
            if found is None:
                return None
            reach |= found
        return reach

    # Every other node constrains the key in no way pruning can use.

    def visit_ne(self, node: filters.Ne) -> Reach:
        return None

    def visit_gt(self, node: filters.Gt) -> Reach:
        return None

    def visit_gte(self, node: filters.Gte) -> Reach:
        return None

    def visit_lt(self, node: filters.Lt) -> Reach:
        return None

    def visit_lte(self, node: filters.Lte) -> Reach:
        return None

    def visit_nin(self, node: filters.Nin) -> Reach:
        return None

    def visit_contains(self, node: filters.Contains) -> Reach:
        return None

    def visit_starts_with(self, node: filters.StartsWith) -> Reach:
        return None

    def visit_ends_with(self, node: filters.EndsWith) -> Reach:
        return None

    def visit_exists(self, node: filters.Exists) -> Reach:
        return None

    def visit_has_any_label(self, node: filters.HasAnyLabel) -> Reach:
        return None

    def visit_not(self, node: filters.Not) -> Reach:
        return None
