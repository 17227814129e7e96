"""`InMemoryStore`: the reference store, implementing every capability exactly, in process memory.

Everything else in this package is internal (`_`-prefixed modules). See docs/stores/memory.md.
"""

from ._store import InMemoryStore

__all__ = ['InMemoryStore']
