"""The vector linker: MENTIONS from a chunk to the entities most similar to it, weighted by cosine.

See docs/graph.md (How the builders work).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt
from pydantic_ai.embeddings import Embedder

from .._store_attributes import embedder_of
from ..content import Chunk, Entity, Relation
from .base import (
    DERIVED_SCOPE_VERSION,
    BuildReport,
    DocumentGraph,
    DocumentInput,
    GraphBuildStore,
    build_documents,
    derived_relation,
    fingerprint,
    group_mark,
    iter_documents,
    model_identity,
    scope_group,
)

__all__ = ['VectorLinker']

_EMBED_BATCH = 64

Matrix = npt.NDArray[np.float64]


@dataclass(slots=True)
class _EntityVectors:
    """One scope group's entities and their unit vectors, embedded on first use."""

    entities: list[Entity]
    matrix: Matrix | None = None


@dataclass(frozen=True, slots=True)
class VectorLinker:
    """MENTIONS from chunks to similar entities (see docs/graph.md). ``embedder`` overrides the store's.

    Every entity whose cosine with a chunk reaches ``threshold`` is linked: no entity competes with
    another for an edge. ``scope_keys``: link only between a chunk and entities whose values of these
    keys are equal; only then may ``top_k`` keep the best few of each chunk's group (a ranking among
    records of one scope group, never across them).
    """

    top_k: int | None = None
    threshold: float = 0.5
    scope_keys: tuple[str, ...] = ()
    embedder: Embedder | None = field(default=None, compare=False)
    name: str = 'vector'

    def __post_init__(self) -> None:
        if self.top_k is not None and self.top_k < 1:
            raise ValueError('top_k must be at least 1')
        if self.top_k is not None and not self.scope_keys:
            raise ValueError(
                "top_k ranks entities within a scope group: declare scope_keys (e.g. ('tenant',)), "
                'or leave top_k None to link every entity above the threshold'
            )

    def _embedder(self, store: GraphBuildStore) -> Embedder:
        embedder = self.embedder if self.embedder is not None else embedder_of(store)
        if embedder is None:
            raise TypeError('the vector linker needs an Embedder: the store has none (pass embedder=)')
        return embedder

    async def build(self, store: GraphBuildStore) -> BuildReport:
        embedder = self._embedder(store)
        model_name = model_identity(embedder.model)
        groups: dict[str, _EntityVectors] = defaultdict(lambda: _EntityVectors([]))
        for entity in sorted(await store.list_entities(), key=lambda e: e.id):
            groups[scope_group(entity.metadata, self.scope_keys)].entities.append(entity)
        digests = {group: fingerprint([(e.id, e.text) for e in vectors.entities]) for group, vectors in groups.items()}
        config = (self.name, DERIVED_SCOPE_VERSION, self.top_k, self.threshold, self.scope_keys, model_name)
        skipped: list[str] = []

        def mark_of(document: DocumentInput) -> str:
            return group_mark(config, document, self.scope_keys, digests)

        async def graph_of(document: DocumentInput) -> DocumentGraph:
            linkable = [
                (c, groups[g]) for c in document.chunks if (g := scope_group(c.metadata, self.scope_keys)) in groups
            ]
            relations: list[Relation] = []
            vectors = await _embed(embedder, [chunk.text for chunk, _ in linkable])
            for (chunk, group), vector in zip(linkable, vectors, strict=True):
                if group.matrix is None:
                    group.matrix = np.vstack(await _embed(embedder, [e.text for e in group.entities]))
                if vector.shape[0] != group.matrix.shape[1]:
                    skipped.append(f"{chunk.id}: dimension {vector.shape[0]} != the entities' {group.matrix.shape[1]}")
                    continue
                relations.extend(self._mentions(chunk, vector, group))
            return DocumentGraph(tuple(relations))

        report = await build_documents(store, self.name, iter_documents(store), mark_of, graph_of)
        return replace(report, failures=(*report.failures, *skipped)) if skipped else report

    def _mentions(self, chunk: Chunk, vector: Matrix, group: _EntityVectors) -> Iterator[Relation]:
        assert group.matrix is not None
        cosines = group.matrix @ vector
        ranked = sorted(range(len(group.entities)), key=lambda i: (-cosines[i], group.entities[i].id))
        for i in ranked if self.top_k is None else ranked[: self.top_k]:
            cosine = round(float(cosines[i]), 6)
            if cosine < self.threshold:
                break
            yield derived_relation(
                chunk, self.name, chunk.id, 'chunk', group.entities[i].id, 'entity', 'MENTIONS', weight=max(cosine, 0.0)
            )


async def _embed(embedder: Embedder, texts: Sequence[str]) -> list[Matrix]:
    """Unit vectors of ``texts`` (a zero vector stays zero, and so matches nothing)."""
    vectors: list[Matrix] = []
    for start in range(0, len(texts), _EMBED_BATCH):
        result = await embedder.embed_documents(list(texts[start : start + _EMBED_BATCH]))
        for embedding in result.embeddings:
            vector = np.asarray(embedding, dtype=np.float64)
            norm = float(np.linalg.norm(vector))
            vectors.append(vector / norm if norm else vector)
    return vectors
