"""The tools' arguments: each parameter's pydantic constraint, stating its cap or bounds and refusing what breaks them.

A tool declares each parameter once (`toolish_rag.toolset._spec.Param`): its type annotated with a
`StringArgument` (stripped, non-empty, at most ``max_chars``) or `IntBounds`, built per settings. pydantic
states them in the JSON schema (``maxLength``, ``minimum``/``maximum``) and enforces them when it validates a
call, raising a `Refusal` whose message says what to send instead (`~toolish_rag.toolset._retries` makes
it the model's retry, as any other refusal). The schemas are also made compact (`compact_schema`): every
request carries them. See docs/toolset.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

from ..errors import InvalidRequestError
from ..regex import MAX_PATTERN_LENGTH

__all__ = [
    'MAX_EDGE_TYPE_CHARS',
    'MAX_ID_CHARS',
    'MAX_NAME_CHARS',
    'MAX_PATTERN_CHARS',
    'REFUSAL',
    'IntBounds',
    'StringArgument',
    'compact_schema',
    'id_argument',
    'name_argument',
    'query_argument',
    'shared_once',
    'tool_schema',
]

MAX_ID_CHARS = 200
"""The longest chunk or section id a model may send (ids the toolset shows are far shorter)."""
MAX_NAME_CHARS = 300
"""The longest document or section reference (an id or a title) and title part a model may send."""
MAX_PATTERN_CHARS = MAX_PATTERN_LENGTH
"""The longest regex pattern a model may send: the core's RE2 limit, so the schema states the real one."""
MAX_EDGE_TYPE_CHARS = 64
"""The longest relation type (`toolish_rag.content.RELATION_TYPE_PATTERN` allows no longer)."""

REFUSAL = 'refused_argument'
"""The pydantic error type of an argument a constraint here refused: its message is what the model is told."""


def _refused(message: str) -> PydanticCustomError:
    return PydanticCustomError(REFUSAL, '{refusal}', {'refusal': message})


@dataclass(frozen=True, slots=True)
class StringArgument:
    """One string parameter's constraint: its cap, whether it is stripped, and what to say when it is wrong.

    As ``Annotated[str, rule]`` metadata, pydantic states the cap (``maxLength``) and runs `check`.
    """

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

    def _validated(self, value: str) -> str:
        try:
            return self.check(value)
        except InvalidRequestError as e:
            raise _refused(str(e)) from None

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(self._validated, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {**handler(schema), 'maxLength': self.max_chars}


@dataclass(frozen=True, slots=True)
class IntBounds:
    """One integer parameter's lowest and highest value (both included) and what to say outside them.

    As ``Annotated[int, bounds]`` metadata, pydantic states them (``minimum``, ``maximum``) and refuses a
    value outside with ``refusal(value)``.
    """

    low: int
    high: int
    refusal: Callable[[int], str]

    def _validated(self, value: int) -> int:
        if not self.low <= value <= self.high:
            raise _refused(self.refusal(value))
        return value

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(self._validated, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {**handler(schema), 'minimum': self.low, 'maximum': self.high}


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


_STATED_LAST = ('maxLength', 'minimum', 'maximum')
"""A property's cap and bounds, said after what it is (its type, its default, its description)."""


def tool_schema(parameters: dict[str, Any]) -> dict[str, Any]:
    """A tool's parameters JSON schema as the model sees it: compact (`compact_schema`), long recurring
    property schemas said once (`shared_once`), each property's cap or bounds last."""
    compact = compact_schema(parameters)
    if isinstance(compact.get('properties'), dict):
        compact['properties'] = {name: _bounds_last(spec) for name, spec in compact['properties'].items()}
    return shared_once(compact)


def _bounds_last(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec`` with its cap or bounds (and its list items') last: pydantic sorts a schema's keys."""
    ordered = {k: _bounds_last(v) if k == 'items' and isinstance(v, dict) else v for k, v in spec.items()}
    return {
        **{k: v for k, v in ordered.items() if k not in _STATED_LAST},
        **{k: spec[k] for k in _STATED_LAST if k in spec},
    }


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
