"""LanceDBStore as a `SectionReader`: every answer equals the reference over the stored records.

The reference functions of `toolish_rag.sections` define listing, outlining and reading a
section; the store answers them with LanceDB queries (`toolish_rag_lancedb._sections`). The
corpus mixes the conformance corpus (typed chunk metadata, labels), the navigation corpus
(titles that case-fold, tie and sort differently under ``str.lower``; chunks before the first
heading; partial scopes) and a document whose ids, titles and values hold quotes, backslashes
and percent signs. Filters include ones the store pushes down and ones `supports_filter`
refuses, which a section reader must still honour exactly.
"""

from __future__ import annotations

import asyncio
import pathlib
from collections.abc import Iterator, Sequence

import pytest

from toolish_rag.builder import DocumentBuilder
from toolish_rag.content import Chunk, Document, Entity, Metadata
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.filters import EntityFilter, Filter, PropertyFilter as F, filter_depth
from toolish_rag.protocols import SectionReader
from toolish_rag.sections import (
    DocumentPageRequest,
    OutlineRequest,
    SectionReadRequest,
    reference_document_page,
    reference_outline,
    reference_section_page,
)
from toolish_rag.testing._corpus import (
    conformance_corpus,
    conformance_entities,
    navigation_corpus,
    version_of,
    versioned_document,
)
from toolish_rag_lancedb import LanceDBStore
from toolish_rag_lancedb._queries import PinnedRecords
from toolish_rag_lancedb._sections import ChunkSelection

HOSTILE_ID = 'it\'s a \\ "quoted" 100% _id_'


def hostile_document() -> Document:
    """Ids, titles and values that SQL must carry as data: quotes, backslashes, ``%`` and ``_``."""
    b = DocumentBuilder(
        'file:///hostile.md',
        "O'Brien's 100% \\ notes",
        id=HOSTILE_ID,
        metadata={'tenant': "o'brien", 'count': 3, 'ratio': 0.5, 'ok': True, 'mixed': ['a', 1, 2.5, False]},
    )
    b.add_chunk(None, 'zebrafish words before any heading')
    top = b.section("It's 50% \\ done")
    b.add_chunk(top, 'zebrafish top words', metadata={'tenant': "o'brien"})
    inner = b.section('Inner "quoted" _part_', parent=top)
    for k in range(3):
        b.add_chunk(inner, f'zebrafish inner words {k}', metadata={'tenant': "o'brien", 'k': k})
    b.add_chunk(b.section('Details'), 'zebrafish closing words', metadata={'tenant': 'elsewhere'})
    return b.build()


def corpus() -> list[Document]:
    return [*conformance_corpus(), *navigation_corpus(), hostile_document()]


PUSHED: list[tuple[str, Filter | None]] = [
    ('no filter', None),
    ('tenant', F.eq('tenant', 'acme')),
    ('partial scope', F.eq('region', 'south')),
    ('quoted value', F.eq('tenant', "o'brien")),
    ('label', EntityFilter.has_any_label('Note')),
    ('negation keeps missing', ~F.exists('tier')),
    ('or', F.eq('tenant', 'initech') | F.eq('flag', True)),
    ('nothing', F.eq('tenant', 'nobody')),
]
"""Scopes the store translates into SQL."""

REFUSED: list[tuple[str, Filter]] = [
    ('or with a NUL value', F.eq('tenant', 'acme') | F.eq('code', 'x\x00y')),
    ('and with a NUL value', F.gte('n', 3) & (F.eq('name', 'item-05') | F.eq('code', 'x\x00'))),
    ('beyond 64 bits', F.lt('n', 2**70)),
    ('nested too deep', ~~~~~~~~~~F.eq('region', 'south')),
]
"""Scopes `supports_filter` refuses (no SQL literal carries the value, or LanceDB cannot parse
the nesting): the store evaluates them in Python on the candidates it reads."""

FILTERS = [*PUSHED, *REFUSED]
FILTER_IDS = [name for name, _ in FILTERS]


@pytest.fixture(scope='module')
def stored(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The corpus (and entities, which navigation never shows) written once, for read-only tests."""
    path = tmp_path_factory.mktemp('sections') / 'kb'

    async def write() -> None:
        async with LanceDBStore(path, embedder=HashingEmbeddingModel(64)) as store:
            await store.upsert([*corpus(), *conformance_entities()])

    asyncio.run(write())
    return path


@pytest.fixture
def store(stored: pathlib.Path) -> Iterator[LanceDBStore]:
    yield LanceDBStore(stored, embedder=HashingEmbeddingModel(64))


def records(documents: Sequence[Document] | None = None) -> list[Chunk | Entity]:
    return [*(c for d in (documents or corpus()) for c in d.chunks), *conformance_entities()]


def metadata_of(documents: Sequence[Document] | None = None) -> dict[str, Metadata]:
    return {d.id: dict(d.metadata) for d in (documents or corpus())}


def test_the_refused_filters_are_refused_and_the_others_pushed() -> None:
    store = LanceDBStore('unused', embedder=HashingEmbeddingModel(64))
    assert all(store.supports_filter(f) for _, f in PUSHED if f is not None)
    assert not any(store.supports_filter(f) for _, f in REFUSED)
    assert filter_depth(REFUSED[-1][1]) > 8
    assert isinstance(store, SectionReader)


def test_a_refused_conjunction_still_narrows_in_sql() -> None:
    """The conjuncts LanceDB can evaluate go into the ``where``; Python evaluates the whole filter."""
    columns = frozenset({'md__n__num', 'md__code__str', 'md__name__str'})
    pinned = PinnedRecords(table=None, version=0, columns=columns)
    scope = F.gte('n', 3) & (F.eq('name', 'item-05') | F.eq('code', 'x\x00'))
    selection = ChunkSelection.build(pinned, scope, document_ids=[HOSTILE_ID], section_id='a\x00b')
    assert '`md__n__num` >= 3.0' in selection.where and 'item-05' not in selection.where
    assert selection.residual == scope and not selection.exact
    # An id no SQL literal carries is compared in Python; a quotable one is pushed down, quoted.
    assert selection.section_id == 'a\x00b' and 'array_has' not in selection.where
    assert "document_id IN ('it''s a \\ \"quoted\" 100% _id_')" in selection.where
    exact = ChunkSelection.build(pinned, F.eq('n', 3), document_ids=['d'], section_id='s')
    assert exact.exact and exact.where.endswith("document_id IN ('d') AND array_has(section_ids, 's')")


@pytest.mark.parametrize(('name', 'scope'), FILTERS, ids=FILTER_IDS)
async def test_document_pages_equal_the_reference(store: LanceDBStore, name: str, scope: Filter | None) -> None:
    requests = [
        DocumentPageRequest(filter=scope),
        DocumentPageRequest(filter=scope, offset=2, limit=3),
        DocumentPageRequest(filter=scope, offset=8, limit=5),
        DocumentPageRequest(filter=scope, limit=0),
        DocumentPageRequest(filter=scope, offset=50),
        DocumentPageRequest(filter=scope, title_contains='STRASSE'),
        DocumentPageRequest(filter=scope, title_contains='notes', limit=2),
        DocumentPageRequest(filter=scope, title_contains="o'brien's 100% \\"),
        DocumentPageRequest(filter=scope, title_contains='%'),
        *(DocumentPageRequest(filter=scope, document_id=d.id) for d in corpus()),
    ]
    for request in requests:
        assert await store.document_page(request) == reference_document_page(records(), request, metadata_of()), request


@pytest.mark.parametrize(('name', 'scope'), FILTERS, ids=FILTER_IDS)
async def test_outlines_equal_the_reference(store: LanceDBStore, name: str, scope: Filter | None) -> None:
    requests: list[OutlineRequest] = []
    for doc in corpus():
        requests.append(OutlineRequest(document_id=doc.id, filter=scope))
        requests.append(OutlineRequest(document_id=doc.id, filter=scope, limit=2))
        for section in doc.sections:
            requests.append(OutlineRequest(section_id=section.id, filter=scope))
            requests.append(OutlineRequest(document_id=doc.id, section_id=section.id, filter=scope, limit=1))
            requests.append(OutlineRequest(document_id=doc.id, section_title=section.title, filter=scope))
    for title in ('Details', 'Common ground', "It's 50% \\ done", 'Inner "quoted" _part_', 'Inner %'):
        requests.append(OutlineRequest(section_title=title, filter=scope))
        requests.append(OutlineRequest(section_title=title, filter=scope, limit=3))
    for request in requests:
        assert list(await store.chunk_outlines(request)) == reference_outline(records(), request), request


@pytest.mark.parametrize(('name', 'scope'), FILTERS, ids=FILTER_IDS)
async def test_section_reads_equal_the_reference(store: LanceDBStore, name: str, scope: Filter | None) -> None:
    requests: list[SectionReadRequest] = []
    for doc in corpus():
        for offset, limit in ((0, 50), (1, 2), (3, 1), (0, 0), (40, 5)):
            requests.append(SectionReadRequest(document_id=doc.id, filter=scope, offset=offset, limit=limit))
        for section in doc.sections:
            requests.append(SectionReadRequest(section_id=section.id, filter=scope))
            requests.append(
                SectionReadRequest(section_id=section.id, document_id=doc.id, filter=scope, offset=1, limit=1)
            )
    for request in requests:
        assert await store.read_section(request) == reference_section_page(records(), request), request


async def test_pages_tile_the_whole_answer(store: LanceDBStore) -> None:
    scope = F.eq('region', 'south') | F.exists('n')
    whole = await store.document_page(DocumentPageRequest(filter=scope, limit=100))
    pages = [await store.document_page(DocumentPageRequest(filter=scope, offset=o, limit=3)) for o in range(0, 12, 3)]
    assert {p.total for p in pages} == {whole.total} and whole.total == 10  # all but the hostile document
    assert [d for p in pages for d in p.documents] == list(whole.documents)

    acme = conformance_corpus()[0]
    read = await store.read_section(SectionReadRequest(document_id=acme.id, limit=100))
    paged = [await store.read_section(SectionReadRequest(document_id=acme.id, offset=o, limit=3)) for o in (0, 3, 6)]
    assert [c.id for p in paged for c in p.chunks] == [c.id for c in read.chunks] == [c.id for c in acme.chunks]
    assert {p.total for p in paged} == {8}


async def test_a_refused_filter_is_honoured_exactly(store: LanceDBStore) -> None:
    """Python evaluates the filter the store cannot translate: counts and pages are the exact scope's."""
    scope = F.eq('tenant', 'acme') | F.eq('code', 'x\x00y')
    assert not store.supports_filter(scope)
    acme = conformance_corpus()[0]
    page = await store.document_page(DocumentPageRequest(filter=scope))
    assert [(d.id, d.chunk_count, d.section_count, d.metadata) for d in page.documents] == [
        (acme.id, 8, 3, {'tenant': 'acme', 'year': 2022})
    ]
    assert page.total == 1
    read = await store.read_section(SectionReadRequest(document_id=acme.id, filter=scope, offset=2, limit=3))
    assert ([c.id for c in read.chunks], read.total) == ([c.id for c in acme.chunks[2:5]], 8)
    globex = conformance_corpus()[1]
    assert await store.chunk_outlines(OutlineRequest(document_id=globex.id, filter=scope)) == []
    # A conjunct that does translate narrows in SQL; the whole filter still decides.
    half = F.eq('tenant', 'acme') & (F.in_('name', ['item-03', 'item-06']) | F.eq('code', 'x\x00')) & F.gte('n', 3)
    outline = await store.chunk_outlines(OutlineRequest(document_id=acme.id, filter=half))
    assert [o.id for o in outline] == [acme.chunks[3].id, acme.chunks[6].id]


async def test_hostile_ids_and_titles_are_data(store: LanceDBStore) -> None:
    doc = hostile_document()
    page = await store.document_page(DocumentPageRequest(document_id=HOSTILE_ID))
    assert [(d.id, d.title, d.chunk_count, d.section_count) for d in page.documents] == [(HOSTILE_ID, doc.title, 6, 3)]
    assert page.documents[0].metadata == doc.metadata
    inner = doc.sections[1]
    assert "'" in inner.id and '\\' in inner.id and '%' in inner.id
    read = await store.read_section(SectionReadRequest(section_id=inner.id))
    assert [c.id for c in read.chunks] == [c.id for c in doc.chunks[2:5]]
    outline = await store.chunk_outlines(OutlineRequest(section_title=inner.title))
    assert [o.section_path for o in outline] == [(doc.sections[0].title, inner.title)] * 3
    # Near misses: a LIKE wildcard or an injection never widens a lookup.
    for near in (HOSTILE_ID.replace('%', 'x'), HOSTILE_ID.replace('%', '%%'), HOSTILE_ID[:-1] + '%', "x' OR '1'='1"):
        assert (await store.document_page(DocumentPageRequest(document_id=near))).total == 0
        assert (await store.read_section(SectionReadRequest(document_id=near))).total == 0
        assert await store.chunk_outlines(OutlineRequest(section_id=near)) == []


async def test_unknown_and_out_of_scope_ids_give_empty_answers(store: LanceDBStore) -> None:
    acme, globex, _ = conformance_corpus()
    for unknown in ('no-such-id', 'a\x00b', '\ud800', ''):
        assert (await store.document_page(DocumentPageRequest(document_id=unknown))).total == 0
        assert await store.chunk_outlines(OutlineRequest(document_id=unknown)) == []
        assert await store.chunk_outlines(OutlineRequest(section_id=unknown)) == []
        assert await store.chunk_outlines(OutlineRequest(section_title=unknown)) == []
        page = await store.read_section(SectionReadRequest(section_id=unknown))
        assert (page.chunks, page.total) == ((), 0)
    # A section of one document asked for under another, and a document outside the scope.
    mismatched = await store.read_section(SectionReadRequest(section_id=acme.sections[0].id, document_id=globex.id))
    assert mismatched.total == 0
    scope = F.eq('tenant', 'globex')
    assert (await store.document_page(DocumentPageRequest(document_id=acme.id, filter=scope))).total == 0
    assert (await store.read_section(SectionReadRequest(document_id=acme.id, filter=scope))).total == 0
    assert await store.chunk_outlines(OutlineRequest(section_id=acme.sections[1].id, filter=scope)) == []


async def test_entities_never_appear(store: LanceDBStore) -> None:
    scope = F.eq('tenant', 'acme')  # both entities carry it too
    entity_ids = {e.id for e in conformance_entities()}
    outline = await store.chunk_outlines(OutlineRequest(section_title='Overview', filter=scope))
    assert outline and not entity_ids & {o.id for o in outline}
    page = await store.document_page(DocumentPageRequest(filter=EntityFilter.has_any_label('Person', 'Company')))
    assert page.total == 0


async def test_an_empty_store_answers_empty(tmp_path: pathlib.Path) -> None:
    store = LanceDBStore(tmp_path / 'empty', embedder=HashingEmbeddingModel(64))
    assert await store.document_page(DocumentPageRequest()) == reference_document_page([], DocumentPageRequest())
    assert await store.chunk_outlines(OutlineRequest(document_id='x')) == []
    assert (await store.read_section(SectionReadRequest(document_id='x'))).total == 0
    # Documents without chunks (or only entities) are in no scope.
    b = DocumentBuilder('file:///empty.md', 'Empty')
    await store.upsert([b.build(), *conformance_entities()])
    assert (await store.document_page(DocumentPageRequest())).total == 0


async def test_replaced_and_deleted_documents(tmp_path: pathlib.Path) -> None:
    store = LanceDBStore(tmp_path / 'kb', embedder=HashingEmbeddingModel(64))
    others = conformance_corpus()
    await store.upsert([versioned_document(1), *others])
    old = versioned_document(1)
    await store.upsert([versioned_document(2)])
    new = versioned_document(2)
    live = [new, *others]
    request = DocumentPageRequest(title_contains='versioned')
    page = await store.document_page(request)
    assert page == reference_document_page(records(live), request, metadata_of(live))
    assert [d.title for d in page.documents] == ['Versioned v2']
    outline = await store.chunk_outlines(OutlineRequest(document_id=new.id))
    assert outline == reference_outline(records(live), OutlineRequest(document_id=new.id))
    assert {version for o in outline for title in o.section_path for version in version_of(title)} == {2}
    for section in old.sections:  # same section ids, the new version's chunks only
        read = await store.read_section(SectionReadRequest(section_id=section.id))
        assert read == reference_section_page(records(live), SectionReadRequest(section_id=section.id))
        assert {v for c in read.chunks for v in version_of(c.urtext)} == {2}
    # A replacement with fewer sections and chunks: the dropped ones are gone.
    shrunk = DocumentBuilder(old.uri, 'Shrunk', id=old.id)
    shrunk.add_chunk(shrunk.section('Only'), 'zebrafish the one chunk left')
    await store.upsert([shrunk.build()])
    new, live = shrunk.build(), [shrunk.build(), *others]
    assert (await store.read_section(SectionReadRequest(section_id=old.sections[1].id))).total == 0
    assert [(o.id, o.section_path) for o in await store.chunk_outlines(OutlineRequest(document_id=new.id))] == [
        (new.chunks[0].id, ('Only',))
    ]
    summary = (await store.document_page(DocumentPageRequest(document_id=new.id))).documents
    assert [(d.title, d.chunk_count, d.section_count, d.metadata) for d in summary] == [('Shrunk', 1, 1, {})]

    assert await store.delete_documents([new.id]) == 1
    assert (await store.document_page(DocumentPageRequest(document_id=new.id))).total == 0
    assert await store.chunk_outlines(OutlineRequest(document_id=new.id)) == []
    assert (await store.read_section(SectionReadRequest(document_id=new.id))).total == 0
    assert await store.document_page(DocumentPageRequest()) == reference_document_page(
        records(others), DocumentPageRequest(), metadata_of(others)
    )


async def test_reopen_keeps_document_metadata_and_its_types(stored: pathlib.Path) -> None:
    async with LanceDBStore(stored, embedder=HashingEmbeddingModel(64)) as reopened:
        page = await reopened.document_page(DocumentPageRequest(limit=100))
    by_id = {d.id: d for d in page.documents}
    for doc in corpus():
        got = by_id[doc.id].metadata
        assert got == doc.metadata
        assert [type(v) for v in got.values()] == [type(v) for v in doc.metadata.values()]
    mixed = by_id[HOSTILE_ID].metadata['mixed']
    assert isinstance(mixed, list) and [type(v) for v in mixed] == [str, int, float, bool]


async def test_each_answer_reads_one_version_while_a_writer_replaces_the_document(tmp_path: pathlib.Path) -> None:
    """Outlines and section reads never mix two versions of a document being replaced.

    `versioned_document` moves chunks between its sections from version to version (same
    chunk ids): a section read whose count and order came from one version and whose rows
    from the next would not equal the reference over either.
    """
    store = LanceDBStore(tmp_path / 'kb', embedder=HashingEmbeddingModel(64))
    await store.upsert([versioned_document(0)])
    first = versioned_document(0)
    done = asyncio.Event()

    async def write() -> None:
        for version in range(1, 13):
            await store.upsert([versioned_document(version)])
        done.set()

    def one_version(texts: Sequence[str]) -> list[Chunk]:
        versions = {v for text in texts for v in version_of(text)}
        assert len(versions) == 1, versions
        return list(versioned_document(versions.pop()).chunks)

    async def read() -> int:
        answers = 0
        while not done.is_set() or not answers:
            for section in first.sections:
                request = SectionReadRequest(section_id=section.id, offset=1, limit=5)
                page = await store.read_section(request)
                assert page == reference_section_page(one_version([c.urtext for c in page.chunks]), request)
                outline_request = OutlineRequest(section_id=section.id)
                outline = await store.chunk_outlines(outline_request)
                texts = [text for o in outline for text in (o.document_title, *o.section_path)]
                assert outline == reference_outline(one_version(texts), outline_request)
            answers += 1
        return answers

    _, answers = await asyncio.gather(write(), read())
    assert answers >= 1


def _growing(version: int) -> Document:
    """Version ``version`` of one document: its title names the version, which fixes its chunk count."""
    b = DocumentBuilder('file:///growing.md', f'Growing v{version}', metadata={'version': version})
    for k in range(version % 4 + 1):
        b.add_chunk(b.section(f'Part {k}'), f'zebrafish v{version} part {k}')
    return b.build()


async def test_a_listing_agrees_with_the_chunks_while_a_writer_replaces_the_document(tmp_path: pathlib.Path) -> None:
    """A summary's title and metadata (documents table) and its counts (records table) come from one version."""
    store = LanceDBStore(tmp_path / 'kb', embedder=HashingEmbeddingModel(64))
    await store.upsert([_growing(0)])
    done = asyncio.Event()

    async def write() -> None:
        for version in range(1, 13):
            await store.upsert([_growing(version)])
        done.set()

    async def read() -> int:
        answers = 0
        while not done.is_set() or not answers:
            (summary,) = (await store.document_page(DocumentPageRequest())).documents
            (version,) = version_of(summary.title)
            assert (summary.chunk_count, summary.section_count) == (version % 4 + 1, version % 4 + 1), summary
            assert summary.metadata == {'version': version}
            answers += 1
        return answers

    _, answers = await asyncio.gather(write(), read())
    assert answers >= 1
