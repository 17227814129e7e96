"""Graph: a node's neighbourhood drawn as server-rendered SVG (rings by hop, arrows by direction, edge types
on the edges), each node a link to walk on from it; beside it the ``graph_context`` tool's own text for the
same walk, and the hop, via and truncation of every node as the walk found them. Scoped like every page.
See docs/inspect.md#graph."""

from __future__ import annotations

import math
from typing import Any, Literal, cast

from pydantic_ai import ModelRetry
from starlette.requests import Request

from ..errors import InvalidRequestError
from ..graph.walk import MAX_HOPS, MAX_WALK_NODES, GraphWalk, WalkedNode, WalkRequest
from ._access import Viewer
from ._browse import chunk_link, lacks
from ._html import Html, join, markup, table, url
from ._page import BadRequest, NotFound, Page

__all__ = ['graph_page', 'svg']

SIZE = 760
RING = 115
_LABELS_UP_TO = 60
"""Edge types are written on the edges of a drawing with at most this many edges (more would be unreadable)."""


def _positions(walk: GraphWalk) -> dict[str, tuple[float, float]]:
    """Each node on the ring of its hop, seeds at the centre, siblings spread evenly (deterministic)."""
    rings: dict[int, list[WalkedNode]] = {}
    for node in walk.nodes:
        rings.setdefault(node.hop, []).append(node)
    centre = SIZE / 2
    at: dict[str, tuple[float, float]] = {}
    for hop, nodes in rings.items():
        radius = hop * RING if hop else (0 if len(nodes) == 1 else RING / 3)
        for i, node in enumerate(nodes):
            angle = 2 * math.pi * i / len(nodes) - math.pi / 2 + hop * 0.35
            at[node.node.id] = (centre + radius * math.cos(angle), centre + radius * math.sin(angle))
    return at


def _short(text: str, limit: int = 26) -> str:
    flat = ' '.join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + '…'


def _edges(walk: GraphWalk, at: dict[str, tuple[float, float]]) -> list[Html]:
    """The walk's edges as SVG lines with arrow heads (labelled with their type when there are few)."""
    edges: list[Html] = []
    labelled = len(walk.edges) <= _LABELS_UP_TO
    for edge in walk.edges:
        if edge.source not in at or edge.target not in at:
            continue
        (x1, y1), (x2, y2) = at[edge.source], at[edge.target]
        if edge.source == edge.target:
            continue
        length = math.hypot(x2 - x1, y2 - y1) or 1.0
        # stop short of the target's circle, so the arrow head shows
        ex, ey = x2 - (x2 - x1) * 14 / length, y2 - (y2 - y1) * 14 / length
        label = (
            markup(
                '<text class="edge-type" x="{}" y="{}">{}</text>',
                f'{(x1 + x2) / 2:.1f}',
                f'{(y1 + y2) / 2:.1f}',
                edge.type,
            )
            if labelled
            else Html('')
        )
        edges.append(
            markup(
                '<g class="edge"><title>{} ({} → {})</title><line x1="{}" y1="{}" x2="{}" y2="{}" '
                'marker-end="url(#arrow)"></line>{}</g>',
                edge.type,
                edge.source,
                edge.target,
                f'{x1:.1f}',
                f'{y1:.1f}',
                f'{ex:.1f}',
                f'{ey:.1f}',
                label,
            )
        )
    return edges


def svg(walk: GraphWalk, params: dict[str, Any]) -> Html:
    """The walk drawn: nodes are links to the graph page seeded at them (with the same ``params``)."""
    at = _positions(walk)
    edges = _edges(walk, at)
    nodes = [
        markup(
            '<a href="{}" class="node kind-{} hop-{}"><title>{} {} (hop {})</title>'
            '<circle cx="{}" cy="{}" r="{}"></circle><text x="{}" y="{}">{}</text></a>',
            url('/graph', node=n.node.id, **params),
            n.node.kind,
            n.hop,
            n.node.kind,
            n.node.title,
            n.hop,
            f'{at[n.node.id][0]:.1f}',
            f'{at[n.node.id][1]:.1f}',
            12 if n.hop == 0 else 9,
            f'{at[n.node.id][0]:.1f}',
            f'{at[n.node.id][1] + 24:.1f}',
            _short(n.node.title or n.node.id),
        )
        for n in walk.nodes
    ]
    return markup(
        '<svg xmlns="http://www.w3.org/2000/svg" class="graph" viewBox="0 0 {} {}" width="{}" height="{}" '
        'role="img" aria-label="graph neighbourhood"><defs><marker id="arrow" viewBox="0 0 10 10" refX="9" '
        'refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z">'
        '</path></marker></defs>{}{}</svg>',
        SIZE,
        SIZE,
        SIZE,
        SIZE,
        join(edges),
        join(nodes),
    )


def _walk_table(walk: GraphWalk) -> Html:
    rows = []
    for n in walk.nodes:
        via = (
            markup(
                '{} {} {}',
                n.via.type,
                'from' if n.via.direction == 'out' else 'to',
                n.via.node,
            )
            if n.via is not None
            else 'seed'
        )
        link = (
            chunk_link(n.node.id)
            if n.node.kind in ('chunk', 'entity')
            else markup('<span class="id">{}</span>', n.node.id)
        )
        rows.append((n.hop, n.node.kind, link, n.node.title, via, f'{n.score:.3f}'))
    return table(['hop', 'kind', 'id', 'title', 'via', 'score'], rows, css='walk')


def _int(request: Request, name: str, default: int, high: int) -> int:
    raw = request.query_params.get(name, '').strip()
    if not raw:
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= high:
        raise BadRequest(f'{name} must be a whole number in [1, {high}]')
    return int(raw)


_NOT_BUILT = (
    'has no graph built yet: build one with toolish-rag graph build --store SPEC (or build_graph in Python, '
    'docs/graph.md); the graph tools are offered to a model once it is built'
)


def _form(node: str, hops: int, max_nodes: int, direction: str, types_text: str) -> Html:
    """The walk's form, filled with the request's values."""
    return markup(
        '<form method="get" action="/graph" class="inline"><label>Node id <input name="node" value="{}" size="40">'
        '</label> <label>Hops <input name="hops" value="{}" size="2"></label> <label>Max nodes '
        '<input name="max_nodes" value="{}" size="3"></label> <label>Direction <select name="direction">{}</select>'
        '</label> <label>Edge types <input name="edge_types" value="{}" placeholder="all (or MENTIONS, ...)"></label> '
        '<button type="submit">Walk</button></form>',
        node,
        hops,
        max_nodes,
        join(
            markup('<option{}>{}</option>', Html(' selected') if d == direction else '', d)
            for d in ('both', 'out', 'in')
        ),
        types_text,
    )


async def _told(
    viewer: Viewer, node: str, hops: int, max_nodes: int, direction: str, edge_types: list[str] | None
) -> str:
    """What ``graph_context`` with the same walk tells the model (its retry message, when it refuses)."""
    arguments: dict[str, Any] = {'ids': [node], 'hops': hops, 'max_nodes': max_nodes, 'direction': direction}
    if edge_types:
        arguments['edge_types'] = edge_types
    try:
        told = str((await viewer.rag.run_tool('graph_context', arguments)).return_value)
    except ModelRetry as retry:
        told = retry.message
    except ValueError:
        told = 'this toolset does not offer graph_context'
    return told


async def graph_page(request: Request, viewer: Viewer) -> Page:
    capabilities = viewer.rag.store_features
    if not capabilities.graph:
        return lacks('has no graph (it is no GraphSearch): there is nothing to draw')
    if not capabilities.graph_built:
        return lacks(_NOT_BUILT)
    node = request.query_params.get('node', '').strip()
    hops = _int(request, 'hops', 1, MAX_HOPS)
    max_nodes = _int(request, 'max_nodes', 40, MAX_WALK_NODES)
    direction = request.query_params.get('direction', 'both')
    if direction not in ('out', 'in', 'both'):
        raise BadRequest('direction is out, in or both')
    types_text = request.query_params.get('edge_types', '').strip()
    edge_types = [t.strip() for t in types_text.split(',') if t.strip()] or None
    params: dict[str, Any] = {'hops': hops, 'max_nodes': max_nodes, 'direction': direction, 'edge_types': types_text}
    form = _form(node, hops, max_nodes, direction, types_text)
    if not node:
        hint = markup(
            '<p class="muted">Give a node id (a chunk, section, document or entity id), or open a chunk in Browse and walk from it.</p>'
        )
        return Page('Graph', markup('{}{}', form, hint))
    try:
        walk = await viewer.rag.retriever().graph_walk(
            WalkRequest(
                (node,),
                hops=hops,
                max_nodes=max_nodes,
                direction=cast(Literal['out', 'in', 'both'], direction),
                edge_types=frozenset(edge_types) if edge_types else None,
            )
        )
    except (InvalidRequestError, ValueError) as e:
        raise BadRequest(str(e)) from None
    if not walk.nodes:
        raise NotFound('no node with this id')
    told = await _told(viewer, node, hops, max_nodes, direction, edge_types)
    cut = ', '.join(walk.cut_by) or 'a budget'
    status = markup(
        '<p class="walk-status"><span id="node-count">{}</span> nodes, {} edges · {}</p>',
        len(walk.nodes),
        len(walk.edges),
        markup('<strong class="truncated">truncated (cut by {})</strong>', cut) if walk.truncated else 'complete',
    )
    body = markup(
        '{}{}<div class="graph-box">{}</div><h2>The walk</h2>{}<h2>What graph_context tells the model</h2>'
        '<pre class="model-text">{}</pre>',
        form,
        status,
        svg(walk, params),
        _walk_table(walk),
        told,
    )
    return Page('Graph', body)
