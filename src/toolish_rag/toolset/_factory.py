"""Where `ToolishRag.capability` finds the capability class, which imports the toolset (never the reverse).

`toolish_rag.capability` registers its constructor here when it is imported. `toolish_rag` loads
its names lazily (``import toolish_rag`` stays light), so the first ``rag.capability()`` may come
before anything imported the capability package: then it is loaded by name, as a plugin is. The
toolset holds no import of the capability module, so the layers keep their order and there is no
import cycle between them (docs/design.md).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ['capability_factory', 'register_capability_factory']

CAPABILITY_MODULE = 'toolish_rag.capability'
"""The module whose import registers the constructor."""

_FACTORY: list[Callable[..., Any]] = []


def register_capability_factory(factory: Callable[..., Any]) -> None:
    """Set the constructor ``rag.capability(**options)`` calls (``factory(rag, **options)``)."""
    _FACTORY[:] = [factory]


def capability_factory() -> Callable[..., Any]:
    """The registered constructor, loading `toolish_rag.capability` (which registers it) the first time."""
    if not _FACTORY:
        importlib.import_module(CAPABILITY_MODULE)
    return _FACTORY[0]
