"""The core conformance kit: whole against the store on disk, what RAM changes in RAM (docs/testing.md)."""

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
    """A RAM directory changes only where the segments live: how writes commit and readers reload.
    Searches, scope and navigation run the same code over the same segments as TestTantivyOnDisk."""

    aspects = frozenset({'writes', 'consistency'})

    async def make_store(self, path: Path, embedder: Any) -> TantivyStore:
        return TantivyStore()
