"""The graph tool: ``graph_context`` seeds from a search or from ids, walks the graph, shows the neighbourhood.

The walk is the core's (`toolish_rag.graph.walk`), reached through the run's scoped `Retriever`;
here is what a model may ask for and what it is told. See docs/graph.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Annotated, Literal

from ...content import RELATION_TYPE_PATTERN, Chunk
from ...errors import InvalidRequestError, echo
from ...graph.walk import MAX_HOPS, MAX_WALK_NODES, WalkedNode, WalkRequest
from ...retriever import Retriever
from ...search import SearchHit
from .._arguments import MAX_EDGE_TYPE_CHARS, IntBounds, StringArgument, id_argument, query_argument
from .._render_graph import NO_SEEDS, WalkShown, render_walk
from .._retries import short_repr
from .._settings import RagSettings
from .._spec import Declared, Found, Param, ToolEnv, ToolSpec
from .search import Search, best_search

__all__ = ['DEFAULT_HOPS', 'DEFAULT_MAX_NODES', 'MAX_IDS', 'SPECS']

MAX_IDS = 20
"""The most seed ids one call may send."""
DEFAULT_HOPS = 2
DEFAULT_MAX_NODES = 50

_EDGE_TYPE = StringArgument(
    MAX_EDGE_TYPE_CHARS,
    empty='an edge type is empty: send relation types such as MENTIONS, or leave edge_types out',
    too_long=(
        f'an edge type is over {MAX_EDGE_TYPE_CHARS} characters: send relation types such as '
        'MENTIONS, or leave edge_types out'
    ),
)
_DIRECTION = StringArgument(
    len('both'),
    empty='direction is empty: send "out", "in" or "both", or leave it out',
    too_long='direction takes "out", "in" or "both": send one, or leave it out',
)
_ORDER = StringArgument(
    len('centrality'),
    empty='order is empty: send "centrality", or leave it out',
    too_long='order takes only "centrality": send that, or leave it out',
)


def _hops_refusal(hops: int) -> str:
    return (
        f'hops must be between 1 and {MAX_HOPS}; you sent {short_repr(hops)}. '
        f'Use 1 for direct neighbours, {DEFAULT_HOPS} (the default) to go one step further.'
    )


def _max_nodes_refusal(max_nodes: int) -> str:
    return (
        f'max_nodes must be between 1 and {MAX_WALK_NODES}; you sent {short_repr(max_nodes)}. '
        f'Use {DEFAULT_MAX_NODES} unless you need more.'
    )


def _parameters(settings: RagSettings) -> tuple[Param, ...]:
    """What each parameter does is said in the tool's description (every request carries the schemas)."""
    return (
        Param('query', Annotated[str, query_argument(settings.max_query_chars)] | None, None),
        Param('ids', list[Annotated[str, id_argument('id')]] | None, None),
        Param('hops', Annotated[int, IntBounds(1, MAX_HOPS, _hops_refusal)], DEFAULT_HOPS),
        Param('edge_types', list[Annotated[str, _EDGE_TYPE]] | None, None),
        Param('direction', Annotated[Literal['out', 'in', 'both'], _DIRECTION], 'both'),
        Param('max_nodes', Annotated[int, IntBounds(1, MAX_WALK_NODES, _max_nodes_refusal)], DEFAULT_MAX_NODES),
        Param('order', Annotated[Literal['centrality'], _ORDER] | None, None),
    )


@dataclass(frozen=True, slots=True)
class _GraphSettings:
    """What the tool needs of its toolset's configuration."""

    seeds: int
    """Search hits that seed a walk from a query."""
    max_chars: int
    """The character budget the node texts (and, separately, the edge lines) share."""
    search: Search | None
    """The best search the store has, or ``None``: a ``query`` is then refused (ids still work)."""
    lookup: bool
    """Whether the store looks records up by id, so the chunks shown can be returned as hits."""


def _graph_tool(env: ToolEnv) -> Declared:
    s = env.settings
    settings = _GraphSettings(s.graph_seeds, s.max_expansion_chars, best_search(env.caps), lookup=env.caps.expand)
    return Declared(_parameters(s), partial(_walk_graph, settings=settings))


async def _walk_graph(
    r: Retriever,
    settings: _GraphSettings,
    *,
    hops: int,
    max_nodes: int,
    direction: Literal['out', 'in', 'both'],
    query: str | None = None,
    ids: list[str] | None = None,
    edge_types: list[str] | None = None,
    order: Literal['centrality'] | None = None,
) -> Found:
    """One ``graph_context`` call: check, seed, walk (scoped, through ``r``), render."""
    followed = _edge_types(edge_types)
    seed_ids: list[str] = list(dict.fromkeys(ids or ()))
    _check_seeds(seed_ids, query, max_nodes)
    seeds = list(seed_ids)
    if query is not None:
        if settings.search is None:
            raise InvalidRequestError('this collection cannot be searched: pass ids from earlier results instead')
        # Search seeds leave room for what the walk reaches: at most half the nodes not taken by ids.
        room = max(1, (max_nodes - len(seed_ids)) // 2)
        hits = await settings.search(r)(query, min(settings.seeds, room))
        seeds += [h.id for h in hits if h.id not in seeds]
    request = WalkRequest(
        tuple(seeds),
        hops=hops,
        edge_types=followed,
        direction=direction,
        max_nodes=max_nodes,
        order=order,
    )
    walk = await r.graph_walk(request)
    found = {n.node.id for n in walk.nodes if n.hop == 0}
    not_found = tuple(i for i in seed_ids if i not in found)
    if query is None and seed_ids and len(not_found) == len(seed_ids):
        raise InvalidRequestError(_none_found(not_found))
    if not walk.nodes:
        missing = f'\n\nNot found (no node has this id): {", ".join(echo(i) for i in not_found)}.' if not_found else ''
        return Found(NO_SEEDS + missing, [])
    shown = WalkShown(hops, direction, max_nodes, not_found, reranked=order is not None)
    text, with_text = render_walk(walk, shown, settings.max_chars)
    return Found(text, await _hits(r, with_text) if settings.lookup else [])


def _edge_types(sent: list[str] | None) -> frozenset[str] | None:
    """The edge types to follow (``None``: all), each a relation type, or `InvalidRequestError` naming the rule."""
    if sent is None:
        return None
    if not sent:
        raise InvalidRequestError('edge_types is an empty list: leave it out to follow every relation type')
    for edge_type in sent:
        if not RELATION_TYPE_PATTERN.match(edge_type):
            hint = f' (did you mean {edge_type.upper()}?)' if RELATION_TYPE_PATTERN.match(edge_type.upper()) else ''
            raise InvalidRequestError(
                f'edge type {echo(edge_type)} is not a relation type{hint}: types are upper-case letters, digits '
                'and underscores starting with a letter, at most 64 characters, such as MENTIONS or PART_OF'
            )
    return frozenset(sent)


def _check_seeds(ids: Sequence[str], query: str | None, max_nodes: int) -> None:
    if not ids and query is None:
        raise InvalidRequestError(
            'graph_context needs somewhere to start: pass query (words to search for), ids (node ids from '
            'earlier results), or both'
        )
    if len(ids) > MAX_IDS:
        raise InvalidRequestError(f'at most {MAX_IDS} ids per call; you sent {len(ids)}. Start from the most relevant.')
    if len(ids) > max_nodes:
        raise InvalidRequestError(
            f'max_nodes ({max_nodes}) is less than the {len(ids)} ids sent: raise max_nodes or send fewer ids'
        )


def _none_found(ids: Sequence[str]) -> str:
    named = ', '.join(echo(i) for i in ids)
    return (
        f'{named} {"was" if len(ids) == 1 else "were"} not found. Pass chunk, section, document or entity ids '
        'exactly as they appear in earlier results (for example the id after "chunk" in a result heading), '
        'or pass a query to start from a search.'
    )


async def _hits(r: Retriever, shown: Sequence[WalkedNode]) -> list[SearchHit]:
    """The chunks whose text the answer shows, as hits (the chunks the model has now read), scored by the walk."""
    scores = {n.node.id: n.score for n in shown if n.node.kind == 'chunk'}
    if not scores:
        return []
    records = await r.records(list(scores))
    return [SearchHit(c, scores[c.id]) for c in records if isinstance(c, Chunk)]


def _describe(store: object, settings: RagSettings) -> str:
    return (
        'Walk the graph of what mentions, links to, is part of, calls or imports what among chunks, sections, '
        'documents and entities (people, organisations, code symbols...): "how are A and B connected", "what '
        f'calls X". Start from query (its best matches), ids from results (up to {MAX_IDS}), or both. '
        'Nodes come nearest first with id, kind, hop (0: a seed) and via: "via TYPE from X": the edge '
        'X -TYPE-> node led to it, "via TYPE to X": node -TYPE-> X; then the edges walked. Read chunks with '
        'broaden_chunk or zoom_out, sections and documents with read_section. edge_types: e.g. MENTIONS, '
        'PART_OF, LINKS_TO, CONTAINS, CALLS, IMPORTS. A "truncated" walk stopped at a budget: never conclude '
        'from it that something is unconnected. order="centrality": hubs first (1/(1+hop) x (1+centrality)).'
    )


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name='graph_context',
        offered=lambda caps, settings: caps.graph_built,
        describe=_describe,
        build=_graph_tool,
    ),
)
"""The graph tool's spec."""
