"""`CrossEncoderReranker`: re-scores hits with a sentence-transformers ``CrossEncoder``.

See docs/reranking.md#how-the-rerankers-are-built.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Literal

from .._extras import require_extra
from ..embedding import prefer_passive_openmp
from ..search import SearchHit

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder

__all__ = ['CrossEncoderReranker']

log = logging.getLogger('toolish_rag.rerank')


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)  # the other branch, so a large negative logit cannot overflow
    return z / (1.0 + z)


class CrossEncoderReranker:
    """Reranks hits by a cross-encoder's relevance score for (query, hit text).

    Args:
        model: a ``CrossEncoder``, or its local path or hub name (loaded at the first rerank).
        batch_size: pairs scored per forward pass.
        device: ``'cpu'``, ``'cuda'``, ``'mps'``... for a model loaded from a path or name; ``None`` lets
            sentence-transformers choose (a ``CrossEncoder`` passed in stays where it is).
        max_chars: each hit's text is cut to this many characters before scoring (the model
            truncates to its own token window anyway; this bounds the tokenizer's work).
        activation: ``'sigmoid'`` (the default) scores the model's raw logit through a sigmoid,
            whatever activation the model is configured with: for the single-logit relevance
            models rerankers are (MS MARCO cross-encoders, BGE rerankers), trained with a binary
            cross-entropy loss, that is the probability that the passage is relevant, from 0 to 1.
            ``'model'`` keeps the scores the model's own configured activation gives, clipped to
            ``[0, 1]``: for a model whose head is calibrated otherwise.

    A model with more than one output label (an NLI model, not a relevance model) is refused
    when it loads. Like every reranker it fails open: if the model cannot load or score, the
    hits come back unchanged and a warning (without the texts) is logged.
    """

    def __init__(
        self,
        model: str | CrossEncoder,
        *,
        batch_size: int = 32,
        device: str | None = None,
        max_chars: int = 2000,
        activation: Literal['sigmoid', 'model'] = 'sigmoid',
    ) -> None:
        if batch_size < 1:
            raise ValueError('batch_size must be at least 1')
        if max_chars < 1:
            raise ValueError('max_chars must be at least 1')
        if activation not in ('sigmoid', 'model'):
            raise ValueError(f"activation must be 'sigmoid' or 'model', got {activation!r}")
        self._name = model if isinstance(model, str) else None
        self._model: CrossEncoder | None = None if isinstance(model, str) else model
        self._lock = threading.Lock()
        self.batch_size = batch_size
        self.device = device
        self.max_chars = max_chars
        self.activation = activation

    @property
    def score_meaning(self) -> str:
        if self.activation == 'sigmoid':
            return 'a cross-encoder relevance probability'
        return 'a cross-encoder relevance score'

    def __repr__(self) -> str:
        source = self._name if self._name is not None else type(self._model).__name__
        return f'CrossEncoderReranker({source!r}, batch_size={self.batch_size}, activation={self.activation!r})'

    def load(self) -> None:
        """Load and check the model now (blocking) instead of at the first search.

        Raises what loading raises (a missing model, a model with several labels): a command
        line or a server calls it while starting, to fail at once where a search would fail open.
        """
        self._check(self._load())

    def _load(self) -> CrossEncoder:
        with self._lock:
            if self._model is None:
                assert self._name is not None
                prefer_passive_openmp()
                require_extra('CrossEncoderReranker', 'embeddings', 'sentence_transformers')
                from sentence_transformers import CrossEncoder

                model = CrossEncoder(self._name, device=self.device)
                self._check(model)
                self._model = model
            return self._model

    @staticmethod
    def _check(model: CrossEncoder) -> None:
        labels = model.num_labels
        if labels != 1:
            raise ValueError(f'a reranking cross-encoder has one output label; this model has {labels}')

    def _scores(self, query: str, texts: list[str]) -> list[float]:
        model = self._load()
        self._check(model)  # a CrossEncoder passed in was never checked
        pairs = [(query, t) for t in texts]
        if self.activation == 'sigmoid':
            from torch.nn import Identity

            logits = model.predict(pairs, batch_size=self.batch_size, activation_fn=Identity(), show_progress_bar=False)
            return [_sigmoid(float(x)) for x in logits]
        scores = model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False)
        return [min(1.0, max(0.0, float(x))) for x in scores]

    async def rerank(self, query: str, hits: Sequence[SearchHit]) -> list[SearchHit]:
        """``hits`` re-scored by the cross-encoder, best first; unchanged if it fails."""
        original = list(hits)
        if not original:
            return original
        texts = [h.record.text[: self.max_chars] for h in original]
        try:
            scores = await asyncio.to_thread(self._scores, query, texts)
        except Exception as e:  # fail open: a reranker never costs the search its results
            log.warning('CrossEncoderReranker failed (%s); keeping the search order', type(e).__name__)
            return original
        if len(scores) != len(original) or not all(math.isfinite(s) for s in scores):
            log.warning('CrossEncoderReranker returned unusable scores; keeping the search order')
            return original
        rescored = [replace(h, score=s) for h, s in zip(original, scores, strict=True)]
        return sorted(rescored, key=lambda h: -h.score)
