"""`IngestLimits`: the bounds every file is parsed within, and the budget readers check against.

See docs/ingestion.md#bounds-per-file.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from ._model import ReadError

__all__ = ['DEFAULT_LIMITS', 'IngestLimits', 'bounded', 'check_time', 'current_limits', 'seconds_left']

MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class IngestLimits:
    """What parsing one file may cost; a file over any of them fails alone with the reason.

    The defaults leave room for OCR of a scanned page on a 2-core machine and for large
    real documents (a 100k-row sheet, a 1,000-page book), and stop the small hostile files
    that would otherwise stall or exhaust the run. ``None`` turns a bound off.
    """

    seconds: float | None = 120.0
    """Wall time to parse one file. Processes: the worker is killed and replaced. Threads: readers stop at checkpoints."""
    memory_bytes: int | None = 2048 * MIB
    """Resident memory of a parse worker process (Linux); it is killed and replaced above it."""
    unpacked_bytes: int = 256 * MIB
    """Decompressed bytes of a ZIP container (DOCX, XLSX, PPTX, EPUB), all members together."""
    compression_ratio: float = 200.0
    """Largest decompressed/compressed ratio of a container member over 1 MiB (deflate bombs run at ~1000)."""
    elements: int = 10_000_000
    """XML tags in a container's parts, spreadsheet rows and cells, HTML elements."""
    depth: int = 400
    """Nesting of HTML elements."""
    text_chars: int = 64 * MIB
    """Characters of text extracted from one file (an EPUB's chapters together)."""

    def __post_init__(self) -> None:
        if self.seconds is not None and self.seconds < 0:
            raise ValueError('IngestLimits.seconds must be at least 0 (or None: no limit)')
        if self.memory_bytes is not None and self.memory_bytes <= 0:
            raise ValueError('IngestLimits.memory_bytes must be positive (or None: no limit)')
        counts = {'unpacked_bytes': self.unpacked_bytes, 'elements': self.elements, 'depth': self.depth}
        for name, value in {**counts, 'text_chars': self.text_chars}.items():
            if value < 1:
                raise ValueError(f'IngestLimits.{name} must be at least 1')
        if self.compression_ratio < 1:
            raise ValueError('IngestLimits.compression_ratio must be at least 1')


DEFAULT_LIMITS = IngestLimits()


@dataclass(frozen=True, slots=True)
class _Budget:
    limits: IngestLimits
    deadline: float | None = field(default=None)


_budget: ContextVar[_Budget | None] = ContextVar('toolish_rag_ingest_budget', default=None)


@contextmanager
def bounded(limits: IngestLimits) -> Iterator[None]:
    """Parse one file within ``limits``: readers see them through `current_limits` and `check_time`."""
    deadline = None if limits.seconds is None else time.monotonic() + limits.seconds
    token = _budget.set(_Budget(limits, deadline))
    try:
        yield
    finally:
        _budget.reset(token)


def current_limits() -> IngestLimits:
    """The limits of the file being parsed (`DEFAULT_LIMITS` outside `bounded`)."""
    budget = _budget.get()
    return DEFAULT_LIMITS if budget is None else budget.limits


def seconds_left() -> float | None:
    """Seconds the file being parsed has left of its ``seconds`` limit (``None``: no limit): a subprocess's timeout."""
    budget = _budget.get()
    if budget is None or budget.deadline is None:
        return None
    return max(0.0, budget.deadline - time.monotonic())


def check_time() -> None:
    """Raise `ReadError` when the file being parsed has used up its ``seconds`` (a reader's checkpoint)."""
    budget = _budget.get()
    if budget is not None and budget.deadline is not None and time.monotonic() > budget.deadline:
        raise ReadError(f'took longer than the {budget.limits.seconds:g}-second limit per file')
