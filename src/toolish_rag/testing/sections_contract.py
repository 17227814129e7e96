"""The `SectionReader` contract, checked on direct calls against the reference functions.

Every answer must equal the reference (`toolish_rag.sections`) over what the store holds, under
the filter given: counts and pages cannot be re-filtered downstream. See docs/testing.md
("The section reader checks").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from ..content import Chunk, Document, Entity, Metadata
from ..filters import Filter, matches
from ..protocols import SectionReader
from ..sections import (
    MAX_PAGE_LIMIT,
    ChunkOutline,
    DocumentPage,
    DocumentPageRequest,
    OutlineRequest,
    SectionPage,
    SectionReadRequest,
    reference_document_page,
    reference_outline,
    reference_section_page,
)

__all__ = [
    'UNKNOWN_ID',
    'NavigationCalls',
    'SectionReference',
    'document_metadata_problems',
    'document_reads',
    'empty_answer_problems',
    'nested_section',
    'outline_calls',
    'pagination_calls',
    'scope_calls',
    'title_calls',
    'typed',
]

UNKNOWN_ID = 'no-such-id'
"""An id that names no document, section, chunk or entity of any corpus."""


@dataclass(frozen=True)
class SectionReference:
    """What a store holding exactly ``documents`` and ``entities`` answers, by the reference functions."""

    documents: tuple[Document, ...]
    entities: tuple[Entity, ...] = ()
    _scoped: dict[Filter | None, list[Chunk | Entity]] = field(default_factory=dict, init=False, repr=False)

    @classmethod
    def of(cls, documents: Iterable[Document], entities: Iterable[Entity] = ()) -> SectionReference:
        return cls(tuple(documents), tuple(entities))

    @cached_property
    def records(self) -> list[Chunk | Entity]:
        return [*(c for d in self.documents for c in d.chunks), *self.entities]

    @cached_property
    def metadata(self) -> dict[str, Metadata]:
        """Each document's own metadata: what a `DocumentSummary` shows."""
        return {d.id: d.metadata for d in self.documents}

    def scoped(self, f: Filter | None) -> list[Chunk | Entity]:
        """The records ``f`` admits (remembered: the reference then runs on them with no filter)."""
        if f not in self._scoped:
            self._scoped[f] = [r for r in self.records if matches(f, r)]
        return self._scoped[f]

    def page(self, request: DocumentPageRequest) -> DocumentPage:
        return reference_document_page(self.scoped(request.filter), replace(request, filter=None), self.metadata)

    def outline(self, request: OutlineRequest) -> list[ChunkOutline]:
        return reference_outline(self.scoped(request.filter), replace(request, filter=None))

    def section(self, request: SectionReadRequest) -> SectionPage:
        return reference_section_page(self.scoped(request.filter), replace(request, filter=None))

    def chunks_in_scope(self, f: Filter | None) -> set[str]:
        return {r.id for r in self.scoped(f) if isinstance(r, Chunk)}

    def documents_in_scope(self, f: Filter | None) -> list[Document]:
        return [d for d in self.documents if any(matches(f, c) for c in d.chunks)]

    def documents_out_of_scope(self, f: Filter | None) -> list[Document]:
        return [d for d in self.documents if not any(matches(f, c) for c in d.chunks)]


def typed(value: Any) -> Any:
    """``value`` with the type of every scalar spelled out, so ``2 != 2.0`` and ``True != 1``."""
    if isinstance(value, Mapping):
        return {k: typed(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [typed(v) for v in value]
    return (type(value).__name__, value)


def _ids(items: Iterable[Any]) -> list[str]:
    return [item.id for item in items]


@dataclass(frozen=True)
class NavigationCalls:
    """Requests to make on a section reader: each answer is compared with the reference."""

    pages: tuple[DocumentPageRequest, ...] = ()
    outlines: tuple[OutlineRequest, ...] = ()
    reads: tuple[SectionReadRequest, ...] = ()
    walks: tuple[tuple[Filter | None, str, int], ...] = ()
    """Paged walks ``(filter, document id, limit)`` through `read_section`, offset 0 onward (see `_walk`)."""

    def __add__(self, other: NavigationCalls) -> NavigationCalls:
        return NavigationCalls(
            self.pages + other.pages,
            self.outlines + other.outlines,
            self.reads + other.reads,
            self.walks + other.walks,
        )

    def __len__(self) -> int:
        return len(self.pages) + len(self.outlines) + len(self.reads) + len(self.walks)

    async def problems(self, store: SectionReader, reference: SectionReference) -> list[str]:
        """Make every call on ``store``; one line per answer that differs from ``reference``."""
        out: list[str] = []
        for page in self.pages:
            out += _page_problem(page, await store.document_page(page), reference)
        for outline in self.outlines:
            out += _outline_problem(outline, list(await store.chunk_outlines(outline)), reference)
        for read in self.reads:
            out += _read_problem(read, await store.read_section(read), reference)
        for f, document_id, limit in self.walks:
            out += await _walk(store, reference, f, document_id, limit)
        return out


def _leaks(
    f: Filter | None, reference: SectionReference, document_ids: Iterable[str] = (), chunk_ids: Iterable[str] = ()
) -> str:
    """What an answer showed from outside the scope, as a suffix of a problem line ('' if nothing)."""
    in_documents = {d.id for d in reference.documents_in_scope(f)}
    in_chunks = reference.chunks_in_scope(f)
    documents = sorted({i for i in document_ids if i not in in_documents})
    chunks = sorted({i for i in chunk_ids if i not in in_chunks})
    parts = [f'documents {documents}' if documents else '', f'chunks {chunks}' if chunks else '']
    shown = ' and '.join(p for p in parts if p)
    return f' (outside the scope: {shown})' if shown else ''


def _first_difference(got: Sequence[object], want: Sequence[object]) -> str:
    """The first item where two answers differ, as a suffix of a problem line ('' if one is a prefix)."""
    for g, w in zip(got, want, strict=False):
        if g != w:
            return f'; first difference: got {g!r}, expected {w!r}'
    return ''


def _page_problem(request: DocumentPageRequest, got: DocumentPage, reference: SectionReference) -> list[str]:
    want = reference.page(request)
    documents = tuple(got.documents)
    if documents == want.documents and got.total == want.total:
        if typed([d.metadata for d in documents]) == typed([d.metadata for d in want.documents]):
            return []
        return [f'document_page({request!r}) changed the type of document metadata: {_typed_diff(documents, want)}']
    detail = _first_difference(documents, want.documents)
    return [
        f'document_page({request!r}) returned {_ids(documents)} (total {got.total}), expected '
        f'{_ids(want.documents)} (total {want.total}){detail}'
        f'{_leaks(request.filter, reference, document_ids=_ids(documents))}'
    ]


def _typed_diff(documents: Sequence[Any], want: DocumentPage) -> str:
    for got, expected in zip(documents, want.documents, strict=False):
        if typed(got.metadata) != typed(expected.metadata):
            return f'{got.id}: got {typed(got.metadata)}, expected {typed(expected.metadata)}'
    return '?'


def _outline_problem(request: OutlineRequest, got: list[ChunkOutline], reference: SectionReference) -> list[str]:
    want = reference.outline(request)
    if got == want:
        return []
    detail = _first_difference(got, want)
    return [
        f'chunk_outlines({request!r}) returned {_ids(got)}, expected {_ids(want)}{detail}'
        f'{_leaks(request.filter, reference, [o.document_id for o in got], _ids(got))}'
    ]


def _read_problem(request: SectionReadRequest, got: SectionPage, reference: SectionReference) -> list[str]:
    want = reference.section(request)
    chunks = tuple(got.chunks)
    if chunks == want.chunks and got.total == want.total:
        if typed([c.metadata for c in chunks]) == typed([c.metadata for c in want.chunks]):
            return []
        return [f'read_section({request!r}) changed the type of chunk metadata']
    return [
        f'read_section({request!r}) returned {_ids(chunks)} (total {got.total}), expected '
        f'{_ids(want.chunks)} (total {want.total})'
        f'{_leaks(request.filter, reference, [c.document_id for c in chunks], _ids(chunks))}'
    ]


async def _walk(
    store: SectionReader, reference: SectionReference, f: Filter | None, document_id: str, limit: int
) -> list[str]:
    """Read a document page by page: the pages must concatenate to the whole, with one total throughout."""
    whole = reference.section(SectionReadRequest(document_id=document_id, filter=f, limit=MAX_PAGE_LIMIT))
    seen: list[Chunk] = []
    totals: set[int] = set()
    for offset in range(0, len(whole.chunks) + limit + 1, limit):
        page = await store.read_section(
            SectionReadRequest(document_id=document_id, filter=f, offset=offset, limit=limit)
        )
        seen += page.chunks
        totals.add(page.total)
        if not page.chunks:
            break
    if _ids(seen) == _ids(whole.chunks) and totals == {whole.total}:
        return []
    return [
        f'read_section pages of {limit} through document {document_id!r} under {f!r} concatenated to '
        f'{_ids(seen)} with totals {sorted(totals)}, expected {_ids(whole.chunks)} with total {whole.total}'
    ]


# -- which calls to make --------------------------------------------------------------------------


def _top_level_titles(documents: Sequence[Document]) -> list[str]:
    return sorted({s.title for d in documents for s in d.sections if s.parent_id is None})


def nested_section(document: Document) -> str:
    """A section that has a parent, if the document has one (else its first section)."""
    return next((s.id for s in document.sections if s.parent_id is not None), document.sections[0].id)


def scope_calls(documents: Sequence[Document], f: Filter | None) -> NavigationCalls:
    """Five calls, one or two of each kind, cheap enough to make under every edge filter.

    The whole listing, the outline under each top-level section title (across documents),
    the middle document read whole and a page of the first document's nested section. A
    store that ignores the filter, or counts what it excludes, in any of its three methods
    shows here; `document_reads`, `pagination_calls` and `outline_calls` go further.
    """
    first, middle = documents[0], documents[len(documents) // 2]
    return NavigationCalls(
        pages=(DocumentPageRequest(filter=f, limit=MAX_PAGE_LIMIT),),
        outlines=tuple(OutlineRequest(section_title=t, filter=f) for t in _top_level_titles(documents)),
        reads=(
            SectionReadRequest(document_id=middle.id, filter=f, limit=MAX_PAGE_LIMIT),
            SectionReadRequest(section_id=nested_section(first), filter=f, offset=1, limit=2),
        ),
    )


def document_reads(documents: Sequence[Document], f: Filter | None) -> NavigationCalls:
    """Each document alone: listed (by ``document_id``), outlined and read whole."""
    return NavigationCalls(
        pages=tuple(DocumentPageRequest(filter=f, document_id=d.id) for d in documents),
        outlines=tuple(OutlineRequest(document_id=d.id, filter=f) for d in documents),
        reads=tuple(SectionReadRequest(document_id=d.id, filter=f, limit=MAX_PAGE_LIMIT) for d in documents),
    )


def pagination_calls(documents: Sequence[Document], f: Filter | None) -> NavigationCalls:
    """Every offset from 0 to past the end, with page sizes from 0 to more than there are.

    For the document listing and the first document read whole; fewer for its nested section
    and the section enclosing it, and outlines cut at each size; then page-by-page walks
    through each document (pages of 3, and of 1 through the first).
    """
    first = documents[0]
    section = nested_section(first)
    parent = next((s.parent_id for s in first.sections if s.id == section and s.parent_id), section)
    size = len(first.chunks)
    pages = [
        DocumentPageRequest(filter=f, offset=o, limit=n)
        for o in range(len(documents) + 2)
        for n in sorted({0, 1, 2, len(documents), MAX_PAGE_LIMIT})
    ]
    reads = [
        SectionReadRequest(document_id=first.id, filter=f, offset=o, limit=n)
        for o in range(size + 2)
        for n in (0, 3, MAX_PAGE_LIMIT)
    ]
    reads += [
        SectionReadRequest(section_id=s, filter=f, offset=o, limit=n)
        for s in (section, parent)
        for o in (0, 1, 3)
        for n in (0, 2, MAX_PAGE_LIMIT)
    ]
    outlines = [
        OutlineRequest(document_id=first.id, filter=f, limit=n) for n in sorted({0, 1, size - 1, size, MAX_PAGE_LIMIT})
    ]
    walks = ((f, first.id, 1), *((f, d.id, 3) for d in documents))
    return NavigationCalls(tuple(pages), tuple(outlines), tuple(reads), walks)


def outline_calls(documents: Sequence[Document], f: Filter | None) -> NavigationCalls:
    """Outlines by document, by each section id, by each section title, and narrowed by two of them.

    Combinations that select nothing are included (a section of another document, a title
    that is not on the section's path): the answer must then be empty, not the union.
    """
    titles = sorted({s.title for d in documents for s in d.sections})
    outlines: list[OutlineRequest] = []
    for d in documents:
        outlines.append(OutlineRequest(document_id=d.id, filter=f))
        for s in d.sections:
            outlines += [
                OutlineRequest(section_id=s.id, filter=f),
                OutlineRequest(section_id=s.id, document_id=d.id, filter=f, limit=2),
                OutlineRequest(section_id=s.id, section_title=titles[0], filter=f),
            ]
        outlines.append(OutlineRequest(document_id=d.id, section_title=titles[-1], filter=f))
    outlines += [OutlineRequest(section_title=t, filter=f, limit=n) for t in titles for n in (1, MAX_PAGE_LIMIT)]
    if len(documents) > 1:
        first, second = documents[0], documents[1]
        outlines.append(OutlineRequest(document_id=first.id, section_id=second.sections[0].id, filter=f))
    return NavigationCalls(outlines=tuple(outlines))


def title_calls(documents: Sequence[Document], f: Filter | None, contains: Sequence[str]) -> NavigationCalls:
    """The listing for each ``title_contains`` (whole, and its second page of 2), and each document alone."""
    pages = [
        request
        for c in contains
        for request in (
            DocumentPageRequest(filter=f, title_contains=c, limit=MAX_PAGE_LIMIT),
            DocumentPageRequest(filter=f, title_contains=c, offset=2, limit=2),
        )
    ]
    pages += [DocumentPageRequest(filter=f, document_id=d.id, title_contains=contains[0]) for d in documents]
    return NavigationCalls(pages=tuple(pages))


async def empty_answer_problems(store: SectionReader, ids: Sequence[str], f: Filter | None) -> list[str]:
    """Each of ``ids`` must get exactly the answer an id that exists nowhere gets: empty, total 0.

    So an out-of-scope id cannot be told from an unknown one (not by an error, not by a count).
    """
    problems: list[str] = []
    empty_page, empty_section = DocumentPage((), 0), SectionPage((), 0)
    for i in ids:
        page = await store.document_page(DocumentPageRequest(filter=f, document_id=i))
        if (tuple(page.documents), page.total) != (empty_page.documents, 0):
            problems.append(f'document_page(document_id={i!r}, filter={f!r}) is not empty: {page!r}')
        for outline in (OutlineRequest(document_id=i, filter=f), OutlineRequest(section_id=i, filter=f)):
            got = list(await store.chunk_outlines(outline))
            if got:
                problems.append(f'chunk_outlines({outline!r}) is not empty: {_ids(got)}')
        for read in (SectionReadRequest(document_id=i, filter=f), SectionReadRequest(section_id=i, filter=f)):
            section = await store.read_section(read)
            if (tuple(section.chunks), section.total) != (empty_section.chunks, 0):
                problems.append(f'read_section({read!r}) is not empty: {_ids(section.chunks)}, total {section.total}')
    return problems


async def document_metadata_problems(store: SectionReader, documents: Sequence[Document]) -> list[str]:
    """Each document's summary shows its own metadata, with every value's type as given."""
    page = await store.document_page(DocumentPageRequest(limit=MAX_PAGE_LIMIT))
    shown = {d.id: d for d in page.documents}
    problems: list[str] = []
    for d in documents:
        summary = shown.get(d.id)
        if summary is None:
            problems.append(f'document {d.id!r} is not listed')
        elif typed(summary.metadata) != typed(d.metadata):
            problems.append(f'document {d.id!r} shows metadata {typed(summary.metadata)}, stored {typed(d.metadata)}')
    return problems
