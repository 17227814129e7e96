"""Reading a stored Python module's source: the file its ``file://`` uri names, verified against its chunks.

The graph always describes the text the store holds: a file edited or removed since ingestion is a
failure (re-ingest it), never silently described instead. See docs/graph.md (Code graph).
"""

from __future__ import annotations

import ast
import bisect
from dataclasses import dataclass
from pathlib import Path

from ..._uris import local_path
from ...content import Chunk
from ..base import DocumentInput
from ._model import SourceUnavailable

__all__ = ['Source', 'module_name_of', 'read_source']


@dataclass(frozen=True, slots=True)
class Source:
    """A module's verified source text and where each stored chunk lies in it."""

    text: str
    path: Path
    starts: tuple[int, ...]
    """Chunk start offsets, ascending (parallel to ``chunks``)."""
    ends: tuple[int, ...]
    chunks: tuple[Chunk, ...]
    line_starts: tuple[int, ...]

    def chunk_at(self, offset: int) -> Chunk:
        """The earliest chunk holding ``offset`` (overlapping chunks), else the last one before it, else the first."""
        i = bisect.bisect_right(self.starts, offset)
        if i == 0:
            return self.chunks[0]
        j = i - 1
        while j > 0 and self.ends[j - 1] > offset:  # chunks are sequential: their ends grow with their starts
            j -= 1
        return self.chunks[j]

    def offset(self, node: ast.stmt | ast.expr) -> int:
        """The character offset of ``node`` (`ast` gives a line and a UTF-8 byte column)."""
        start = self.line_starts[node.lineno - 1]
        end = self.line_starts[node.lineno] if node.lineno < len(self.line_starts) else len(self.text)
        line = self.text[start:end]
        return start + len(line.encode('utf-8', 'surrogatepass')[: node.col_offset].decode('utf-8', 'replace'))


def read_source(document: DocumentInput) -> Source:
    """The file behind ``document``, verified against every stored chunk (`SourceUnavailable` if it differs)."""
    from ...ingest._readers.text import decode_text  # the ingestion package is heavy: only when reading code

    uri = document.info.uri
    path = local_path(uri) or (Path(uri) if uri.startswith('/') else None)  # a plain absolute path too
    if path is None:
        raise SourceUnavailable(f'{document.info.uri!r} is not a local file: its source cannot be read')
    try:
        text = decode_text(path.read_bytes())
    except OSError as e:
        raise SourceUnavailable(f'cannot read {str(path)!r}: {e.strerror or e}') from None
    except Exception as e:  # ReadError (binary): the message says why
        raise SourceUnavailable(f'cannot read {str(path)!r}: {e}') from None
    spans: list[tuple[int, int, Chunk]] = []
    pos = 0
    for chunk in document.chunks:
        start = chunk.start_char if chunk.start_char is not None else text.find(chunk.urtext, pos)
        end = start + len(chunk.urtext)
        if start < 0 or text[start:end] != chunk.urtext:
            raise SourceUnavailable(
                f'{str(path)!r} no longer holds the stored text of chunk {chunk.id!r}: re-ingest it'
            )
        pos = start
        spans.append((start, end, chunk))
    spans.sort(key=lambda s: (s[0], s[1]))
    line_starts = [0]
    line_starts.extend(i + 1 for i, ch in enumerate(text) if ch == '\n')
    return Source(
        text,
        path,
        tuple(s for s, _, _ in spans),
        tuple(e for _, e, _ in spans),
        tuple(c for _, _, c in spans),
        tuple(line_starts),
    )


def module_name_of(path: Path) -> tuple[str, bool]:
    """``(dotted module name, is_package)`` by Python's rule: the stem under each parent with an ``__init__.py``."""
    is_package = path.name == '__init__.py'
    parts = [] if is_package else [path.stem]
    folder = path.parent
    while (folder / '__init__.py').is_file() and folder.name:
        parts.append(folder.name)
        if folder.parent == folder:
            break
        folder = folder.parent
    if not parts:  # an __init__.py whose folder is no package of its own: name it after the folder
        parts = [path.parent.name or path.stem]
    return '.'.join(reversed(parts)), is_package
