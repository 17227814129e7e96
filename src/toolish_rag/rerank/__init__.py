"""Reranking: a second stage that re-scores a search's candidates with a stronger model.

* `Reranker` is the protocol (``async rerank(query, hits)`` returning the hits re-scored, best
  first, and a ``score_meaning`` the tool descriptions state), and `rerank_or_keep` the fail-open
  rule every caller applies (`base`);
* `CrossEncoderReranker` scores (query, passage) pairs with a sentence-transformers
  ``CrossEncoder`` (`cross_encoder`);
* `ModelReranker` asks a pydantic-ai model to order the candidates, in one bounded call (`model`).

``ToolishRag(store, reranker=..., rerank_candidates=30)`` applies one in the ranked search tools
and the eager search, to hits found within the run's scope (docs/reranking.md).
"""

from ._base import Reranked, Reranker, rerank_or_keep
from ._cross_encoder import CrossEncoderReranker
from ._model import DEFAULT_RERANK_INSTRUCTIONS, ModelReranker

__all__ = [
    'DEFAULT_RERANK_INSTRUCTIONS',
    'CrossEncoderReranker',
    'ModelReranker',
    'Reranked',
    'Reranker',
    'rerank_or_keep',
]
