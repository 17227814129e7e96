"""The tantivy text analyzers a `TantivyStore` can index its content with (fixed when the index is created).

See docs/stores/tantivy.md#analyzers for each and its measured nDCG.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

import tantivy

__all__ = ['ANALYZERS', 'AnalyzerName', 'DEFAULT_ANALYZER', 'build_analyzer', 'tokenizer_name']

AnalyzerName: TypeAlias = Literal['subword_stem', 'en_stem', 'simple']
ANALYZERS: tuple[AnalyzerName, ...] = ('subword_stem', 'en_stem', 'simple')
DEFAULT_ANALYZER: AnalyzerName = 'subword_stem'

# Upper-case runs followed by lower-case letters or digits ("Diff", "Executor", "HTTPServer"),
# or runs of lower-case letters, other letters and digits. Marks stay with their letters.
_SUBWORD = r'\p{Lu}+[\p{Ll}\p{Lm}\p{Lo}\p{Nd}\p{Nl}\p{No}\p{M}]*|[\p{Ll}\p{Lt}\p{Lm}\p{Lo}\p{Nd}\p{Nl}\p{No}\p{M}]+'


def tokenizer_name(name: AnalyzerName) -> str:
    """The name the analyzer is registered under in the index."""
    return f'toolish_{name}'


def build_analyzer(name: AnalyzerName) -> tantivy.TextAnalyzer:
    """A fresh analyzer; registered on the index and used to analyse query words."""
    if name == 'subword_stem':
        builder = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.regex(_SUBWORD))
        return (
            builder.filter(tantivy.Filter.remove_long(40))
            .filter(tantivy.Filter.lowercase())
            .filter(tantivy.Filter.stemmer('english'))
            .build()
        )
    builder = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
    builder = builder.filter(tantivy.Filter.remove_long(40)).filter(tantivy.Filter.lowercase())
    if name == 'en_stem':
        builder = builder.filter(tantivy.Filter.stemmer('english'))
    elif name != 'simple':
        raise ValueError(f'unknown analyzer {name!r}: choose one of {", ".join(ANALYZERS)}')
    return builder.build()
