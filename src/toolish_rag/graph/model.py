"""What a graph store answers: nodes, one hop of neighbours, and the requests for them.

The scope rules every store keeps: docs/graph.md#how-the-graph-core-is-built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from ..content import Chunk, Entity, NodeKind, Relation
from ..filters import Filter

__all__ = [
    'MAX_EDGE_LIMIT',
    'NODE_KIND_ORDER',
    'Direction',
    'GraphNode',
    'NeighbourRequest',
    'Neighbours',
    'NodeKind',
    'NodeRequest',
    'edge_order',
]

Direction: TypeAlias = Literal['out', 'in', 'both']
"""Which edges of a node to follow: ``out`` (the node is the source), ``in`` (the target), or both."""

NODE_KIND_ORDER: tuple[NodeKind, ...] = ('chunk', 'entity', 'section', 'document')
"""How an id naming nodes of several kinds resolves (an entity given a document's id, say): to the first
kind in this order that is in scope. A foreign node of one kind hides none of the others, so the answer
never tells a foreign node from a missing one; every store uses this order so all answer alike."""

MAX_EDGE_LIMIT = 10_000
"""The most edges one `NeighbourRequest` may ask for."""


@dataclass(frozen=True, slots=True)
class GraphNode:
    """A node as a walk shows it. Build one with the ``of_*`` constructors so every store agrees.

    ``text`` is what the model reads: a chunk's ``urtext``, an entity's description; sections and
    documents carry none (``read_section`` reads them). ``document_id`` is the document holding a
    chunk or section (a document's own id for a document node; ``None`` for an entity).
    """

    id: str
    kind: NodeKind
    title: str
    text: str = ''
    document_id: str | None = None
    labels: frozenset[str] = frozenset()

    @classmethod
    def of_chunk(cls, chunk: Chunk) -> GraphNode:
        title = ' > '.join((chunk.document_title, *chunk.section_path)) if chunk.section_path else chunk.document_title
        return cls(chunk.id, 'chunk', title, chunk.urtext, chunk.document_id, chunk.labels)

    @classmethod
    def of_entity(cls, entity: Entity) -> GraphNode:
        return cls(entity.id, 'entity', entity.name, entity.description, None, entity.labels)

    @classmethod
    def of_section(cls, chunk: Chunk, section_id: str) -> GraphNode:
        """The section ``section_id`` as seen from any chunk inside it (``ValueError`` if it is not)."""
        depth = chunk.section_ids.index(section_id)
        title = ' > '.join((chunk.document_title, *chunk.section_path[: depth + 1]))
        return cls(section_id, 'section', title, '', chunk.document_id, chunk.labels)

    @classmethod
    def of_document(cls, chunk: Chunk) -> GraphNode:
        """The document holding ``chunk``."""
        return cls(chunk.document_id, 'document', chunk.document_title, '', chunk.document_id, chunk.labels)


@dataclass(frozen=True, slots=True)
class NodeRequest:
    """Resolve node ids: the in-scope ones come back (any order), the rest do not."""

    ids: tuple[str, ...]
    filter: Filter | None = None


@dataclass(frozen=True, slots=True)
class NeighbourRequest:
    """One hop: the in-scope edges touching ``ids`` on the side ``direction`` names.

    ``out`` keeps relations whose ``source`` is one of ``ids``; ``in`` those whose ``target`` is;
    ``both`` either (a relation matching both ways is returned once). ``edge_types`` (``None``:
    all) keeps those types. At most ``limit`` edges come back, the first in `edge_order`, and
    ``truncated`` says more in-scope edges existed.
    """

    ids: tuple[str, ...]
    direction: Direction = 'both'
    edge_types: frozenset[str] | None = None
    filter: Filter | None = None
    limit: int = 1_000

    def __post_init__(self) -> None:
        if not 1 <= self.limit <= MAX_EDGE_LIMIT:
            raise ValueError(f'limit must lie in [1, {MAX_EDGE_LIMIT}]')
        if self.direction not in ('out', 'in', 'both'):
            raise ValueError("direction must be 'out', 'in' or 'both'")


@dataclass(frozen=True, slots=True)
class Neighbours:
    """One hop's answer: the edges (in `edge_order`) and each edge's far endpoint, once.

    ``nodes`` holds every endpoint of ``edges`` that is not among the request's ``ids`` (for a
    ``both`` request an edge between two requested ids adds no node), in scope by construction.
    """

    edges: tuple[Relation, ...]
    nodes: tuple[GraphNode, ...]
    truncated: bool = False


def edge_order(relation: Relation) -> str:
    """The order edges are returned and cut in: by relation id (stable, and a store can sort on it)."""
    return relation.id
