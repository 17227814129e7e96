"""Writing an ingest run's documents to the store in batches, and recording each one (crash safety lives here).

See docs/ingestion.md#how-the-pipeline-is-built.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import TypeVar

from .._uris import local_path
from ..content import Document
from ..errors import UnsupportedValueError
from ..protocols import DocumentStore, PrecomputedVectorsWriter
from ..tracing import CHUNKS, DOCUMENT_ID, DOCUMENTS, OUTCOME, STORE, Attributes, current, ended_span, span
from ._report import IngestIssue, IngestReport
from ._vectors import VectorCache

__all__ = ['BatchWriter']

FIRST_BATCH_CHUNKS = 1
"""The first write of a run is its first document: a run stopped early keeps what it finished."""
MAX_WAIT_SECONDS = 5.0
"""A document waits at most about this long for its batch to fill (checked as the next one arrives)."""

_T = TypeVar('_T')

_Pending = list[tuple[Document, bool, int]]
"""Documents waiting to be written, each with whether it replaces a stored one and when it was taken (ns)."""


@dataclass(slots=True)
class BatchWriter:
    """Upserts documents in batches that start small and grow to ``batch_chunks`` chunks (and on `flush`).

    The first batch is one document and each next one may be twice as big, up to ``batch_chunks``;
    a batch is also written once its first document has waited `MAX_WAIT_SECONDS`, even while no
    other document comes (`meanwhile`: a slow PDF being parsed holds nothing back). So an
    interrupted run (Ctrl-C, a crash) has kept nearly all it finished, while a long run still
    writes in big batches (docs/ingestion.md#reports).
    """

    store: DocumentStore
    report: IngestReport
    stored_ids: Collection[str]
    """Document ids the store held before the run: a document with one of them is an update."""
    batch_chunks: int
    on_written: Callable[[], None]
    """Called once per document settled by a write, stored or failed (the progress bar)."""
    vectors: VectorCache | None = None
    """The executor's vectors of waiting documents: handed to a `PrecomputedVectorsWriter` with each batch."""
    _batch: _Pending = field(default_factory=list, init=False)
    _chunks: int = field(default=0, init=False)
    _threshold: int = field(default=FIRST_BATCH_CHUNKS, init=False)
    _refused: list[tuple[Document, int, UnsupportedValueError]] = field(default_factory=list, init=False)
    """Documents the store refused during a flush, traced once its upsert span has ended (as siblings)."""

    async def add(self, document: Document) -> None:
        self._batch.append((document, document.id in self.stored_ids, time.time_ns()))
        self._chunks += len(document.chunks)
        waited = (time.time_ns() - self._batch[0][2]) / 1e9
        if self._chunks >= min(self._threshold, self.batch_chunks) or waited >= MAX_WAIT_SECONDS:
            await self.flush()

    async def meanwhile(self, step: Awaitable[_T]) -> _T:
        """``await step`` (the next parsed file), writing what is waiting if that takes `MAX_WAIT_SECONDS`.

        Cancelled (Ctrl-C), it cancels ``step`` too and waits for it to end, so that the parse
        workers' generator is not left running when the run closes it.
        """
        if not self._batch:
            return await step
        task = asyncio.ensure_future(step)
        try:
            done, _ = await asyncio.wait({task}, timeout=MAX_WAIT_SECONDS)
            if not done:
                await self.flush()
            return await task
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def flush(self) -> None:
        """Write what is waiting, then record it in the report."""
        if not self._batch:
            return
        written: Attributes = {STORE: self._store_name, DOCUMENTS: len(self._batch), CHUNKS: self._chunks}
        with span(current(), 'toolish_rag.upsert', written):
            stored = await self._write(self._batch)
        for document, taken, exc in self._refused:
            self._trace(document, 'failed', taken, exc)
        for document, is_update, taken in stored:
            (self.report.updated if is_update else self.report.added).append(document.uri)
            self.report.chunks += len(document.chunks)
            self._trace(document, 'updated' if is_update else 'added', taken)
            self.on_written()
        self._batch, self._chunks, self._refused = [], 0, []
        self._threshold = min(self._threshold * 2, max(self.batch_chunks, 1))

    async def _write(self, batch: _Pending) -> _Pending:
        """Upsert ``batch``, setting aside each document the store refuses a value of; what was stored.

        The store names the refused document: it is failed and the rest retried. A refusal that
        names none of the batch (a store that does not say) halves the batch instead, down to
        the single document that holds the value.
        """
        while batch:
            try:
                await self._upsert([document for document, _, _ in batch])
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

    async def _upsert(self, documents: list[Document]) -> None:
        """``store.upsert``, or ``upsert_with_vectors`` with the executor's vectors of these documents' chunks."""
        known = self.vectors.for_documents(documents) if self.vectors is not None else None
        if known and isinstance(self.store, PrecomputedVectorsWriter):
            await self.store.upsert_with_vectors(documents, known)
        else:
            await self.store.upsert(documents)

    def _fail(self, entries: _Pending, exc: UnsupportedValueError) -> None:
        for document, _, taken in entries:
            self.report.failed.append(IngestIssue(_source(document.uri), f'cannot be stored: {exc}'))
            self._refused.append((document, taken, exc))
            self.on_written()

    @property
    def _store_name(self) -> str:
        return type(self.store).__name__

    def _trace(self, document: Document, outcome: str, taken: int, failed: Exception | None = None) -> None:
        """The document's ``toolish_rag.ingest_file`` span, from ``taken`` to now (the value refused: only its type)."""
        attributes: Attributes = {
            STORE: self._store_name,
            DOCUMENT_ID: document.id,
            OUTCOME: outcome,
            CHUNKS: len(document.chunks),
        }
        ended_span(current(), 'toolish_rag.ingest_file', taken, attributes, failed=failed)


def _source(uri: str) -> str:
    """What the report names a failed document by: its file's path, as for other failures, else its uri."""
    path = local_path(uri)
    return str(path) if path is not None else uri
