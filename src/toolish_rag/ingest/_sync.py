"""``sync=True``: which stored documents to delete because their files are gone.

Only documents of ``file://`` uris under the folders (or files) given to this run are
candidates, so syncing one folder never touches what another folder or a non-file source
put in the same store; and a document this run saw (even one it skipped or failed) stays.
"""

from __future__ import annotations

from collections.abc import Iterable, Set
from pathlib import Path

from .._uris import local_path
from ..protocols import DocumentInfo

__all__ = ['stale_documents', 'stored_under']


def stale_documents(stored: Iterable[DocumentInfo], seen_ids: Set[str], paths: Iterable[Path]) -> list[DocumentInfo]:
    """The ``stored`` documents whose files under ``paths`` no longer exist and were not seen."""
    roots = [p.resolve() for p in paths if p.exists() or not p.is_symlink()]
    stale: list[DocumentInfo] = []
    for info in stored:
        file_path = local_path(info.uri)
        if file_path is None or info.id in seen_ids or file_path.exists():
            continue
        if any(file_path == r or file_path.is_relative_to(r) for r in roots):
            stale.append(info)
    return stale


def stored_under(stored: Iterable[DocumentInfo], target: Path) -> list[DocumentInfo]:
    """The ``stored`` documents of files at or under ``target`` (a resolved path): what a symlink to it brought in."""
    found: list[DocumentInfo] = []
    for info in stored:
        file_path = local_path(info.uri)
        if file_path is not None and (file_path == target or file_path.is_relative_to(target)):
            found.append(info)
    return found
