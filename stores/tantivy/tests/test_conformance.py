"""The core conformance kit, against the store on disk and in RAM."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolish_rag.testing import StoreConformance
from toolish_rag_tantivy import TantivyStore


class TestTantivyOnDisk(StoreConformance):
    async def make_store(self, path: Path, embedder: Any) -> TantivyStore:
        return TantivyStore(path / 'index')

    async def reopen_store(self, path: Path, embedder: Any) -> TantivyStore:
        return TantivyStore(path / 'index')


class TestTantivyInRam(StoreConformance):
    async def make_store(self, path: Path, embedder: Any) -> TantivyStore:
        return TantivyStore()
