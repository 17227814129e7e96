"""Personalised PageRank over a small weighted graph held in memory: the ranking behind ``multihop_search``.

The graph is whatever the caller read inside its scope (`toolish_rag.graph.walk`): PageRank never
sees a node or an edge the scope hides, so no foreign record can move a score. Edges are followed
both ways. See docs/graph.md#multi-hop-search.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = ['personalised_pagerank']


def personalised_pagerank(
    edges: Iterable[tuple[str, str, float]],
    personalisation: Mapping[str, float],
    *,
    damping: float,
    iterations: int = 50,
    tolerance: float = 1e-10,
) -> dict[str, float]:
    """Each node's stationary probability for a walk that restarts at ``personalisation`` with ``1 - damping``.

    ``edges`` are ``(a, b, weight)``, undirected (a weight <= 0 or a self-loop adds nothing; a repeated
    pair adds its weights). ``personalisation`` maps restart nodes to non-negative masses (normalised
    here; nodes named only there are isolated). A node with no edge sends its mass back to the restart
    distribution, so the scores sum to 1. Deterministic: nodes are visited in id order, and power
    iteration stops after ``iterations`` rounds or once no score moves by more than ``tolerance``.
    """
    if not 0.0 <= damping < 1.0:
        raise ValueError('damping must lie in [0, 1)')
    total = sum(max(m, 0.0) for m in personalisation.values())
    if total <= 0:
        return {}
    restart = {n: max(m, 0.0) / total for n, m in personalisation.items()}
    adjacency: dict[str, dict[str, float]] = {n: {} for n in restart}
    for a, b, weight in edges:
        if a == b or not weight > 0:
            continue
        for x, y in ((a, b), (b, a)):
            row = adjacency.setdefault(x, {})
            row[y] = row.get(y, 0.0) + weight
    nodes = sorted(adjacency)
    degree = {n: sum(adjacency[n].values()) for n in nodes}
    rank = {n: restart.get(n, 0.0) for n in nodes}
    for _ in range(iterations):
        dangling = sum(rank[n] for n in nodes if degree[n] == 0)
        nxt = {n: (1 - damping + damping * dangling) * restart.get(n, 0.0) for n in nodes}
        for n in nodes:
            if degree[n] == 0 or rank[n] == 0:
                continue
            share = damping * rank[n] / degree[n]
            for m, weight in sorted(adjacency[n].items()):
                nxt[m] += share * weight
        moved = max(abs(nxt[n] - rank[n]) for n in nodes)
        rank = nxt
        if moved <= tolerance:
            break
    return rank
