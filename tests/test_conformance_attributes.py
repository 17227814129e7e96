"""The conformance kit fails a store whose optional attributes misstate it, and names the attribute.

Each store below is an `InMemoryStore` that states one attribute wrongly: an embedder other than the
one its vectors come from, a text analyzer other than the one it indexes with, a scan limit it does
not apply, an ``upgrade`` that never says it is current, a ``reembed`` that embeds nothing. The
honest `InMemoryStore` passes the same checks (`test_conformance_memory.py`), so each failure is the
misstatement's doing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.embeddings import Embedder

from tests.helpers import InnerWrites
from toolish_rag import Document, Entity, RegexRequest, SearchHit, SearchRequest
from toolish_rag.analysis import analyzer_for
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.protocols import (
    HasEmbedder,
    HasEmbeddingWindows,
    HasRegexScanLimit,
    HasTextAnalyzer,
    Reembeddable,
    RegexSearch,
    TextSearch,
    Upgradable,
    VectorSearch,
)
from toolish_rag.stores import InMemoryStore
from toolish_rag.testing import ConformanceFailure, check_store
from toolish_rag.testing._kit import ATTRIBUTES


class Stating(InnerWrites):
    """An `InMemoryStore` (writes and searches delegated) that states the given attributes instead of its own."""

    text_query_syntax = 'Plain words.'

    def __init__(self, inner: InMemoryStore, **stated: Any) -> None:
        self.inner = inner
        vars(self).update(stated)

    async def upsert(self, items: Iterable[Document | Entity]) -> None:
        await self.inner.upsert(items)

    async def vector_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        return list(await self.inner.vector_search(request))

    async def text_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        return list(await self.inner.text_search(request))

    async def regex_search(self, request: RegexRequest) -> Sequence[SearchHit]:
        return list(await self.inner.regex_search(request))


def other_embedder(embedder: Any) -> Stating:  # its vectors come from the kit's embedder, not this one
    return Stating(InMemoryStore(embedder), embedder=Embedder(HashingEmbeddingModel(32)))


def other_analyzer(embedder: Any) -> Stating:  # indexes with 'auto' (English stems), states no stemming
    return Stating(InMemoryStore(embedder), text_analyzer=analyzer_for('none'))


def unapplied_scan_limit(embedder: Any) -> Stating:  # states a limit, scans everything
    return Stating(InMemoryStore(embedder), regex_scan_limit=3)


class NeverCurrent(InMemoryStore):
    async def upgrade(self) -> list[str]:
        return ['wrote the manifest']


class ReembedsNothing(InMemoryStore):
    async def reembed(self, embedder: Any) -> int:
        return 0


CASES = [
    (other_embedder, HasEmbedder, VectorSearch, 'test_embedder_gives_the_stored_vectors', 'embedder gives cosine'),
    (other_analyzer, HasTextAnalyzer, TextSearch, 'test_text_analyzer_cuts_the_searched_text', 'none of the query'),
    (unapplied_scan_limit, HasRegexScanLimit, RegexSearch, 'test_regex_scan_limit_is_the_one_applied', 'over its'),
    (NeverCurrent, Upgradable, VectorSearch, 'test_upgrade_of_a_current_store_keeps_every_record', 'already current'),
    (
        ReembedsNothing,
        Reembeddable,
        VectorSearch,
        'test_reembed_embeds_every_record_with_the_new_embedder',
        'returned 0',
    ),
]


@pytest.mark.parametrize(
    ('make', 'attribute', 'search', 'check', 'said'), CASES, ids=[c[3].removeprefix('test_') for c in CASES]
)
async def test_the_kit_fails_a_misstated_attribute(
    make: Callable[[Any], Any], attribute: type, search: type, check: str, said: str
) -> None:
    with pytest.raises(ConformanceFailure) as failure:
        await check_store(
            lambda path, embedder: make(embedder),
            protocols={attribute, search},
            aspects={'search', 'writes', 'persistence'},
        )
    report = str(failure.value)
    assert check in report and said in report, report


async def test_the_honest_store_passes_the_attribute_checks() -> None:
    attributes = {HasEmbedder, HasTextAnalyzer, HasRegexScanLimit, Upgradable, Reembeddable}
    report = await check_store(
        lambda path, embedder: InMemoryStore(embedder),
        protocols={*attributes, VectorSearch, TextSearch, RegexSearch},
        aspects={'search', 'writes', 'persistence'},
    )
    passed = {name.split('[')[0] for name in report.passed}
    assert {c[3] for c in CASES if c[0] is not unapplied_scan_limit} <= passed, report.summary()


def test_the_shipped_stores_state_their_attributes(tmp_path: Path) -> None:
    """What docs/custom-store.md#optional-attributes says each store states (Postgres: its conformance run)."""
    from toolish_rag_lancedb import LanceDBStore
    from toolish_rag_tantivy import PartitionedTantivyStore, TantivyStore

    hashing = HashingEmbeddingModel(16)
    stores = {
        InMemoryStore(hashing): {HasEmbedder, HasTextAnalyzer, HasEmbeddingWindows, Upgradable, Reembeddable},
        LanceDBStore(tmp_path / 'lance', embedder=hashing): set(ATTRIBUTES),
        TantivyStore(): {HasTextAnalyzer, HasRegexScanLimit, Upgradable},
        PartitionedTantivyStore(partition_key='tenant'): {HasTextAnalyzer, HasRegexScanLimit},
    }
    for store, stated in stores.items():
        assert {p for p in ATTRIBUTES if isinstance(store, p)} == stated, type(store).__name__
