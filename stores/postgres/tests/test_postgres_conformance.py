"""The core conformance kit, whole, against PostgresStore on a real server (one schema per store)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from toolish_rag.testing import StoreConformance
from toolish_rag_postgres import PostgresStore


class TestPostgresConformance(StoreConformance):
    @pytest.fixture(autouse=True)
    def _server(self, postgres_uri: str) -> None:
        self.uri = postgres_uri

    async def make_store(self, path: Path, embedder: Any) -> PostgresStore:
        return PostgresStore(self.uri, schema=schema_for(path), embedder=embedder)

    async def reopen_store(self, path: Path, embedder: Any) -> PostgresStore:
        return PostgresStore(self.uri, schema=schema_for(path), embedder=embedder)


def schema_for(path: Path) -> str:
    """One schema per store folder the kit hands out (the same folder reopens the same store)."""
    return 's_' + hashlib.sha1(str(path).encode()).hexdigest()[:16]
