"""What the code builder's modules share: its name, version, entity ids and per-module outcome.

See docs/graph.md (Code graph).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from ....content import Metadata
from ..base import DocumentGraph, scope_group, scope_of

__all__ = [
    'CODE_BUILDER',
    'CODE_ENTITY_PREFIX',
    'CODE_GRAPH_VERSION',
    'EntityKind',
    'ModuleOutcome',
    'SourceUnavailable',
    'code_entity_id',
]

CODE_BUILDER = 'code'
"""The code builder's name: its relations' origin and its ledger key."""

CODE_GRAPH_VERSION = 1
"""Bumped whenever the builder derives other relations from the same sources (part of every mark)."""

CODE_ENTITY_PREFIX = 'py:'
"""Every entity this builder writes has an id starting with this: how it recognises its own stale ones."""

EntityKind: TypeAlias = Literal['module', 'class', 'function']


def code_entity_id(
    kind: EntityKind, qualname: str, scope: Metadata | None = None, scope_keys: Sequence[str] = ()
) -> str:
    """The id of a module, class or function entity: ``py:[<scope digest>:]<kind>:<qualified name>``.

    The digest is of ``scope``'s values of ``scope_keys`` (none: no digest), the keys names resolve within.
    """
    scoped = scope_of(scope or {}, scope_keys)
    prefix = _scope_digest(scope_group(scoped, scope_keys)) + ':' if scoped else ''
    return f'{CODE_ENTITY_PREFIX}{prefix}{kind}:{qualname}'


def _scope_digest(group: str) -> str:
    return hashlib.sha256(group.encode('utf-8', 'surrogatepass')).hexdigest()[:12]


class SourceUnavailable(Exception):
    """A stored Python document whose source cannot be read, parsed or matched with its chunks."""


@dataclass(frozen=True, slots=True)
class ModuleOutcome:
    """One module's desired graph and its ledger mark."""

    graph: DocumentGraph
    mark: str
