"""Passages ranked by search and graph together: the ranking ``multihop_search`` returns.

The search's best hits are the seeds; personalised PageRank (`toolish_rag.graph._ppr`) spreads
their relevance over the scoped graph walked around them, so a passage that reads nothing like the
question but is named by (or names) a passage that does rises next to it. Every passage says why
it is listed: it is a seed, or the edge (type and direction) and the passage it was reached from.
Everything ranked comes from the caller's scope: the hits, the walked nodes and the edges.
See docs/graph.md#multi-hop-search.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ..content import Chunk, Relation
from ..search import SearchHit
from ._ppr import personalised_pagerank
from .walk import GraphWalk

__all__ = ['MultihopRanking', 'Passage', 'Reached']


@dataclass(frozen=True, slots=True)
class Reached:
    """How a passage the graph added was reached: an edge of ``type`` joining it to passage ``node``.

    ``direction`` ``'from'``: the edge points from ``node`` to this passage (``node`` names it);
    ``'to'``: it points from this passage to ``node``. ``node`` is a chunk id, or an entity or section
    id when the passage was reached through one.
    """

    type: str
    node: str
    direction: Literal['from', 'to']


@dataclass(frozen=True, slots=True)
class Passage:
    """One ranked passage: its search hit, its score, and why it is listed.

    ``seed``: the search ranked it among the seeds. ``reached`` (for the others): the edge over which the
    graph sent it the most relevance (``None`` when no edge in scope joins it to a node holding any).
    """

    hit: SearchHit
    score: float
    seed: bool
    reached: Reached | None


@dataclass(frozen=True, slots=True)
class MultihopRanking:
    """The rule: personalised PageRank from the search's seeds over the scoped graph around them.

    Seeds are the top ``seeds`` hits, weighted by their fused score to the power ``weight_power``, and
    every other hit whose document title the query writes as a whole word (a question naming two things
    names both pages), weighted ``named`` times the best seed's weight. The walk restarts at the seeds
    with ``1 - damping``. An edge pointing at a seed from a node that is not one (a page naming the seed)
    weighs ``incoming`` times its weight: what the passage matching the question names says more about
    the question than what names that passage. The graph is the walk's nodes and edges with every document node merged into its
    best-ranked chunk (the passage a reader of that document starts from; a document none of whose chunks
    was found stays a node that relays but is never listed) and every chunk joined to its document.
    Passages rank by PageRank, ties (and passages it never reaches) by search rank. The constants were
    chosen on the first 250 HotpotQA questions (benchmarks/multihop_bench.py reports the other 250 too).
    """

    seeds: int = 1
    damping: float = 0.5
    weight_power: float = 1.0
    named: float | None = 0.6
    incoming: float = 0.3

    def seed_hits(self, query: str, hits: Sequence[SearchHit]) -> list[SearchHit]:
        """The seeds: the top ``seeds`` hits, then (with ``named``) the hits whose title the query names."""
        seeds = list(hits[: self.seeds])
        if self.named is not None:
            seeds += [h for h in hits[self.seeds :] if _named(query, h)]
        return seeds

    def rank(
        self, query: str, hits: Sequence[SearchHit], walk: GraphWalk, chunks: Mapping[str, SearchHit]
    ) -> list[Passage]:
        """The passages, best first: every hit of ``hits`` (search order) and every chunk in ``chunks``.

        ``hits`` are the search's candidates, best first; ``chunks`` the hits (records with a score of 0
        when the search did not find them) of the walk's chunk nodes, by id. Passages the graph cannot
        reach keep their search order after those it reaches.
        """
        order = {h.id: i for i, h in enumerate(hits)}
        by_id: dict[str, SearchHit] = {**chunks, **{h.id: h for h in hits}}
        key = _merged(hits, walk, chunks)
        seeds = hits[: self.seeds]
        personalisation = {h.id: max(h.score, 0.0) ** self.weight_power for h in seeds}
        if not any(personalisation.values()):
            personalisation = {h.id: 1.0 for h in seeds}
        if self.named is not None:
            top = max(personalisation.values())
            for h in self.seed_hits(query, hits)[len(seeds) :]:
                personalisation[h.id] = max(personalisation.get(h.id, 0.0), self.named * top)
        edges = [(a, b, self._weight(a, b, e.weight, personalisation)) for e in walk.edges for a, b in [_ends(e, key)]]
        edges += [
            (n.node.id, key.get(document, document), 1.0)
            for n in walk.nodes
            if n.node.kind == 'chunk' and (document := n.node.document_id) is not None
        ]
        scores = personalised_pagerank(edges, personalisation, damping=self.damping)
        containers = {i: _containers(h) for i, h in by_id.items() if i not in personalisation}
        why = _reasons(walk, key, scores, containers, lambda a, b, w: self._weight(a, b, w, personalisation))
        ranked = [
            Passage(hit, scores.get(i, 0.0), i in personalisation, why.get(i))
            for i, hit in by_id.items()
            if i in order or scores.get(i, 0.0) > 0
        ]
        ranked.sort(key=lambda p: (-p.score, order.get(p.hit.id, len(order)), p.hit.id))
        return ranked

    def _weight(self, source: str, target: str, weight: float, seeds: Mapping[str, float]) -> float:
        """An edge's weight in the walk: ``incoming`` times it when it points at a seed from a non-seed."""
        return weight * self.incoming if target in seeds and source not in seeds else weight


def _ends(edge: Relation, key: Mapping[str, str]) -> tuple[str, str]:
    """An edge's two ends, a document standing as its chunk (`_merged`)."""
    return key.get(edge.source, edge.source), key.get(edge.target, edge.target)


_WHITESPACE = re.compile(r'\s+')
_QUALIFIER = re.compile(r'^(.*\S)\s*\([^()]*\)$', re.DOTALL)


def _named(query: str, hit: SearchHit) -> bool:
    """Whether ``query`` writes the hit's document title, or the title without a trailing "(...)", as a whole word."""
    title = getattr(hit.record, 'document_title', None)
    if not isinstance(title, str):
        return False
    text = unicodedata.normalize('NFC', _WHITESPACE.sub(' ', query))
    forms = [title, *(m.group(1) for m in [_QUALIFIER.match(title)] if m is not None)]
    for form in forms:
        form = unicodedata.normalize('NFC', _WHITESPACE.sub(' ', form)).strip()
        if len(form) >= 3 and form in text and re.search(rf'(?<!\w){re.escape(form)}(?!\w)', text):
            return True
    return False


def _merged(hits: Sequence[SearchHit], walk: GraphWalk, chunks: Mapping[str, SearchHit]) -> dict[str, str]:
    """Document id -> the chunk standing for it: its best-ranked hit, else its walked chunk of smallest id,
    else its chunk of smallest id among ``chunks`` (a document's first chunk, read for it)."""
    key: dict[str, str] = {}
    for h in hits:
        document_id = getattr(h.record, 'document_id', None)
        if isinstance(document_id, str):
            key.setdefault(document_id, h.id)
    for n in sorted(walk.nodes, key=lambda n: n.node.id):
        if n.node.kind == 'chunk' and n.node.document_id is not None:
            key.setdefault(n.node.document_id, n.node.id)
    for chunk_id in sorted(chunks):
        document_id = getattr(chunks[chunk_id].record, 'document_id', None)
        if isinstance(document_id, str):
            key.setdefault(document_id, chunk_id)
    return key


def _containers(hit: SearchHit) -> frozenset[str]:
    """The section and document ids holding a chunk: an edge to them says where it is, not why it is listed."""
    record = hit.record
    if not isinstance(record, Chunk):
        return frozenset()
    return frozenset((record.document_id, *record.section_ids))


def _reasons(
    walk: GraphWalk,
    key: Mapping[str, str],
    scores: Mapping[str, float],
    containers: Mapping[str, frozenset[str]],
    weight: Callable[[str, str, float], float],
) -> dict[str, Reached]:
    """For each passage in ``containers`` (those that are not seeds), the edge from the neighbour that sent it
    the most PageRank (ties by id), its own section and document aside; none if no other neighbour sent any."""
    best: dict[str, tuple[tuple[float, str], Reached]] = {}
    for e in walk.edges:
        a, b = _ends(e, key)
        if a == b:
            continue
        w = weight(a, b, e.weight)
        steps: tuple[tuple[str, str, Literal['from', 'to']], ...] = ((b, a, 'from'), (a, b, 'to'))
        for here, there, direction in steps:
            if here not in containers or there in containers[here] or not scores.get(there, 0.0) > 0:
                continue
            order = (-scores.get(there, 0.0) * w, f'{there}\x00{e.type}\x00{direction}')
            held = best.get(here)
            if held is None or order < held[0]:
                best[here] = (order, Reached(e.type, there, direction))
    return {passage: reached for passage, (_, reached) in best.items()}
