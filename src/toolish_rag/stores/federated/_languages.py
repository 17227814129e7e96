"""The per-query language rule of hybrid search, over a federation's members.

One store lowers its vector leg's weight for a query written in a language its embedder was not
trained on, confirmed by the text leg's best passages (`toolish_rag.fusion.FusionConfig.for_query`).
A federation applies the same rule to its merged legs: the query's language is detected as in one
store (falling back to the members' text language when they share one), confirmed by the merged
text leg's best passages, and it counts as read by the vector leg only when every member embedder
that states its languages reads it. See docs/federation.md#fusion.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ..._store_attributes import embedder_of, text_analyzer_of
from ...content import Chunk
from ...embedding import embedder_languages
from ...fusion import CONFIRMING_PASSAGES, FusionConfig
from ...search import SearchHit
from ._core import Member


def covered_languages(members: Sequence[Member]) -> frozenset[str] | None:
    """The languages every vector member's embedder reads (``None``: no member states its languages).

    A member whose embedder's languages are unknown counts as reading every language, as a store does.
    """
    known: list[frozenset[str]] = []
    for member in members:
        try:
            languages = embedder_languages(embedder_of(member.store))
        except Exception:  # an embedder that cannot be resolved fails the member's own vector leg
            languages = None
        if languages is not None:
            known.append(languages)
    return frozenset.intersection(*known) if known else None


def shared_language(members: Sequence[Member]) -> str | None:
    """The fixed text-analyzer language the members state, when those that state one state the same (else ``None``)."""
    stated = {a.language for m in members if (a := text_analyzer_of(m.store)) is not None}
    return stated.pop() if len(stated) == 1 else None


async def query_legs(
    legs: FusionConfig,
    vector_members: Sequence[Member],
    members: Sequence[Member],
    query: str,
    text_hits: Sequence[SearchHit],
) -> FusionConfig:
    """``legs`` for this query: `FusionConfig.for_query` over the members' embedders and the merged text leg."""
    if legs.uncovered_vector_weight is None or not vector_members:
        return legs
    covered = covered_languages(vector_members)
    if covered is None and legs.vector_languages is None:
        return legs
    passages = [h.record.text for h in text_hits[:CONFIRMING_PASSAGES] if isinstance(h.record, Chunk)]
    return await asyncio.to_thread(
        legs.for_query, query, covered, fallback_language=shared_language(members), passages=passages
    )
