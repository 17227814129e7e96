"""Navigation and graph reads across a federation: a document, its sections and its graph live in one member.

Listings and outlines ask every member and merge in the protocol's order (paging is done on the
merged list, so a page and its total are the federation's); a section read or a graph hop is
answered by the members that hold the ids, each within itself (an edge never joins two members).
See docs/federation.md#navigation-and-graph.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace

from ...content import Relation
from ...graph.model import NODE_KIND_ORDER, GraphNode, NeighbourRequest, Neighbours, NodeRequest, edge_order
from ...protocols import GraphSearch, SectionReader, StoreFeatures
from ...sections import (
    MAX_PAGE_LIMIT,
    ChunkOutline,
    DocumentPage,
    DocumentPageRequest,
    DocumentSummary,
    OutlineRequest,
    SectionPage,
    SectionReadRequest,
    document_order,
)
from ._core import FederationCore

_NO_PAGE = DocumentPage((), 0)
_NO_SECTION = SectionPage((), 0)
_NO_NEIGHBOURS = Neighbours((), ())


class FederatedSections(FederationCore):
    """`SectionReader` over the members that have it (a member without it lists nothing)."""

    async def document_page(self, request: DocumentPageRequest) -> DocumentPage:
        """Each member's first ``offset + limit`` documents, merged in `document_order`, then paged.

        The total is the sum of the members' totals (a document lives in one member).
        """
        members = self.serving(SectionReader)
        wide = min(request.offset + request.limit, MAX_PAGE_LIMIT)
        pages = await asyncio.gather(
            *(
                self.guarded(
                    m,
                    'document_page',
                    m.store.document_page(replace(request, filter=m.scoped(request.filter), offset=0, limit=wide)),
                    _NO_PAGE,
                )
                for m in members
            )
        )
        found: dict[str, DocumentSummary] = {}
        for page in pages:
            for summary in page.documents:
                found.setdefault(summary.id, summary)
        twice = sum(len(page.documents) for page in pages) - len(found)
        ordered = sorted(found.values(), key=lambda s: document_order(s.title, s.id))
        page_of = ordered[request.offset : request.offset + request.limit]
        return DocumentPage(tuple(page_of), sum(page.total for page in pages) - twice)

    async def chunk_outlines(self, request: OutlineRequest) -> Sequence[ChunkOutline]:
        """The members' outlines merged by ``(document_id, sequence_number)``, cut at ``limit``."""
        answers = await asyncio.gather(
            *(
                self.guarded(
                    m, 'chunk_outlines', m.store.chunk_outlines(replace(request, filter=m.scoped(request.filter))), []
                )
                for m in self.serving(SectionReader)
            )
        )
        found: dict[str, ChunkOutline] = {}
        for outlines in answers:
            for outline in outlines:
                found.setdefault(outline.id, outline)
        ordered = sorted(found.values(), key=lambda o: (o.document_id, o.sequence_number))
        return ordered[: request.limit]

    async def read_section(self, request: SectionReadRequest) -> SectionPage:
        """The page of the member holding the section or document (the first, in declared order, with any)."""
        pages = await asyncio.gather(
            *(
                self.guarded(
                    m,
                    'read_section',
                    m.store.read_section(replace(request, filter=m.scoped(request.filter))),
                    _NO_SECTION,
                )
                for m in self.serving(SectionReader)
            )
        )
        return next((page for page in pages if page.total > 0), _NO_SECTION)


class FederatedGraph(FederationCore):
    """`GraphSearch` over the members that have it: each member's graph is its own (no edge joins two)."""

    @property
    def graph_built(self) -> bool:
        """`GraphBuilt`: whether a graph has been built for some member (each is built in its own store)."""
        return any(StoreFeatures.of(m.store).graph_built for m in self.serving(GraphSearch))

    async def graph_nodes(self, request: NodeRequest) -> Sequence[GraphNode]:
        """Every member's in-scope nodes among the ids; an id several answer for resolves by `NODE_KIND_ORDER`,
        then declared member order."""
        answers = await asyncio.gather(
            *(
                self.guarded(
                    m, 'graph_nodes', m.store.graph_nodes(replace(request, filter=m.scoped(request.filter))), []
                )
                for m in self.serving(GraphSearch)
            )
        )
        found: dict[str, GraphNode] = {}
        for nodes in answers:
            for node in nodes:
                held = found.get(node.id)
                if held is None or NODE_KIND_ORDER.index(node.kind) < NODE_KIND_ORDER.index(held.kind):
                    found[node.id] = node
        return [found[node_id] for node_id in sorted(found)]

    async def neighbours(self, request: NeighbourRequest) -> Neighbours:
        """Each member's hop around the ids (within that member), merged in `edge_order` and cut at ``limit``.

        ``truncated`` when a member cut its answer or the merged edges were more than ``limit``; the
        nodes are the far endpoints of the edges kept.
        """
        answers = await asyncio.gather(
            *(
                self.guarded(
                    m,
                    'neighbours',
                    m.store.neighbours(replace(request, filter=m.scoped(request.filter))),
                    _NO_NEIGHBOURS,
                )
                for m in self.serving(GraphSearch)
            )
        )
        edges: dict[str, Relation] = {}
        for answer in answers:
            for edge in answer.edges:
                edges.setdefault(edge.id, edge)
        ordered = sorted(edges.values(), key=edge_order)
        kept = ordered[: request.limit]
        ends = {end for edge in kept for end in (edge.source, edge.target)} - set(request.ids)
        nodes: dict[str, GraphNode] = {}
        for answer in answers:
            for node in answer.nodes:
                if node.id in ends:
                    nodes.setdefault(node.id, node)
        truncated = len(ordered) > request.limit or any(answer.truncated for answer in answers)
        return Neighbours(tuple(kept), tuple(nodes.values()), truncated)
