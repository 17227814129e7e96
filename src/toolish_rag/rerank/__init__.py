"""Reranking: a second stage that re-scores a search's candidates with a stronger model.

`Reranker` is the protocol, `rerank_or_keep` the fail-open rule; `CrossEncoderReranker` and
`ModelReranker` are the two rerankers. See docs/reranking.md.
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
