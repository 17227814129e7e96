"""Where `ToolishRag.capability` finds the capability class, which imports the toolset (never the reverse).

`toolish_rag.capability` registers its constructor here when it is imported; `toolish_rag`'s
``__init__`` imports it, so any use of the package has it registered. The toolset never imports
the capability module, not even inside a function, so there is no import cycle between them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ['capability_factory', 'register_capability_factory']

_FACTORY: list[Callable[..., Any]] = []


def register_capability_factory(factory: Callable[..., Any]) -> None:
    """Set the constructor ``rag.capability(**options)`` calls (``factory(rag, **options)``)."""
    _FACTORY[:] = [factory]


def capability_factory() -> Callable[..., Any]:
    """The registered constructor; a `RuntimeError` if `toolish_rag.capability` was never imported."""
    if not _FACTORY:
        raise RuntimeError('toolish_rag.capability is not imported: import toolish_rag first')
    return _FACTORY[0]
