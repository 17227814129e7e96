"""Navigation (`SectionReader`) on `TantivyStore` and `PartitionedTantivyStore`, against the reference.

Every answer must equal `toolish_rag.sections`' reference function over the records the store
holds, under every filter: one the index evaluates natively, one it only narrows by (an AND
holding an integer beyond 64 bits: `supports_filter` refuses it, the store reads candidates
and decides with `toolish_rag.filters.matches`), and one it cannot narrow at all. The corpus
has the awkward cases the navigation terms must survive: a title too long for a term, a
section title and id too long for one, a section id shared by two documents, a document
without chunks, and entities.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from toolish_rag.builder import DocumentBuilder
from toolish_rag.content import Chunk, Document, Entity, Section
from toolish_rag.filters import EntityFilter, Filter, PropertyFilter as F
from toolish_rag.protocols import SectionReader
from toolish_rag.sections import (
    MAX_PAGE_LIMIT,
    DocumentPage,
    DocumentPageRequest,
    OutlineRequest,
    SectionPage,
    SectionReadRequest,
    reference_document_page,
    reference_outline,
    reference_section_page,
)
from toolish_rag_tantivy import CONFIG_FILE, PartitionedTantivyStore, TantivyStore
from toolish_rag_tantivy._schema import NAV_PAYLOAD_BYTES
from toolish_rag_tantivy._sections import (
    IndexSections,
    merged_document_page,
    merged_outlines,
    merged_section_page,
)

WORD = 'navigable'
HUGE = 2**70
"""Beyond 64 bits: a filter holding it is not `supports_filter`-ed, so the store reads and decides."""
LONG_TITLE = 'Long ' + 'x' * (NAV_PAYLOAD_BYTES + 10)
LONG_SECTION = Section(id='long-' + 'i' * 1_500, title='T' * (NAV_PAYLOAD_BYTES + 10))
SHARED = Section(id='shared', title='Shared')
"""A section id two hand-made documents both use: a read of it spans both, by document id."""

FILTERS: list[Filter | None] = [
    None,
    F.eq('tenant', 'acme'),
    F.in_('tenant', ['acme', 'globex']),
    F.ne('tenant', 'acme'),
    F.lt('n', 3),
    F.contains('tags', 'x') | F.eq('draft', True),
    ~F.exists('tenant'),
    EntityFilter.has_any_label('Legal'),
    F.eq('tenant', 'acme') & F.gt('n', -HUGE),  # not native: narrowed by the tenant natively
    F.gt('n', -HUGE) | F.eq('tenant', 'globex'),  # not native, and nothing to narrow by
    F.eq('n', HUGE),  # not native: matches nothing
]
NOT_NATIVE = FILTERS[-3:]
TITLES = ['alpha', 'ALPHA', 'straße', 'STRASSE', 'x' * 40, 'odd', '', 'no such title']


def _built(d: int) -> Document:
    names = ['Zeta guide', 'alpha notes', 'Alpha Notes', 'Straße zone', 'beta', 'Gamma handbook', 'alpha notes']
    tenant = ['acme', 'globex', None][d % 3]
    metadata: dict[str, Any] = {
        'year': 2020 + d,
        'weight': d + 0.5,
        'ratio': 2.0,
        'draft': d % 2 == 0,
        'tags': ['x', 'y'][: d % 3],
    }
    if tenant is not None:
        metadata['tenant'] = tenant
    b = DocumentBuilder(f'file:///docs/{d}.md', names[d], metadata=metadata, labels={'Legal'} if d % 2 else ())
    top = b.section('Intro')
    inner = b.section('Details', parent=top)
    other = b.section('Appendix')
    b.add_chunk(None, f'{WORD} preamble {d}', metadata={'n': 0})
    for c in range(1, 4 + d % 4):
        section = [top, inner, other][c % 3]
        b.add_chunk(section, f'{WORD} chunk {c} of document {d}', metadata={'n': c, 'tags': ['x'] if c % 2 else []})
    return b.build()


def _long_title_document() -> Document:
    b = DocumentBuilder('file:///docs/long.md', LONG_TITLE, metadata={'tenant': 'globex', 'year': 1999})
    section = b.section('Intro')
    for c in range(3):
        b.add_chunk(section, f'{WORD} long {c}', metadata={'n': c})
    return b.build()


def _chunk(document_id: str, n: int, sections: Sequence[Section], **changes: Any) -> Chunk:
    fields: dict[str, Any] = {
        'id': f'{document_id}-{n}',
        'document_id': document_id,
        'document_uri': f'file:///{document_id}.md',
        'document_title': f'Hand {document_id}',
        'section_id': sections[-1].id if sections else None,
        'section_ids': tuple(s.id for s in sections),
        'section_path': tuple(s.title for s in sections),
        'text': f'{WORD} hand {n}',
        'urtext': f'hand {n}',
        'chunk_index': n,
        'sequence_number': n,
        'metadata': {'tenant': 'acme', 'n': n},
    }
    return Chunk(**{**fields, **changes})


def _hand_documents() -> list[Document]:
    """A long section (id and title), a section id in two documents."""
    odd_sections = (LONG_SECTION, SHARED)
    odd = Document(
        id='odd',
        uri='file:///odd.md',
        title='Hand odd',
        metadata={'tenant': 'acme', 'big': 2**62, 'nested': ['a', 1, 2.5, True], 'none': None},
        sections=odd_sections,
        chunks=(
            _chunk('odd', 0, []),
            _chunk('odd', 1, [LONG_SECTION]),
            _chunk('odd', 2, [SHARED]),
            _chunk('odd', 3, [LONG_SECTION, SHARED]),
        ),
    )
    other = Document(
        id='hand-other',
        uri='file:///hand-other.md',
        title='Hand hand-other',
        metadata={'tenant': 'acme'},
        sections=(SHARED,),
        chunks=tuple(_chunk('hand-other', n, [SHARED]) for n in range(3)),
    )
    return [other, odd]


def corpus() -> list[Document]:
    empty = Document(id='empty', uri='file:///empty.md', title='alpha empty', metadata={'tenant': 'acme'})
    return [*(_built(d) for d in range(7)), _long_title_document(), *_hand_documents(), empty]


ENTITIES = [
    Entity(id='ent-1', name=f'{WORD} entity', metadata={'tenant': 'acme', 'n': 1}),
    Entity(id='ent-2', name='other entity', metadata={'tenant': 'globex', 'n': 2}, labels=frozenset({'Legal'})),
]


class Reference:
    """What a store holding ``documents`` (and the entities) answers, by the reference functions."""

    def __init__(self, documents: Sequence[Document]) -> None:
        self.documents = list(documents)
        self.records: list[Chunk | Entity] = [*(c for d in documents for c in d.chunks), *ENTITIES]
        self.metadata = {d.id: d.metadata for d in documents}

    def page(self, request: DocumentPageRequest) -> DocumentPage:
        return reference_document_page(self.records, request, self.metadata)

    def section(self, request: SectionReadRequest) -> SectionPage:
        return reference_section_page(self.records, request)


def _typed(value: Any) -> Any:
    """``value`` with every scalar's type spelled out: ``2 == 2.0`` and ``True == 1`` must not pass."""
    return json.dumps(value, default=str, sort_keys=True) + repr([type(v).__name__ for v in _scalars(value)])


def _scalars(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [s for k in sorted(value) for s in _scalars(value[k])]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _scalars(v)]
    return [value]


def _requests(documents: Sequence[Document], f: Filter | None) -> tuple[list[Any], list[Any], list[Any]]:
    """Listing pages, outlines and section reads enough to show every in-scope chunk, and paging edges."""
    with_chunks = [d for d in documents if d.chunks]
    pages: list[DocumentPageRequest] = [
        DocumentPageRequest(filter=f, offset=o, limit=n) for o in (0, 1, 5, 20) for n in (0, 1, 3, MAX_PAGE_LIMIT)
    ]
    pages += [DocumentPageRequest(filter=f, title_contains=t, limit=MAX_PAGE_LIMIT) for t in TITLES]
    pages += [DocumentPageRequest(filter=f, document_id=d.id) for d in documents]
    pages += [DocumentPageRequest(filter=f, document_id='no-such-id')]
    section_ids = sorted({s.id for d in documents for s in d.sections})
    section_titles = sorted({s.title for d in documents for s in d.sections})
    outlines: list[OutlineRequest] = [OutlineRequest(document_id=d.id, filter=f) for d in documents]
    outlines += [OutlineRequest(document_id=with_chunks[0].id, filter=f, limit=n) for n in (0, 1, 2)]
    outlines += [OutlineRequest(section_id=s, filter=f) for s in section_ids]
    outlines += [
        OutlineRequest(section_title=t, filter=f, limit=n) for t in section_titles for n in (1, MAX_PAGE_LIMIT)
    ]
    outlines += [OutlineRequest(document_id='odd', section_id=SHARED.id, section_title=LONG_SECTION.title, filter=f)]
    outlines += [OutlineRequest(document_id=i, section_id=i, section_title=i, filter=f) for i in ('no-such-id',)]
    reads: list[SectionReadRequest] = [
        SectionReadRequest(document_id=d.id, filter=f, limit=MAX_PAGE_LIMIT) for d in documents
    ]
    reads += [SectionReadRequest(section_id=s, filter=f, limit=MAX_PAGE_LIMIT) for s in section_ids]
    reads += [
        SectionReadRequest(section_id=SHARED.id, filter=f, offset=o, limit=n) for o in range(6) for n in (0, 1, 2)
    ]
    reads += [SectionReadRequest(document_id='odd', filter=f, offset=o, limit=2) for o in range(5)]
    reads += [SectionReadRequest(section_id='no-such-id', document_id='odd', filter=f)]
    return pages, outlines, reads


async def _problems(store: SectionReader, reference: Reference, filters: Sequence[Filter | None]) -> list[str]:
    problems: list[str] = []
    for f in filters:
        pages, outlines, reads = _requests(reference.documents, f)
        for page in pages:
            got, want = await store.document_page(page), reference.page(page)
            if got != want or _typed([d.metadata for d in got.documents]) != _typed(
                [d.metadata for d in want.documents]
            ):
                problems.append(f'{page!r}: got {got!r}, expected {want!r}')
        for outline in outlines:
            got_outline = list(await store.chunk_outlines(outline))
            if got_outline != reference_outline(reference.records, outline):
                problems.append(f'{outline!r}: got {[o.id for o in got_outline]}')
        for read in reads:
            got_read, want_read = await store.read_section(read), reference.section(read)
            if got_read != want_read:
                problems.append(f'{read!r}: got {[c.id for c in got_read.chunks]} ({got_read.total})')
    return problems


def _report(problems: list[str]) -> str:
    return '\n'.join(p[:600] for p in problems[:10]) + (f'\n... {len(problems)} in all' if len(problems) > 10 else '')


@pytest.fixture(params=['ram', 'disk', 'partitioned'])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == 'ram':
        s: Any = TantivyStore()
    elif request.param == 'disk':
        s = TantivyStore(tmp_path / 'index')
    else:
        s = PartitionedTantivyStore(tmp_path / 'partitioned', partition_key='tenant')
    await s.upsert([*corpus(), *ENTITIES])
    yield s
    s.close()


async def test_every_answer_equals_the_reference_under_every_filter(store: Any) -> None:
    assert not any(store.supports_filter(f) for f in NOT_NATIVE if f is not None)
    assert isinstance(store, SectionReader)
    problems = await _problems(store, Reference(corpus()), FILTERS)
    assert not problems, _report(problems)


async def test_the_awkward_documents_are_listed_as_the_reference_lists_them(store: Any) -> None:
    """The summaries a wrong term layout would break, spelled out (the reference agrees)."""
    page = await store.document_page(DocumentPageRequest(limit=MAX_PAGE_LIMIT))
    by_id = {d.id: d for d in page.documents}
    assert 'empty' not in by_id  # no chunk, so never in scope
    assert (by_id['odd'].title, by_id['odd'].uri, by_id['odd'].section_count) == ('Hand odd', 'file:///odd.md', 2)
    long = next(d for d in page.documents if d.title == LONG_TITLE)
    assert long.chunk_count == 3 and long.metadata == {'tenant': 'globex', 'year': 1999}
    outline = await store.chunk_outlines(OutlineRequest(section_title=LONG_SECTION.title))
    assert [o.id for o in outline] == ['odd-1', 'odd-3'] and outline[0].section_path == (LONG_SECTION.title,)
    shared = await store.read_section(SectionReadRequest(section_id=SHARED.id, offset=1, limit=3))
    assert ([c.id for c in shared.chunks], shared.total) == (['hand-other-1', 'hand-other-2', 'odd-2'], 5)


async def test_an_unnarrowable_filter_is_still_exact(store: Any) -> None:
    """``n > -2**70 or tenant == globex``: every chunk with an ``n``; the store reads and decides."""
    f = F.gt('n', -HUGE) | F.eq('tenant', 'globex')
    assert not store.supports_filter(f)
    page = await store.document_page(DocumentPageRequest(filter=f, limit=MAX_PAGE_LIMIT))
    assert page == Reference(corpus()).page(DocumentPageRequest(filter=f, limit=MAX_PAGE_LIMIT))
    assert page.total == 10


async def test_replaced_and_deleted_documents(store: Any) -> None:
    documents = corpus()
    first = documents[0]
    b = DocumentBuilder(first.uri, 'Replaced title', metadata={'tenant': 'acme', 'year': 3000, 'v': 2.0})
    b.add_chunk(b.section('Only'), f'{WORD} replaced', metadata={'n': 7})
    replacement = b.build()
    assert replacement.id == first.id
    await store.upsert([replacement])
    assert await store.delete_documents([documents[1].id, 'odd']) == 2
    now = [replacement if d.id == first.id else d for d in documents if d.id not in (documents[1].id, 'odd')]
    problems = await _problems(store, Reference(now), [None, F.eq('tenant', 'acme'), NOT_NATIVE[0]])
    assert not problems, _report(problems)
    summary = (await store.document_page(DocumentPageRequest(document_id=first.id))).documents
    assert [(d.title, d.chunk_count, d.metadata) for d in summary] == [
        ('Replaced title', 1, {'tenant': 'acme', 'year': 3000, 'v': 2.0})
    ]
    assert (await store.read_section(SectionReadRequest(document_id='odd'))) == SectionPage((), 0)


@pytest.mark.parametrize('partitioned', [False, True])
async def test_reopen_keeps_the_answers_and_metadata_types(tmp_path: Path, partitioned: bool) -> None:
    def open_store() -> Any:
        if partitioned:
            return PartitionedTantivyStore(tmp_path / 'store', partition_key='tenant')
        return TantivyStore(tmp_path / 'store')

    store = open_store()
    await store.upsert([*corpus(), *ENTITIES])
    store.close()
    reopened = open_store()
    page = await reopened.document_page(DocumentPageRequest(document_id='odd'))
    assert _typed(page.documents[0].metadata) == _typed(
        {'tenant': 'acme', 'big': 2**62, 'nested': ['a', 1, 2.5, True], 'none': None}
    )
    problems = await _problems(reopened, Reference(corpus()), [None, NOT_NATIVE[0]])
    assert not problems, _report(problems)
    reopened.close()


async def test_an_index_of_the_previous_format_is_refused_with_what_to_do(tmp_path: Path) -> None:
    """Format 1 lacks the navigation terms: listing it would silently show nothing."""
    TantivyStore(tmp_path / 'index').close()
    config = tmp_path / 'index' / CONFIG_FILE
    config.write_text(json.dumps({**json.loads(config.read_text('utf-8')), 'format': 1}), 'utf-8')
    with pytest.raises(ValueError, match=r'format 1; this version reads format 2 .*ingest the documents again'):
        TantivyStore(tmp_path / 'index')


async def test_a_document_split_over_two_indexes_is_merged() -> None:
    """The merge does not rely on a document living in one index: counts add, sections unite, pages interleave."""
    first = _hand_documents()[1]  # 'odd': chunks 0..3
    half_a = first.model_copy(update={'chunks': first.chunks[::2]})  # chunks 0 and 2
    half_b = first.model_copy(update={'chunks': first.chunks[1::2], 'metadata': {'tenant': 'other'}})
    a, b = TantivyStore(), TantivyStore()
    await a.upsert([half_a])
    await b.upsert([half_b])
    records = [*half_a.chunks, *half_b.chunks]
    for f in (None, F.ne('n', 2), NOT_NATIVE[0]):
        views = [IndexSections(a.snapshot(), f), IndexSections(b.snapshot(), f)]
        request = DocumentPageRequest(filter=f)
        assert merged_document_page(views, request) == reference_document_page(
            records, request, {'odd': first.metadata}
        )
        for o in range(5):
            read = SectionReadRequest(document_id='odd', filter=f, offset=o, limit=2)
            assert merged_section_page(views, read) == reference_section_page(records, read)
        outline = OutlineRequest(section_id=SHARED.id, filter=f)
        assert merged_outlines(views, outline) == reference_outline(records, outline)
