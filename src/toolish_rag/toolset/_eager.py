"""Eager searches: searches run at the start of every agent run, their results put in the instructions.

See docs/concepts.md.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..protocols import StoreCapabilities
from ..retriever import Retriever
from ..search import SearchHit
from ..tracing import HITS, RERANKED, Tracing
from ._calls import ToolCalls
from ._render import NO_RESULTS, render_hits
from ._tools.search import best_search, mark, ranked

__all__ = ['EagerRun', 'EagerSearch', 'eager_text']


@dataclass(frozen=True, slots=True)
class EagerSearch:
    """A search run at the start of every agent run, its results put in the instructions."""

    query: str
    top_k: int = 5


@dataclass(slots=True)
class EagerRun:
    """One run's eager searches: the run's scoped retriever, and their text and hits once searched.

    ``hits`` are what the searches showed the model, held as records: grounding counts them as seen
    from here, never by parsing the instructions' text (which a record's title could forge).
    """

    retriever: Retriever
    text: str | None = None
    hits: list[SearchHit] = field(default_factory=list)


async def eager_text(
    calls: ToolCalls, caps: StoreCapabilities, eager: EagerSearch, run: EagerRun, traced: Tracing
) -> str:
    """One eager search's text for the instructions, with its span and listener event (tool ``eager_search``).

    Its hits are added to ``run.hits``.
    """
    retriever = run.retriever
    start = time.perf_counter()
    arguments = {'query': eager.query, 'top_k': eager.top_k}
    with calls.call_trace('eager_search', arguments, retriever).span(traced) as span:
        search = best_search(caps)
        assert search is not None  # `with_eager_search_about` refuses a store without search
        found = await ranked(retriever, search, eager.query, eager.top_k, calls.settings)
        hits = found.hits
        run.hits.extend(hits)
        span.set_attribute(HITS, len(hits))
        if calls.settings.reranker is not None:
            span.set_attribute(RERANKED, found.reranked)
    text = render_hits(hits, heading=f'Preloaded search results for {eager.query!r}{mark(found)}:')
    if not hits:
        text = f'Preloaded search results for {eager.query!r}: none. {NO_RESULTS}'
    filtered = retriever.filter is not None
    await calls.emit(calls.event('eager_search', arguments, start, filtered, result_text=text, hits=tuple(hits)))
    return text
