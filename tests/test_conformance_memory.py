"""The reference store passes the conformance kit it defines: whole in memory, and what a path changes.

See docs/testing.md ("Conformance kit variants").
"""

from pathlib import Path
from typing import Any

from toolish_rag.stores import InMemoryStore
from toolish_rag.testing import StoreConformance


class TestInMemoryStore(StoreConformance):
    async def make_store(self, path: Path, embedder: Any) -> InMemoryStore:
        return InMemoryStore(embedder)


class TestPersistedInMemoryStore(StoreConformance):
    """A path changes how writes are saved and how a store is loaded; every read is served from the
    same in-memory snapshot as TestInMemoryStore's, so searches, scope and navigation are not run again."""

    aspects = frozenset({'writes', 'persistence', 'consistency'})

    async def make_store(self, path: Path, embedder: Any) -> InMemoryStore:
        return InMemoryStore(embedder, path=path)

    async def reopen_store(self, path: Path, embedder: Any) -> InMemoryStore:
        return InMemoryStore(embedder, path=path)
