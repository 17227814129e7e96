"""How an index analyses its text: a tantivy analyzer by name, or the core's language analyzer.

See docs/stores/tantivy.md#how-the-adapter-is-built.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import tantivy

from toolish_rag.analysis import AUTO, TextAnalyzer, analyzer_for
from toolish_rag.search import RegexRequest, SearchRequest

from ._analyzers import ANALYZERS, AnalyzerName, build_analyzer, tokenizer_name
from ._query import TextQueryBuilder, text_query_syntax
from ._schema import build_schema

__all__ = ['STORED_ONLY_TOKENIZER', 'WORDS_FIELD', 'WORDS_TOKENIZER', 'CoreQueryAnalyzer', 'IndexAnalysis']

WORDS_FIELD = 'words'
"""The field a language analyzer's tokens are indexed in."""
WORDS_TOKENIZER = 'toolish_words'
"""Splits ``words`` on whitespace, nothing else."""
STORED_ONLY_TOKENIZER = 'toolish_stored_only'
"""Emits no token: ``text`` of a language-analysed index is only stored."""
_NO_MATCH = r'[^\s\S]'
_WORD_RUN = re.compile(r'\w+')
_PUNCTUATION = frozenset('!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~')


@dataclass(frozen=True, slots=True)
class CoreQueryAnalyzer:
    """The core `TextAnalyzer` in the shape `TextQueryBuilder` asks of a tantivy analyzer."""

    analyzer: TextAnalyzer
    languages: Callable[[], Iterable[str]] = tuple
    """The languages the index's texts were analysed in (``'auto'`` analyses a query in each)."""

    def analyze(self, text: str) -> list[str]:
        return self.analyzer.query_tokens(text, self.languages())

    def analyze_phrase(self, text: str) -> list[list[str]]:
        """``text`` as a phrase in each language it is searched in (one sequence per distinct analysis)."""
        codes = self.analyzer.query_languages(text, self.languages())
        return [list(p) for p in dict.fromkeys(tuple(self.analyzer.phrase_tokens(text, code)) for code in codes)]


@dataclass(frozen=True, slots=True)
class IndexAnalysis:
    """One index's text analysis: exactly one of a tantivy analyzer ``name`` or a core ``text_analyzer``."""

    name: AnalyzerName | None = None
    text_analyzer: TextAnalyzer | None = None

    def __post_init__(self) -> None:
        if (self.name is None) == (self.text_analyzer is None):
            raise ValueError('an index is analysed by a tantivy analyzer name or a TextAnalyzer, exactly one')
        if self.name is not None and self.name not in ANALYZERS:
            raise ValueError(f'unknown analyzer {self.name!r}: choose one of {", ".join(ANALYZERS)}')

    @classmethod
    def requested(cls, analyzer: AnalyzerName | None, language: str | None) -> IndexAnalysis | None:
        """What a caller asked for (``None``: nothing, so the saved analysis or the default)."""
        if analyzer is not None and language is not None:
            raise ValueError(
                f'give analyzer= (a tantivy analyzer, English) or language= (the language-aware analyzer), '
                f'not both: got analyzer={analyzer!r} and language={language!r}'
            )
        if analyzer is not None:
            return cls(name=analyzer)
        if language is not None:
            return cls(text_analyzer=analyzer_for(language))
        return None

    @classmethod
    def default(cls) -> IndexAnalysis:
        """A new index's analysis when neither ``analyzer=`` nor ``language=`` is given: ``language='auto'``."""
        return cls(text_analyzer=analyzer_for(AUTO))

    @classmethod
    def from_saved(cls, saved: str) -> IndexAnalysis:
        """The analysis an index saved as `saved` (an analyzer name or an analyzer identity)."""
        if saved in ANALYZERS:
            return cls(name=saved)  # type: ignore[arg-type]
        return cls(text_analyzer=TextAnalyzer.from_identity(saved))

    @property
    def saved(self) -> str:
        """What is saved next to the index: the analyzer's name, or the `TextAnalyzer.identity`.

        Both under the key ``analyzer``: a version of this store from before language analyzers
        reads an identity as an unknown analyzer name and refuses the index, rather than
        searching a ``text`` field that holds no tokens.
        """
        if self.text_analyzer is not None:
            return self.text_analyzer.identity
        assert self.name is not None
        return self.name

    @property
    def option(self) -> str:
        """The argument that opens an index built with this analysis (for error messages)."""
        if self.text_analyzer is not None:
            return f'language={self.text_analyzer.language!r}'
        return f'analyzer={self.name!r}'

    def mismatch(self, requested: IndexAnalysis, where: object) -> ValueError:
        """The error for opening an index built with this analysis with ``requested`` instead."""
        return ValueError(
            f'{where} was indexed with {self.option}; reopen it with that (or with neither analyzer= nor '
            f'language=, which uses the saved one), or ingest the documents again into a new location to '
            f'index them with {requested.option}: an index is never searched with another analyzer than it '
            'was built with'
        )

    @property
    def field(self) -> str:
        """The field BM25 searches."""
        return 'text' if self.text_analyzer is None else WORDS_FIELD

    def schema(self) -> tantivy.Schema:
        if self.name is not None:
            return build_schema(tokenizer_name(self.name))
        return build_schema(STORED_ONLY_TOKENIZER, WORDS_TOKENIZER)

    def register(self, index: tantivy.Index) -> None:
        """Register the tokenizers the schema names (each time an index is opened)."""
        if self.name is not None:
            index.register_tokenizer(tokenizer_name(self.name), build_analyzer(self.name))
            return
        index.register_tokenizer(WORDS_TOKENIZER, tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).build())
        index.register_tokenizer(
            STORED_ONLY_TOKENIZER, tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.regex(_NO_MATCH)).build()
        )

    def query_builder(self, schema: tantivy.Schema, languages: Callable[[], Iterable[str]] = tuple) -> TextQueryBuilder:
        """The query builder of this analysis (``languages``: what the index holds, for ``'auto'``)."""
        if self.name is not None:
            return TextQueryBuilder(schema, 'text', build_analyzer(self.name))
        assert self.text_analyzer is not None
        analyzer = CoreQueryAnalyzer(self.text_analyzer, languages)
        return TextQueryBuilder(schema, WORDS_FIELD, analyzer, or_pieces=True)

    @property
    def query_syntax(self) -> str:
        return text_query_syntax(self.text_analyzer)

    def substring_request(self, request: SearchRequest, languages: Iterable[str] = ()) -> RegexRequest | None:
        """For a query the core analysis keeps no word of but stop words (``'to be or not to be'``) or none at
        all (``C++``: one letter and symbols): its text as a case-insensitive literal for the regex scan, as
        `LanceDBStore` scans for it. ``None``: a tantivy analyzer (it keeps such words), a query with other
        words, one of a fixed language's stop words only, or nothing but punctuation and operators."""
        analyzer = self.text_analyzer
        if analyzer is None:
            return None
        text = ' '.join(request.query.replace('"', ' ').split())
        if not text or all(ch in _PUNCTUATION or ch.isspace() for ch in text):
            return None
        codes = analyzer.query_languages(text, languages)
        stop = frozenset().union(*(TextAnalyzer(code).stop_words for code in codes))
        tokens = analyzer.query_tokens(text, languages)
        if any(token not in stop for token in tokens):
            return None
        if not tokens and all(_WORD_RUN.fullmatch(piece) or set(piece) <= _PUNCTUATION for piece in text.split()):
            return None  # words a fixed language drops as stop words ('das und der'): nothing to look for
        return RegexRequest(re.escape(text), request.top_k, request.filter, case_sensitive=False)
