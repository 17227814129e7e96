"""``--filter``: the scope a command cannot leave, as ``KEY=VALUE`` (typed like a token file's ``scope``) or as a
filter's JSON; repeated means all of them. A wrong one is refused in one line with an example. See docs/filters.md."""

from __future__ import annotations

import argparse
import tomllib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the filter models are imported when a --filter is read: `toolish-rag` starts light
    from pydantic import ValidationError

    from ..filters import Filter
    from ..toolset import ToolishRag

__all__ = ['EXAMPLE', 'add_filter_argument', 'parse_scope', 'scope_filter', 'scoped']

EXAMPLE = '--filter tenant=acme, or --filter \'{"op":"eq","key":"tenant","value":"acme"}\''


def add_filter_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup, what: str) -> None:
    """``--filter`` (repeatable) with ``what`` saying what the scope does for this command."""
    parser.add_argument(
        '--filter',
        action='append',
        default=None,
        metavar='KEY=VALUE|JSON',
        help=f"{what}: KEY=VALUE (the value read as in a token file's scope: 2024 a number, true a boolean, "
        '["a","b"] one of, anything else text) or a filter as JSON; repeat for all of them, e.g. '
        '--filter tenant=acme --filter year=2024',
    )


def _value(text: str) -> Any:
    """``2024`` -> 2024, ``true`` -> True, ``"acme"`` and ``acme`` -> 'acme', ``["a","b"]`` -> a list."""
    try:
        return tomllib.loads(f'v = {text}')['v']
    except tomllib.TOMLDecodeError:
        return text


def parse_scope(text: str) -> Filter:
    """One ``--filter`` value as a filter; ValueError with one human line when it is neither form."""
    from pydantic import ValidationError

    from ..filters import PropertyFilter, parse_filter

    stripped = text.strip()
    if not stripped.startswith('{'):
        key, sep, raw = stripped.partition('=')
        if not sep or not key.strip() or not raw.strip():
            raise ValueError(f'--filter {text!r} is neither KEY=VALUE nor a JSON filter; e.g. {EXAMPLE}')
        value = _value(raw.strip())
        if isinstance(value, dict):
            raise ValueError(f'--filter {text!r}: a value cannot be a table; use a JSON filter, e.g. {EXAMPLE}')
        key = key.strip()
        return PropertyFilter.in_(key, value) if isinstance(value, list) else PropertyFilter.eq(key, value)
    try:
        return parse_filter(stripped)
    except ValidationError as e:
        raise ValueError(f'--filter {text!r} is not a filter: {_first_problem(e)}; e.g. {EXAMPLE}') from None


def _first_problem(error: ValidationError) -> str:
    """What pydantic found wrong, in words: the first error's place and message, without the union's tags."""
    first = error.errors(include_url=False)[0]
    ctx = first.get('ctx') or {}
    if first['type'] == 'json_invalid':
        return f'invalid JSON ({ctx.get("error", "syntax error")})'
    if first['type'] == 'union_tag_invalid':
        return f'"op" {ctx.get("tag")!r} is not one of {ctx.get("expected_tags")}'.replace("'", '')
    if first['type'] == 'union_tag_not_found':
        return 'no "op" (eq, in, gt, and, or, not...)'
    place = '.'.join(str(p) for p in first['loc'] if p not in _OPS)  # the union's branch names are not the input's
    return f'{place}: {first["msg"]}' if place else str(first['msg'])


_OPS = frozenset({'eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'nin', 'contains', 'starts_with', 'ends_with'}) | {
    'exists',
    'has_any_label',
    'and',
    'or',
    'not',
}
"""The filter union's branch names, which pydantic puts in an error's location."""


def scope_filter(values: list[str] | None) -> Filter | None:
    """Every ``--filter`` given, all of them (``None`` for none); a ValueError in one human line when one is wrong
    (``main`` prints it, exit 2: a usage error)."""
    if not values:
        return None
    from ..filters import and_

    return and_(*(parse_scope(v) for v in values))


def scoped(rag: ToolishRag[Any], values: list[str] | None) -> ToolishRag[Any]:
    """``rag`` narrowed by every ``--filter`` given (itself without one)."""
    scope = scope_filter(values)
    return rag if scope is None else rag.with_metadata_filter(scope)
