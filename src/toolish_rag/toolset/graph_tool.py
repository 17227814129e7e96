"""The ``graph_context`` tool: seeds from a search or from ids, a bounded walk, the neighbourhood as text.

The walk itself is the core's (`toolish_rag.graph.walk`), reached through the run's scoped
`Retriever` (`Retriever.graph_walk`), the one path every caller takes to a graph. What is
decided here is what a model may ask for and what it is told:

* seeds are the ids it sends (at most `MAX_IDS`) and/or, for a ``query``, the best hits of the
  best search the store has (hybrid, else vector, else text), ``graph_seeds`` of them;
* ``hops``, ``max_nodes`` and each edge type are checked with a message that says what to send;
* an id that names no node in scope is "not found", in the same words whether it does not exist
  or belongs to someone else; when every id sent is not found (and no query), the call is a retry,
  like ``broaden_chunk`` with an unknown chunk id.

`ToolishRag` offers the tool only on a store implementing `toolish_rag.protocols.GraphSearch`,
and runs it through its one tool-call path (argument table, scope, retries, events).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Protocol, TypeAlias

from pydantic import Field
from pydantic_ai import RunContext
from pydantic_ai.messages import ToolReturn

from ..content import RELATION_TYPE_PATTERN, Chunk
from ..errors import InvalidRequestError, echo
from ..graph.walk import MAX_HOPS, MAX_WALK_NODES, WalkedNode, WalkRequest
from ..retriever import Retriever
from ..search import SearchHit
from .names import ToolName
from .render_graph import NO_SEEDS, WalkShown, render_walk
from .retries import short_repr

__all__ = [
    'DEFAULT_GRAPH_SEEDS',
    'DEFAULT_HOPS',
    'DEFAULT_MAX_NODES',
    'MAX_IDS',
    'GraphSettings',
    'SeedSearch',
    'graph_context_tool',
    'walk_graph',
]

MAX_IDS = 20
"""The most seed ids one call may send."""
DEFAULT_HOPS = 2
DEFAULT_MAX_NODES = 50
DEFAULT_GRAPH_SEEDS = 5
"""How many search hits seed a walk from a ``query`` (`ToolishRag`'s ``graph_seeds``)."""

_Result: TypeAlias = tuple[str, list[SearchHit]]
SeedSearch: TypeAlias = Callable[[Retriever], Callable[[str, int], Awaitable[list[SearchHit]]]]
"""Picks a search leg of a retriever (``lambda r: r.hybrid_search``), as the ranked tools do."""
_Body: TypeAlias = Callable[[Retriever, Mapping[str, Any]], Awaitable[_Result]]


class RunTool(Protocol):
    """`ToolishRag`'s one tool-call path: checks, scope, retries and the event around ``body``."""

    def __call__(
        self, ctx: RunContext[Any], tool: ToolName, arguments: Mapping[str, Any], body: _Body
    ) -> Awaitable[ToolReturn]: ...


@dataclass(frozen=True, slots=True)
class GraphSettings:
    """What the tool needs of its toolset's configuration."""

    seeds: int
    """Search hits that seed a walk from a query."""
    max_chars: int
    """The character budget the node texts (and, separately, the edge lines) share."""
    search: SeedSearch | None
    """The best search the store has, or ``None``: a ``query`` is then refused (ids still work)."""
    lookup: bool
    """Whether the store looks records up by id, so the chunks shown can be returned as hits."""


# The string parameters' ``maxLength`` (on each item, for the lists) comes from `StringArguments`.
_GraphQuery = Annotated[
    str | None, Field(description='Optional: what to search for; the best matches are the seeds of the walk.')
]
_Ids = Annotated[
    list[str] | None,
    Field(
        description=(
            f'Optional: node ids to start from (at most {MAX_IDS}): chunk, section, document or entity ids '
            'exactly as earlier results show them.'
        )
    ),
]
_Hops = Annotated[int, Field(description=f'How many edges away from the seeds to walk (1 to {MAX_HOPS}).')]
_EdgeTypes = Annotated[
    list[str] | None,
    Field(description='Optional: follow only these relation types, e.g. ["MENTIONS", "LINKS_TO"]; default all.'),
]
_Direction = Annotated[
    Literal['out', 'in', 'both'],
    Field(description='Follow edges out of a node ("out"), into it ("in"), or both ways (default).'),
]
_MaxNodes = Annotated[int, Field(description=f'The most nodes to return, seeds included (1 to {MAX_WALK_NODES}).')]
_Rerank = Annotated[
    Literal['centrality'] | None,
    Field(description='Optional: "centrality" ranks well-connected nodes first (see the tool description).'),
]


def graph_context_tool(run: RunTool, settings: GraphSettings) -> Callable[..., Awaitable[ToolReturn]]:
    """The ``graph_context`` tool function, each call run through ``run`` (`ToolishRag._run`)."""

    async def graph_context(
        ctx: RunContext[Any],
        query: _GraphQuery = None,
        ids: _Ids = None,
        hops: _Hops = DEFAULT_HOPS,
        edge_types: _EdgeTypes = None,
        direction: _Direction = 'both',
        max_nodes: _MaxNodes = DEFAULT_MAX_NODES,
        rerank: _Rerank = None,
    ) -> ToolReturn:
        arguments = {
            'query': query,
            'ids': ids,
            'hops': hops,
            'edge_types': edge_types,
            'direction': direction,
            'max_nodes': max_nodes,
            'rerank': rerank,
        }
        return await run(ctx, 'graph_context', arguments, lambda r, a: walk_graph(r, a, settings))

    return graph_context


async def walk_graph(r: Retriever, args: Mapping[str, Any], settings: GraphSettings) -> _Result:
    """One ``graph_context`` call: check, seed, walk (scoped, through ``r``), render."""
    hops, max_nodes, direction = args['hops'], args['max_nodes'], args['direction']
    _check_bounds(hops, max_nodes)
    edge_types = _edge_types(args.get('edge_types'))
    ids: list[str] = list(dict.fromkeys(args.get('ids') or ()))
    query: str | None = args.get('query')
    _check_seeds(ids, query, max_nodes)
    seeds = list(ids)
    if query is not None:
        if settings.search is None:
            raise InvalidRequestError('this collection cannot be searched: pass ids from earlier results instead')
        # Search seeds leave room for what the walk reaches: at most half the nodes not taken by ids.
        room = max(1, (max_nodes - len(ids)) // 2)
        hits = await settings.search(r)(query, min(settings.seeds, room))
        seeds += [h.id for h in hits if h.id not in seeds]
    request = WalkRequest(
        tuple(seeds),
        hops=hops,
        edge_types=edge_types,
        direction=direction,
        max_nodes=max_nodes,
        rerank=args.get('rerank'),
    )
    walk = await r.graph_walk(request)
    found = {n.node.id for n in walk.nodes if n.hop == 0}
    not_found = tuple(i for i in ids if i not in found)
    if query is None and ids and len(not_found) == len(ids):
        raise InvalidRequestError(_none_found(not_found))
    if not walk.nodes:
        missing = f'\n\nNot found (no node has this id): {", ".join(echo(i) for i in not_found)}.' if not_found else ''
        return NO_SEEDS + missing, []
    shown = WalkShown(hops, direction, max_nodes, not_found, reranked=args.get('rerank') is not None)
    text, with_text = render_walk(walk, shown, settings.max_chars)
    return text, await _hits(r, with_text) if settings.lookup else []


def _check_bounds(hops: int, max_nodes: int) -> None:
    if not 1 <= hops <= MAX_HOPS:
        raise InvalidRequestError(
            f'hops must be between 1 and {MAX_HOPS}; you sent {short_repr(hops)}. '
            f'Use 1 for direct neighbours, {DEFAULT_HOPS} (the default) to go one step further.'
        )
    if not 1 <= max_nodes <= MAX_WALK_NODES:
        raise InvalidRequestError(
            f'max_nodes must be between 1 and {MAX_WALK_NODES}; you sent {short_repr(max_nodes)}. '
            f'Use {DEFAULT_MAX_NODES} unless you need more.'
        )


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
