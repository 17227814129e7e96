"""Where the CLI's stores live: the default location, what kind of store a folder holds, and the
one-line refusal a read command gives for a store that does not exist. See docs/stores/manifest.md.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..manifest import ManifestError, read_manifest
from .registry import available_stores

__all__ = [
    'DEFAULT_FOLDER',
    'LEGACY_DEFAULT_FOLDER',
    'STORE_DIR',
    'STORE_ENV',
    'default_spec',
    'detect_kind',
    'missing_store',
    'spec_with_location',
]

STORE_ENV = 'TOOLISH_RAG_STORE'
STORE_DIR = '.toolish-rag'
DEFAULT_FOLDER = f'{STORE_DIR}/store'
"""The default store's folder, relative to the current directory (where scripts/demo writes too)."""
LEGACY_DEFAULT_FOLDER = f'{STORE_DIR}/lancedb'
"""The default before there was one folder for every kind: still opened when it holds a store and the new one does not."""

_CONNINFO = re.compile(r'\s*[a-z_]+\s*=')
"""A libpq ``key=value`` connection string (``postgres:host=/run/pg dbname=kb``), not a folder."""
_TANTIVY_FILES = ('toolish_rag_tantivy.json', 'toolish_rag_tantivy_partitions.json')


def detect_kind(folder: str | os.PathLike[str]) -> str | None:
    """The kind of store ``folder`` holds: its manifest's, else told by the files older stores wrote;
    ``None``: no store (missing, empty or unknown)."""
    path = Path(folder)
    if not path.is_dir():
        return None
    try:
        manifest = read_manifest(path)
    except ManifestError:
        manifest = None
    if manifest is not None:
        return manifest.store
    if (path / 'CURRENT').is_file():
        return 'memory'
    if any(p.suffix == '.lance' for p in path.iterdir()):
        return 'lancedb'
    if any((path / name).is_file() for name in _TANTIVY_FILES):
        return 'tantivy'
    return None


def default_spec(default_kind: str) -> str:
    """``$TOOLISH_RAG_STORE``, else ``.toolish-rag/store`` as the kind it holds (``default_kind`` when new);
    a store at the older default ``.toolish-rag/lancedb`` is used while the new folder holds none."""
    env = os.environ.get(STORE_ENV, '').strip()
    if env:
        return env
    kind = detect_kind(DEFAULT_FOLDER)
    if kind is None and detect_kind(LEGACY_DEFAULT_FOLDER) == 'lancedb':
        return f'lancedb:{LEGACY_DEFAULT_FOLDER}'
    return f'{kind or default_kind}:{DEFAULT_FOLDER}'


def spec_with_location(spec: str) -> str:
    """A bare store name (``memory``) as a persisted store: ``memory:.toolish-rag/memory``.

    Bare names keep their data under ``.toolish-rag/`` (as ``eval`` does), so an ingest into
    ``--store memory`` is there for the next command instead of vanishing with the process.
    """
    name, colon, location = spec.partition(':')
    name = name.strip().lower()
    if (colon and location) or name not in available_stores():
        return spec  # a located spec, or one the registry explains (a bare path, an unknown name)
    return f'{name}:{STORE_DIR}/{name}'


def _nearby(location: Path) -> list[str]:
    """Specs of the stores beside ``location`` and under ``.toolish-rag/`` of the current directory."""
    places = [Path(STORE_DIR), Path(STORE_DIR) / 'eval']
    if location.parent.is_dir():
        places.append(location.parent)
    found: list[str] = []
    for place in places:
        if not place.is_dir():
            continue
        for child in sorted(place.iterdir()):
            kind = detect_kind(child) if child.is_dir() else None
            spec = f'{kind}:{child}'
            if kind is not None and child.resolve() != location.resolve() and spec not in found:
                found.append(spec)
    return found


def local_folder(spec: str) -> str | None:
    """The folder a ``NAME:LOCATION`` spec names, or ``None`` for a remote location (``s3://``, ``postgresql://``)
    or a location that is not a path (a libpq ``key=value`` connection string, which may hold a password)."""
    location = spec.partition(':')[2]
    if not location or '://' in location or _CONNINFO.match(location):
        return None
    return location


def missing_store(spec: str) -> str | None:
    """Why a read command must not open ``spec`` (one line naming what exists nearby), or ``None`` to open it.

    A local folder is missing when it does not exist or holds no store; a remote location (``s3://``)
    or an adapter's location that is not a path (a ``key=value`` connection string) cannot be told, and is opened.
    """
    location = local_folder(spec)
    if location is None:
        return None
    path = Path(location).expanduser()
    if path.is_dir() and (detect_kind(path) is not None or any(path.iterdir())):
        return None
    nearby = _nearby(path)
    if nearby:
        first = nearby[0]
        others = f' (also: {", ".join(nearby[1:4])})' if len(nearby) > 1 else ''
        hint = f'found {first}{others}: pass --store {first} or set ${STORE_ENV}'
    else:
        hint = f'ingest documents first: toolish-rag ingest PATH --store {spec}'
    return f'no store at {spec}; {hint}'
