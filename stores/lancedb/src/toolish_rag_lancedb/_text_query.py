"""Turning model-written text into LanceDB full-text queries that cannot fail.

See docs/stores/lancedb.md (Design notes).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from lancedb.query import BooleanQuery, FullTextOperator, FullTextQuery, MatchQuery, Occur, PhraseQuery

from toolish_rag.analysis import TextAnalyzer

__all__ = ['TEXT_QUERY_SYNTAX', 'WORDS_COLUMN', 'ParsedTextQuery', 'parse_text_query', 'text_query_syntax']

TEXT_QUERY_SYNTAX = (
    'Plain words, ranked by BM25: a record matches if it contains any of the words (after lower-casing and '
    'English stemming, so "refunds" finds "refund"); records with more and rarer words rank first. '
    'Put an exact phrase in "double quotes" to rank records containing it higher. '
    'Punctuation, brackets and operators such as AND/OR/NOT or field:value are not special: they are split '
    'into words like the indexed text is (so foo.bar() and ERR-1234 work as written). '
    'Symbols with no letters or digits (emoji, arrows) and words longer than 40 characters cannot be indexed: '
    'such a query is matched as a case-insensitive substring instead. For partial words or exact '
    'character patterns use regex search.'
)

_ANALYSED_SYNTAX = (
    'Plain words, ranked by BM25: a record matches if it contains any of the words; the query is cut '
    'into words exactly as the indexed text was (so Chinese, Japanese or Thai needs no spaces between '
    'words); records with more and rarer words rank first. '
    'Put an exact phrase in "double quotes" to rank records containing it higher. '
    'Punctuation, brackets and operators such as AND/OR/NOT or field:value are not special: they are split '
    'into words like the indexed text is (so foo.bar() and ERR-1234 work as written). '
    'Symbols with no letters or digits (emoji, arrows) cannot be indexed: such a query is matched as a '
    'case-insensitive substring instead. For partial words or exact character patterns use regex search.'
)

WORDS_COLUMN = 'words'
"""The column a language analyzer's tokens are indexed in (``' '.join(tokens)``)."""


def text_query_syntax(analyzer: TextAnalyzer | None) -> str:
    """What the text tool says of its queries: `TEXT_QUERY_SYNTAX` (LanceDB's English analyzer), or
    the language-analyzer form, which leaves stemming to the analyzer's own `TextAnalyzer.describe`."""
    return TEXT_QUERY_SYNTAX if analyzer is None else _ANALYSED_SYNTAX


MAX_TOKEN_LENGTH = 40
"""Tokens longer than this are not indexed (LanceDB's default ``max_token_length``)."""

_PHRASE = re.compile(r'"([^"]*)"')
_WORD = re.compile(r'\w', re.UNICODE)
_TOKENS = re.compile(r'\w+', re.UNICODE)
_PUNCTUATION = frozenset('!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~')


@dataclass(frozen=True, slots=True)
class ParsedTextQuery:
    """A model's query, split into what the FTS index gets and what the fallback scans for."""

    fts: FullTextQuery | None
    """``None`` when no part of the query has a word character."""
    substrings: tuple[str, ...]
    """Case-insensitive substrings for the fallback scan, most specific first; empty when
    every part of the query is something the index holds (then no hit means no match)."""


def parse_text_query(
    query: str, column: str = 'text', analyzer: TextAnalyzer | None = None, languages: Iterable[str] = ()
) -> ParsedTextQuery:
    """``query`` for the FTS index on ``column``, or with ``analyzer`` for the `WORDS_COLUMN` index
    (``languages``: those the store's texts were analysed in, for ``'auto'``)."""
    text = query.replace('\x00', ' ').strip()
    if analyzer is not None:
        return _parse_analysed(text, analyzer, tuple(languages))
    phrases = [p.strip() for p in _PHRASE.findall(text) if _WORD.search(p)]
    rest = _PHRASE.sub(' ', text).replace('"', ' ')
    words = ' '.join(rest.split())
    clauses: list[FullTextQuery] = []
    if _WORD.search(words) or phrases:
        # Every phrase's words also join the OR-match, so a phrase only re-ranks.
        terms = ' '.join([words, *phrases]).strip()
        if _WORD.search(terms):
            clauses.append(_or_match(terms, column))
        clauses.extend(PhraseQuery(' '.join(p.split()), column, slop=0, document_granularity=None) for p in phrases)
    fts = _any_of(clauses)
    whole = ' '.join(text.replace('"', ' ').split())
    pieces = [p for p in whole.split() if _unindexable(p)]
    if not pieces:
        return ParsedTextQuery(fts=fts, substrings=())
    parts = [whole]
    for piece in pieces:
        if piece not in parts:
            parts.append(piece)
    return ParsedTextQuery(fts=fts, substrings=tuple(parts))


def _parse_analysed(text: str, analyzer: TextAnalyzer, languages: tuple[str, ...]) -> ParsedTextQuery:
    """The OR of the query's tokens and a phrase per quoted phrase, against `WORDS_COLUMN`.

    The index splits ``words`` on whitespace only, so the tokens joined by spaces reach it as
    they are: no lower-casing, stemming or length limit by LanceDB. With ``'auto'`` the query's
    tokens are those of each language (`TextAnalyzer.query_tokens`), and a phrase is one phrase
    query per language whose analysis of it differs.
    """
    codes = analyzer.query_languages(text, languages)
    found = _PHRASE.findall(text)
    phrases = list(dict.fromkeys(tuple(analyzer.phrase_tokens(p, code)) for p in found for code in codes))
    tokens = analyzer.query_tokens(_PHRASE.sub(' ', text).replace('"', ' '), languages)
    tokens += [t for phrase in phrases for t in phrase]  # a phrase's words also join the OR-match
    clauses: list[FullTextQuery] = []
    if tokens:
        clauses.append(_or_match(' '.join(tokens), WORDS_COLUMN))
        clauses.extend(
            PhraseQuery(' '.join(p), WORDS_COLUMN, slop=0, document_granularity=None) for p in phrases if len(p) > 1
        )
    fts = _any_of(clauses)
    stop = frozenset().union(*(TextAnalyzer(code).stop_words for code in codes))
    if any(t not in stop for t in tokens):
        return ParsedTextQuery(fts=fts, substrings=())
    # No token, or stop words only (which a passage with other words does not index): if BM25
    # finds nothing, the query is scanned for as a substring, whole ('to be or not to be'), and
    # each piece holding a symbol ('C++', whose single letter no analysis keeps; an emoji).
    whole = ' '.join(text.replace('"', ' ').split())
    pieces = [p for p in whole.split() if _TOKENS.fullmatch(p) is None and not all(ch in _PUNCTUATION for ch in p)]
    if not pieces and not tokens:
        return ParsedTextQuery(fts=None, substrings=())
    return ParsedTextQuery(fts=fts, substrings=tuple(dict.fromkeys([whole, *pieces])))


def _or_match(terms: str, column: str) -> MatchQuery:
    """Any of ``terms`` (exact tokens: no fuzziness, no prefix) in ``column``."""
    return MatchQuery(
        terms,
        column,
        boost=1.0,
        fuzziness=0,
        max_expansions=50,
        operator=FullTextOperator.OR,
        prefix_length=0,
        document_granularity=None,
    )


def _any_of(clauses: list[FullTextQuery]) -> FullTextQuery | None:
    """The clauses as one query, each one enough to match (``None`` for none)."""
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else BooleanQuery([(Occur.SHOULD, c) for c in clauses])


def _unindexable(piece: str) -> bool:
    """A piece the FTS index cannot hold: no word characters, or a token it drops as too long."""
    if not _WORD.search(piece):
        return len(piece) > 0 and not all(ch in _PUNCTUATION for ch in piece)
    return any(len(token) > MAX_TOKEN_LENGTH for token in _TOKENS.findall(piece))
