"""Rank fusion: one hybrid ranking from a vector and a text ranking.

Used by the hybrid tool for stores that do not implement `HybridSearch`. See docs/fusion.md#the-methods.
The vector leg's weight is chosen per query (`FusionConfig.for_query`): lowered for a query in a
language the embedder was not trained on, so hybrid does not fall below text search there
(docs/fusion.md#a-leg-that-cannot-read-the-query).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from .languages import detect_language
from .search import SearchHit

__all__ = ['FusionConfig', 'fuse']

UNCOVERED_VECTOR_WEIGHT = 0.2
"""The vector weight for a query the embedder cannot read (chosen on XQuAD-de and -zh: docs/fusion.md)."""

CONFIRMING_PASSAGES = 3
"""How many of the text leg's best hits may confirm a query's language (`FusionConfig.for_query`)."""


@dataclass(frozen=True, slots=True)
class FusionConfig:
    """How the hybrid tool combines its two legs."""

    method: Literal['zscore', 'minmax', 'dbsf', 'rrf'] = 'zscore'
    vector_weight: float = 0.45
    text_weight: float = 0.55
    rrf_k: int = 60
    candidates: int = 100
    """How many hits each leg contributes before fusion (at least ``top_k``)."""
    uncovered_vector_weight: float | None = UNCOVERED_VECTOR_WEIGHT
    """The vector weight used instead of ``vector_weight`` for a query written in a language the
    embedder was not trained on (see `for_query`); ``None`` never changes the weights."""
    vector_languages: frozenset[str] | None = None
    """The languages (ISO 639-1 codes) the store's embedder covers; ``None``: looked up from its
    model name (`toolish_rag.embedding.embedder_languages`), every language when unknown."""

    def __post_init__(self) -> None:
        if self.vector_weight < 0 or self.text_weight < 0 or self.vector_weight + self.text_weight == 0:
            raise ValueError('fusion weights must be non-negative and not both zero')
        if self.candidates < 1 or self.rrf_k < 1:
            raise ValueError('candidates and rrf_k must be positive')
        if self.uncovered_vector_weight is not None and not (
            self.uncovered_vector_weight >= 0 and self.uncovered_vector_weight + self.text_weight > 0
        ):
            raise ValueError('uncovered_vector_weight must be non-negative (and not zero with a zero text weight)')

    def for_language(self, language: str | None, covered: frozenset[str] | None) -> FusionConfig:
        """This configuration for text in ``language`` searched with an embedder covering ``covered``.

        Unchanged when the language is unknown (``None``; ``'none'``, an analyzer with no
        language; ``'auto'``, one detecting each text's), the embedder's languages are unknown,
        or the language is among them; otherwise the vector weight becomes ``uncovered_vector_weight``.
        """
        covered = self.vector_languages if self.vector_languages is not None else covered
        if self.uncovered_vector_weight is None or language in (None, 'none', 'auto') or covered is None:
            return self
        if language in covered:
            return self
        return replace(self, vector_weight=self.uncovered_vector_weight, uncovered_vector_weight=None)

    def for_query(
        self,
        query: str,
        covered: frozenset[str] | None,
        *,
        fallback_language: str | None = None,
        passages: Sequence[str] = (),
    ) -> FusionConfig:
        """This configuration for one query: `for_language` of the language the query is written in.

        The language is detected from the query itself (`toolish_rag.languages.detect_language`),
        so one store holding several languages weighs each query's vector leg by whether the
        embedder reads that query; ``fallback_language`` (the store's fixed analyzer language, if
        any) decides when the query is too short to tell. ``passages`` (the text leg's best few)
        confirm it: the weight is lowered only if one of them is in that language too, so an
        English question the detector takes for Catalan, matching English passages, keeps the
        vector leg (no passages: the query's language alone decides). Blocking (milliseconds;
        the first call loads the detector's models): call it from a thread in async code.
        See docs/fusion.md#a-leg-that-cannot-read-the-query.
        """
        if self.uncovered_vector_weight is None or (self.vector_languages is None and covered is None):
            return self
        language = detect_language(query) or fallback_language
        lowered = self.for_language(language, covered)
        if lowered is self or not passages or any(detect_language(p) == language for p in passages):
            return lowered
        return self


def _mean_std(hits: Sequence[SearchHit]) -> tuple[float, float]:
    # fsum: exactly rounded, so the statistics (and the fused order) do not depend on the hits' order.
    scores = [h.score for h in hits]
    mean = math.fsum(scores) / len(scores)
    return mean, math.sqrt(math.fsum((s - mean) ** 2 for s in scores) / len(scores))


def _dbsf_scale(hits: Sequence[SearchHit]) -> dict[str, float]:
    if not hits:
        return {}
    mean, std = _mean_std(hits)
    if std == 0:
        return {h.id: 1.0 for h in hits}
    low, high = mean - 3 * std, mean + 3 * std
    return {h.id: min(1.0, max(0.0, (h.score - low) / (high - low))) for h in hits}


MISSING_Z = -3.0
"""The standard score of a hit one list did not return: three standard deviations below its mean."""


def _zscore_scale(hits: Sequence[SearchHit]) -> dict[str, float]:
    if not hits:
        return {}
    mean, std = _mean_std(hits)
    if std == 0:
        return {h.id: 0.0 for h in hits}
    return {h.id: (h.score - mean) / std for h in hits}


def _normal_cdf(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


def _minmax_scale(hits: Sequence[SearchHit]) -> dict[str, float]:
    if not hits:
        return {}
    scores = [h.score for h in hits]
    low, high = min(scores), max(scores)
    if high == low:
        return {h.id: 1.0 for h in hits}
    return {h.id: (h.score - low) / (high - low) for h in hits}


def _rrf_scale(hits: Sequence[SearchHit], k: int) -> dict[str, float]:
    # Scaled so the first rank scores 1: the weighted sum then stays within [0, sum(weights)].
    # Equal scores share the rank of the first of them, so a leg's ties do not depend on its order.
    scaled: dict[str, float] = {}
    rank, previous = 0, None
    for position, h in enumerate(hits, start=1):
        if h.score != previous:
            rank, previous = position, h.score
        scaled[h.id] = (k + 1) / (k + rank)
    return scaled


def fuse(
    vector_hits: Sequence[SearchHit],
    text_hits: Sequence[SearchHit],
    top_k: int,
    config: FusionConfig | None = None,
) -> list[SearchHit]:
    """Fuse two best-first rankings into the ``top_k`` best, scores in ``[0, 1]``."""
    config = config or FusionConfig()
    missing = 0.0
    if config.method == 'zscore':
        v, t = _zscore_scale(vector_hits), _zscore_scale(text_hits)
        missing = MISSING_Z
    elif config.method == 'rrf':
        v, t = _rrf_scale(vector_hits, config.rrf_k), _rrf_scale(text_hits, config.rrf_k)
    elif config.method == 'minmax':
        v, t = _minmax_scale(vector_hits), _minmax_scale(text_hits)
    else:
        v, t = _dbsf_scale(vector_hits), _dbsf_scale(text_hits)
    records = {h.id: h.record for h in text_hits}
    records.update({h.id: h.record for h in vector_hits})
    total = config.vector_weight + config.text_weight
    fused = {
        rid: (config.vector_weight * v.get(rid, missing) + config.text_weight * t.get(rid, missing)) / total
        for rid in records
    }
    order = sorted(fused, key=lambda rid: (-fused[rid], rid))
    shown = _normal_cdf if config.method == 'zscore' else float
    return [SearchHit(records[rid], shown(fused[rid])) for rid in order[:top_k]]
