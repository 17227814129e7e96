"""Open a store from a short spec such as ``"memory"``, ``"memory:./kb"``, ``"lancedb:./kb"`` or ``"tantivy:./index"``.

A bare path (``"./kb"``) is not a spec: the error names the spec to use instead.

Store distributions register themselves under the entry-point group ``toolish_rag.stores``
(name -> ``open_store(location: str, *, embedder=None)``), so the CLI, the evaluation
command and the MCP server can open a third-party store without knowing its package. A factory
that also takes ``language=`` (the text analyzer's, `toolish_rag.analysis`) gets it when one is
chosen; factories written before languages existed keep working while none is.
"""

from __future__ import annotations

import inspect
import os
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

__all__ = ['ENTRY_POINT_GROUP', 'available_stores', 'default_store_name', 'open_store']

ENTRY_POINT_GROUP = 'toolish_rag.stores'


def available_stores() -> list[str]:
    """Names ``open_store`` accepts: ``memory`` plus every installed adapter."""
    return sorted({'memory', *(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))})


def default_store_name() -> str:
    """The store kind a spec-less default uses: ``lancedb`` when installed, else ``memory``."""
    return 'lancedb' if 'lancedb' in available_stores() else 'memory'


def open_store(spec: str, *, embedder: Any = None, language: str | None = None) -> Any:
    """Open the store named by ``spec`` (``NAME`` or ``NAME:LOCATION``).

    The result is a `toolish_rag.protocols.StoreLike` that is also a `DocumentStore` (every
    registered store can be searched and written). It is typed ``Any`` because Python has no
    intersection type: callers pass it both to `ToolishRag` (a ``StoreLike``) and to ``ingest``
    (a ``DocumentStore``), and narrowing to either would refuse the other use.

    A bare path (``./kb``, ``/data/kb``, an existing directory) is refused with the spec
    to write instead (``lancedb:./kb``) rather than opened as the default kind: which
    kind a directory holds cannot be told from its path, and the default kind depends on
    what is installed, so the same command could open a different store elsewhere.

    ``language`` is the text analyzer's language (``'de'``, ``'zh'``... see `toolish_rag.analysis`);
    it is passed to the store only when given, so ``None`` leaves each store its own default (or
    the language it was saved with).
    """
    name, _, location = spec.partition(':')
    name = name.strip().lower()
    if name == 'memory':
        from .memory import InMemoryStore

        return InMemoryStore(embedder=embedder, path=location or None, language=language)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            factory = ep.load()
            if language is None:
                return factory(location, embedder=embedder)
            if not _takes_language(factory):
                raise ValueError(f'the {name!r} store does not support choosing a text analysis language')
            return factory(location, embedder=embedder, language=language)
    raise ValueError(_unknown_store(spec, name))


def _takes_language(factory: Any) -> bool:
    """Whether a store factory accepts ``language=`` (by name or through ``**options``)."""
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):  # no signature to read (a builtin): let the call say
        return True
    return any(p.name == 'language' or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def _looks_like_path(spec: str) -> bool:
    """``./kb``, ``~/kb``, ``/data/kb``, ``kb/`` or, without a colon, an existing directory; not ``lancdb:./kb``."""
    head, colon, _ = spec.partition(':')
    return bool(head) and (
        head.startswith(('.', '~')) or '/' in head or os.sep in head or (not colon and Path(head).is_dir())
    )


def _unknown_store(spec: str, name: str) -> str:
    installed = ', '.join(available_stores())
    spec = spec.strip()
    if _looks_like_path(spec):
        return (
            f'{spec!r} is a path, not a store spec: write NAME:LOCATION, e.g. {default_store_name()}:{spec} '
            f'(installed stores: {installed})'
        )
    return (
        f'unknown store {name!r}; installed stores: {installed} '
        f'(a spec is NAME or NAME:LOCATION, e.g. {default_store_name()}:./kb)'
    )
