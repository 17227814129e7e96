"""Vectors computed elsewhere, handed to a store that embeds inside its own ``upsert``.

See docs/ingestion.md#how-the-pipeline-is-built.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from pydantic_ai.embeddings import EmbeddingModel, EmbeddingResult, EmbeddingSettings, infer_embedding_model
from pydantic_ai.embeddings.result import EmbedInputType

from ...content import Document
from ._embedding import StoreEmbedding, embedder_of

__all__ = ['PrecomputedEmbeddingModel', 'VectorCache']


@dataclass(slots=True)
class _Entry:
    vector: Sequence[float]
    holders: int
    """How many waiting documents hold this text: it is forgotten when the last one is written."""


@dataclass(slots=True)
class VectorCache:
    """Vectors of the chunk texts of the documents waiting to be written, made with ``embedding``."""

    embedding: StoreEmbedding
    _entries: dict[str, _Entry] = field(default_factory=dict, init=False)
    _waiting: deque[Document | None] = field(default_factory=deque, init=False)
    """Every document handed to the writer and not yet settled, oldest first (``None``: it came without vectors)."""

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, document: Document, vectors: Sequence[Sequence[float]] | None) -> None:
        """``document`` goes to the writer now, with its chunks' ``vectors`` (in order) or none."""
        if vectors is None:
            self._waiting.append(None)
            return
        if len(vectors) != len(document.chunks):
            raise ValueError(f'{len(vectors)} vectors for the {len(document.chunks)} chunks of {document.uri}')
        for chunk, vector in zip(document.chunks, vectors, strict=True):
            entry = self._entries.get(chunk.text)
            if entry is None:
                self._entries[chunk.text] = _Entry(vector, 1)
            else:
                entry.holders += 1
        self._waiting.append(document)

    def settled(self) -> None:
        """The writer settled a document (stored or refused): forget the oldest waiting one's vectors.

        Which one it settled does not matter: a flush settles the oldest waiting documents, all
        of them, before the next flush. (When a store refuses one document of a batch, the
        writer settles it before retrying the rest, which may then miss a vector it needed:
        the real model makes it.)
        """
        if not self._waiting:
            return
        document = self._waiting.popleft()
        if document is None:
            return
        for chunk in document.chunks:
            entry = self._entries.get(chunk.text)
            if entry is not None:
                entry.holders -= 1
                if entry.holders <= 0:
                    del self._entries[chunk.text]

    def lookup(self, text: str) -> Sequence[float] | None:
        entry = self._entries.get(text)
        return None if entry is None else entry.vector

    @contextmanager
    def serving(self, store: object) -> Iterator[None]:
        """Within this block (this task), ``store``'s embedder answers from the cache (nothing if it has none)."""
        embedder = embedder_of(store)
        if embedder is None:
            yield
            return
        with embedder.override(model=PrecomputedEmbeddingModel(self, self.embedding.model)):
            yield


class PrecomputedEmbeddingModel(EmbeddingModel):
    """Answers document texts from a `VectorCache`, and everything else with the real model.

    It stands in for the store embedder's model while `ingest` writes (`VectorCache.serving`). The
    cache serves a call only when it is for documents and its settings are those the vectors
    were made with; the texts it lacks are embedded by ``real`` in one call, with the same
    settings, so the result is the one the store would have had.
    """

    def __init__(self, cache: VectorCache, real: EmbeddingModel | str) -> None:
        super().__init__()
        self._cache = cache
        self._real_spec = real
        self._real: EmbeddingModel | None = None

    @property
    def model_name(self) -> str:
        return self._real_model().model_name

    @property
    def system(self) -> str:
        return self._real_model().system

    def _real_model(self) -> EmbeddingModel:
        """The store's model, built from its name on first need (a string model is only a name)."""
        if self._real is None:
            self._real = infer_embedding_model(self._real_spec)
        return self._real

    async def embed(
        self, inputs: str | Sequence[str], *, input_type: EmbedInputType, settings: EmbeddingSettings | None = None
    ) -> EmbeddingResult:
        texts = [inputs] if isinstance(inputs, str) else list(inputs)
        cache = self._cache
        usable = input_type == 'document' and (settings or None) == (cache.embedding.settings or None)
        found = [cache.lookup(t) if usable else None for t in texts]
        missing = [i for i, v in enumerate(found) if v is None]
        if len(missing) == len(texts):
            return await self._real_model().embed(texts, input_type=input_type, settings=settings)
        if missing:
            fresh = await self._real_model().embed(
                [texts[i] for i in missing], input_type=input_type, settings=settings
            )
            for i, vector in zip(missing, fresh.embeddings, strict=True):
                found[i] = vector
        return EmbeddingResult(
            embeddings=[v for v in found if v is not None],
            inputs=texts,
            input_type=input_type,
            model_name=self.model_name,
            provider_name=self.system,
        )

    async def max_input_tokens(self) -> int | None:
        return await self._real_model().max_input_tokens()

    async def count_tokens(self, text: str) -> int:
        return await self._real_model().count_tokens(text)
