"""Stores shipped with the core (`InMemoryStore`, `Federated`) and the registry that opens any store by name."""

from .federated import Federated
from .memory import InMemoryStore
from .registry import available_stores, open_store

__all__ = ['Federated', 'InMemoryStore', 'available_stores', 'open_store']
