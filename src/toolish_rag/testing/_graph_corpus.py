"""The graph corpus the kit's graph checks load: the conformance corpus with entities and relations of every kind.

What each relation probes is said beside it; see docs/testing.md ("The graph checks").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..content import Chunk, Document, Entity, NodeKind, Relation
from ..filters import EntityFilter, Filter, PropertyFilter as F
from ._corpus import COMMON_WORD, conformance_corpus, conformance_entities
from .sections_contract import UNKNOWN_ID

GHOST_ID = 'ent-ghost'
"""An entity id that relations point at and no record has: such an edge is never returned."""

HUB_ID = 'ent-acme'
"""The corpus's hub: in-scope and foreign edges of every kind meet at it, including a self-loop."""


@dataclass(frozen=True)
class GraphCorpus:
    """Documents, entities and relations to load into a store, and the ids the checks probe with."""

    documents: tuple[Document, ...]
    entities: tuple[Entity, ...]
    relations: tuple[Relation, ...]

    def items(self) -> list[Document | Entity | Relation]:
        """Everything, for one ``upsert``."""
        return [*self.documents, *self.entities, *self.relations]

    @cached_property
    def node_ids(self) -> dict[NodeKind, tuple[str, ...]]:
        """Every node id of the corpus, by kind."""
        return {
            'chunk': tuple(c.id for d in self.documents for c in d.chunks),
            'section': tuple(s.id for d in self.documents for s in d.sections),
            'document': tuple(d.id for d in self.documents),
            'entity': tuple(e.id for e in self.entities),
        }

    @cached_property
    def every_id(self) -> tuple[str, ...]:
        """Every node id, then ids that name no node: a ghost, an unknown id, a relation's id."""
        return (*(i for ids in self.node_ids.values() for i in ids), GHOST_ID, UNKNOWN_ID, self.relations[0].id)

    @cached_property
    def probes(self) -> tuple[tuple[str, ...], ...]:
        """Groups of ids to ask the neighbours of, each probing something different (see the comments)."""
        acme, globex, initech = self.documents[:3]
        return (
            (HUB_ID,),  # in-scope and foreign edges interleaved in id order; a self-loop
            ('ent-alice', HUB_ID),  # edges between two requested ids: once, adding no node
            (acme.chunks[0].id,),  # a chunk: structure, a mention, a chunk-to-chunk edge
            (acme.sections[1].id,),  # a nested section: in from chunks, out to its parent
            (acme.id, globex.id),  # documents of two tenants, linked both ways
            ('ent-bob', initech.chunks[1].id),  # another tenant's entity; a chunk naming it
            (GHOST_ID, UNKNOWN_ID),  # ids of no node: never an edge, even where a relation names one
            self.every_id,  # everything at once
        )


def structure(doc: Document) -> list[Relation]:
    """PART_OF: each chunk to its innermost section (or the document), each section to its parent."""
    scope = {'tenant': doc.metadata['tenant'], 'year': doc.metadata['year']}
    out = [
        Relation(
            source=c.id,
            source_kind='chunk',
            target=c.section_id or doc.id,
            target_kind='section' if c.section_id else 'document',
            type='PART_OF',
            metadata=scope,
            labels=doc.labels,
            provenance=c.id,
            document_id=doc.id,
            origin='structure',
        )
        for c in doc.chunks
    ]
    out += [
        Relation(
            source=s.id,
            source_kind='section',
            target=s.parent_id or doc.id,
            target_kind='section' if s.parent_id else 'document',
            type='PART_OF',
            metadata=scope,
            labels=doc.labels,
            document_id=doc.id,
            origin='structure',
        )
        for s in doc.sections
    ]
    return out


def _mentions(documents: Sequence[Document]) -> list[Relation]:
    """Edges read from chunks, with their chunk's metadata and labels (so every edge filter cuts them like chunks)."""
    acme, globex, initech = documents[:3]
    targets: list[tuple[Chunk, str, NodeKind, str, float]] = [
        (acme.chunks[0], 'ent-alice', 'entity', 'MENTIONS', 1.0),
        (acme.chunks[0], acme.chunks[1].id, 'chunk', 'FOLLOWED_BY', 1.0),
        (acme.chunks[1], HUB_ID, 'entity', 'MENTIONS', 0.5),
        (acme.chunks[2], 'ent-globex', 'entity', 'MENTIONS', 1.0),  # into another tenant
        (acme.chunks[3], HUB_ID, 'entity', 'MENTIONS', 0.3),  # a weight float32 cannot hold
        (acme.chunks[4], 'ent-carol', 'entity', 'MENTIONS', 1.0),  # an entity of no tenant
        (acme.chunks[5], 'ent-alice', 'entity', 'MENTIONS', 0.0),
        (acme.chunks[6], globex.id, 'document', 'LINKS_TO', 1.0),  # another tenant's document
        (acme.chunks[7], acme.sections[1].id, 'section', 'LINKS_TO', 1.0),
        (acme.chunks[7], 'ent-alice', 'chunk', 'MENTIONS', 1.0),  # names an entity as a chunk: no such node
        (globex.chunks[0], 'ent-globex', 'entity', 'MENTIONS', 1.0),
        (globex.chunks[1], 'ent-bob', 'entity', 'MENTIONS', 1.0),
        (globex.chunks[2], HUB_ID, 'entity', 'MENTIONS', 1.0),  # a foreign in-edge of the hub
        (globex.chunks[3], acme.id, 'document', 'LINKS_TO', 1.0),
        (globex.chunks[4], acme.chunks[4].id, 'chunk', 'CITES', 1.0),
        (initech.chunks[0], HUB_ID, 'entity', 'MENTIONS', 1.0),
        (initech.chunks[1], 'ent-bob', 'entity', 'MENTIONS', 1.0),
    ]
    return [
        Relation(
            source=chunk.id,
            source_kind='chunk',
            target=target,
            target_kind=kind,
            type=type_,
            weight=weight,
            metadata=chunk.metadata,
            labels=chunk.labels,
            provenance=chunk.id,
            document_id=chunk.document_id,
            origin='exact',
        )
        for chunk, target, kind, type_, weight in targets
    ]


def _derived(documents: Sequence[Document]) -> list[Relation]:
    """Entity -> entity edges read from a chunk, with that chunk's metadata and labels (as extraction writes them).

    Both ends are acme entities, in scope wherever acme is, so only the edge's own metadata can
    hide it: under ``tenant == 'acme' and n != 2`` (`GRAPH_SCOPES`) the one read from chunk 2 is
    no edge, while the same filter admits both its endpoints.
    """
    acme = documents[0]
    return [
        Relation(
            source='ent-alice',
            source_kind='entity',
            target=HUB_ID,
            target_kind='entity',
            type='WORKS_FOR',
            metadata=chunk.metadata,
            labels=chunk.labels,
            provenance=chunk.id,
            document_id=chunk.document_id,
            origin='extract',
        )
        for chunk in (acme.chunks[2], acme.chunks[3])
    ]


def _standalone(documents: Sequence[Document]) -> list[Relation]:
    """Relations no document owns (``document_id=None``), written by hand: they live until deleted."""
    acme, initech = documents[0], documents[2]
    acme_scope, globex_scope = {'tenant': 'acme'}, {'tenant': 'globex'}
    edges: list[tuple[str, NodeKind, str, str, NodeKind, Mapping[str, Any], float]] = [
        ('ent-alice', 'entity', 'WORKS_FOR', HUB_ID, 'entity', acme_scope, 2.0),
        ('ent-carol', 'entity', 'WORKS_FOR', HUB_ID, 'entity', acme_scope, 0.25),  # from an entity of no tenant
        (HUB_ID, 'entity', 'RELATED_TO', HUB_ID, 'entity', acme_scope, 1.0),  # a self-loop
        ('ent-alice', 'entity', 'KNOWS', 'ent-bob', 'entity', acme_scope, 1.0),  # to another tenant's entity
        ('ent-bob', 'entity', 'KNOWS', 'ent-alice', 'entity', globex_scope, 1.0),
        ('ent-alice', 'entity', 'ADVISES', HUB_ID, 'entity', globex_scope, 1.0),  # foreign relation, acme ends
        ('ent-bob', 'entity', 'WORKS_FOR', 'ent-globex', 'entity', globex_scope, 1.5),
        (HUB_ID, 'entity', 'RELATED_TO', GHOST_ID, 'entity', acme_scope, 1.0),  # to a node that exists nowhere
        (acme.id, 'document', 'LINKS_TO', initech.id, 'document', acme_scope, 1.0),
        (HUB_ID, 'entity', 'DESCRIBED_IN', acme.sections[2].id, 'section', {'tenant': 'acme', 'flag': 1}, 1.0),
    ]
    return [
        Relation(
            source=source,
            source_kind=source_kind,
            type=type_,
            target=target,
            target_kind=target_kind,
            metadata=dict(metadata),
            weight=weight,
        )
        for source, source_kind, type_, target, target_kind, metadata, weight in edges
    ]


def graph_entities() -> list[Entity]:
    """The conformance entities (acme's) with globex's two and one of no tenant."""
    return [
        *conformance_entities(),
        Entity(
            id='ent-globex',
            name='Globex Corporation',
            description=f'{COMMON_WORD} a supplier',
            labels=frozenset({'Company'}),
            metadata={'tenant': 'globex', 'n': 102},
        ),
        Entity(
            id='ent-bob',
            name='Bob Example',
            aliases=('Bobby',),
            description=f'{COMMON_WORD} globex buyer',
            labels=frozenset({'Person'}),
            metadata={'tenant': 'globex', 'n': 103, 'flag': True},
        ),
        Entity(
            id='ent-carol',
            name='Carol Example',
            labels=frozenset({'Person'}),
            metadata={'n': 104},
        ),
    ]


def graph_corpus() -> GraphCorpus:
    """The conformance corpus as a graph (docs/testing.md, "The graph checks", says what its relations probe)."""
    documents = conformance_corpus()
    relations = [
        *(r for d in documents for r in structure(d)),
        *_mentions(documents),
        *_derived(documents),
        *_standalone(documents),
    ]
    return GraphCorpus(tuple(documents), tuple(graph_entities()), tuple(relations))


GRAPH_SCOPES: list[tuple[str, Filter | None]] = [
    ('no filter', None),
    ('acme', F.eq('tenant', 'acme')),
    ('globex', F.eq('tenant', 'globex')),
    ('acme without chunk 2', F.eq('tenant', 'acme') & F.ne('n', 2)),  # a negative predicate on a chunk key
    ('not a manual', ~EntityFilter.has_any_label('Manual')),
]
"""Scopes the thorough checks run under (`EDGE_FILTERS` run the cheap ones): whole tenants, a scope
cutting through a document (its chunk 2 out, relations without an ``n`` in), and one by labels."""
