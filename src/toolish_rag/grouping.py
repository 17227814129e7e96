"""Results grouped per document: the best chunk of each of the ``top_k`` best documents.

See docs/navigation.md#one-hit-per-document.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from .content import Chunk
from .search import SearchHit

__all__ = ['MAX_GROUPING_WINDOW', 'DocumentGroup', 'group_by_document', 'group_hits']

MAX_GROUPING_WINDOW = 1 << 16
"""The most hits one grouped search reads; past it, fewer than ``top_k`` documents may come back."""


@dataclass(frozen=True, slots=True)
class DocumentGroup:
    """One document's hits: the best one, and the others that matched (best first)."""

    best: SearchHit
    others: tuple[SearchHit, ...] = ()

    @property
    def key(self) -> str:
        return _key(self.best)


def _key(hit: SearchHit) -> str:
    record = hit.record
    return f'document:{record.document_id}' if isinstance(record, Chunk) else f'entity:{record.id}'


def group_hits(hits: list[SearchHit]) -> list[DocumentGroup]:
    """``hits`` (best first) grouped per document, groups in order of their best hit."""
    order: dict[str, list[SearchHit]] = {}
    for hit in hits:
        order.setdefault(_key(hit), []).append(hit)
    return [DocumentGroup(group[0], tuple(group[1:])) for group in order.values()]


async def group_by_document(
    search: Callable[[int], Awaitable[list[SearchHit]]], top_k: int, *, max_window: int = MAX_GROUPING_WINDOW
) -> list[DocumentGroup]:
    """The ``top_k`` best documents' groups; ``search(n)`` returns the best ``n`` hits, best first."""
    # The first read is the ungrouped search itself (same hits, same scores: a threshold means the
    # same with or without grouping whenever the top_k hits already span top_k documents).
    window = top_k
    while True:
        hits = await search(window)
        groups = group_hits(hits)
        if len(groups) >= top_k or len(hits) < window or window >= max_window:
            return groups[:top_k]
        window = min(max(window * 4, 16), max_window)
