"""How a graph walk looks to the model: nodes with hop and via, the edges walked, and whether it is complete.

Node texts are shown whole while they fit the character budget; the answer always says whether a
budget cut the walk, so a model never concludes "unconnected" from a cut one. See docs/graph.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .._record_text import field_text, fitting, indent
from ..content import Relation
from ..errors import echo
from ..graph.walk import GraphWalk, WalkedNode

__all__ = ['NO_SEEDS', 'WalkShown', 'edge_line', 'node_line', 'render_walk']

NO_SEEDS = (
    'No results: the search found nothing to start a graph walk from. Try other words, or pass ids from '
    'earlier results as ids.'
)


@dataclass(frozen=True, slots=True)
class WalkShown:
    """What one ``graph_context`` answer was asked: how the walk ran, and the ids that found no node."""

    hops: int
    direction: str
    max_nodes: int
    not_found: tuple[str, ...] = ()
    """Ids the model sent that name no node in scope (missing and foreign alike: one message)."""
    reranked: bool = False


def node_line(walked: WalkedNode, *, reranked: bool) -> str:
    """``[id] kind, hop N, via TYPE from <id>`` (``to <id>`` when the edge points back), with score when reranked."""
    node = walked.node
    if walked.via is None:
        how = 'seed'
    else:
        way = 'from' if walked.via.direction == 'out' else 'to'
        how = f'via {field_text(walked.via.type)} {way} {field_text(walked.via.node)}'
    score = f', score {walked.score:.3f} (centrality {walked.centrality:.2f})' if reranked else ''
    return f'[{field_text(node.id)}] {field_text(node.kind)}, hop {walked.hop}, {how}{score}'


def edge_line(edge: Relation) -> str:
    """``source -TYPE-> target``, with the weight when it is not 1."""
    weight = f' (weight {edge.weight:.3g})' if edge.weight != 1 else ''
    return f'{field_text(edge.source)} -{field_text(edge.type)}-> {field_text(edge.target)}{weight}'


def _node_block(walked: WalkedNode, *, reranked: bool, with_text: bool) -> str:
    lines = [node_line(walked, reranked=reranked), f'    title: {field_text(walked.node.title)}']
    text = indent(walked.node.text) if with_text and walked.node.text.strip() else ''
    return '\n'.join([*lines, text] if text else lines)


def _count(n: int, noun: str) -> str:
    return f'{n} {noun}{"" if n == 1 else "s"}'


def _ending(shown: WalkShown, walk: GraphWalk) -> str:
    if walk.truncated:
        budgets = []
        if 'max_nodes' in walk.cut_by:
            budgets.append(f'max_nodes={shown.max_nodes}')
        if 'edge_limit' in walk.cut_by:
            budgets.append('the edges one hop reads (narrow edge_types or direction, or start from fewer ids)')
        return (
            f'truncated: the walk hit its budget ({"; ".join(budgets)}); nodes beyond it were not '
            'visited — do not conclude they are unconnected.'
        )
    return (
        f'complete: every node within {shown.hops} hop{"" if shown.hops == 1 else "s"} of the seeds '
        '(over the edges asked for) is shown.'
    )


def render_walk(walk: GraphWalk, shown: WalkShown, max_chars: int) -> tuple[str, list[WalkedNode]]:
    """The text ``graph_context`` shows, and the nodes whose text it shows (the budget may leave some out).

    The node texts share ``max_chars`` (whole texts in node order, at least one), and so do the
    edge lines; every node keeps its line whatever the budget, so none is silently dropped.
    """
    nodes = walk.nodes
    seeds = sum(1 for n in nodes if n.hop == 0)
    parts = [
        f'Graph walk from {_count(seeds, "seed")} (hops={shown.hops}, direction={shown.direction}): '
        f'{_count(len(nodes), "node")}, {_count(len(walk.edges), "edge")}.'
    ]
    if shown.not_found:
        parts.append(f'Not found (no node has this id): {", ".join(echo(i) for i in shown.not_found)}.')
    with_text = fitting(nodes, max_chars, lambda n: len(n.node.text))
    parts += [_node_block(n, reranked=shown.reranked, with_text=i < with_text) for i, n in enumerate(nodes)]
    if with_text < len(nodes):
        first = 'the first node' if with_text == 1 else f'the first {with_text} nodes'
        parts.append(
            f'[Texts shown for {first} (output capped at about {max_chars} characters); '
            'read the others by id with the reading tools.]'
        )
    parts.append(_edges(walk.edges, max_chars))
    parts.append(_ending(shown, walk))
    return '\n\n'.join(p for p in parts if p), list(nodes[:with_text])


def _edges(edges: Sequence[Relation], max_chars: int) -> str:
    if not edges:
        return 'Edges walked: none.'
    lines = [edge_line(e) for e in edges]
    n = fitting(lines, max_chars, len)
    more = f'\n[{len(lines) - n} more edges not shown (output capped); walk from fewer seeds or hops.]'
    return f'Edges walked ({len(lines)}):\n' + '\n'.join(lines[:n]) + (more if n < len(lines) else '')
