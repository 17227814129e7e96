"""Navigation requests and answers (document pages, chunk outlines, section reads), and their reference semantics.

See docs/navigation.md#how-navigation-is-built.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .content import Chunk, Metadata
from .filters import Filter, matches

__all__ = [
    'MAX_PAGE_LIMIT',
    'ChunkOutline',
    'DocumentPage',
    'DocumentPageRequest',
    'DocumentSummary',
    'OutlineRequest',
    'SectionPage',
    'SectionReadRequest',
    'document_order',
    'reference_document_page',
    'reference_outline',
    'reference_section_page',
    'title_matches',
]

MAX_PAGE_LIMIT = 1_000_000
"""The largest ``limit`` a navigation request may carry (large enough for "all of them")."""


def _check_page(offset: int, limit: int) -> None:
    if offset < 0:
        raise ValueError('offset must not be negative')
    if not 0 <= limit <= MAX_PAGE_LIMIT:
        raise ValueError(f'limit must be between 0 and {MAX_PAGE_LIMIT}')


@dataclass(frozen=True, slots=True)
class DocumentPageRequest:
    """One page of the documents in scope.

    ``title_contains`` keeps documents whose title contains it, compared case-insensitively
    (`title_matches`: both sides ``str.casefold``-ed); ``document_id`` keeps that one document.
    ``limit=0`` asks only for the total.
    """

    filter: Filter | None = None
    title_contains: str | None = None
    document_id: str | None = None
    offset: int = 0
    limit: int = 20

    def __post_init__(self) -> None:
        _check_page(self.offset, self.limit)


@dataclass(frozen=True, slots=True)
class DocumentSummary:
    """A document as seen from one scope: counts include only its in-scope chunks."""

    id: str
    title: str
    uri: str
    chunk_count: int
    """How many of its chunks are in scope (at least 1, or it would not be listed)."""
    section_count: int
    """How many distinct sections (at any depth) hold at least one in-scope chunk."""
    metadata: Metadata = field(default_factory=dict)
    """The document's own metadata (`toolish_rag.content.Document.metadata`), as stored."""


@dataclass(frozen=True, slots=True)
class DocumentPage:
    """A page of `DocumentSummary`, in `document_order`, and how many documents match in all."""

    documents: tuple[DocumentSummary, ...]
    total: int


@dataclass(frozen=True, slots=True)
class OutlineRequest:
    """The skeletons of in-scope chunks: of a document, of a section, or under a section title.

    At least one of ``document_id``, ``section_id`` and ``section_title`` is set; each one given
    narrows. ``section_title`` keeps chunks whose ``section_path`` holds exactly that title (at
    any depth). The answer is ordered by ``(document_id, sequence_number)`` and cut at ``limit``.
    """

    document_id: str | None = None
    section_id: str | None = None
    section_title: str | None = None
    filter: Filter | None = None
    limit: int = MAX_PAGE_LIMIT

    def __post_init__(self) -> None:
        if self.document_id is None and self.section_id is None and self.section_title is None:
            raise ValueError('an OutlineRequest needs a document_id, a section_id or a section_title')
        _check_page(0, self.limit)

    def holds(self, chunk: Chunk | ChunkOutline) -> bool:
        """Whether ``chunk`` (or its skeleton) is one this request asks about (``filter`` aside)."""
        return (
            self.document_id in (None, chunk.document_id)
            and (self.section_id is None or self.section_id in chunk.section_ids)
            and (self.section_title is None or self.section_title in chunk.section_path)
        )


@dataclass(frozen=True, slots=True)
class ChunkOutline:
    """A chunk without its text: where it sits in its document's section tree."""

    id: str
    document_id: str
    document_title: str
    sequence_number: int
    section_ids: tuple[str, ...] = ()
    section_path: tuple[str, ...] = ()

    @classmethod
    def of(cls, chunk: Chunk) -> ChunkOutline:
        return cls(
            id=chunk.id,
            document_id=chunk.document_id,
            document_title=chunk.document_title,
            sequence_number=chunk.sequence_number,
            section_ids=chunk.section_ids,
            section_path=chunk.section_path,
        )


@dataclass(frozen=True, slots=True)
class SectionReadRequest:
    """One page of a section's in-scope chunks in reading order, or of a whole document's.

    ``section_id`` keeps chunks whose ``section_ids`` contain it (so a section's subsections
    are read with it); with ``section_id=None`` the page is of document ``document_id`` whole.
    ``offset`` and ``limit`` count in-scope chunks in ``sequence_number`` order.
    """

    section_id: str | None = None
    document_id: str | None = None
    filter: Filter | None = None
    offset: int = 0
    limit: int = 50

    def __post_init__(self) -> None:
        if self.section_id is None and self.document_id is None:
            raise ValueError('a SectionReadRequest needs a section_id or a document_id')
        _check_page(self.offset, self.limit)

    def holds(self, chunk: Chunk) -> bool:
        return self.document_id in (None, chunk.document_id) and (
            self.section_id is None or self.section_id in chunk.section_ids
        )


@dataclass(frozen=True, slots=True)
class SectionPage:
    """Up to ``limit`` in-scope chunks from ``offset`` in reading order, and the in-scope total."""

    chunks: tuple[Chunk, ...]
    total: int


def title_matches(title: str, contains: str | None) -> bool:
    """The one rule for ``title_contains``: a case-folded substring (``None`` matches every title)."""
    return contains is None or contains.casefold() in title.casefold()


def document_order(title: str, document_id: str) -> tuple[str, str]:
    """The sort key of a document listing: title case-folded, then id (so the order is total)."""
    return (title.casefold(), document_id)


def _scoped_chunks(records: Iterable[object], filter: Filter | None) -> list[Chunk]:
    return [r for r in records if isinstance(r, Chunk) and matches(filter, r)]


def reference_document_page(
    records: Iterable[object], request: DocumentPageRequest, metadata: Mapping[str, Metadata] | None = None
) -> DocumentPage:
    """The page `request` asks for, over ``records`` (chunks; entities are ignored).

    ``metadata`` maps a document id to its document metadata (a store keeps it with the
    document); without an entry, a document shows no metadata.
    """
    by_document: dict[str, list[Chunk]] = {}
    for chunk in _scoped_chunks(records, request.filter):
        if request.document_id in (None, chunk.document_id) and title_matches(
            chunk.document_title, request.title_contains
        ):
            by_document.setdefault(chunk.document_id, []).append(chunk)
    summaries = [
        DocumentSummary(
            id=doc_id,
            title=chunks[0].document_title,
            uri=chunks[0].document_uri,
            chunk_count=len(chunks),
            section_count=len({s for c in chunks for s in c.section_ids}),
            metadata=dict((metadata or {}).get(doc_id, {})),
        )
        for doc_id, chunks in by_document.items()
    ]
    summaries.sort(key=lambda s: document_order(s.title, s.id))
    page = summaries[request.offset : request.offset + request.limit]
    return DocumentPage(documents=tuple(page), total=len(summaries))


def reference_outline(records: Iterable[object], request: OutlineRequest) -> list[ChunkOutline]:
    """The skeletons `request` asks for, over ``records``."""
    chunks = [c for c in _scoped_chunks(records, request.filter) if request.holds(c)]
    chunks.sort(key=lambda c: (c.document_id, c.sequence_number))
    return [ChunkOutline.of(c) for c in chunks[: request.limit]]


def reference_section_page(records: Iterable[object], request: SectionReadRequest) -> SectionPage:
    """The page of chunks `request` asks for, over ``records``."""
    chunks = [c for c in _scoped_chunks(records, request.filter) if request.holds(c)]
    chunks.sort(key=lambda c: (c.document_id, c.sequence_number))
    return SectionPage(chunks=tuple(chunks[request.offset : request.offset + request.limit]), total=len(chunks))
