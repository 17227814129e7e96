"""The one place each optional store attribute is read: through its protocol, checked for its type.

A store that does not implement the protocol (or states a value of another type) reads as ``None``,
and the library behaves as for a store without it. See `toolish_rag.protocols` and docs/custom-store.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic_ai.embeddings import Embedder

from .protocols import HasEmbedder, HasEmbeddingWindows, HasRegexScanLimit, HasTextAnalyzer

if TYPE_CHECKING:
    from .analysis import TextAnalyzer
    from .windows import EmbeddingWindows

__all__ = ['embedder_of', 'regex_scan_limit_of', 'text_analyzer_of', 'windows_of']


def embedder_of(store: object) -> Embedder | None:
    """``store.embedder`` (`HasEmbedder`) when it is a pydantic-ai ``Embedder``."""
    embedder = store.embedder if isinstance(store, HasEmbedder) else None
    return embedder if isinstance(embedder, Embedder) else None


def text_analyzer_of(store: object) -> TextAnalyzer | None:
    """``store.text_analyzer`` (`HasTextAnalyzer`) when it is a core `TextAnalyzer`: its ``language`` is the store's."""
    if not isinstance(store, HasTextAnalyzer):
        return None
    from .analysis import TextAnalyzer  # here: importing the library loads no stemmer (docs/mcp.md#start-up-time)

    analyzer = store.text_analyzer
    return analyzer if isinstance(analyzer, TextAnalyzer) else None


def windows_of(store: object) -> tuple[Embedder, EmbeddingWindows] | None:
    """The embedder and the windows it embeds a long chunk as (`HasEmbeddingWindows`), when the store states both."""
    if not isinstance(store, HasEmbeddingWindows):
        return None
    from .windows import EmbeddingWindows  # here: importing the library loads no numpy

    windows, embedder = store.windows, embedder_of(store)
    return (embedder, windows) if isinstance(windows, EmbeddingWindows) and embedder is not None else None


def regex_scan_limit_of(store: object) -> int | None:
    """``store.regex_scan_limit`` (`HasRegexScanLimit`) when it is an ``int`` (``None``: no limit stated)."""
    limit = store.regex_scan_limit if isinstance(store, HasRegexScanLimit) else None
    return limit if isinstance(limit, int) and not isinstance(limit, bool) else None
