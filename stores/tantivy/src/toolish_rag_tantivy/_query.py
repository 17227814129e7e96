"""Text queries: tantivy's query language, parsed leniently and confined to the content field.

See docs/stores/tantivy.md#how-the-adapter-is-built.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol

import tantivy
from tantivy import Occur, Query

from toolish_rag.analysis import TextAnalyzer
from toolish_rag.errors import QuerySyntaxError

__all__ = ['MAX_QUERY_CHARS', 'TEXT_QUERY_SYNTAX', 'QueryAnalyzer', 'TextQueryBuilder', 'text_query_syntax']

MAX_QUERY_CHARS = 4000
MAX_CLAUSES = 256

TEXT_QUERY_SYNTAX = (
    'BM25 keyword search (tantivy query language). Plain words are OR-ed and ranked by relevance; '
    'words are lowercased and stemmed, and identifiers are split at case changes and underscores '
    '(parseHttpRequest finds "parse http request"). Operators: "exact phrase" (also "a b"~2 for words '
    'within 2 positions); +word must appear; -word must not appear; AND, OR, NOT and ( ) group; '
    'word~1 or word~2 matches misspellings within that edit distance; word^3 weighs a word 3x; '
    '"prefix"* matches words starting with prefix. There are no field names: "name:value" is '
    'read as the words "name value". Text that is not valid syntax is searched as plain words. '
    'A query that only excludes words (-word) is rejected: say what to look for.'
)

_LANGUAGE_SYNTAX = (
    'BM25 keyword search (tantivy query language). Plain words are OR-ed and ranked by relevance; '
    'the query is cut into words exactly as the indexed text was (so Chinese, Japanese or Thai needs '
    'no spaces between words). Operators: "exact phrase" (also "a b"~2 for words '
    'within 2 positions); +word must appear; -word must not appear; AND, OR, NOT and ( ) group; '
    'word~1 or word~2 matches misspellings within that edit distance; word^3 weighs a word 3x; '
    '"prefix"* matches words starting with prefix. There are no field names: "name:value" is '
    'read as the words "name value". Text that is not valid syntax is searched as plain words. '
    'A query that only excludes words (-word) is rejected: say what to look for.'
)


def text_query_syntax(analyzer: TextAnalyzer | None) -> str:
    """The query syntax the text tool describes: `TEXT_QUERY_SYNTAX`, or its language-analyzer form.

    The language form says nothing about stemming itself (that depends on the language, and the
    toolset adds the analyzer's own `TextAnalyzer.describe` sentence).
    """
    return TEXT_QUERY_SYNTAX if analyzer is None else _LANGUAGE_SYNTAX


class QueryAnalyzer(Protocol):
    """What cuts query words into the index's tokens: a `tantivy.TextAnalyzer`, or the core's, adapted."""

    def analyze(self, text: str) -> list[str]: ...


_FUZZY = re.compile(r'^(?P<word>.+?)~(?P<distance>[0-9]?)$')


@dataclass(frozen=True)
class TextQueryBuilder:
    """Turns query text into a tantivy `Query` over one analysed field.

    Immutable, so one builder serves concurrent searches (a store shared by several event
    loops or threads): what one translation counts lives in a `_Translation` of its own.
    """

    schema: tantivy.Schema
    field: str
    analyzer: QueryAnalyzer
    or_pieces: bool = False
    """OR the tokens of an unquoted piece of text instead of asking for them as a phrase."""

    def build(self, text: str) -> Query:
        if not text or not text.strip():
            raise QuerySyntaxError('the query is empty: give some words to search for')
        if len(text) > MAX_QUERY_CHARS:
            raise QuerySyntaxError(f'the query is {len(text)} characters long; keep it under {MAX_QUERY_CHARS}')
        ast, _errors = tantivy.parse_query_lenient(text)
        query, positive = _Translation(self.schema, self.field, self.analyzer, self.or_pieces).node(ast)
        if query is None:
            raise QuerySyntaxError(
                f'the query {text!r} has no searchable words (punctuation and operators alone match nothing)'
            )
        if not positive:
            raise QuerySyntaxError(
                'the query only excludes words (-word / NOT word): add at least one word or phrase to look for'
            )
        return query


class _Translation:
    """One parse tree's translation: the handlers, and how many clauses it has met so far."""

    def __init__(self, schema: tantivy.Schema, field: str, analyzer: QueryAnalyzer, or_pieces: bool) -> None:
        self._schema = schema
        self._field = field
        self._analyzer = analyzer
        self._or_pieces = or_pieces
        self._clauses = 0

    # Each handler returns (query or None when nothing searchable, whether it can match positively).

    def node(self, node: dict[str, Any]) -> tuple[Query | None, bool]:
        self._clauses += 1
        if self._clauses > MAX_CLAUSES:
            raise QuerySyntaxError(f'the query has more than {MAX_CLAUSES} terms and operators: shorten it')
        kind = node.get('type')
        if kind == 'bool':
            return self._bool(node.get('clauses') or [])
        if kind == 'boost':
            inner, positive = self.node(node['underlying'])
            if inner is None:
                return None, False
            boost = float(node.get('boost', 1.0))
            if not boost > 0:
                raise QuerySyntaxError(f'a boost must be a positive number (word^2), got {boost}')
            return Query.boost_query(inner, boost), positive
        if kind == 'literal':
            return self._literal(node), True
        if kind == 'all':
            return Query.all_query(), True
        # Anything field-shaped (ranges, sets, exists, regexes) is read as plain words.
        words: list[str] = []
        for key in ('field', 'field_name'):
            if isinstance(node.get(key), str):
                words.append(node[key])
        for bound in ('lower', 'upper'):
            value = node.get(bound)
            if isinstance(value, dict) and isinstance(value.get('value'), str):
                words.append(value['value'])
        words.extend(e for e in node.get('elements') or [] if isinstance(e, str))
        if isinstance(node.get('pattern'), str):
            words.append(node['pattern'])
        return self._words(' '.join(words)), True

    def _bool(self, clauses: list[Any]) -> tuple[Query | None, bool]:
        parts: list[tuple[Occur, Query]] = []
        positive = False
        for occur_name, child in clauses:
            sub, sub_positive = self.node(child)
            if sub is None:
                continue
            if occur_name == 'must_not':
                parts.append((Occur.MustNot, sub))
                continue
            parts.append((Occur.Must if occur_name == 'must' else Occur.Should, sub))
            positive = positive or sub_positive
        if not parts:
            return None, False
        if len(parts) == 1 and parts[0][0] != Occur.MustNot:
            return parts[0][1], positive
        return Query.boolean_query(parts), positive

    def _literal(self, node: dict[str, Any]) -> Query | None:
        phrase: str = node.get('phrase') or ''
        field_name = node.get('field_name')
        if field_name:
            phrase = f'{field_name}:{phrase}'  # never a field: the name is just more words
        quoted = node.get('delimiter') not in (None, 'none')
        if not quoted:
            match = _FUZZY.match(phrase)
            if match and match.group('word').strip():
                distance = min(int(match.group('distance') or 1), 2)
                return self._fuzzy(match.group('word'), distance)
            if phrase.endswith('*') and len(phrase) > 1:
                tokens = self._analyzer.analyze(phrase[:-1])
                if tokens:
                    return Query.phrase_prefix_query(self._schema, self._field, list(tokens))
        variants = getattr(self._analyzer, 'analyze_phrase', None)
        if quoted and variants is not None and not node.get('prefix'):
            # An analyzer of several languages: the phrase in each (any of them matches).
            found = [
                Query.phrase_query(self._schema, self._field, v, slop=int(node.get('slop') or 0))
                if len(v) > 1
                else Query.term_query(self._schema, self._field, v[0])
                for v in variants(phrase)
                if v
            ]
            if not found:
                return None
            return found[0] if len(found) == 1 else Query.boolean_query([(Occur.Should, q) for q in found])
        tokens = self._analyzer.analyze(phrase)
        if not tokens:
            return None
        if node.get('prefix'):
            return Query.phrase_prefix_query(self._schema, self._field, list(tokens))
        if self._or_pieces and not quoted:
            return self._terms(tokens)
        if len(tokens) == 1:
            return Query.term_query(self._schema, self._field, tokens[0])
        return Query.phrase_query(self._schema, self._field, list(tokens), slop=int(node.get('slop') or 0))

    def _fuzzy(self, word: str, distance: int) -> Query | None:
        tokens = self._analyzer.analyze(word)
        if not tokens:
            return None
        parts = [Query.fuzzy_term_query(self._schema, self._field, t, distance) for t in tokens]
        if len(parts) == 1:
            return parts[0]
        return Query.boolean_query([(Occur.Must, p) for p in parts])

    def _words(self, text: str) -> Query | None:
        tokens = self._analyzer.analyze(text)
        if not tokens:
            return None
        return self._terms(tokens)

    def _terms(self, tokens: list[str]) -> Query:
        """Any of ``tokens`` (an OR, each scored by BM25)."""
        if len(tokens) == 1:
            return Query.term_query(self._schema, self._field, tokens[0])
        return Query.boolean_query([(Occur.Should, Query.term_query(self._schema, self._field, t)) for t in tokens])
