"""Navigation (`SectionReader`) over tantivy indexes: listings and outlines without chunk text.

One index or several merged. See docs/stores/tantivy.md#how-the-adapter-is-built.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Collection, Sequence
from itertools import groupby
from typing import NamedTuple

from tantivy import Occur, Query

from toolish_rag.content import Chunk, Metadata
from toolish_rag.filters import And, Filter, Or, combine_all, matches, or_
from toolish_rag.sections import (
    ChunkOutline,
    DocumentPage,
    DocumentPageRequest,
    DocumentSummary,
    OutlineRequest,
    SectionPage,
    SectionReadRequest,
    document_order,
    title_matches,
)

from ._filters import translatable
from ._index import IndexSnapshot, all_hits, ids_query
from ._schema import KIND_CHUNK, bounded_term, prefixed, split_prefixed

__all__ = [
    'DocumentTally',
    'IndexSections',
    'merged_document_page',
    'merged_outlines',
    'merged_section_page',
    'narrowing',
]

_PER_DOCUMENT = 64
"""Up to this many documents, their terms are read document by document (one prefix each);
beyond it, in one pass over the field (cheaper than many prefixes, and never more than all)."""


class DocumentTally(NamedTuple):
    """One document's in-scope chunks in one index: what sorting and paging a listing needs.

    A named tuple, not a dataclass: a listing of 100,000 documents builds 100,000 of them.
    """

    id: str
    title: str
    uri: str
    chunk_count: int


def narrowing(f: Filter) -> Filter | None:
    """A filter the index can hold that every record matching ``f`` also matches (``None``: none).

    ``f`` itself when it is `translatable`; else the translatable parts of an AND (an OR only
    when each of its branches has one). Candidates are narrowed with it natively, then ``f``
    decides on each, so the answer stays exact.
    """
    if translatable(f):
        return f
    if isinstance(f, And):
        return combine_all(narrowing(child) for child in f.filters)
    if isinstance(f, Or):
        branches = [narrowing(child) for child in f.filters]
        return None if any(b is None for b in branches) else or_(*(b for b in branches if b is not None))
    return None


class IndexSections:
    """The chunks of one index snapshot that satisfy one filter, as navigation reads them.

    Every method blocks (tantivy calls): run it in a worker thread. Take one per request, on a
    fresh snapshot, so that everything one answer reads comes from one commit.
    """

    def __init__(self, snapshot: IndexSnapshot, f: Filter | None) -> None:
        self._snapshot = snapshot
        self._filter = f
        self._native = f is None or translatable(f)
        self._pushed = f if f is None or self._native else narrowing(f)
        """What the index evaluates: the filter itself, or (not native) a narrowing of it."""

    # -- scope ----------------------------------------------------------------------------

    def _query(
        self,
        *,
        document_ids: Collection[str] | None = None,
        section_id: str | None = None,
        section_title: str | None = None,
    ) -> Query:
        """The in-scope chunks with these ids (a superset when the filter is not native: `_chunks` finishes)."""
        schema = self._snapshot.schema
        parts: list[Query] = []
        if document_ids is not None:
            parts.append(ids_query(schema, 'document_id', document_ids))
        if section_id is not None:
            parts.append(Query.term_query(schema, 'section_ids', section_id))
        if section_title is not None:
            parts.append(Query.term_query(schema, 'section_titles', bounded_term(section_title)))
        base = Query.boolean_query([(Occur.Must, p) for p in parts]) if parts else Query.all_query()
        return self._snapshot.scoped(base, self._pushed, kinds=KIND_CHUNK)

    def _chunks(self, query: Query) -> list[Chunk]:
        """The records ``query`` matches that satisfy the filter, in index order (reads their text)."""
        out: list[Chunk] = []
        for _, address in all_hits(self._snapshot.searcher, query):
            record = self._snapshot.record(address)
            if isinstance(record, Chunk) and matches(self._filter, record):
                out.append(record)
        return out

    def _terms_by_document(
        self, field: str, query: Query, document_ids: Sequence[str] | None
    ) -> dict[str, list[tuple[str, int]]]:
        """The ``field`` terms (payload, count) of in-scope chunks, by document (``None``: every document)."""
        found: dict[str, list[tuple[str, int]]] = {}
        if document_ids is not None and len(document_ids) <= _PER_DOCUMENT:
            for document_id in document_ids:
                for term, count in self._snapshot.term_counts(field, prefixed(document_id), query):
                    found.setdefault(document_id, []).append((split_prefixed(term)[1], count))
            return found
        wanted = None if document_ids is None else set(document_ids)
        for term, count in self._snapshot.term_counts(field, '', query):
            document_id, payload = split_prefixed(term)
            if wanted is None or document_id in wanted:
                found.setdefault(document_id, []).append((payload, count))
        return found

    # -- listing --------------------------------------------------------------------------

    def tallies(self, document_id: str | None) -> list[DocumentTally]:
        """Every document with an in-scope chunk (or just ``document_id``), unordered.

        One pass over the ``doc_title`` terms: a document whose in-scope chunks all carry one
        title and uri has one term, counting them. (Tight on purpose: a listing of 100,000
        documents runs this loop 100,000 times.)
        """
        if self._snapshot.is_empty:
            return []
        query = self._query(document_ids=None if document_id is None else [document_id])
        if not self._native:
            return _tally(self._chunks(query))
        prefix = '' if document_id is None else prefixed(document_id)
        found: dict[str, DocumentTally] = {}
        mixed: list[str] = []
        for term, count in self._snapshot.term_counts('doc_title', prefix, query):
            doc_id, payload = split_prefixed(term)
            known = found.get(doc_id)
            if known is None and payload:
                title, uri = split_prefixed(payload)
                found[doc_id] = DocumentTally(doc_id, title, uri, count)
            else:  # title and uri too long for a term (or chunks that disagree): its first chunk says
                mixed.append(doc_id)
                found[doc_id] = DocumentTally(doc_id, '', '', count + (known.chunk_count if known else 0))
        for doc_id in dict.fromkeys(mixed):
            first = self._first_chunk(doc_id)
            found[doc_id] = found[doc_id]._replace(title=first.document_title, uri=first.document_uri)
        return list(found.values())

    def _first_chunk(self, document_id: str) -> Chunk:
        """The document's first in-scope chunk in stored order (the order its chunks were given in)."""
        hits = all_hits(self._snapshot.searcher, self._query(document_ids=[document_id]))
        record = self._snapshot.record(hits[0][1])
        assert isinstance(record, Chunk)
        return record

    def section_keys(self, document_ids: Sequence[str]) -> dict[str, set[str]]:
        """Each document's sections holding an in-scope chunk (as `bounded_term` keys, comparable across indexes)."""
        if self._snapshot.is_empty or not document_ids:
            return {}
        query = self._query(document_ids=document_ids)
        if not self._native:
            keys: dict[str, set[str]] = {}
            for chunk in self._chunks(query):
                keys.setdefault(chunk.document_id, set()).update(bounded_term(s) for s in chunk.section_ids)
            return keys
        found = self._terms_by_document('doc_sections', query, document_ids)
        return {doc_id: {payload for payload, _ in terms} for doc_id, terms in found.items()}

    def metadata(self, document_ids: Sequence[str]) -> dict[str, Metadata]:
        """The documents' own metadata, as stored (one stored record per document)."""
        return {doc_id: info.metadata for doc_id, info in self._snapshot.document_infos(document_ids).items()}

    # -- outlines -------------------------------------------------------------------------

    def outlines(self, request: OutlineRequest) -> list[ChunkOutline]:
        """The request's in-scope outlines, by ``(document_id, sequence_number)``, at most ``request.limit``."""
        if self._snapshot.is_empty or request.limit == 0:
            return []
        ids = None if request.document_id is None else [request.document_id]
        query = self._query(document_ids=ids, section_id=request.section_id, section_title=request.section_title)
        if not self._native:
            found = [ChunkOutline.of(c) for c in self._chunks(query) if request.holds(c)]
        else:
            if ids is None:
                ids = sorted(doc_id for doc_id, _ in self._snapshot.term_counts('document_id', '', query))
            found = self._outlines_in_order(request, query, ids)
        found.sort(key=lambda o: (o.document_id, o.sequence_number))
        return found[: request.limit]

    def _outlines_in_order(self, request: OutlineRequest, query: Query, ids: list[str]) -> list[ChunkOutline]:
        """Outlines of documents ``ids`` (sorted) until ``request.limit`` are found: later documents sort after.

        Document by document for the first few; whatever documents remain then, in one pass.
        """
        found: list[ChunkOutline] = []
        for n, doc_id in enumerate(ids):
            batch = ids[n:] if n == _PER_DOCUMENT else [doc_id]
            for d, payloads in self._terms_by_document('outline', query, batch).items():
                found += [o for o in (self._outline(d, payload) for payload, _ in payloads) if request.holds(o)]
            if n == _PER_DOCUMENT or len(found) >= request.limit:
                break
        return found

    def _outline(self, document_id: str, payload: str) -> ChunkOutline:
        fields = json.loads(payload)
        if len(fields) == 2:  # too long for a term: read this chunk's record
            record = self._snapshot.get_records([fields[1]], None)[0]
            assert isinstance(record, Chunk)
            return ChunkOutline.of(record)
        sequence_number, chunk_id, title, section_ids, section_path = fields
        return ChunkOutline(chunk_id, document_id, title, sequence_number, tuple(section_ids), tuple(section_path))

    # -- section reads --------------------------------------------------------------------

    def _read_query(self, request: SectionReadRequest, document_id: str | None) -> Query:
        ids = None if document_id is None else [document_id]
        return self._query(document_ids=ids, section_id=request.section_id)

    def counts(self, request: SectionReadRequest) -> dict[str, int]:
        """How many in-scope chunks ``request`` asks for, in each document holding any."""
        if self._snapshot.is_empty:
            return {}
        query = self._read_query(request, request.document_id)
        if not self._native:
            chunks = self._chunks(query)
            return {doc_id: sum(1 for _ in group) for doc_id, group in groupby(sorted(c.document_id for c in chunks))}
        if request.document_id is not None:
            count = self._snapshot.count(query)
            return {request.document_id: count} if count else {}
        return dict(self._snapshot.term_counts('document_id', '', query))

    def chunks(self, request: SectionReadRequest, document_id: str, offset: int, limit: int) -> list[Chunk]:
        """The in-scope chunks ``request`` asks for in ``document_id``, in sequence order, ``[offset:offset + limit]``."""
        query = self._read_query(request, document_id)
        if not self._native:
            chunks = sorted(self._chunks(query), key=lambda c: c.sequence_number)
            return chunks[offset : offset + limit]
        return self._snapshot.chunks_by_sequence(query, offset, limit)


def _tally(chunks: Sequence[Chunk]) -> list[DocumentTally]:
    """Tallies from the chunks themselves (in index order: a document's first chunk gives title and uri)."""
    out: dict[str, DocumentTally] = {}
    for c in chunks:
        known = out.get(c.document_id)
        if known is None:
            out[c.document_id] = DocumentTally(c.document_id, c.document_title, c.document_uri, 1)
        else:
            out[c.document_id] = known._replace(chunk_count=known.chunk_count + 1)
    return list(out.values())


# -- merging the answers of one or several indexes -------------------------------------------------


def merged_document_page(views: Sequence[IndexSections], request: DocumentPageRequest) -> DocumentPage:
    """The listing over every index of ``views``: sorted and paged first, then only the page is detailed.

    A document is expected in one index, but one found in several is merged (counts added,
    sections united; title and uri from the first index holding it).
    """
    tallies, holders = _merged_tallies(views, request.document_id)
    listed = [t for t in tallies if title_matches(t.title, request.title_contains)]
    end = request.offset + request.limit
    if end * 4 < len(listed):  # a page near the start of a long listing: no need to sort it all
        page = heapq.nsmallest(end, listed, key=_listing_order)[request.offset :]
    else:
        page = sorted(listed, key=_listing_order)[request.offset : end]
    sections: dict[str, set[str]] = {}
    metadata: dict[str, Metadata] = {}
    for i, view in enumerate(views):
        ids = [t.id for t in page if i in holders.get(t.id, (0,))]
        for doc_id, keys in view.section_keys(ids).items():
            sections.setdefault(doc_id, set()).update(keys)
        for doc_id, values in view.metadata(ids).items():
            metadata.setdefault(doc_id, values)
    summaries = tuple(
        DocumentSummary(
            id=t.id,
            title=t.title,
            uri=t.uri,
            chunk_count=t.chunk_count,
            section_count=len(sections.get(t.id, ())),
            metadata=dict(metadata.get(t.id, {})),
        )
        for t in page
    )
    return DocumentPage(documents=summaries, total=len(listed))


def _listing_order(tally: DocumentTally) -> tuple[str, str]:
    return document_order(tally.title, tally.id)


def _merged_tallies(
    views: Sequence[IndexSections], document_id: str | None
) -> tuple[list[DocumentTally], dict[str, list[int]]]:
    """Every index's tallies, one per document, and which indexes hold each document (none listed: the first)."""
    if len(views) == 1:
        return views[0].tallies(document_id), {}
    tallies: dict[str, DocumentTally] = {}
    holders: dict[str, list[int]] = {}
    for i, view in enumerate(views):
        for t in view.tallies(document_id):
            known = tallies.get(t.id)
            tallies[t.id] = t if known is None else known._replace(chunk_count=known.chunk_count + t.chunk_count)
            holders.setdefault(t.id, []).append(i)
    return list(tallies.values()), holders


def merged_outlines(views: Sequence[IndexSections], request: OutlineRequest) -> list[ChunkOutline]:
    """The outlines over every index of ``views``, by ``(document_id, sequence_number)``, cut at the limit."""
    found = [o for view in views for o in view.outlines(request)]
    found.sort(key=lambda o: (o.document_id, o.sequence_number))  # stable: earlier indexes first on ties
    return found[: request.limit]


def merged_section_page(views: Sequence[IndexSections], request: SectionReadRequest) -> SectionPage:
    """One page of in-scope chunks over every index of ``views``, by ``(document_id, sequence_number)``.

    Counts come first (per document and index); only the documents the page overlaps are
    read, each from its offset within the document, so no chunk before the page is loaded.
    """
    counts = sorted((doc_id, i, n) for i, view in enumerate(views) for doc_id, n in view.counts(request).items())
    total = sum(n for _, _, n in counts)
    end = request.offset + request.limit
    out: list[Chunk] = []
    start = 0
    for doc_id, group in groupby(counts, key=lambda entry: entry[0]):
        holders = [(i, n) for _, i, n in group]
        size = sum(n for _, n in holders)
        lo, hi = max(request.offset - start, 0), min(end - start, size)
        if lo < hi and len(holders) == 1:
            out += views[holders[0][0]].chunks(request, doc_id, lo, hi - lo)
        elif lo < hi:  # one document in several indexes: merge its first ``hi`` chunks by sequence
            merged = [c for i, n in holders for c in views[i].chunks(request, doc_id, 0, min(hi, n))]
            merged.sort(key=lambda c: c.sequence_number)
            out += merged[lo:hi]
        start += size
        if start >= end:
            break
    return SectionPage(chunks=tuple(out), total=total)
