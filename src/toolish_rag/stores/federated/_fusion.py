"""One ranking from the members' rankings of one search (one leg, for hybrid search).

By default the members' own scores decide (one leg's scores share a scale when the members share
an embedder, or index corpora of one kind); per-member standardisation and RRF are there for members
whose scores do not. See docs/federation.md#fusion.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from ...analysis import TextAnalyzer
from ...fusion import FusionConfig
from ...search import SearchHit
from ._events import SourcedHit

__all__ = ['MemberFusion']

SHARE = 1.5
"""A member is first asked for this many times its even share of the merged pool (`MemberFusion.asks`)."""


@dataclass(frozen=True, slots=True)
class MemberFusion:
    """How a federated search merges its members' rankings (one leg at a time, for hybrid search).

    ``'raw'`` (the default) merges by the members' own scores: right when one leg's scores share a
    scale across members (one embedder's cosine; BM25 over corpora of one kind), and the only
    method that keeps how good each member's best match is. ``'zscore'`` standardises each
    member's scores over the candidates it returned and merges by standard score (shown as its
    normal CDF); ``'rrf'`` merges by rank, ``(k + 1) / (k + rank)``. These two suit members whose
    scores share no scale (two embedders) and cost quality otherwise: each member's best hit
    ranks near the top whether or not it is any good (measured in docs/federation.md#fusion).
    Ties keep the members' declared order, then each member's own order.
    """

    method: Literal['raw', 'zscore', 'rrf'] = 'raw'
    rrf_k: int = 60
    candidates: int = 100
    """How many hits each member contributes to each leg before fusion (at least ``top_k``)."""
    legs: FusionConfig = field(default_factory=FusionConfig)
    """How hybrid search fuses the merged vector and text legs: the core's fusion, as for one store."""
    text: Literal['corpus', 'member'] = 'corpus'
    """``'corpus'`` (default): text hits (text search, hybrid's text leg) re-scored with one BM25 over every
    member's in-scope records, whatever each member's own formula and tokenizer; each member's records
    are read once for it (docs/federation.md#fusion). ``'member'``: merged by ``method`` like the other legs."""
    analyzer: TextAnalyzer | None = None
    """The analyzer of ``text='corpus'``; ``None`` (default): the one the members' text search states when
    those that state one agree (the memory store's ``'auto'`` by default), else English."""

    def __post_init__(self) -> None:
        if self.method not in ('raw', 'zscore', 'rrf'):
            raise ValueError(f"fusion method must be 'raw', 'zscore' or 'rrf', not {self.method!r}")
        if self.text not in ('member', 'corpus'):
            raise ValueError(f"text must be 'member' or 'corpus', not {self.text!r}")
        if self.candidates < 1 or self.rrf_k < 1:
            raise ValueError('candidates and rrf_k must be positive')

    def pool(self, top_k: int, rescored: bool) -> int:
        """How many merged hits a federated ``top_k`` search ranks: ``top_k``, or ``max(top_k, candidates)``
        when the members' lists are standardised (``'zscore'``) or re-scored (``rescored``), which need the candidates."""
        return max(top_k, self.candidates) if rescored or self.method == 'zscore' else top_k

    def asks(self, pool: int, members: int) -> list[int]:
        """How many hits each of ``members`` members is first asked for, for a merged ``pool``.

        The whole pool from one member or under ``'zscore'`` (a member's standard scores depend on
        every candidate it returns); otherwise half as much again as an even share, and the whole
        pool only from a member whose share may have been too small (a second call, see
        ``FusedSearch.fan_out``): by score or rank the merged pool is then exactly the one full
        lists would give.
        """
        if members <= 1 or self.method == 'zscore':
            return [pool] * members
        return [min(pool, math.ceil(SHARE * pool / members) + 2)] * members

    def fuse(self, names: Sequence[str], rankings: Sequence[Sequence[SearchHit]], top_k: int) -> list[SourcedHit]:
        """The ``top_k`` best of ``rankings`` (one best-first list per member, in member order, named by ``names``).

        An id several members return keeps its best place (ids are unique across a federation's
        members when it is written through; see docs/federation.md#ids).
        """
        scored: list[tuple[float, int, int, SearchHit]] = []
        for member, hits in enumerate(rankings):
            scores = self._scores(hits)
            scored += [(-score, member, rank, hit) for rank, (hit, score) in enumerate(zip(hits, scores, strict=True))]
        scored.sort(key=lambda item: item[:3])
        seen: set[str] = set()
        fused: list[SourcedHit] = []
        for negative, member, _, hit in scored:
            if hit.id in seen:
                continue
            seen.add(hit.id)
            shown = _normal_cdf(-negative) if self.method == 'zscore' else -negative
            fused.append(SourcedHit(hit.record, shown, hit.matches, names[member]))
            if len(fused) == top_k:
                break
        return fused

    def _scores(self, hits: Sequence[SearchHit]) -> list[float]:
        if self.method == 'raw':
            return [h.score for h in hits]
        if self.method == 'rrf':
            return [(self.rrf_k + 1) / (self.rrf_k + rank) for rank in range(1, len(hits) + 1)]
        if not hits:
            return []
        values = [h.score for h in hits]
        mean = sum(values) / len(values)
        std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
        if std == 0:
            return [0.0] * len(values)
        # Rounded so that lists of the same shape tie exactly (float noise must not break a tie).
        return [round((v - mean) / std, 9) for v in values]


def _normal_cdf(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2.0))
