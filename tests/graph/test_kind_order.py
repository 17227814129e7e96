"""An id naming nodes of several kinds resolves alike on every store: to the first in-scope kind of NODE_KIND_ORDER.

Regression: LanceDB tried documents before entities, so an entity given a document's id came back as the
document there and as the entity on the reference and InMemoryStore.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from toolish_rag import DocumentBuilder, Entity, PropertyFilter as F
from toolish_rag.content import Chunk, Document
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.filters import Filter
from toolish_rag.graph import NODE_KIND_ORDER, NodeRequest, reference_nodes
from toolish_rag.stores import InMemoryStore
from toolish_rag_lancedb import LanceDBStore


def _items() -> tuple[Document, Entity]:
    b = DocumentBuilder('file:///handbook.md', 'Handbook', metadata={'tenant': 'acme'})
    b.add_chunk(b.section('Intro'), 'Welcome to the handbook.')
    document = b.build()
    clash = Entity(id=document.id, name='An entity with the document id', metadata={'tenant': 'globex'})
    return document, clash


def _store(kind: str, tmp_path: Path) -> InMemoryStore | LanceDBStore:
    embedder = HashingEmbeddingModel(32)
    return InMemoryStore(embedder) if kind == 'memory' else LanceDBStore(tmp_path / 'kb', embedder=embedder)


def test_the_order_is_chunk_entity_section_document() -> None:
    assert NODE_KIND_ORDER == ('chunk', 'entity', 'section', 'document')


@pytest.mark.parametrize('kind', ['memory', 'lancedb'])
@pytest.mark.parametrize(
    ('scope', 'expected'),
    [(None, 'entity'), (F.eq('tenant', 'globex'), 'entity'), (F.eq('tenant', 'acme'), 'document')],
)
async def test_a_shared_id_resolves_like_the_reference(
    kind: str, scope: Filter | None, expected: str, tmp_path: Path
) -> None:
    document, clash = _items()
    store = _store(kind, tmp_path)
    await store.upsert([document, clash])
    request = NodeRequest((document.id,), scope)
    records: list[Chunk | Entity] = [*document.chunks, clash]
    reference = reference_nodes(records, request)
    nodes = list(await store.graph_nodes(request))
    assert nodes == reference
    assert [n.kind for n in nodes] == [expected]
