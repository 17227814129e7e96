"""The `Reranker` protocol, and the fail-open way every caller applies one (`rerank_or_keep`).

See docs/reranking.md#failing-open.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol, runtime_checkable

from ..search import SearchHit

__all__ = ['Reranked', 'Reranker', 'rerank_or_keep']

log = logging.getLogger('toolish_rag.rerank')


@runtime_checkable
class Reranker(Protocol):
    """Re-scores the candidate hits of a search for ``query``, best first.

    ``rerank`` returns the SAME hits (all of them, each record once) with new scores, ordered
    best first; the caller cuts the list to ``top_k``. Scores lie in ``[0, 1]``, higher is
    better, so a threshold has one meaning whatever the search. A reranker that cannot rank
    (its model failed, timed out, answered garbage) returns its input unchanged: the very
    same `SearchHit` objects, which tells `rerank_or_keep` that nothing was re-scored.
    """

    @property
    def score_meaning(self) -> str:
        """What a reranked score is, in one phrase the tool descriptions use ("a cross-encoder relevance probability")."""
        ...

    async def rerank(self, query: str, hits: Sequence[SearchHit]) -> list[SearchHit]: ...


@dataclass(frozen=True, slots=True)
class Reranked:
    """The hits after `rerank_or_keep`, and whether the reranker's scores are the ones they carry."""

    hits: list[SearchHit]
    reranked: bool
    """False when the input came back unchanged (nothing to rank, or the reranker failed open)."""


async def rerank_or_keep(reranker: Reranker, query: str, hits: Sequence[SearchHit]) -> Reranked:
    """``reranker`` applied to ``hits``, or ``hits`` unchanged if it fails: never an exception.

    The answer is trusted for its order and scores only: each returned hit is matched by record
    id to an input hit, and it is the input hit (its record, its matches) that comes back with
    the new score, so a reranker cannot swap in a record the search did not return. Returned
    hits are sorted by score, best first (stably: a reranker's order among equal scores holds).
    """
    original = list(hits)
    if not original:
        return Reranked(original, reranked=False)
    name = type(reranker).__name__
    try:
        answer = await reranker.rerank(query, original)
    except Exception as e:  # fail open: the search results stand
        log.warning('reranker %s failed (%s); keeping the search order', name, type(e).__name__)
        return Reranked(original, reranked=False)
    if len(answer) == len(original) and all(a is b for a, b in zip(answer, original, strict=True)):
        return Reranked(original, reranked=False)  # the reranker failed open itself
    matched = _matched(original, answer)
    if matched is None:
        log.warning(
            'reranker %s returned %d hits that are not a re-scored permutation of the %d it was given; '
            'keeping the search order',
            name,
            len(answer),
            len(original),
        )
        return Reranked(original, reranked=False)
    return Reranked(sorted(matched, key=lambda h: -h.score), reranked=True)


def _matched(original: list[SearchHit], answer: Sequence[object]) -> list[SearchHit] | None:
    """The input hits re-scored as ``answer`` says, in its order; ``None`` unless it is a permutation with finite scores."""
    if len(answer) != len(original):
        return None
    waiting: dict[str, list[SearchHit]] = {}
    for hit in reversed(original):
        waiting.setdefault(hit.id, []).append(hit)
    out: list[SearchHit] = []
    for item in answer:
        if not isinstance(item, SearchHit) or not isinstance(item.score, int | float) or not math.isfinite(item.score):
            return None
        candidates = waiting.get(item.id)
        if not candidates:
            return None  # an id the search did not return, or one returned more often than it was
        out.append(replace(candidates.pop(), score=float(item.score)))
    return out
