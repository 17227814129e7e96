"""The reference store passes the conformance kit it defines, in memory and persisted."""

from pathlib import Path
from typing import Any

from toolish_rag.stores import InMemoryStore
from toolish_rag.testing import StoreConformance


class TestInMemoryStore(StoreConformance):
    async def make_store(self, path: Path, embedder: Any) -> InMemoryStore:
        return InMemoryStore(embedder)


class TestPersistedInMemoryStore(StoreConformance):
    async def make_store(self, path: Path, embedder: Any) -> InMemoryStore:
        return InMemoryStore(embedder, path=path)

    async def reopen_store(self, path: Path, embedder: Any) -> InMemoryStore:
        return InMemoryStore(embedder, path=path)
