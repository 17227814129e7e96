"""The kit runs just what a subclass chooses, skips what a store lacks by name, and check_store reports it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from toolish_rag import Document, Entity, SearchHit, SearchRequest
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.protocols import DocumentInfo, DocumentStore, ResultExpander, TextSearch
from toolish_rag.stores import InMemoryStore
from toolish_rag.testing import ConformanceFailure, StoreConformance, check_store
from toolish_rag.testing._kit import check_of, kit_tests


def collected(cls: type) -> set[str]:
    """The kit tests pytest collects on ``cls`` (a left-out one is None there)."""
    return {name for name in kit_tests(cls) if getattr(cls, name) is not None}


EVERY = collected(StoreConformance)


class Memory(StoreConformance):
    async def make_store(self, path: Path, embedder: Any) -> InMemoryStore:
        return InMemoryStore(embedder)


def test_the_kit_is_whole_by_default() -> None:
    # 237 collected: 3 of them run under each of the 48 edge filters, 1 under no filter and each of them;
    # 6 check the optional attribute protocols, 1 upsert_with_vectors (PrecomputedVectorsWriter)
    assert len(EVERY) == 48, sorted(EVERY)
    assert collected(Memory) == EVERY


def test_aspects_and_protocols_choose_what_is_collected() -> None:
    class Writes(Memory):
        aspects = frozenset({'writes'})

    class Text(Memory):
        protocols = frozenset({TextSearch, DocumentStore})

    chosen = collected(Writes)
    assert chosen and all(check_of(getattr(Writes, n)).aspect == 'writes' for n in chosen)  # type: ignore[union-attr]
    assert 'test_list_documents' in chosen and 'test_filter_semantics_match_reference' not in chosen
    text = collected(Text)
    assert {'test_text_search_finds_the_right_chunk', 'test_list_documents'} <= text
    assert not {n for n in text if 'section_reader' in n or 'graph' in n or 'regex' in n or 'vector' in n}
    assert 'test_expand_by_sequence_and_section' not in text


def test_a_test_left_out_by_name_and_taken_back_by_a_subclass() -> None:
    class Without(Memory):
        aspects = frozenset({'writes', 'scope'})
        test_list_documents = None

    class Again(Without):
        aspects = None

    assert 'test_list_documents' not in collected(Without) and 'test_upsert_is_idempotent' in collected(Without)
    assert collected(Again) == EVERY


def test_an_unknown_aspect_is_refused() -> None:
    with pytest.raises(TypeError, match='unknown aspects'):

        class Typo(Memory):
            aspects = frozenset({'write'})


class Forgetful:
    """A text store that drops entities and matches every word only: what the kit must catch."""

    text_query_syntax = 'Plain words; a record matches when it contains every word.'

    def __init__(self) -> None:
        self.docs: dict[str, Document] = {}

    async def upsert(self, items: Iterable[Document | Entity]) -> None:
        self.docs.update((i.id, i) for i in items if isinstance(i, Document))

    async def delete_documents(self, document_ids: Iterable[str]) -> int:
        return sum(self.docs.pop(d, None) is not None for d in document_ids)

    async def delete_entities(self, entity_ids: Iterable[str]) -> int:
        return 0

    async def list_documents(self) -> Sequence[DocumentInfo]:
        return [
            DocumentInfo(d.id, d.uri, d.title, d.fingerprint, len(d.chunks), dict(d.metadata))
            for d in self.docs.values()
        ]

    async def text_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        words = request.query.lower().split()
        chunks = [c for d in self.docs.values() for c in d.chunks if all(w in c.text.lower() for w in words)]
        return [SearchHit(c, 1.0) for c in chunks][: request.top_k]


async def test_check_store_reports_failures_with_what_to_do_and_skips_by_protocol() -> None:
    with pytest.raises(ConformanceFailure) as caught:
        await check_store(lambda path, embedder: Forgetful())
    report = caught.value.report
    assert report.failed and report.passed
    assert 'it must count the one that existed' in report.failed['test_delete_documents_and_entities']
    assert (
        'returns top_k in-scope hits whenever that many match'
        in report.failed['test_exactly_top_k_under_one_percent_filter']
    )
    assert report.skipped['test_expand_by_sequence_and_section'] == 'Forgetful does not implement ResultExpander'
    assert 'FAILED test_delete_documents_and_entities' in str(caught.value)


async def test_check_store_passes_the_reference_store_for_a_subset() -> None:
    report = await check_store(
        lambda path, embedder: InMemoryStore(HashingEmbeddingModel(16)),
        protocols={ResultExpander, DocumentStore},
        aspects={'search', 'writes'},
    )
    assert not report.failed and 'test_expand_by_sequence_and_section' in report.passed
    assert not any('filter' in name for name in report.passed)
