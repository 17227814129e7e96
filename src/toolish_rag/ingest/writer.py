"""Writing an ingest run's documents to the store in batches, and recording each one.

Crash safety lives here. A document is recorded as added or updated only once the upsert
that carried it (with its fingerprint) has returned, and a store's upsert replaces
documents whole; so a run that dies between batches leaves whole documents only, each with
the fingerprint that lets the next run skip it, and the next run finishes the rest.

A document holding a value the store cannot hold (a 400-digit integer in front matter, say)
fails alone. The store refuses the whole batch with `UnsupportedValueError`, having written
none of it; the writer records the document that error names as failed, with the reason,
and upserts the rest of that batch again. Only a failing batch is retried, and only without
the documents it failed on, so a corpus with a few such files costs a few extra upserts, not
one per document. Any other exception from the store is an outage or a bug and stops the run.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from urllib.parse import unquote, urlparse

from ..content import Document
from ..errors import UnsupportedValueError
from ..protocols import DocumentStore
from .report import IngestIssue, IngestReport

__all__ = ['BatchWriter']

_Pending = list[tuple[Document, bool]]
"""Documents waiting to be written, each with whether it replaces a stored one."""


@dataclass(slots=True)
class BatchWriter:
    """Upserts documents once at least ``batch_chunks`` chunks are waiting (and on `flush`)."""

    store: DocumentStore
    report: IngestReport
    stored_ids: Collection[str]
    """Document ids the store held before the run: a document with one of them is an update."""
    batch_chunks: int
    on_written: Callable[[], None]
    """Called once per document settled by a write, stored or failed (the progress bar)."""
    _batch: _Pending = field(default_factory=list, init=False)
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
        for document, is_update in await self._write(self._batch):
            (self.report.updated if is_update else self.report.added).append(document.uri)
            self.report.chunks += len(document.chunks)
            self.on_written()
        self._batch, self._chunks = [], 0

    async def _write(self, batch: _Pending) -> _Pending:
        """Upsert ``batch``, setting aside each document the store refuses a value of; what was stored.

        The store names the refused document: it is failed and the rest retried. A refusal that
        names none of the batch (a store that does not say) halves the batch instead, down to
        the single document that holds the value.
        """
        while batch:
            try:
                await self.store.upsert([document for document, _ in batch])
            except UnsupportedValueError as exc:
                named = [entry for entry in batch if entry[0].id == exc.document_id]
                if named:
                    self._fail(named, exc)
                    batch = [entry for entry in batch if entry[0].id != exc.document_id]
                elif len(batch) == 1:
                    self._fail(batch, exc)
                    return []
                else:
                    middle = len(batch) // 2
                    return await self._write(batch[:middle]) + await self._write(batch[middle:])
            else:
                return batch
        return []

    def _fail(self, entries: _Pending, exc: UnsupportedValueError) -> None:
        for document, _ in entries:
            self.report.failed.append(IngestIssue(_source(document.uri), f'cannot be stored: {exc}'))
            self.on_written()


def _source(uri: str) -> str:
    """What the report names a failed document by: its file's path, as for other failures, else its uri."""
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == 'file' else uri
