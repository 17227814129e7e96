"""Eager searches: searches run at the start of every agent run, their results sent as data before the prompt.

The capability (`toolish_rag.capability`) delivers them as an `EagerResultsPart`, never in the
instructions: retrieved text is untrusted, and the instructions speak in the system voice. See
docs/capabilities.md.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ..protocols import StoreFeatures
from ..retriever import Retriever
from ..search import SearchHit
from ..tracing import HITS, RERANKED, Tracing
from ._calls import ToolCalls
from ._render import NO_RESULTS, render_hits
from ._tools.search import best_search, mark, ranked

__all__ = ['EagerResult', 'EagerSearch', 'eager_result']


@dataclass(frozen=True, slots=True)
class EagerSearch:
    """A search run at the start of every agent run, its results sent to the model before the prompt."""

    query: str
    top_k: int = 5


@dataclass(frozen=True, slots=True)
class EagerResult:
    """One eager search's outcome: the text the model reads and the hits it shows, as records.

    ``hits`` go in the delivering part's metadata, so grounding counts them as seen from there,
    never by parsing ``text`` (which a record's title could forge).
    """

    search: EagerSearch
    text: str
    hits: tuple[SearchHit, ...]


async def eager_result(
    calls: ToolCalls[Any], caps: StoreFeatures, eager: EagerSearch, retriever: Retriever, traced: Tracing
) -> EagerResult:
    """One eager search in the run's scope (``retriever``), with its span and listener event (tool ``eager_search``)."""
    start = time.perf_counter()
    arguments = {'query': eager.query, 'top_k': eager.top_k}
    with calls.call_trace('eager_search', arguments, retriever).span(traced) as span:
        search = best_search(caps)
        assert search is not None  # `with_eager_search_about` refuses a store without search
        found = await ranked(retriever, search, eager.query, eager.top_k, calls.settings)
        hits = found.hits
        span.set_attribute(HITS, len(hits))
        if calls.settings.reranker is not None:
            span.set_attribute(RERANKED, found.reranked)
    text = render_hits(hits, heading=f'Preloaded search results for {eager.query!r}{mark(found)}:')
    if not hits:
        text = f'Preloaded search results for {eager.query!r}: none. {NO_RESULTS}'
    filtered = retriever.filter is not None
    await calls.emit(calls.event('eager_search', arguments, start, filtered, result_text=text, hits=tuple(hits)))
    return EagerResult(eager, text, tuple(hits))
