"""Stores shipped with the core (`InMemoryStore`, `Federated`) and the registry that opens any store by name."""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # imported when first used (toolish_rag._lazy): the registry alone stays light
    from .federated import Federated
    from .memory import InMemoryStore
    from .registry import available_stores, open_store

__all__ = ['Federated', 'InMemoryStore', 'available_stores', 'open_store']

__getattr__, __dir__ = lazy_exports(
    __name__,
    {'.federated': ('Federated',), '.memory': ('InMemoryStore',), '.registry': ('available_stores', 'open_store')},
)
