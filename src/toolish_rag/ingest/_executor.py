"""Where an `ingest` run parses: the `IngestExecutor` protocol and the `ParseJob` every executor is handed whole.

The local pools are `_workers.LocalExecutor`; `distributed.RayExecutor` parses and embeds on Ray.
See docs/ingestion.md#how-the-pipeline-is-built.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from typing import Literal, Protocol

from ._embedding import StoreEmbedding
from ._parse import Parsed, ParseJob
from ._walk import Found

__all__ = ['ExecutorKind', 'IngestExecutor']

ExecutorKind = Literal['auto', 'process', 'thread']
"""The local pools by name: `ingest`'s ``executor=`` shorthand for a `LocalExecutor`."""


class IngestExecutor(Protocol):
    """Where `ingest` parses (and, if it can, embeds) the files that must be written.

    ``parse`` yields one `Parsed` per file, in any order, as each is ready, and never raises
    for one bad file (`parse_file` turns that into a reason). The run's `ParseJob` is plain,
    picklable data: ship it whole to the workers and hand it whole to ``parse_file(path, job,
    relative_path)``. It is used inside
    ``contextlib.aclosing``: when the run stops early, closing the generator must stop the work.
    """

    @property
    def embeds(self) -> bool:
        """Whether ``parse`` also embeds chunks: it is then given the store's embedding (or ``None``
        when the store takes no precomputed vectors) and returns `Parsed.vectors` made with it."""
        ...

    def parse(
        self, files: Sequence[Found], job: ParseJob, embedding: StoreEmbedding | None
    ) -> AsyncGenerator[Parsed, None]: ...
