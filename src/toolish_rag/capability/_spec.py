"""Building a collection from an agent spec: the store spec strings the CLI takes, and options a spec can write.

``{'ToolishRag': {'store': 'lancedb:./kb', 'name': 'docs', 'embedder': '...', 'filterable': {'year': 'int',
'product': 'basic|pro'}, 'filter': {'tenant': 'acme'}}}``: ``store`` as ``toolish-rag --store`` reads it
(`toolish_rag.stores.open_store`), ``filterable`` as ``--filterable KEY=TYPE``, ``filter`` as
``--filter`` (``KEY: VALUE`` pairs, a list meaning one of, or one filter's JSON with ``op``). See
docs/capabilities.md#agent-specs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..filters import Filter, PropertyFilter, and_, parse_filter
from ..stores.registry import open_store
from ..toolset import FilterableKey, ToolishRag

__all__ = ['SERIALIZATION_NAME', 'filter_from_spec', 'filterable_from_spec', 'rag_from_spec']

SERIALIZATION_NAME = 'ToolishRag'
"""The name a spec writes the capability under (``capabilities: [{ToolishRag: {...}}]``)."""

_TYPES: dict[str, type] = {'int': int, 'float': float, 'str': str, 'bool': bool}


def filterable_from_spec(spec: Mapping[str, str] | None) -> dict[str, FilterableKey] | None:
    """``{'year': 'int', 'product': 'basic|pro'}`` as a ``filterable=`` declaration (types: int, float, str, bool, a|b|c)."""
    if not spec:
        return None
    keys: dict[str, FilterableKey] = {}
    for key, kind in spec.items():
        if not isinstance(kind, str) or not kind:
            raise ValueError(f'filterable {key!r}: give a type (int, float, str, bool) or values a|b|c, got {kind!r}')
        keys[key] = FilterableKey(_TYPES[kind]) if kind in _TYPES else FilterableKey(str, values=tuple(kind.split('|')))
    return keys


def filter_from_spec(spec: Mapping[str, Any] | str | None) -> Filter | None:
    """A scope from a spec: a filter's JSON (with ``op``), or ``KEY: VALUE`` pairs all of which must hold."""
    if spec is None:
        return None
    if isinstance(spec, str):
        return parse_filter(spec)
    if 'op' in spec:
        return parse_filter(json.dumps(dict(spec)))
    if not spec:
        raise ValueError('filter: give at least one KEY: VALUE pair, or a filter with "op"')
    return and_(
        *(PropertyFilter.in_(k, v) if isinstance(v, list) else PropertyFilter.eq(k, v) for k, v in spec.items())
    )


def rag_from_spec(
    store: str,
    name: str = 'docs',
    *,
    embedder: str | None = None,
    filterable: Mapping[str, str] | None = None,
    filter: Mapping[str, Any] | str | None = None,
    description: str | None = None,
    language: str | None = None,
) -> ToolishRag[Any]:
    """The collection a spec describes (``store``: a store spec string, e.g. ``lancedb:./kb``)."""
    opened = open_store(store, embedder=embedder, language=language)
    rag: ToolishRag[Any] = ToolishRag(
        opened, name=name, description=description, filterable=filterable_from_spec(filterable)
    )
    scope = filter_from_spec(filter)
    if scope is not None:
        rag = rag.with_metadata_filter(scope)
    return rag
