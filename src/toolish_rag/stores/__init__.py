"""Stores shipped with the core (`InMemoryStore`) and the registry that opens any store by name."""

from .memory import InMemoryStore
from .registry import available_stores, open_store

__all__ = ['InMemoryStore', 'available_stores', 'open_store']
