"""Finding the files to ingest: folder walks that skip what is not content and never loop."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ._ignore import IgnoreRules, exclude_spec
from ._names import displayable

__all__ = ['DEFAULT_MAX_FILE_BYTES', 'LEAVES_ROOT', 'SKIPPED_DIRS', 'Found', 'walk_paths']

DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024

SKIPPED_DIRS = frozenset(
    {
        'node_modules', '__pycache__', 'site-packages', 'venv', 'bower_components', 'vendor',
        '__MACOSX', 'dist-packages',
    }
)  # fmt: skip
"""Directory names never descended into (besides hidden ones such as ``.git`` or ``.venv``)."""


LEAVES_ROOT = 'symlink leaving the ingested folder'
"""How a skipped link out of the walked folder is reported (``follow_symlinks=True`` follows it)."""


@dataclass(frozen=True, slots=True)
class Found:
    """A file found by the walk, or a path skipped with a reason (``reason`` set)."""

    path: Path
    root: Path
    """The directory (or file) given by the caller that led here: `ingest`'s ``sync`` scope."""
    size: int = 0
    reason: str | None = None

    @property
    def relative_path(self) -> str:
        """The ``path`` metadata ingestion records: POSIX, relative to ``root`` (a named file: its name).

        Lexical, not resolved: a file reached through a symlinked folder is where the walk met
        it under ``root``, which is where the caller sees it (``uri`` is the resolved target).
        Bytes of the name that are not UTF-8 are written ``\\xNN`` (`displayable`).
        """
        if self.path == self.root:
            return displayable(self.path.name)
        return displayable(self.path.relative_to(self.root).as_posix())


def walk_paths(
    paths: Iterable[str | os.PathLike[str]],
    *,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    include_hidden: bool = False,
    suffixes: frozenset[str] | None = None,
    follow_symlinks: bool = False,
    exclude: Sequence[str] = (),
    gitignore: bool = True,
) -> Iterator[Found]:
    """Yield every file under ``paths`` in a stable (sorted) order.

    Hidden files and directories and `SKIPPED_DIRS` are skipped unless named directly;
    symlinks are followed, but each real directory and file is visited once, so a link
    loop ends. A symlink whose target is outside the given folder comes back with a
    ``reason`` (`LEAVES_ROOT`) unless ``follow_symlinks``. Files larger than
    ``max_file_bytes``, broken links and (in folders) files whose suffix is not in
    ``suffixes`` come back with a ``reason`` too.

    ``exclude``: gitignore-style globs matched against the path under each given folder (a
    named file: its name); what they match is left out silently, as are the paths the tree's
    ``.gitignore`` files ignore unless ``gitignore=False`` (docs/ingestion.md#what-is-read).
    """
    excluded = exclude_spec(exclude)
    seen_dirs: set[tuple[int, int]] = set()
    seen_files: set[str] = set()
    for given in paths:
        root = Path(given).expanduser().absolute()
        if not root.exists():
            yield Found(root, root, reason='no such file or directory' if not root.is_symlink() else 'broken symlink')
            continue
        if root.is_file():
            if excluded is None or not excluded.match_file(root.name):
                yield from _file(root, root, max_file_bytes, seen_files, None)
            continue
        inside = None if follow_symlinks else os.path.realpath(root)
        stack = [(root, IgnoreRules.at_root(root, excluded, gitignore))]
        while stack:
            folder, rules = stack.pop()
            try:
                st = folder.stat()
            except OSError as exc:
                yield Found(folder, root, reason=f'unreadable directory: {exc.strerror}')
                continue
            if (st.st_dev, st.st_ino) in seen_dirs:
                continue
            seen_dirs.add((st.st_dev, st.st_ino))
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError as exc:
                yield Found(folder, root, reason=f'unreadable directory: {exc.strerror}')
                continue
            rules = rules.entering(folder) if folder != root else rules
            subdirs: list[tuple[Path, IgnoreRules]] = []
            for entry in entries:
                hidden = entry.name.startswith('.')
                if hidden and not include_hidden:
                    continue
                path = Path(entry.path)
                outside = _outside(entry, inside)
                if outside is not None:
                    yield Found(path, root, reason=f'{LEAVES_ROOT} (to {outside}): not followed')
                    continue
                try:
                    is_dir = entry.is_dir(follow_symlinks=True)
                except OSError:
                    is_dir = False
                if rules.ignores(path, is_dir):
                    continue
                if is_dir:
                    if entry.name not in SKIPPED_DIRS:
                        subdirs.append((path, rules))
                    continue
                yield from _file(path, root, max_file_bytes, seen_files, suffixes)
            stack.extend(reversed(subdirs))


def _outside(entry: os.DirEntry[str], inside: str | None) -> str | None:
    """The target of ``entry`` when it is a symlink leading out of the folder ``inside`` (else ``None``)."""
    if inside is None or not entry.is_symlink():
        return None
    target = os.path.realpath(entry.path)
    if target == inside or target.startswith(inside.rstrip(os.sep) + os.sep):
        return None
    return target


def _file(path: Path, root: Path, max_bytes: int, seen: set[str], suffixes: frozenset[str] | None) -> Iterator[Found]:
    try:
        real = os.path.realpath(path)
        size = os.stat(path).st_size
    except OSError:
        yield Found(path, root, reason='broken symlink' if path.is_symlink() else 'unreadable file')
        return
    if real in seen:
        return
    seen.add(real)
    if suffixes is not None and path.suffix.lower() not in suffixes:
        yield Found(path, root, size, reason=f'unsupported file type {path.suffix or "(no extension)"!r}')
    elif size > max_bytes:
        yield Found(
            path,
            root,
            size,
            reason=f'larger than the {max_bytes:,}-byte limit ({size:,} bytes; raise it with ingest(max_file_bytes=...))',
        )
    else:
        yield Found(path, root, size)
