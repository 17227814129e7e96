"""Vectors an executor computed (Ray workers), held until the writer hands them to the store.

The store takes them through `PrecomputedVectorsWriter.upsert_with_vectors`; its embedder is never
swapped. See docs/ingestion.md#how-the-pipeline-is-built.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..content import Document
from ._embedding import StoreEmbedding

__all__ = ['VectorCache']


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

    def for_documents(self, documents: Sequence[Document]) -> dict[str, Sequence[float]]:
        """The vectors held for the chunk texts of ``documents`` (what a batch's `upsert_with_vectors` is given)."""
        found = ((chunk.text, self.lookup(chunk.text)) for document in documents for chunk in document.chunks)
        return {text: vector for text, vector in found if vector is not None}
