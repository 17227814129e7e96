"""`IndexSnapshot`: every read of one tantivy index, on one searcher (one committed version).

Shared by `TantivyStore` and `PartitionedTantivyStore`. See docs/stores/tantivy.md#how-the-adapter-is-built.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import tantivy
from tantivy import Occur, Query

from toolish_rag.content import Chunk, Document, Entity, Record
from toolish_rag.filters import Filter
from toolish_rag.protocols import DocumentInfo
from toolish_rag.regex import count_matches, regex_rank_key, scan_limit_error
from toolish_rag.search import ExpansionRequest, RegexRequest, SearchHit, SearchRequest

from ._filters import CompiledFilters, FilterCompiler, translatable
from ._schema import KIND_CHUNK, KIND_DOCUMENT, from_stored, scan_text

__all__ = ['IndexSnapshot', 'all_hits', 'count_hits', 'ids_query', 'record_owners']


@dataclass(frozen=True)
class IndexSnapshot:
    """One searcher of one index (schema: `toolish_rag_tantivy._schema.build_schema`)."""

    index: tantivy.Index
    schema: tantivy.Schema
    searcher: tantivy.Searcher
    filters: CompiledFilters | None = None
    """Compiled filters of this index (``None``: compile every time)."""
    version: int = 0
    """The committed version ``searcher`` belongs to: the key of ``filters``' entries."""

    @property
    def is_empty(self) -> bool:
        """No live record (and no document placeholder): every read answers nothing."""
        return self.searcher.num_docs == 0

    # -- building blocks -----------------------------------------------------------------

    def scoped(self, query: Query, f: Filter | None, *, kinds: str | None = None) -> Query:
        """``query`` restricted to searchable records (and ``kinds``) satisfying ``f``; ``f`` adds no score.

        Searchable: chunks and entities, never the placeholder of a document without chunks.
        """
        parts: list[tuple[Occur, Query]] = [(Occur.Must, query)]
        if kinds is not None:
            parts.append((Occur.Must, Query.const_score_query(Query.term_query(self.schema, 'kind', kinds), 0.0)))
        else:
            parts.append((Occur.MustNot, Query.term_query(self.schema, 'kind', KIND_DOCUMENT)))
        if f is not None:
            parts.append((Occur.Must, self.filter_query(f)))
        return Query.boolean_query(parts)

    def filter_query(self, f: Filter) -> Query:
        """``f`` as a scoring-free query on this searcher: compiled once per version when `filters` is set."""

        def compile() -> Query:
            return Query.const_score_query(FilterCompiler(self.index, self.searcher).compile(f), 0.0)

        if self.filters is None or not translatable(f):
            return compile()  # an untranslatable filter raises there, with its own message
        return self.filters.get(self.version, f, compile)

    def record(self, address: tantivy.DocAddress) -> Record:
        """The record stored at ``address`` (an address from this snapshot's searcher)."""
        return from_stored(self.searcher.doc(address).to_dict())

    def count(self, query: Query) -> int:
        """How many index documents match ``query``."""
        return count_hits(self.searcher, query)

    # -- reads ---------------------------------------------------------------------------

    def ranked(self, query: Query, request: SearchRequest) -> list[tuple[float, tantivy.DocAddress]]:
        """The best ``top_k`` in-scope (score, address) pairs, records not loaded: a caller merging
        several indexes (`PartitionedTantivyStore`) loads only the records that make its cut."""
        if self.is_empty:
            return []
        hits = self.searcher.search(self.scoped(query, request.filter), request.top_k, count=False).hits
        return [(float(score), address) for score, address in hits]

    def regex_candidates(self, f: Filter | None) -> int:
        """How many records a regex search scoped by ``f`` scans (for a scan limit over several indexes)."""
        return 0 if self.is_empty else self.count(self.scoped(Query.all_query(), f))

    def regex_search(self, pattern: Any, request: RegexRequest, *, scan_limit: int | None) -> list[SearchHit]:
        """The in-scope records ``pattern`` matches, best ``top_k`` by `regex_rank_key`.

        More than ``scan_limit`` candidates raises `scan_limit_error` before any is read
        (``None``: no limit; a caller summing a limit over several indexes passes ``None``).
        """
        if self.is_empty:
            return []
        candidates = self.scoped(Query.all_query(), request.filter)
        total = self.count(candidates)
        if scan_limit is not None and total > scan_limit:
            raise scan_limit_error(total, scan_limit)
        found: list[tuple[tuple[int, str, int], float, Any, tuple[str, ...]]] = []
        for _, address in all_hits(self.searcher, candidates, total):
            stored = self.searcher.doc(address).to_dict()
            count, samples = count_matches(pattern, scan_text(stored))
            if not count:
                continue
            rec = json.loads(bytes(stored['rec'][0]))
            sequence_number = int(stored['seq'][0]) if 'seq' in stored else None
            # Chunks (with ``seq``) carry a document_id in ``rec``; entities do not.
            key = regex_rank_key(count, rec['id'], rec.get('document_id'), sequence_number)
            found.append((key, float(count), stored, samples))
        found.sort(key=lambda item: item[0])
        return [
            SearchHit(from_stored(stored), score, matches=samples)
            for _, score, stored, samples in found[: request.top_k]
        ]

    def get_records(self, ids: list[str], f: Filter | None) -> list[Record]:
        """The in-scope records with one of ``ids``, in index order."""
        q = self.scoped(Query.term_set_query(self.schema, 'id', ids), f)
        return [self.record(address) for _, address in all_hits(self.searcher, q)]

    def expand(self, request: ExpansionRequest) -> list[Chunk]:
        """A plain (unanchored) request's chunks, in sequence order."""
        if self.is_empty:
            return []
        parts: list[Query] = []
        if request.document_id is not None:
            parts.append(Query.term_query(self.schema, 'document_id', request.document_id))
        if request.section_id is not None:
            parts.append(Query.term_query(self.schema, 'section_ids', request.section_id))
        if request.first is not None or request.last is not None:
            parts.append(Query.range_query(self.schema, 'seq', tantivy.FieldType.Integer, request.first, request.last))
        base = Query.boolean_query([(Occur.Must, p) for p in parts]) if parts else Query.all_query()
        q = self.scoped(base, request.filter, kinds=KIND_CHUNK)
        hits = self.searcher.search(q, request.limit, order_by_field='seq', order=tantivy.Order.Asc).hits
        out: list[Chunk] = []
        for _, address in hits:
            record = self.record(address)
            assert isinstance(record, Chunk)
            out.append(record)
        out.sort(key=lambda c: c.sequence_number)
        return out

    def expand_around(self, request: ExpansionRequest) -> list[Chunk] | None:
        """An anchored request; ``None`` when the anchor is not in this index.

        The window depends on the anchor, so both are read from this one snapshot: a commit
        (and the reload after it) gives later snapshots the new version, never this one.
        """
        assert request.around is not None
        found = self.get_records([request.around], None)
        anchor = next((r for r in found if isinstance(r, Chunk)), None)
        probe = request.section_probe()
        if anchor is None and probe is not None:
            inside = self.expand(probe)
            anchor = inside[0] if inside else None
        return None if anchor is None else self.expand(request.window(anchor))

    def documents(self) -> list[DocumentInfo]:
        """Every stored document (with or without chunks), by id."""
        return sorted(self.document_infos(None).values(), key=lambda d: d.id)

    def document_infos(self, ids: Collection[str] | None) -> dict[str, DocumentInfo]:
        """The stored documents with one of ``ids`` (``None``: all), by id: one stored read each.

        A document's own facts are kept once, on its first record (``doc_head``), so this reads
        one stored document per document, never one per chunk.
        """
        if self.is_empty or (ids is not None and not ids):
            return {}
        q = Query.term_query(self.schema, 'doc_head', '1')
        if ids is not None:
            q = Query.boolean_query([(Occur.Must, q), (Occur.Must, ids_query(self.schema, 'document_id', ids))])
        out: dict[str, DocumentInfo] = {}
        for _, address in all_hits(self.searcher, q):
            info = DocumentInfo(**json.loads(bytes(self.searcher.doc(address)['doc_info'][0])))
            out[info.id] = info
        return out

    def term_counts(self, field: str, prefix: str, query: Query) -> list[tuple[str, int]]:
        """The terms of ``field`` starting with ``prefix`` that live documents matching ``query`` hold, each
        with how many hold it (terms no such document holds are left out).

        Reads the term dictionary and postings only, never a stored document (see the navigation
        terms in `toolish_rag_tantivy._schema`). ``query`` is required: without one, tantivy would
        count deleted documents too.
        """
        if self.is_empty:
            return []
        found = self.searcher.terms_with_prefix(field, prefix, filter_query=query)
        return [(str(term), int(count)) for term, count in found]

    def chunks_by_sequence(self, query: Query, offset: int, limit: int) -> list[Chunk]:
        """The chunks matching ``query`` in ``sequence_number`` order, from ``offset``, at most ``limit``.

        Ordered and cut on the ``seq`` fast field: only the returned chunks are read from the store.
        """
        if self.is_empty or limit <= 0:
            return []
        hits = self.searcher.search(
            query, limit, count=False, order_by_field='seq', order=tantivy.Order.Asc, offset=offset
        ).hits
        out: list[Chunk] = []
        for _, address in hits:
            record = self.record(address)
            assert isinstance(record, Chunk)
            out.append(record)
        return out

    def record_count(self) -> int:
        """How many records (chunks and entities) the index holds."""
        return self.count(self.scoped(Query.all_query(), None))

    # -- what a write would clash with -------------------------------------------------------

    def holds(self, field: str, ids: Collection[str]) -> bool:
        """Whether a live index document has one of ``ids`` in ``field`` (``document_id``, ``eid``, ``id``).

        Counted by a search, not by term statistics: those count deleted documents too.
        """
        return bool(ids) and not self.is_empty and self.count(Query.term_set_query(self.schema, field, sorted(ids))) > 0

    def first_held(self, field: str, ids: Collection[str]) -> str | None:
        """The first of ``ids`` (in sorted order) `holds` finds, ``None`` if none: what to name in a refusal."""
        if not self.holds(field, ids):
            return None
        return next(i for i in sorted(ids) if self.holds(field, [i]))

    def clashing_id(
        self, record_ids: Collection[str], *, replacing_documents: Collection[str], replacing_entities: Collection[str]
    ) -> str | None:
        """A stored record id among ``record_ids`` that an upsert must refuse, or ``None``.

        A record of a document or entity the same write replaces (``replacing_*``: it is
        deleted in that write) does not clash; any other stored record with the id does.
        """
        if not record_ids or self.is_empty:
            return None
        parts: list[tuple[Occur, Query]] = [(Occur.Must, Query.term_set_query(self.schema, 'id', sorted(record_ids)))]
        if replacing_documents:
            parts.append((Occur.MustNot, Query.term_set_query(self.schema, 'document_id', sorted(replacing_documents))))
        if replacing_entities:
            parts.append((Occur.MustNot, Query.term_set_query(self.schema, 'eid', sorted(replacing_entities))))
        hits = self.searcher.search(Query.boolean_query(parts), 1).hits
        return self.record(hits[0][1]).id if hits else None


def record_owners(documents: Sequence[Document], entities: Sequence[Entity]) -> dict[str, str]:
    """Each record id an upsert writes, with what writes it (``document 'id'``, ``entity 'id'``).

    Raises ``ValueError`` when two items of the upsert write the same record id: one index
    holds one record per id, and neither item could be told apart from the other afterwards.
    """
    owners: dict[str, str] = {}
    for d in documents:
        for c in d.chunks:
            owners.setdefault(c.id, f'document {d.id!r}')
            if owners[c.id] != f'document {d.id!r}':
                raise ValueError(f'record id {c.id!r} is used by two items of one upsert')
    for e in entities:
        if e.id in owners:
            raise ValueError(f'record id {e.id!r} is used by two items of one upsert')
        owners[e.id] = f'entity {e.id!r}'
    return owners


def count_hits(searcher: tantivy.Searcher, query: Query) -> int:
    """How many documents match ``query`` (the type stubs omit ``SearchResult.count``)."""
    result = searcher.search(query, 1, count=True)
    return int(getattr(result, 'count', 0) or 0)


def all_hits(
    searcher: tantivy.Searcher, query: Query, total: int | None = None
) -> list[tuple[Any, tantivy.DocAddress]]:
    """Every hit of ``query`` (no ranking needed), in index order; ``total``: their count, if known."""
    limit = total if total is not None else count_hits(searcher, query)
    if limit <= 0:
        return []
    hits = searcher.search(query, limit, count=False).hits
    return sorted(hits, key=lambda h: (h[1].segment_ord, h[1].doc))


def ids_query(schema: tantivy.Schema, field: str, ids: Collection[str]) -> Query:
    """Records whose ``field`` is one of ``ids``: a term query for one id (a term set of one is ~20x slower)."""
    if len(ids) == 1:
        return Query.term_query(schema, field, next(iter(ids)))
    return Query.term_set_query(schema, field, sorted(ids))
