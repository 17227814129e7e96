"""The tools' arguments: the caps and bounds their schemas show a model, and the checks behind the string caps.

Each tool's spec declares its string parameters (`ToolSpec.strings`) and its integer parameters' bounds
(`ToolSpec.bounds`); the schema states both (``maxLength``, ``minimum``/``maximum``), the call path checks
the strings (stripped, non-empty, within the cap) and each tool its integers, saying what to send instead.
The schemas are also made compact (`compact_schema`): every request carries them. See docs/toolset.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidRequestError
from ..regex import MAX_PATTERN_LENGTH

__all__ = [
    'MAX_EDGE_TYPE_CHARS',
    'MAX_ID_CHARS',
    'MAX_NAME_CHARS',
    'MAX_PATTERN_CHARS',
    'StringArgument',
    'StringArguments',
    'compact_schema',
    'shared_once',
    'id_argument',
    'name_argument',
    'query_argument',
]

MAX_ID_CHARS = 200
"""The longest chunk or section id a model may send (ids the toolset shows are far shorter)."""
MAX_NAME_CHARS = 300
"""The longest document or section reference (an id or a title) and title part a model may send."""
MAX_PATTERN_CHARS = MAX_PATTERN_LENGTH
"""The longest regex pattern a model may send: the core's RE2 limit, so the schema states the real one."""
MAX_EDGE_TYPE_CHARS = 64
"""The longest relation type (`toolish_rag.content.RELATION_TYPE_PATTERN` allows no longer)."""


@dataclass(frozen=True, slots=True)
class StringArgument:
    """One string parameter of the tools: its cap, whether it is stripped, and what to say when it is wrong."""

    max_chars: int
    empty: str
    """The message for an empty argument (after stripping)."""
    too_long: str
    """The message for an argument over ``max_chars``."""
    strip: bool = True

    def check(self, value: str) -> str:
        """``value`` stripped (if this kind is) and checked, or `InvalidRequestError` saying what to send."""
        if self.strip:
            value = value.strip()
        if not value:
            raise InvalidRequestError(self.empty)
        if len(value) > self.max_chars:
            raise InvalidRequestError(self.too_long)
        return value


def query_argument(max_chars: int) -> StringArgument:
    """A search query: stripped, at most ``max_chars`` (the toolset's ``max_query_chars``)."""
    return StringArgument(
        max_chars,
        empty='the query is empty: send the words or question to search for',
        too_long=f'the query is over {max_chars} characters: send a short search query, not a document',
    )


def id_argument(what: str) -> StringArgument:
    """A chunk, section or node id, as results show them."""
    return StringArgument(
        MAX_ID_CHARS,
        empty=f'the {what} is empty: pass {what}s exactly as they appear in search results',
        too_long=(
            f'the {what} is over {MAX_ID_CHARS} characters: pass {what}s exactly as they appear in search results'
        ),
    )


def name_argument(what: str, send: str) -> StringArgument:
    """A document or section reference (an id or a title), or a filterable key."""
    return StringArgument(
        MAX_NAME_CHARS,
        empty=f'the {what} is empty: send {send}',
        too_long=f'the {what} is over {MAX_NAME_CHARS} characters: send {send}',
    )


Bounds = tuple[int, int]
"""An integer parameter's lowest and highest allowed value (both included)."""


def _merged(tables: Iterable[Mapping[str, Any]], what: str) -> dict[str, Any]:
    """One table of the tools' tables; a parameter name two tools declare differently is a `ValueError`."""
    by_name: dict[str, Any] = {}
    for table in tables:
        for name, rule in table.items():
            if by_name.setdefault(name, rule) != rule:
                raise ValueError(f'{what} parameter {name!r} is declared twice, differently: one name, one rule')
    return by_name


@dataclass(frozen=True, slots=True)
class StringArguments:
    """Every string parameter of the tools, by parameter name (`toolish_rag.toolset._tools.string_arguments`),
    and the bounds of their integer parameters (stated in the schemas; each tool checks its own, with its message)."""

    by_name: Mapping[str, StringArgument]
    bounds: Mapping[str, Bounds] = field(default_factory=dict)

    @classmethod
    def merged(
        cls, tables: Iterable[Mapping[str, StringArgument]], bounds: Iterable[Mapping[str, Bounds]] = ()
    ) -> StringArguments:
        """One table of the tools' tables; a parameter name two tools declare differently is a `ValueError`."""
        return cls(_merged(tables, 'string'), _merged(bounds, 'integer'))

    def schema(self, parameters: dict[str, Any]) -> dict[str, Any]:
        """A compact copy of a tool's parameters JSON schema (`compact_schema`) stating its string properties'
        ``maxLength`` and its integer properties' ``minimum`` and ``maximum``."""
        properties = parameters.get('properties', {})
        capped = {name: self._stated(name, spec) for name, spec in properties.items()}
        return shared_once(compact_schema({**parameters, 'properties': capped}))

    def _stated(self, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        if name in self.by_name:
            return self._capped(spec, self.by_name[name].max_chars)
        if name in self.bounds and spec.get('type') == 'integer':
            low, high = self.bounds[name]
            return {**spec, 'minimum': low, 'maximum': high}
        return spec

    @classmethod
    def _capped(cls, spec: dict[str, Any], max_chars: int) -> dict[str, Any]:
        """``spec`` with ``maxLength`` on its string type, also inside an optional's ``anyOf`` or a list's ``items``."""
        if spec.get('type') == 'string':
            return {**spec, 'maxLength': max_chars}
        if spec.get('type') == 'array' and isinstance(spec.get('items'), dict):
            return {**spec, 'items': cls._capped(spec['items'], max_chars)}
        if 'anyOf' in spec:
            return {**spec, 'anyOf': [cls._capped(s, max_chars) for s in spec['anyOf']]}
        return spec

    def check(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """``arguments`` with every string argument checked and normalised (`StringArgument.check`).

        A list of strings is checked item by item against its parameter's entry. A string argument
        (or list of strings) with no entry here is a tool added without declaring its argument: a
        bug, caught by the first call rather than left unchecked.
        """
        checked = dict(arguments)
        for name, value in arguments.items():
            strings = isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value)
            if not (isinstance(value, str) or strings):
                continue
            if name not in self.by_name:
                raise TypeError(f'string argument {name!r} has no StringArgument: declare it in its ToolSpec.strings')
            rule = self.by_name[name]
            checked[name] = rule.check(value) if isinstance(value, str) else [rule.check(v) for v in value]
        return checked


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` as few tokens say it, meaning the same to a model: every request carries the tool schemas.

    An optional property's ``anyOf: [X, {type: null}], default: null`` becomes ``X`` (it is not
    required, so leaving it out is how a model omits it; an explicit null is still accepted),
    keeping the property's own description; the models' ``title`` (their class names) is dropped.
    """
    out = {k: v for k, v in schema.items() if not (k == 'title' and isinstance(v, str))}
    if isinstance(out.get('properties'), dict):
        out['properties'] = {name: _optional(compact_schema(spec)) for name, spec in out['properties'].items()}
    for key in ('items', 'not'):
        if isinstance(out.get(key), dict):
            out[key] = compact_schema(out[key])
    if isinstance(out.get('anyOf'), list):
        out['anyOf'] = [compact_schema(s) if isinstance(s, dict) else s for s in out['anyOf']]
    if isinstance(out.get('$defs'), dict):
        out['$defs'] = {name: compact_schema(spec) for name, spec in out['$defs'].items()}
    return out


def _optional(spec: dict[str, Any]) -> dict[str, Any]:
    """A property that is ``X`` or null, null by default, as ``X`` (the property's description kept)."""
    alternatives = spec.get('anyOf')
    if not (isinstance(alternatives, list) and len(alternatives) == 2 and spec.get('default', ...) is None):
        return spec
    kept = [a for a in alternatives if a != {'type': 'null'}]
    if len(kept) != 1:
        return spec
    rest = {k: v for k, v in spec.items() if k not in ('anyOf', 'default')}
    return {**kept[0], **rest}


_SHARED_MIN_CHARS = 200
"""A property schema this long (as JSON, without its description) that recurs is defined once, in ``$defs``."""


def _shape(spec: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in spec.items() if k != 'description'}, sort_keys=True)


def _property_schemas(node: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every property schema in ``node`` (by property name), through ``items``, ``not`` and ``anyOf``."""
    if not isinstance(node, dict):
        return
    for name, spec in (node.get('properties') or {}).items():
        if isinstance(spec, dict):
            yield name, spec
            yield from _property_schemas(spec)
    for key in ('items', 'not'):
        yield from _property_schemas(node.get(key))
    for alternative in node.get('anyOf') or ():
        yield from _property_schemas(alternative)


def shared_once(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with each long property schema that recurs defined once in ``$defs`` and referenced.

    A filter's keys recur (at the top, inside ``any_of``, inside ``not``), each a list of operators: said
    once, a tool's filter costs a third. A property keeps its own description beside its ``$ref``.
    """
    seen: dict[str, list[str]] = {}
    first: dict[str, dict[str, Any]] = {}
    for name, spec in _property_schemas(schema):
        shape = _shape(spec)
        if len(shape) >= _SHARED_MIN_CHARS:
            seen.setdefault(shape, []).append(name)
            first.setdefault(shape, {k: v for k, v in spec.items() if k != 'description'})
    names: dict[str, str] = {}
    for shape, where in seen.items():
        if len(where) > 1:
            taken = {*names.values(), *schema.get('$defs', {})}
            name = where[0] if where[0] not in taken else f'{where[0]}_{len(names)}'
            names[shape] = name
    if not names:
        return schema

    def referenced(node: Any) -> Any:
        if not isinstance(node, dict):
            return node
        out = {k: referenced(v) if k in ('items', 'not') else v for k, v in node.items()}
        if isinstance(node.get('anyOf'), list):
            out['anyOf'] = [referenced(a) for a in node['anyOf']]
        if isinstance(node.get('properties'), dict):
            out['properties'] = {
                n: _reference(spec, names) or referenced(spec) for n, spec in node['properties'].items()
            }
        return out

    defined = {name: referenced(first[shape]) for shape, name in names.items()}  # in the declared order
    return {'$defs': {**schema.get('$defs', {}), **defined}, **referenced(schema)}


def _reference(spec: Any, names: Mapping[str, str]) -> dict[str, Any] | None:
    """``spec`` as a reference to its ``$defs`` entry (with its description), if it has one."""
    if not isinstance(spec, dict) or (name := names.get(_shape(spec))) is None:
        return None
    described = {'description': spec['description']} if 'description' in spec else {}
    return {'$ref': f'#/$defs/{name}', **described}
