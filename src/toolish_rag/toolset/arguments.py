"""The tools' string arguments: the length caps their schemas show a model, and the checks behind them.

Each string parameter of every tool (``query``, ``pattern``, ``chunk_id``, ``id``, ``document``...) is declared
once here, by name, as a `StringArgument`. From that one table the toolset

* adds ``maxLength`` to the parameter in every tool's JSON schema, so a model knows the cap;
* checks the argument on every call, in `ToolishRag`'s one tool-call path: stripped (queries and
  ids, not patterns, where spaces can matter), non-empty, within the cap.

A parameter that is a list of strings (``graph_context``'s ``ids`` and ``edge_types``) is declared
the same way: the entry applies to each item, in the schema (``items``) and in the check.

The schema only informs: pydantic does not enforce ``maxLength`` here, because its rejection is
a JSON error report, while ours says what to send instead ("send a short search query, not a
document"). Which characters a string may hold is not decided here but in the core (the
`Retriever` applies `toolish_rag.search.QUERY_RULE` and its siblings), which every caller crosses,
not only the toolset's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
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


def _id_argument(what: str) -> StringArgument:
    return StringArgument(
        MAX_ID_CHARS,
        empty=f'the {what} is empty: pass {what}s exactly as they appear in search results',
        too_long=(
            f'the {what} is over {MAX_ID_CHARS} characters: pass {what}s exactly as they appear in search results'
        ),
    )


def _name_argument(what: str, send: str) -> StringArgument:
    return StringArgument(
        MAX_NAME_CHARS,
        empty=f'the {what} is empty: send {send}',
        too_long=f'the {what} is over {MAX_NAME_CHARS} characters: send {send}',
    )


@dataclass(frozen=True, slots=True)
class StringArguments:
    """Every string parameter of the tools, by parameter name; see the module docstring."""

    by_name: Mapping[str, StringArgument]

    @classmethod
    def for_toolset(cls, max_query_chars: int) -> StringArguments:
        return cls(
            {
                'query': StringArgument(
                    max_query_chars,
                    empty='the query is empty: send the words or question to search for',
                    too_long=f'the query is over {max_query_chars} characters: send a short search query, not a document',
                ),
                'pattern': StringArgument(
                    MAX_PATTERN_CHARS,
                    empty='the pattern is empty: send a regular expression such as ERR-[0-9]{4}',
                    too_long=(
                        f'the pattern is over {MAX_PATTERN_CHARS} characters: send a short regular expression, '
                        'such as the one distinctive term or code you are looking for'
                    ),
                    strip=False,
                ),
                'chunk_id': _id_argument('chunk id'),
                'id': _id_argument('id'),
                'title_contains': StringArgument(
                    MAX_NAME_CHARS,
                    empty='title_contains is empty: omit it to list every document, or send a word of the title',
                    too_long=f'title_contains is over {MAX_NAME_CHARS} characters: send a word or two of the title',
                ),
                'document': _name_argument('document', 'a document id or title from list_documents'),
                'section': _name_argument('section', 'a section id or title from outline'),
                'key': _name_argument('key', 'one of the filterable keys the tool description names'),
                'group_by': StringArgument(
                    len('document'),
                    empty='group_by is empty: send "document", or leave it out',
                    too_long='group_by takes only "document": send that, or leave it out',
                ),
                'direction': StringArgument(
                    len('both'),
                    empty='direction is empty: send "out", "in" or "both", or leave it out',
                    too_long='direction takes "out", "in" or "both": send one, or leave it out',
                ),
                'rerank': StringArgument(
                    len('centrality'),
                    empty='rerank is empty: send "centrality", or leave it out',
                    too_long='rerank takes only "centrality": send that, or leave it out',
                ),
                'ids': _id_argument('id'),
                'edge_types': StringArgument(
                    MAX_EDGE_TYPE_CHARS,
                    empty='an edge type is empty: send relation types such as MENTIONS, or leave edge_types out',
                    too_long=(
                        f'an edge type is over {MAX_EDGE_TYPE_CHARS} characters: send relation types such as '
                        'MENTIONS, or leave edge_types out'
                    ),
                ),
            }
        )

    def schema(self, parameters: dict[str, Any]) -> dict[str, Any]:
        """A copy of a tool's parameters JSON schema whose string properties state their ``maxLength``."""
        properties = parameters.get('properties', {})
        capped = {
            name: self._capped(spec, self.by_name[name].max_chars) if name in self.by_name else spec
            for name, spec in properties.items()
        }
        return {**parameters, 'properties': capped}

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
                raise TypeError(f'string argument {name!r} has no StringArgument: declare it in toolset/arguments.py')
            rule = self.by_name[name]
            checked[name] = rule.check(value) if isinstance(value, str) else [rule.check(v) for v in value]
        return checked
