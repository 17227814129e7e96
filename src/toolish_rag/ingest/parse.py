"""One file into one `Document`: the job a parse worker runs, and `parse_path` for callers.

`parse_file` never raises for a bad file: it returns the reason instead, so that one
corrupt or odd file is reported and the run goes on. It runs in worker processes, so it
and its arguments must be picklable (module-level function, plain data).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..content import Document, MetadataValue
from .chunking import Chunker
from .fingerprint import fingerprint
from .model import ReadError
from .readers import read_bytes

__all__ = ['Parsed', 'file_uri', 'parse_file', 'parse_path']


def file_uri(path: str | os.PathLike[str]) -> str:
    """The uri a file's document gets: ``file://`` + its resolved absolute path."""
    return Path(path).resolve().as_uri()


@dataclass(frozen=True, slots=True)
class Parsed:
    """A worker's answer for one file: the document, or why there is none (``reason``)."""

    path: str
    document: Document | None
    reason: str | None
    warnings: tuple[str, ...] = ()


def parse_path(
    path: str | os.PathLike[str],
    chunker: Chunker | None = None,
    *,
    metadata: Mapping[str, MetadataValue] | None = None,
    labels: Iterable[str] = (),
) -> Document:
    """Read, parse and chunk one file into a `Document` (no store involved).

    Raises `ReadError` with the reason when the file cannot be ingested.
    """
    result = parse_file(str(path), chunker or Chunker(), dict(metadata or {}), tuple(labels))
    if result.document is None:
        raise ReadError(result.reason or 'unreadable')
    return result.document


def parse_file(path: str, chunker: Chunker, metadata: dict[str, MetadataValue], labels: tuple[str, ...]) -> Parsed:
    """Read, parse, chunk and fingerprint ``path``; every failure becomes a `Parsed` with a reason."""
    p = Path(path)
    try:
        data = p.read_bytes()
        parsed = read_bytes(data, p)
        extra = {'source_format': parsed.format, 'file_name': p.name, **metadata}
        document = chunker.build(
            parsed,
            file_uri(p),
            fingerprint=fingerprint(data, chunker.config_key()),
            metadata=extra,
            labels=labels,
        )
    except ReadError as exc:
        return Parsed(path, None, str(exc))
    except OSError as exc:
        return Parsed(path, None, f'cannot read file: {exc.strerror or exc}')
    except Exception as exc:  # a reader bug on one odd file must not stop the run
        return Parsed(path, None, f'reader error: {type(exc).__name__}: {exc}')
    if not document.chunks:
        return Parsed(path, None, 'no extractable text', tuple(parsed.warnings))
    return Parsed(path, document, None, tuple(parsed.warnings))
