"""`InMemoryStore`'s three searches over one snapshot: vector scores, BM25 scores, regex matches.

Pure functions of a snapshot, run in worker threads. See docs/stores/memory.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ...analysis import TextAnalyzer
from ...content import Chunk
from ...filters import Filter
from ...regex import count_matches, regex_rank_key, regex_text
from ...search import RegexRequest, SearchHit
from ._settings import Statistics
from ._snapshot import Snapshot

__all__ = ['regex_hits', 'text_scores', 'top', 'vector_scores']


def top(scores: npt.NDArray[Any], k: int) -> npt.NDArray[np.intp]:
    """Indices of the ``k`` largest finite scores, best first; ties in store order.

    Ties at the cut go to the earliest records too, so a smaller ``top_k`` is always a prefix
    of a larger one (``argpartition`` alone keeps an arbitrary subset of the tied records).
    """
    finite = np.flatnonzero(np.isfinite(scores))
    if finite.size == 0:
        return finite
    if finite.size > k:
        values = scores[finite]
        kth = -np.partition(-values, k - 1)[k - 1]
        above = finite[values > kth]
        finite = np.concatenate([above, finite[values == kth][: k - above.size]])
    order = np.lexsort((finite, -scores[finite]))
    return finite[order]


def vector_scores(
    snap: Snapshot, q: npt.NDArray[np.float32], f: Filter | None, scoring: str | None = None
) -> npt.NDArray[np.float32]:
    """Every slot's cosine with the unit query ``q`` (its best window's with ``scoring``); ``-inf`` outside ``f``.

    Only the in-scope rows are multiplied, as one matrix of the scope's shape: BLAS sums a row's
    products in an order that depends on the row's place in the matrix (its tail rows in another
    order), so scoring every slot would let the out-of-scope row count move an in-scope score by
    an ulp (docs/filters.md#corpus-statistics).
    """
    mask = snap.mask(f)
    slots = None if mask is None or bool(mask.all()) else np.flatnonzero(mask)
    rows = snap.vectors if slots is None else snap.vectors[slots]
    inside: npt.NDArray[np.float32] = np.asarray(rows @ q, dtype=np.float32)
    if scoring is not None:
        inside = snap.windows.best(inside, q, scoring, slots)  # a record scores by its windows too
    if slots is None:
        return inside
    scores = np.full(snap.vectors.shape[0], -np.inf, dtype=np.float32)
    scores[slots] = inside
    return scores


def text_scores(
    snap: Snapshot, analyzer: TextAnalyzer, statistics: Statistics, query: str, f: Filter | None
) -> npt.NDArray[np.float64] | None:
    """Every slot's BM25 score for ``query`` (``-inf``: no hit or outside ``f``); ``None``: no query word is indexed."""
    index = snap.bm25()
    mask = snap.mask(f)
    tokens = [t for t in analyzer.query_tokens(query, index.languages(mask)) if t in index]
    if not tokens:
        return None
    if statistics == 'store':
        # bm25s's ranking of the whole store (its count, mean length and document frequencies);
        # the scope only selects which of those scores are returned.
        whole = snap.mask(None)  # the live slots (``None``: all)
        scores = index.scores(tokens, snap.scope_statistics(index, None), whole).astype(np.float64)
        hit = scores > 0 if mask is None else (scores > 0) & mask
    else:
        scores = index.scores(tokens, snap.scope_statistics(index, f), mask).astype(np.float64)
        hit = scores > 0
    return np.where(hit, scores, -np.inf)


def regex_hits(snap: Snapshot, pattern: Any, request: RegexRequest) -> list[SearchHit]:
    """The in-scope records ``pattern`` matches, ranked by `toolish_rag.regex.regex_rank_key`."""
    mask = snap.mask(request.filter)
    found: list[tuple[tuple[int, str, int], int, int, tuple[str, ...]]] = []
    for i, r in enumerate(snap.records):
        if mask is not None and not mask[i]:
            continue
        count, samples = count_matches(pattern, regex_text(r))
        if count:
            if isinstance(r, Chunk):
                key = regex_rank_key(count, r.id, r.document_id, r.sequence_number)
            else:
                key = regex_rank_key(count, r.id)
            found.append((key, i, count, samples))
    found.sort(key=lambda item: item[0])
    return [SearchHit(snap.records[i], float(c), matches=s) for _, i, c, s in found[: request.top_k]]
