"""The multi-hop tool: ``multihop_search`` ranks passages by search and graph together, in one call.

The search's best hits seed a one-hop scoped walk (`Retriever.graph_walk`); personalised PageRank
over what the walk read (`toolish_rag.graph._multihop`) ranks the hits and the passages the graph
joins to them, each saying why it is listed. See docs/graph.md#multi-hop-search.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from ..._record_text import field_text, render_record
from ...content import Chunk
from ...errors import InvalidRequestError
from ...graph._multihop import MultihopRanking, Passage
from ...graph.walk import MAX_WALK_NODES, GraphWalk, WalkRequest
from ...navigation import SectionTarget
from ...retriever import Retriever
from ...search import SearchHit
from .._render import quoted
from .._settings import RagSettings
from .._spec import Declared, Found, ToolEnv, ToolSpec
from ._shared import filter_param, no_results, query_param, top_k_param
from .search import Search, best_search

__all__ = ['CANDIDATES', 'DOCUMENTS_READ', 'RANKING', 'SPECS']

CANDIDATES = 50
"""Search hits read per call: the seeds, and the passages that stand for the documents the graph reaches."""
DOCUMENTS_READ = 20
"""At most this many documents the walk reaches without a passage (none of their chunks among the hits or the
walked nodes) are read for their first in-scope chunk, in walk order (hop, then id)."""
RANKING = MultihopRanking()
"""The ranking rule and its constants (measured: benchmarks/multihop_bench.py)."""


@dataclass(frozen=True, slots=True)
class _MultihopSettings:
    search: Search
    ranking: MultihopRanking
    candidates: int


def _tool(env: ToolEnv) -> Declared:
    search = best_search(env.caps)
    assert search is not None  # offered only with a search
    parameters = (query_param(env.settings), top_k_param(env.settings), *filter_param(env))
    return Declared(parameters, partial(_multihop, settings=_MultihopSettings(search, RANKING, CANDIDATES)))


async def _multihop(
    r: Retriever,
    settings: _MultihopSettings,
    *,
    query: str,
    top_k: int,
    filter: Mapping[str, Any] | None = None,
) -> Found:
    """One call: search (scoped, through ``r``), walk one hop from the seeds, rank, render."""
    hits = await settings.search(r)(query, max(settings.candidates, top_k))
    if not hits:
        return Found(await no_results(r, filter is not None), [])
    ranked = await rank(r, settings.ranking, query, hits)
    shown = ranked[:top_k]
    return Found(_render(query, shown), [p.hit for p in shown])


async def rank(r: Retriever, ranking: MultihopRanking, query: str, hits: Sequence[SearchHit]) -> list[Passage]:
    """``hits`` (the search's candidates for ``query``, best first) and what the graph joins to the seeds, ranked."""
    seeds = ranking.seed_hits(query, hits)
    documents = [c.document_id for c in (h.record for h in seeds) if isinstance(c, Chunk)]
    start = tuple(dict.fromkeys([*(h.id for h in seeds), *documents]))
    walk = await r.graph_walk(WalkRequest(start, hops=1, direction='both', max_nodes=MAX_WALK_NODES))
    known = {h.id for h in hits}
    reached = [n.node.id for n in walk.nodes if n.node.kind == 'chunk' and n.node.id not in known]
    records = await r.records(reached) if reached else []
    chunks = {c.id: SearchHit(c, 0.0) for c in records if isinstance(c, Chunk)}
    for chunk in await _first_chunks(r, walk, [*hits, *chunks.values()]):
        chunks.setdefault(chunk.id, SearchHit(chunk, 0.0))
    return ranking.rank(query, hits, walk, chunks)


async def _first_chunks(r: Retriever, walk: GraphWalk, listed: Sequence[SearchHit]) -> list[Chunk]:
    """The first in-scope chunk of each document the walk reached with no passage yet (at most ``DOCUMENTS_READ``).

    A page the seeds name is often the one a bridge question needs even when its text reads nothing like the
    question (so the search did not find it): its opening passage stands for it. Read through the scoped
    navigator, so a document the scope hides yields nothing (the walk never reaches one anyway). Without a
    navigator (a store that cannot read sections) such documents stay nodes that relay but are never listed.
    """
    held = {h.record.document_id for h in listed if isinstance(h.record, Chunk)}
    wanted = [n.node for n in walk.nodes if n.node.kind == 'document' and n.node.id not in held][:DOCUMENTS_READ]
    if not wanted:
        return []
    try:
        navigator = r.navigator()
    except InvalidRequestError:
        return []
    pages = await asyncio.gather(*(navigator.read(SectionTarget(n.id, n.title, None, ()), limit=1) for n in wanted))
    return [page.chunks[0] for page in pages if page.chunks]


def _render(query: str, passages: Sequence[Passage]) -> str:
    number = {p.hit.id: i for i, p in enumerate(passages, start=1)}
    blocks = []
    for i, p in enumerate(passages, start=1):
        head, _, body = render_record(SearchHit(p.hit.record, p.score), i).partition('\n')
        blocks.append(f'{head} | {_why(p, number)}\n{body}')
    heading = f'Multi-hop search results for {quoted(query)} (search seeds and the passages the graph joins to them):'
    return heading + '\n\n' + '\n\n'.join(blocks)


def _why(p: Passage, number: Mapping[str, int]) -> str:
    """``seed``, ``via TYPE from [n]`` (or ``to``; a node id when the other end is not listed), or ``search``."""
    if p.seed:
        return 'seed'
    if p.reached is None:
        return 'search'  # a candidate the graph did not reach, listed by its search rank
    there = p.reached.node
    named = f'[{number[there]}]' if there in number else field_text(there)
    return f'via {field_text(p.reached.type)} {p.reached.direction} {named}'


def _describe(store: object, s: RagSettings) -> str:
    return (
        'Multi-hop search, for questions needing two linked passages of which only one reads like the question '
        '("which country is the author of X from?"): hybrid search, then one graph step from the best matches '
        '(what they mention and what mentions them), ranked together. Each passage says why it is listed: '
        '"seed" (a search match) or "via TYPE from [n]" / "via TYPE to [n]" (an edge TYPE from or to passage '
        '[n], or the node named). Score: its share of the relevance, 0 to 1 (summing to at most 1).'
    )


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name='multihop_search',
        offered=lambda caps, settings: caps.graph_built and caps.expand and (caps.hybrid or caps.text),
        describe=_describe,
        build=_tool,
    ),
)
"""The multi-hop tool's spec."""
