"""Writing an ingest run's documents to the store in batches, and recording each one.

Crash safety lives here. A document is recorded as added or updated only once the upsert
that carried it (with its fingerprint) has returned, and a store's upsert replaces
documents whole; so a run that dies between batches leaves whole documents only, each with
the fingerprint that lets the next run skip it, and the next run finishes the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from ..content import Document
from ..protocols import DocumentStore
from .report import IngestReport

__all__ = ['BatchWriter']


@dataclass(slots=True)
class BatchWriter:
    """Upserts documents once at least ``batch_chunks`` chunks are waiting (and on `flush`)."""

    store: DocumentStore
    report: IngestReport
    stored_ids: Collection[str]
    """Document ids the store held before the run: a document with one of them is an update."""
    batch_chunks: int
    on_written: Callable[[], None]
    """Called once per document written (the progress bar)."""
    _batch: list[tuple[Document, bool]] = field(default_factory=list, init=False)
    _chunks: int = field(default=0, init=False)

    async def add(self, document: Document) -> None:
        self._batch.append((document, document.id in self.stored_ids))
        self._chunks += len(document.chunks)
        if self._chunks >= self.batch_chunks:
            await self.flush()

    async def flush(self) -> None:
        """Write what is waiting, then record it in the report."""
        if not self._batch:
            return
        await self.store.upsert([document for document, _ in self._batch])
        for document, is_update in self._batch:
            (self.report.updated if is_update else self.report.added).append(document.uri)
            self.report.chunks += len(document.chunks)
            self.on_written()
        self._batch, self._chunks = [], 0
