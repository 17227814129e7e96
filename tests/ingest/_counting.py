"""Test stores and models that count: what the driver's own model embedded, and a store without the optional protocols."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic_ai.embeddings import EmbeddingResult, EmbeddingSettings
from pydantic_ai.embeddings.result import EmbedInputType

from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.stores import InMemoryStore


class CountingModel(HashingEmbeddingModel):
    """The hashing embedder, counting the document texts embedded by this very instance (a pickled copy counts apart)."""

    def __init__(self, dimensions: int = 64) -> None:
        super().__init__(dimensions)
        self.document_texts = 0

    async def embed(
        self, inputs: str | Sequence[str], *, input_type: EmbedInputType, settings: EmbeddingSettings | None = None
    ) -> EmbeddingResult:
        if input_type == 'document':
            self.document_texts += 1 if isinstance(inputs, str) else len(inputs)
        return await super().embed(inputs, input_type=input_type, settings=settings)


class UpsertOnly:
    """A store as a third party might write one: `DocumentStore` alone (``embedder``: only when given)."""

    def __init__(self, inner: InMemoryStore, *, embedder: Any = None) -> None:
        self.inner = inner
        if embedder is not None:
            self.embedder = embedder

    async def upsert(self, items: Any) -> None:
        await self.inner.upsert(items)

    async def delete_documents(self, document_ids: Any) -> int:
        return await self.inner.delete_documents(document_ids)

    async def delete_entities(self, entity_ids: Any) -> int:
        return await self.inner.delete_entities(entity_ids)

    async def list_documents(self) -> Any:
        return await self.inner.list_documents()
