"""A federation is a store: the conformance kit over federations of the shipped stores.

The full kit over memory + LanceDB members is `slow`; the default run keeps the scope checks over
memory members and the text-side kit over memory + LanceDB + Tantivy. See docs/federation.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolish_rag.protocols import DocumentStore, RegexSearch, ResultExpander, SectionReader, TextSearch
from toolish_rag.stores import InMemoryStore
from toolish_rag.stores.federated import Federated
from toolish_rag.testing import StoreConformance
from toolish_rag_lancedb import LanceDBStore
from toolish_rag_tantivy import TantivyStore


def _memory_pair(path: Path, embedder: Any) -> Federated:
    return Federated(
        {'docs': InMemoryStore(embedder, path=path / 'docs'), 'code': InMemoryStore(embedder, path=path / 'code')}
    )


def _three_kinds(path: Path, embedder: Any) -> Federated:
    return Federated(
        {
            'docs': InMemoryStore(embedder, path=path / 'docs'),
            'kb': LanceDBStore(path / 'kb', embedder=embedder),
            'code': TantivyStore(path / 'code'),
        }
    )


class TestFederatedMemory(StoreConformance):
    """Two memory members, documents spread by id hash: every search, scope, expansion and write check."""

    aspects = frozenset({'search', 'scope', 'writes', 'consistency'})

    async def make_store(self, path: Path, embedder: Any) -> Federated:
        return _memory_pair(path, embedder)


class TestFederatedThreeKinds(StoreConformance):
    """Memory + LanceDB + Tantivy: the protocols every member serves (a text-only member never adds
    to vector search, so the vector checks, which expect every record, are not the federation's
    contract here); the scope and write checks through each. Vector and hybrid over mixed members
    are checked by TestFederatedMemoryLance (slow) and tests/test_federated.py."""

    protocols = frozenset({TextSearch, RegexSearch, ResultExpander, SectionReader, DocumentStore})
    aspects = frozenset({'scope', 'writes'})

    async def make_store(self, path: Path, embedder: Any) -> Federated:
        return _three_kinds(path, embedder)

    async def reopen_store(self, path: Path, embedder: Any) -> Federated:
        return _three_kinds(path, embedder)


@pytest.mark.slow
class TestFederatedMemoryLance(StoreConformance):
    """The whole kit over a memory and a LanceDB member, reopened from disk."""

    async def make_store(self, path: Path, embedder: Any) -> Federated:
        return Federated(
            {'docs': InMemoryStore(embedder, path=path / 'docs'), 'kb': LanceDBStore(path / 'kb', embedder=embedder)}
        )

    async def reopen_store(self, path: Path, embedder: Any) -> Federated:
        return await self.make_store(path, embedder)


@pytest.mark.slow
class TestFederatedThreeKindsWhole(StoreConformance):
    """Every aspect of the text-side kit over memory + LanceDB + Tantivy, persistence included."""

    protocols = frozenset({TextSearch, RegexSearch, ResultExpander, SectionReader, DocumentStore})

    async def make_store(self, path: Path, embedder: Any) -> Federated:
        return _three_kinds(path, embedder)

    async def reopen_store(self, path: Path, embedder: Any) -> Federated:
        return _three_kinds(path, embedder)
