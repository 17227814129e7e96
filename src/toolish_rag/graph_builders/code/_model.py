"""What the code builder's modules share: its name, version, entity ids and per-module outcome.

See docs/graph.md (Code graph).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from ...content import Metadata
from ..base import DocumentGraph, scope_group, scope_of
from ..extract import merge_identity

__all__ = [
    'CODE_BUILDER',
    'CODE_ENTITY_PREFIX',
    'CODE_GRAPH_VERSION',
    'EntityKind',
    'ModuleOutcome',
    'SourceUnavailable',
    'code_entity_id',
    'resolution_group',
]

CODE_BUILDER = 'code'
"""The code builder's name: its relations' origin and its ledger key."""

CODE_GRAPH_VERSION = 2
"""Bumped whenever the builder derives other relations from the same sources (part of every mark).

Version 2: without ``scope_keys``, modules resolve within their source identity (`resolution_group`).
"""

CODE_ENTITY_PREFIX = 'py:'
"""Every entity this builder writes has an id starting with this: how it recognises its own stale ones."""

EntityKind: TypeAlias = Literal['module', 'class', 'function']


def code_entity_id(
    kind: EntityKind,
    qualname: str,
    scope: Metadata | None = None,
    scope_keys: Sequence[str] = (),
    labels: Iterable[str] = (),
) -> str:
    """The id of a module, class or function entity: ``py:[<group digest>:]<kind>:<qualified name>``.

    The digest names the group the module's names resolve in (`resolution_group`; none for the
    group of unlabelled modules without metadata of their own, as plain ingestion stores them).
    """
    group = resolution_group(scope or {}, scope_keys, labels)
    prefix = _scope_digest(group) + ':' if group else ''
    return f'{CODE_ENTITY_PREFIX}{prefix}{kind}:{qualname}'


def resolution_group(scope: Metadata, scope_keys: Sequence[str] = (), labels: Iterable[str] = ()) -> str:
    """The group a module's names resolve in: modules of one group see each other, no other (docs/graph.md).

    With ``scope_keys``: the module's values of those keys. Without: its source identity, as extraction
    merges on it (`merge_identity`: its metadata but the per-file keys ingestion records, and its
    labels), so another tenant's module of the same name never competes with this tenant's.
    ``''`` for the group of modules with none of those.
    """
    if scope_keys:
        scoped = scope_of(scope, scope_keys)
        return scope_group(scoped, scope_keys) if scoped else ''
    identity, tags = merge_identity(scope), sorted(labels)
    if not identity and not tags:
        return ''
    return json.dumps([identity, tags], sort_keys=True, ensure_ascii=False, separators=(',', ':'), default=repr)


def _scope_digest(group: str) -> str:
    return hashlib.sha256(group.encode('utf-8', 'surrogatepass')).hexdigest()[:12]


class SourceUnavailable(Exception):
    """A stored Python document whose source cannot be read, parsed or matched with its chunks."""


@dataclass(frozen=True, slots=True)
class ModuleOutcome:
    """One module's desired graph and its ledger mark."""

    graph: DocumentGraph
    mark: str
