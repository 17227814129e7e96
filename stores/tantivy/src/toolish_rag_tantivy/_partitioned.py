"""`PartitionedTantivyStore`: one tantivy index per value of a metadata key (strict isolation).

tantivy computes BM25 statistics over a whole index, so each value of the key (e.g. ``tenant``)
gets its own index: a search pinned to one value reads that index only, a wider one merges the
partitions it reaches; an upsert is checked against every partition before the first commit.
See docs/filters.md#corpus-statistics.
"""

from __future__ import annotations

import asyncio
import functools
import heapq
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import tantivy

from toolish_rag import filters
from toolish_rag.analysis import TextAnalyzer
from toolish_rag.content import Chunk, Document, Entity, MetadataValue, Record, validate_metadata_key
from toolish_rag.errors import QuerySyntaxError
from toolish_rag.filters import Filter
from toolish_rag.manifest import MANIFEST_FILE
from toolish_rag.protocols import DocumentInfo
from toolish_rag.regex import compile_request, regex_rank_key, scan_limit_error
from toolish_rag.search import ExpansionRequest, RegexRequest, SearchHit, SearchRequest
from toolish_rag.sections import (
    ChunkOutline,
    DocumentPage,
    DocumentPageRequest,
    OutlineRequest,
    SectionPage,
    SectionReadRequest,
)
from toolish_rag.stores.lock import LOCK_FILE
from toolish_rag.writes import upsert_batch

from ._analyzers import AnalyzerName
from ._filters import translatable
from ._index import IndexSnapshot
from ._partitions import PartitionId, PartitionPruner
from ._placement import Groups, check_against, place
from ._query import TEXT_QUERY_SYNTAX
from ._schema import check_storable
from ._sections import IndexSections, merged_document_page, merged_outlines, merged_section_page
from ._store import TantivyStore
from ._text_analysis import IndexAnalysis

__all__ = ['PARTITIONS_FILE', 'PartitionedTantivyStore']

PARTITIONS_FILE = 'toolish_rag_tantivy_partitions.json'
_FORMAT = 1
_OPEN_WRITERS = 4
"""Partitions whose index writer stays open after a write (each holds threads and a memory budget)."""


class PartitionedTantivyStore:
    """Tantivy indexes, one per value of ``partition_key``, as one toolish-rag store.

    Args:
        path: directory (created if missing) holding the partitions; ``None`` keeps them in RAM.
        partition_key: the metadata key whose value picks a record's index (``'tenant'``).
            Fixed when the store is created; ``None`` on reopen reads the saved one.
        analyzer, language, writer_heap_bytes, writer_threads: as `TantivyStore`, for every
            partition (the analysis is saved with the store and every partition uses it).
        regex_scan_limit: most records one regex search scans, summed over the partitions it
            reaches (``None``: no limit).
    """

    text_query_syntax: str = TEXT_QUERY_SYNTAX

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        partition_key: str | None = None,
        analyzer: AnalyzerName | None = None,
        language: str | None = None,
        writer_heap_bytes: int = 128_000_000,
        writer_threads: int = 1,
        regex_scan_limit: int | None = 250_000,
    ) -> None:
        self.path = Path(path) if path is not None else None
        self.partition_key, self.analysis = self._resolve(partition_key, IndexAnalysis.requested(analyzer, language))
        self.analyzer_name: AnalyzerName | None = self.analysis.name
        """The tantivy analyzer's name; ``None`` when a language analyzer (`text_analyzer`) indexes the text."""
        self.regex_scan_limit = regex_scan_limit
        self._open = functools.partial(
            TantivyStore,
            analyzer=self.analysis.name,
            language=self.analysis.text_analyzer.language if self.analysis.text_analyzer is not None else None,
            writer_heap_bytes=writer_heap_bytes,
            writer_threads=writer_threads,
            regex_scan_limit=None,  # enforced here, over all the partitions a search reaches
        )
        self._queries = self.analysis.query_builder(self.analysis.schema(), self._known_languages)
        self.text_query_syntax = self.analysis.query_syntax
        self._pruner = PartitionPruner(self.partition_key)
        self._lock = threading.Lock()
        self._write_lock = asyncio.Lock()
        self._writing: OrderedDict[PartitionId, None] = OrderedDict()
        self._partitions: dict[PartitionId, TantivyStore] = {}
        if self.path is not None:
            for child in sorted((self.path / 'partitions').iterdir()) if (self.path / 'partitions').is_dir() else []:
                pid = PartitionId.from_dirname(child.name)
                if pid is not None and child.is_dir():
                    self._partitions[pid] = self._open(child)

    def _known_languages(self) -> frozenset[str]:
        """The languages ``'auto'`` analysed the partitions' texts in (each partition's writes and manifest):
        a query is analysed in each, as in one `TantivyStore` (store-wide, not per scope)."""
        with self._lock:
            partitions = list(self._partitions.values())
        return frozenset().union(*(p._known_languages() for p in partitions))

    @property
    def text_analyzer(self) -> TextAnalyzer | None:
        """The core analyzer that indexes the text (``language=``); ``None`` for a tantivy analyzer."""
        return self.analysis.text_analyzer

    # -- opening ------------------------------------------------------------------------

    def _resolve(self, key: str | None, analysis: IndexAnalysis | None) -> tuple[str, IndexAnalysis]:
        """The partition key and analysis: the saved ones on reopen, else the requested ones (saved)."""
        if key is not None:
            validate_metadata_key(key)
        config = self.path / PARTITIONS_FILE if self.path is not None else None
        if config is not None and config.exists():
            saved = json.loads(config.read_text('utf-8'))
            if saved.get('format') != _FORMAT:
                raise ValueError(f'{self.path} holds partitioned indexes of format {saved.get("format")}')
            if key is not None and key != saved['partition_key']:
                raise ValueError(
                    f'{self.path} was created with partition_key={saved["partition_key"]!r}; reopen it with that '
                    f'(or None), or create a new store for {key!r}'
                )
            saved_analysis = IndexAnalysis.from_saved(saved['analyzer'])
            if analysis is not None and analysis != saved_analysis:
                raise saved_analysis.mismatch(analysis, self.path)
            return saved['partition_key'], saved_analysis
        if key is None:
            raise ValueError('partition_key is required: the metadata key whose values get an index each')
        chosen = analysis or IndexAnalysis.default()
        if config is not None:
            assert self.path is not None
            if self.path.exists() and any(p.name not in (MANIFEST_FILE, LOCK_FILE) for p in self.path.iterdir()):
                raise ValueError(f'{self.path} is not empty and holds no partitioned toolish-rag-tantivy store')
            self.path.mkdir(parents=True, exist_ok=True)
            tmp = config.with_suffix('.tmp')
            tmp.write_text(json.dumps({'format': _FORMAT, 'partition_key': key, 'analyzer': chosen.saved}), 'utf-8')
            os.replace(tmp, config)
        return key, chosen

    def _partition(self, pid: PartitionId) -> TantivyStore:
        """The index of ``pid``, created on its first write."""
        with self._lock:
            store = self._partitions.get(pid)
            if store is None:
                where = self.path / 'partitions' / pid.dirname if self.path is not None else None
                store = self._open(where)
                self._partitions[pid] = store
            return store

    def _reached(self, f: Filter | None) -> list[TantivyStore]:
        """The indexes a search scoped by ``f`` must read, in partition order."""
        reach = self._pruner.visit(f) if f is not None else None
        with self._lock:
            return [s for pid, s in sorted(self._partitions.items()) if reach is None or pid in reach]

    def index_of(self, value: MetadataValue) -> tantivy.Index | None:
        """The tantivy index of the partition ``value`` names (benchmarks, inspection; write through the store)."""
        with self._lock:
            store = self._partitions.get(PartitionId.of(value, key=self.partition_key))
        return store.index if store is not None else None

    @property
    def partitions(self) -> list[PartitionId]:
        """The partitions that have an index (written to at least once), in order."""
        with self._lock:
            return sorted(self._partitions)

    def close(self) -> None:
        """Release every partition's index writer. Searches keep working."""
        with self._lock:
            stores = list(self._partitions.values())
        for store in stores:
            store.close()

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    async def __aenter__(self) -> PartitionedTantivyStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        where = str(self.path) if self.path is not None else 'RAM'
        return (
            f'PartitionedTantivyStore({where!r}, partition_key={self.partition_key!r}, '
            f'{self.analysis.option}, partitions={len(self._partitions)})'
        )

    # -- writes ---------------------------------------------------------------------------

    async def upsert(self, items: Iterable[Document | Entity]) -> None:
        """Insert or replace documents and entities, each in the partition of its key's value.

        All or nothing: a refused upsert (`UnsupportedValueError` for an item whose partition
        value cannot be stored, ``ValueError`` for a record id clash) leaves every partition as
        it was, since everything is checked before the first partition commits.
        """
        documents, entities = upsert_batch(items)
        check_storable(documents, entities)  # the whole batch, before any partition commits
        groups = place(documents, entities, self.partition_key)
        if not groups:
            return
        async with self._write_lock:
            await asyncio.to_thread(self._admit, groups)
            for pid in sorted(groups):
                await self._partition(pid).upsert(groups[pid])
                await asyncio.to_thread(self._wrote, pid)

    def _admit(self, groups: Groups) -> None:
        """Refuse ``groups`` unless every partition would take its part (under the write lock)."""
        with self._lock:
            partitions = sorted(self._partitions.items())
        check_against(groups, [(pid, store.snapshot()) for pid, store in partitions], self.partition_key)

    def _wrote(self, pid: PartitionId) -> None:
        """Keep the writers of the last few partitions written open; close the rest."""
        self._writing[pid] = None
        self._writing.move_to_end(pid)
        while len(self._writing) > _OPEN_WRITERS:
            stale, _ = self._writing.popitem(last=False)
            self._partitions[stale].close()

    async def _delete(self, field: str, ids: set[str]) -> int:
        if not ids:
            return 0
        removed = 0
        async with self._write_lock:
            with self._lock:
                partitions = sorted(self._partitions.items())
            for pid, store in partitions:
                if await asyncio.to_thread(_holds, store, field, ids):
                    if field == 'document_id':
                        removed += await store.delete_documents(ids)
                    else:
                        removed += await store.delete_entities(ids)
                    await asyncio.to_thread(self._wrote, pid)
        return removed

    async def delete_documents(self, document_ids: Iterable[str]) -> int:
        return await self._delete('document_id', set(document_ids))

    async def delete_entities(self, entity_ids: Iterable[str]) -> int:
        return await self._delete('eid', set(entity_ids))

    async def list_documents(self) -> Sequence[DocumentInfo]:
        found: list[DocumentInfo] = []
        for store in self._reached(None):
            found.extend(await store.list_documents())
        return sorted(found, key=lambda d: d.id)

    async def count(self) -> int:
        """How many records (chunks and entities) the partitions hold together."""
        return sum([await store.count() for store in self._reached(None)])

    # -- reads ----------------------------------------------------------------------------

    def supports_filter(self, filter: Filter) -> bool:
        """As `TantivyStore.supports_filter`: each partition's index translates the filter natively."""
        return translatable(filter)

    def text_ranking_in_scope(self, filter: Filter) -> bool:
        """Whether ``filter`` admits exactly the records of the partitions it reaches (it names
        values of the partition key, nothing else): then each index ranks with in-scope
        statistics alone (`toolish_rag.protocols.ScopedTextRanking`)."""
        return _only_key(filter, self.partition_key)

    async def text_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        if request.top_k <= 0:
            return []
        # Built once, also when no partition is reached (the same syntax errors as one index). Every
        # partition's schema is `build_schema` of the same analyzer, so the query's fields are theirs.
        # A query 'auto' keeps no word of but stop words, or none, is scanned for as one `TantivyStore`'s is.
        try:
            query = self._queries.build(request.query)
        except QuerySyntaxError:
            fallback = self.analysis.substring_request(request, self._known_languages())
            if fallback is None:
                raise
            return await self.regex_search(fallback)
        hits = await asyncio.to_thread(self._text_search, query, request)
        if hits:
            return hits
        fallback = self.analysis.substring_request(request, self._known_languages())
        return await self.regex_search(fallback) if fallback is not None else hits

    def _text_search(self, query: tantivy.Query, request: SearchRequest) -> list[SearchHit]:
        ranked: list[tuple[float, int, int, IndexSnapshot, tantivy.DocAddress]] = []
        for p, store in enumerate(self._reached(request.filter)):
            snapshot = store.snapshot()
            hits = snapshot.ranked(query, request)
            ranked += [(-score, p, i, snapshot, address) for i, (score, address) in enumerate(hits)]
        # By score; ties keep each partition's order, earlier partitions first. Only the winners are loaded.
        best = heapq.nsmallest(request.top_k, ranked, key=lambda r: r[:3])
        return [SearchHit(snapshot.record(address), -score) for score, _, _, snapshot, address in best]

    async def regex_search(self, request: RegexRequest) -> Sequence[SearchHit]:
        pattern = compile_request(request)
        if request.top_k <= 0:
            return []
        return await asyncio.to_thread(self._regex_search, pattern, request)

    def _regex_search(self, pattern: Any, request: RegexRequest) -> list[SearchHit]:
        snapshots = [s.snapshot() for s in self._reached(request.filter)]
        if self.regex_scan_limit is not None:
            total = sum(s.regex_candidates(request.filter) for s in snapshots)
            if total > self.regex_scan_limit:
                raise scan_limit_error(total, self.regex_scan_limit)
        hits = [h for s in snapshots for h in s.regex_search(pattern, request, scan_limit=None)]
        hits.sort(key=_regex_key)
        return hits[: request.top_k]

    async def get_records(self, ids: Sequence[str], *, filter: Filter | None = None) -> Sequence[Record]:
        wanted = sorted(set(ids))
        if not wanted:
            return []
        return await asyncio.to_thread(
            lambda: [r for s in self._reached(filter) for r in s.snapshot().get_records(wanted, filter)]
        )

    async def expand(self, request: ExpansionRequest) -> Sequence[Chunk]:
        """A range or section over the partitions in reach; an anchored request within its anchor's partition.

        A document lives in one partition, so the anchor and its whole window are there, and
        both are read on one searcher of that partition (one snapshot). A partition the filter
        does not reach holds no in-scope chunk, so an anchor there yields nothing.
        """
        if request.limit <= 0:
            return []

        def run() -> list[Chunk]:
            stores = self._reached(request.filter)
            if request.around is not None:
                windows = (s.snapshot().expand_around(request) for s in stores)
                return next((w for w in windows if w is not None), [])
            found = [c for s in stores for c in s.snapshot().expand(request)]
            found.sort(key=lambda c: c.sequence_number)  # stable: partitions stay in order on ties
            return found[: request.limit]

        return await asyncio.to_thread(run)

    # -- navigation (SectionReader): see `toolish_rag_tantivy._sections` -------------------------

    def _sections(self, f: Filter | None) -> list[IndexSections]:
        """One snapshot of each partition ``f`` can reach (a partition it cannot reach holds nothing in scope)."""
        return [IndexSections(store.snapshot(), f) for store in self._reached(f)]

    async def document_page(self, request: DocumentPageRequest) -> DocumentPage:
        """The listing merged over the partitions in reach: sorted and paged, then only the page is detailed."""
        return await asyncio.to_thread(lambda: merged_document_page(self._sections(request.filter), request))

    async def chunk_outlines(self, request: OutlineRequest) -> Sequence[ChunkOutline]:
        return await asyncio.to_thread(lambda: merged_outlines(self._sections(request.filter), request))

    async def read_section(self, request: SectionReadRequest) -> SectionPage:
        """Counted in every partition in reach; only the partitions and documents the page overlaps are read."""
        return await asyncio.to_thread(lambda: merged_section_page(self._sections(request.filter), request))


def _only_key(f: Filter, key: str) -> bool:
    """Whether ``f`` constrains ``key`` alone, by its values (``eq``, ``in`` and their ``and``/``or``)."""
    if isinstance(f, filters.Eq | filters.In):
        return f.key == key
    if isinstance(f, filters.And | filters.Or):
        return all(_only_key(child, key) for child in f.filters)
    return False


def _regex_key(hit: SearchHit) -> tuple[int, str, int]:
    record = hit.record
    if isinstance(record, Chunk):
        return regex_rank_key(int(hit.score), record.id, record.document_id, record.sequence_number)
    return regex_rank_key(int(hit.score), record.id)


def _holds(store: TantivyStore, field: str, ids: set[str]) -> bool:
    """Whether ``store`` holds one of ``ids`` (document ids or entity ids, by ``field``)."""
    return store.snapshot().holds(field, ids)
