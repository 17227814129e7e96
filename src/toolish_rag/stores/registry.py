"""Open a store from a short spec such as ``"memory"``, ``"memory:./kb"``, ``"lancedb:./kb"`` or ``"tantivy:./index"``.

Store distributions register themselves under the entry-point group ``toolish_rag.stores``
(name -> ``open_store(location: str, *, embedder=None)``), so the CLI, the evaluation
command and the MCP server can open a third-party store without knowing its package.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any

__all__ = ['ENTRY_POINT_GROUP', 'available_stores', 'open_store']

ENTRY_POINT_GROUP = 'toolish_rag.stores'


def available_stores() -> list[str]:
    """Names ``open_store`` accepts: ``memory`` plus every installed adapter."""
    return sorted({'memory', *(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))})


def open_store(spec: str, *, embedder: Any = None) -> Any:
    """Open the store named by ``spec`` (``NAME`` or ``NAME:LOCATION``)."""
    name, _, location = spec.partition(':')
    name = name.strip().lower()
    if name == 'memory':
        from .memory import InMemoryStore

        return InMemoryStore(embedder=embedder, path=location or None)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            factory = ep.load()
            return factory(location, embedder=embedder)
    raise ValueError(f'unknown store {name!r}; installed stores: {", ".join(available_stores())}')
