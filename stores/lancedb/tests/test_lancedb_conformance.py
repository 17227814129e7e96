"""The core conformance kit, run against LanceDBStore (local directory)."""

from __future__ import annotations

import pathlib
from typing import Any

from toolish_rag.testing import StoreConformance
from toolish_rag_lancedb import LanceDBStore


class TestLanceDBConformance(StoreConformance):
    async def make_store(self, path: pathlib.Path, embedder: Any) -> LanceDBStore:
        return LanceDBStore(path, embedder=embedder)

    async def reopen_store(self, path: pathlib.Path, embedder: Any) -> LanceDBStore:
        return LanceDBStore(path, embedder=embedder)
