"""`Navigator`: documents, outlines and whole sections, scoped, over a `SectionReader` store.

See docs/navigation.md#how-navigation-is-built.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .content import Metadata, Scalar
from .errors import InvalidRequestError, ToolishRagError, echo
from .filters import Filter, PropertyFilter as F, and_, matches
from .protocols import SectionReader
from .search import ID_RULE, QUERY_RULE, ArgumentRule
from .sections import (
    MAX_PAGE_LIMIT,
    ChunkOutline,
    DocumentPage,
    DocumentPageRequest,
    DocumentSummary,
    OutlineRequest,
    SectionPage,
    SectionReadRequest,
)

__all__ = [
    'MAX_CHOICES',
    'Choice',
    'Navigator',
    'Outline',
    'OutlineSection',
    'SectionChoice',
    'SectionTarget',
]

MAX_CHOICES = 10
"""How many candidates an ambiguous name lists (with how many there are in all)."""

_TITLE_LOOKUP_LIMIT = 10_000
"""Skeletons read to resolve a section title: a title shared by more chunks than this is refused."""


def _name_rule(noun: str) -> ArgumentRule:
    return ArgumentRule(noun, QUERY_RULE.forbidden, 'send an id or title exactly as a listing or outline shows it')


_DOCUMENT_RULE = _name_rule('the document')
_SECTION_RULE = _name_rule('the section')
_TITLE_RULE = _name_rule('title_contains')


@dataclass(frozen=True, slots=True)
class Choice:
    """Several documents answer to one name: show them, read none."""

    documents: tuple[DocumentSummary, ...]
    total: int


@dataclass(frozen=True, slots=True)
class SectionChoice:
    """Several sections answer to one title: show them (with their documents), read none."""

    sections: tuple[SectionTarget, ...]
    total: int


@dataclass(frozen=True, slots=True)
class SectionTarget:
    """What `Navigator.read` reads: a section of a document, or (``section_id=None``) a whole document."""

    document_id: str
    document_title: str
    section_id: str | None
    section_path: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class OutlineSection:
    """One node of an outline: a section holding at least one in-scope chunk (its subsections' included)."""

    id: str
    title: str
    depth: int
    """1 for a top-level section."""
    parent_id: str | None
    chunk_count: int
    """In-scope chunks in the section, subsections included (what ``read_section`` reads)."""


@dataclass(frozen=True, slots=True)
class Outline:
    """A document's section tree as one scope sees it, in reading order."""

    document: DocumentSummary
    sections: tuple[OutlineSection, ...]
    preamble_chunks: int
    """In-scope chunks before the first heading (in no section)."""


def build_outline(document: DocumentSummary, skeleton: Sequence[ChunkOutline]) -> Outline:
    """The outline of ``document`` from its in-scope chunks' skeletons (in sequence order)."""
    order: dict[str, OutlineSection] = {}
    counts: dict[str, int] = {}
    preamble = 0
    for chunk in skeleton:
        if not chunk.section_ids:
            preamble += 1
        for depth, (sid, title) in enumerate(zip(chunk.section_ids, chunk.section_path, strict=True), start=1):
            if sid not in order:
                parent = chunk.section_ids[depth - 2] if depth > 1 else None
                order[sid] = OutlineSection(sid, title, depth, parent, 0)
            counts[sid] = counts.get(sid, 0) + 1
    sections = tuple(
        OutlineSection(s.id, s.title, s.depth, s.parent_id, counts[s.id]) for s in _tree_order(list(order.values()))
    )
    return Outline(document, sections, preamble)


def _tree_order(sections: list[OutlineSection]) -> list[OutlineSection]:
    """Parents before children, siblings in order of first appearance (a depth-first walk).

    First appearance alone is almost always this order already; it differs only when a
    section's first in-scope chunk comes after a later sibling's (chunks out of scope).
    """
    children: dict[str | None, list[OutlineSection]] = {}
    known = {s.id for s in sections}
    for s in sections:
        parent = s.parent_id if s.parent_id in known else None
        children.setdefault(parent, []).append(s)
    ordered: list[OutlineSection] = []
    stack = list(reversed(children.get(None, [])))
    while stack:
        node = stack.pop()
        ordered.append(node)
        stack.extend(reversed(children.get(node.id, [])))
    return ordered


@dataclass(frozen=True)
class Navigator:
    """Scoped navigation over one `SectionReader`; made by `toolish_rag.Retriever.navigator`."""

    store: SectionReader
    filter: Filter | None = None

    async def documents(self, *, title_contains: str | None = None, offset: int = 0, limit: int = 20) -> DocumentPage:
        """One page of the documents in scope, by title then id."""
        if title_contains is not None:
            _TITLE_RULE.check(title_contains)
        request = DocumentPageRequest(self.filter, title_contains=title_contains, offset=offset, limit=limit)
        return await self.store.document_page(request)

    async def holds(self, document_id: str, key: str, value: Scalar) -> bool:
        """Whether an in-scope chunk of the document has ``key`` equal to ``value`` (or holding it, for a list)."""
        request = DocumentPageRequest(and_(self.filter, F.eq(key, value)), document_id=document_id, limit=0)
        return (await self.store.document_page(request)).total > 0

    async def shown_metadata(self, document: DocumentSummary, keys: Sequence[str]) -> Metadata:
        """The document's values for ``keys`` that an in-scope chunk carries, checked through the scope.

        A store lists a document's *own* metadata, but a chunk may override it: a document with one
        in-scope chunk could otherwise show values only its out-of-scope chunks carry. Each value
        shown is therefore confirmed by a scoped count (one small request per value).
        """
        shown: Metadata = {}
        for key in keys:
            value = document.metadata.get(key)
            items = value if isinstance(value, list) else [value]
            kept = [v for v in items if v is not None and await self.holds(document.id, key, v)]
            if kept:
                shown[key] = kept if isinstance(value, list) else kept[0]
        return shown

    async def value_counts(self, key: str, *, candidates: int) -> dict[Scalar, int]:
        """How many documents in scope have a chunk with each value of ``key``, for the most common values.

        Candidate values come from the documents' own metadata (the most common first, at most
        ``candidates``); each is counted with a scoped request, so a value only out-of-scope chunks
        carry counts 0 and is dropped. Values set only on chunks, not on their documents, are not found.
        """
        page = await self.store.document_page(DocumentPageRequest(self.filter, limit=MAX_PAGE_LIMIT))
        seen: dict[Scalar, int] = {}
        for document in page.documents:
            value = document.metadata.get(key)
            for item in value if isinstance(value, list) else [value]:
                if item is not None:
                    seen[item] = seen.get(item, 0) + 1
        ranked = sorted(seen, key=lambda v: (-seen[v], str(v)))[:candidates]
        counts: dict[Scalar, int] = {}
        for value in ranked:
            total = (
                await self.store.document_page(DocumentPageRequest(and_(self.filter, F.eq(key, value)), limit=0))
            ).total
            if total:
                counts[value] = total
        return counts

    async def document(self, name: str) -> DocumentSummary | Choice | None:
        """The document ``name`` names: by id, exact title, or a title part only one document has.

        An exact title wins over a partial one (a title that is also part of a longer title still
        names its own document). ``None`` when nothing in scope answers to ``name``.
        """
        _DOCUMENT_RULE.check(name)
        by_id = await self.store.document_page(DocumentPageRequest(self.filter, document_id=name, limit=1))
        if by_id.documents:
            return by_id.documents[0]
        page = await self.store.document_page(
            DocumentPageRequest(self.filter, title_contains=name, limit=_TITLE_LOOKUP_LIMIT)
        )
        for casefold in (False, True):
            exact = [d for d in page.documents if _same_title(d.title, name, casefold=casefold)]
            if len(exact) == 1:
                return exact[0]
            if exact:
                return Choice(tuple(exact[:MAX_CHOICES]), len(exact))
        if page.total == 1:
            return page.documents[0]
        if page.total:
            return Choice(page.documents[:MAX_CHOICES], page.total)
        return None

    async def outline(self, document: DocumentSummary) -> Outline:
        """The section tree of ``document`` (as returned by `document`), in scope."""
        skeleton = await self.store.chunk_outlines(OutlineRequest(document_id=document.id, filter=self.filter))
        return build_outline(document, skeleton)

    async def section(self, name: str, document_id: str | None = None) -> SectionTarget | SectionChoice | None:
        """The section ``name`` names (an id, else an exact title), within ``document_id`` if given.

        A document id given as ``name`` (with no ``document_id``) names the whole document.
        """
        _SECTION_RULE.check(name)
        if ID_RULE.forbidden.search(name) is None:
            probe = await self.store.chunk_outlines(
                OutlineRequest(document_id=document_id, section_id=name, filter=self.filter, limit=1)
            )
            if probe:
                return _target(probe[0], name)
            if document_id is None:
                whole = await self.store.chunk_outlines(OutlineRequest(document_id=name, filter=self.filter, limit=1))
                if whole:
                    return SectionTarget(name, whole[0].document_title, None, ())
        skeleton = await self.store.chunk_outlines(
            OutlineRequest(
                document_id=document_id, section_title=name, filter=self.filter, limit=_TITLE_LOOKUP_LIMIT + 1
            )
        )
        if len(skeleton) > _TITLE_LOOKUP_LIMIT:
            raise InvalidRequestError(
                f'the section title {echo(name)} is shared by too many chunks to resolve: pass document, '
                'or a section id from outline'
            )
        found: dict[str, SectionTarget] = {}
        for chunk in skeleton:
            for sid, title in zip(chunk.section_ids, chunk.section_path, strict=True):
                if title == name and sid not in found:
                    found[sid] = _target(chunk, sid)
        if len(found) == 1:
            return next(iter(found.values()))
        if found:
            targets = tuple(found.values())
            return SectionChoice(targets[:MAX_CHOICES], len(targets))
        return None

    async def read(self, target: SectionTarget, *, offset: int = 0, limit: int = 50) -> SectionPage:
        """One page of the target's in-scope chunks in reading order, and their total."""
        request = SectionReadRequest(
            section_id=target.section_id, document_id=target.document_id, filter=self.filter, offset=offset, limit=limit
        )
        page = await self.store.read_section(request)
        stray = next((c for c in page.chunks if not (request.holds(c) and matches(self.filter, c))), None)
        if stray is not None:  # defence in depth: a page cannot be re-filtered without breaking its counts
            raise ToolishRagError(
                f'{type(self.store).__name__}.read_section returned chunk {echo(stray.id)}, which its request '
                'excludes (outside the section or the scope): a SectionReader must honour request.filter exactly'
            )
        return page


def _same_title(title: str, name: str, *, casefold: bool) -> bool:
    return title.casefold() == name.casefold() if casefold else title == name


def _target(chunk: ChunkOutline, section_id: str) -> SectionTarget:
    depth = chunk.section_ids.index(section_id) + 1
    return SectionTarget(chunk.document_id, chunk.document_title, section_id, chunk.section_path[:depth])
