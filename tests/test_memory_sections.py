"""`InMemoryStore` as a `SectionReader`, beyond the conformance kit.

* a larger, randomised store (titles that tie or differ only in case, section ids shared by
  several documents, a section title on many paths, documents without chunks) answers every
  request exactly as the reference functions do, whether the scope's mask is cached or not;
* once a scope's mask exists (a search built it), listing, outlining and reading evaluate the
  filter on no chunk at all; without it, a one-document read evaluates that document's chunks
  only, not the store's;
* a read while a writer replaces the document comes from one version;
* a persisted store, reopened after a replacement, answers from the new version.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from toolish_rag import Chunk, Document, DocumentBuilder
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.filters import EntityFilter, Filter, PropertyFilter as F
from toolish_rag.protocols import SectionReader
from toolish_rag.search import SearchRequest
from toolish_rag.sections import (
    MAX_PAGE_LIMIT,
    DocumentPageRequest,
    OutlineRequest,
    SectionReadRequest,
)
from toolish_rag.stores import InMemoryStore
from toolish_rag.stores.memory import _navigation, _snapshot
from toolish_rag.testing._corpus import VERSIONED_CHUNKS, version_of, versioned_document
from toolish_rag.testing.sections_contract import (
    NavigationCalls,
    SectionReference,
    outline_calls,
    pagination_calls,
    scope_calls,
    title_calls,
)

pytestmark = pytest.mark.asyncio

_TITLES = ['Guide', 'guide', 'GUIDE', 'Straße', 'Strasse', 'Ärger', 'arger', 'Zulu', 'ﬁnal', 'final']
_SECTION_TITLES = ['Intro', 'Setup', 'Usage', 'Intro ', 'FAQ']


def _shared_sections(document: Document) -> Document:
    """``document`` with its section ids renamed ``shared-sN``: the same ids as in other such documents."""

    def rename(section_id: str) -> str:
        return 'shared-' + section_id.rsplit('-', 1)[1]

    sections = tuple(
        s.model_copy(update={'id': rename(s.id), 'parent_id': s.parent_id and rename(s.parent_id)})
        for s in document.sections
    )
    chunks = tuple(
        c.model_copy(
            update={
                'section_id': c.section_id and rename(c.section_id),
                'section_ids': tuple(rename(i) for i in c.section_ids),
            }
        )
        for c in document.chunks
    )
    return Document(**{**dict(document), 'sections': sections, 'chunks': chunks})


def random_corpus(seed: int, documents: int) -> list[Document]:
    """``documents`` random documents: nested sections, chunks before any heading, typed metadata."""
    rng = random.Random(seed)
    out: list[Document] = []
    for d in range(documents):
        b = DocumentBuilder(
            f'file:///random/{seed}/{d}.md',
            rng.choice(_TITLES),
            metadata={'tenant': rng.choice(['a', 'b', 'c']), 'rank': d, 'weight': d + 0.5, 'draft': d % 2 == 0},
        )
        sections: list[str] = []
        for k in range(rng.randint(1, 12)):
            if rng.random() < 0.3 or not sections:
                parent = rng.choice([None, *sections])
                sections.append(b.section(rng.choice(_SECTION_TITLES), parent=parent))
            section = rng.choice([*sections, None]) if rng.random() < 0.2 else sections[-1]
            b.add_chunk(section, f'chunk {k} of {d}', metadata={'k': k, 'tenant': rng.choice(['a', 'b', 'c'])})
        document = b.build()
        out.append(_shared_sections(document) if d % 7 == 3 else document)
    empty = DocumentBuilder('file:///random/empty.md', 'Guide', metadata={'tenant': 'a'})
    empty.section('Intro')
    out.append(empty.build())  # no chunks: never listed (no chunk can be in scope)
    return out


_FILTERS: list[Filter | None] = [
    None,
    F.eq('tenant', 'a'),
    F.eq('tenant', 'b') & F.gte('k', 3),
    F.lt('rank', 5) | F.eq('k', 0),
    F.eq('draft', True),
    EntityFilter.has_any_label('Nothing'),
]


def _calls(documents: list[Document], f: Filter | None) -> NavigationCalls:
    with_chunks = [d for d in documents if d.chunks]
    return (
        scope_calls(with_chunks, f)
        + pagination_calls(with_chunks[:3], f)
        + outline_calls(with_chunks[:4], f)
        + title_calls(documents[-3:], f, ['GUIDE', 'strasse', 'ß', 'ärger', 'FINAL', 'fi', 'x'])
    )


async def _loaded(documents: list[Document], path: Path | None = None) -> InMemoryStore:
    store = InMemoryStore(HashingEmbeddingModel(16), path=path)
    await store.upsert(documents)
    return store


async def test_a_random_store_answers_like_the_reference_with_and_without_cached_masks() -> None:
    documents = random_corpus(7, 40)
    store = await _loaded(documents)
    assert isinstance(store, SectionReader)
    reference = SectionReference.of(documents)
    problems: list[str] = []
    for f in _FILTERS:
        problems += await _calls(documents, f).problems(store, reference)  # masks built as needed
    fresh = await _loaded(documents)
    for f in _FILTERS:
        if f is not None:
            await fresh.vector_search(SearchRequest('chunk', 1, f))  # the scope's mask, cached first
        problems += await _calls(documents, f).problems(fresh, reference)
    assert not problems, '\n'.join(problems[:20])


@pytest.fixture
def count_matches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times the memory store evaluates a filter on one record (the real evaluator, counted)."""
    calls = [0]
    real: Callable[..., bool] = _snapshot.matches

    def counted(*args: Any) -> bool:
        calls[0] += 1
        return real(*args)

    monkeypatch.setattr(_snapshot, 'matches', counted)
    monkeypatch.setattr(_navigation, 'matches', counted)
    return calls


async def test_a_cached_scope_evaluates_the_filter_on_no_chunk(count_matches: list[int]) -> None:
    documents = random_corpus(11, 400)
    store = await _loaded(documents)
    records = sum(len(d.chunks) for d in documents)
    acme = F.eq('tenant', 'a')
    await store.vector_search(SearchRequest('chunk', 3, acme))
    assert count_matches[0] == records  # the mask: one evaluation per record, once
    count_matches[0] = 0
    page = await store.document_page(DocumentPageRequest(filter=acme, limit=MAX_PAGE_LIMIT))
    big = max(documents, key=lambda d: len(d.chunks))
    await store.read_section(SectionReadRequest(document_id=big.id, filter=acme, offset=1, limit=2))
    await store.chunk_outlines(OutlineRequest(section_title='Intro', filter=acme, limit=5))
    await store.document_page(DocumentPageRequest(filter=acme, title_contains='guide'))
    assert page.total > 10
    assert count_matches[0] == 0


async def test_without_a_cached_mask_one_document_is_evaluated_alone(count_matches: list[int]) -> None:
    documents = random_corpus(13, 400)
    store = await _loaded(documents)
    big = max(documents, key=lambda d: len(d.chunks))
    f = F.gte('k', 2)
    page = await store.read_section(SectionReadRequest(document_id=big.id, filter=f))
    assert count_matches[0] == len(big.chunks)
    assert [c.id for c in page.chunks] == [c.id for c in big.chunks if c.metadata['k'] >= 2]
    count_matches[0] = 0
    listing = await store.document_page(DocumentPageRequest(filter=f, document_id=big.id))
    assert count_matches[0] == len(big.chunks)
    assert listing.documents[0].chunk_count == page.total


async def test_a_read_during_a_rewrite_comes_from_one_version() -> None:
    """Each answer is computed from the one snapshot it started with, however the writes interleave."""
    store = await _loaded([versioned_document(0)])
    document_id = versioned_document(0).id
    seen: set[int] = set()
    problems: list[str] = []

    async def write() -> None:
        for version in range(1, 16):
            await store.upsert([versioned_document(version)])
            await asyncio.sleep(0)

    async def read() -> None:
        while not writer.done():
            page = await store.read_section(SectionReadRequest(document_id=document_id, limit=MAX_PAGE_LIMIT))
            outline = await store.chunk_outlines(OutlineRequest(document_id=document_id))
            versions = {v for c in page.chunks for v in version_of(c.urtext)}
            titles = {v for o in outline for v in version_of(' '.join(o.section_path))}
            seen.update(versions)
            if len(versions) != 1 or page.total != VERSIONED_CHUNKS or len(titles) != 1 or len(outline) != 12:
                problems.append(f'{sorted(versions)} / {sorted(titles)}, total {page.total}')

    writer = asyncio.create_task(write())
    await asyncio.gather(writer, read(), read())
    assert not problems, problems[:5]
    assert len(seen) > 1


async def test_a_reopened_store_answers_from_the_replacing_version(tmp_path: Path) -> None:
    documents = random_corpus(17, 12)
    store = await _loaded(documents, tmp_path)
    replaced = random_corpus(18, 12)[:4]
    replaced = [
        Document(**{**dict(new), 'id': old.id, 'chunks': tuple(_moved(c, old) for c in new.chunks)})
        for old, new in zip(documents, replaced, strict=False)
    ]
    await store.upsert(replaced)
    await store.delete_documents([documents[5].id])
    current = [*replaced, *documents[len(replaced) : 5], *documents[6:]]
    reopened = InMemoryStore(HashingEmbeddingModel(16), path=tmp_path)
    reference = SectionReference.of(current)
    problems: list[str] = []
    for f in _FILTERS[:3]:
        problems += await _calls(current, f).problems(reopened, reference)
    assert not problems, '\n'.join(problems[:20])


def _moved(chunk: Chunk, document: Document) -> Chunk:
    """``chunk`` as a chunk of ``document`` (another id, uri; its own text and sections)."""
    return chunk.model_copy(update={'id': f'{document.id}-new-{chunk.sequence_number}', 'document_id': document.id})
