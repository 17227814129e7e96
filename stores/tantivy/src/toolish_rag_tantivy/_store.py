"""`TantivyStore`: lexical retrieval on tantivy (BM25, RE2 regex, native filters), no embeddings.

Implements `TextSearch`, `RegexSearch`, `ResultExpander`, `SectionReader`, `FilterPushdown` and
`DocumentStore`, never `VectorSearch`. One writer under a lock with group commit, every tantivy
call in a worker thread, the reader reloaded after each commit.
See docs/stores/tantivy.md#writes-concurrency-and-durability.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

import tantivy
from tantivy import Occur, Query

from toolish_rag.analysis import TextAnalyzer
from toolish_rag.content import Chunk, Document, Entity, Record
from toolish_rag.errors import QuerySyntaxError
from toolish_rag.filters import Filter
from toolish_rag.manifest import MANIFEST_FILE, read_manifest, update_manifest
from toolish_rag.protocols import DocumentInfo
from toolish_rag.regex import compile_request
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
from ._filters import CompiledFilters, translatable
from ._index import IndexSnapshot, record_owners
from ._query import TEXT_QUERY_SYNTAX
from ._schema import FORMAT_VERSION, KIND_ENTITY, check_storable, to_tantivy
from ._sections import IndexSections, merged_document_page, merged_outlines, merged_section_page
from ._text_analysis import IndexAnalysis

__all__ = ['CONFIG_FILE', 'TantivyStore']

CONFIG_FILE = 'toolish_rag_tantivy.json'
_OWN_FILES = (CONFIG_FILE, MANIFEST_FILE, LOCK_FILE)
"""Files a new index's folder may hold already: its config, the store manifest, the writer lock."""


@dataclass
class _Write:
    """One caller's write, applied within a group commit."""

    documents: list[Document] = field(default_factory=list)
    entities: list[Entity] = field(default_factory=list)
    delete_documents: set[str] = field(default_factory=set)
    delete_entities: set[str] = field(default_factory=set)
    future: Future[tuple[int, int]] = field(default_factory=Future)


class TantivyStore:
    """A tantivy index as a toolish-rag store.

    Args:
        path: directory of the index (created if missing); ``None`` keeps it in RAM.
        analyzer: how text is tokenised (see `toolish_rag_tantivy._analyzers`); fixed when the
            index is created and read back on reopen. ``None``: the saved one, or ``subword_stem``.
        language: index with the core's language-aware `toolish_rag.TextAnalyzer` for this
            language instead (``'zh'``, ``'de'``, ``'en'``...: any code `toolish_rag.analyzer_for`
            takes; see `toolish_rag_tantivy._text_analysis`), the same tokens `InMemoryStore` and
            `LanceDBStore` index with it. Fixed when the index is created, like ``analyzer``
            (give one of the two); ``None``: the saved analysis.
        writer_heap_bytes: tantivy's indexing memory budget (split across writer threads).
        writer_threads: indexing threads (``0``: one per core).
        regex_scan_limit: most records a regex search scans; above it the search asks for a
            narrower filter instead of scanning (``None``: no limit).
    """

    text_query_syntax: str = TEXT_QUERY_SYNTAX

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        analyzer: AnalyzerName | None = None,
        language: str | None = None,
        writer_heap_bytes: int = 128_000_000,
        writer_threads: int = 1,
        regex_scan_limit: int | None = 250_000,
    ) -> None:
        self.path = Path(path) if path is not None else None
        self.analysis = self._resolve_analysis(IndexAnalysis.requested(analyzer, language))
        self.analyzer_name: AnalyzerName | None = self.analysis.name
        """The tantivy analyzer's name; ``None`` when a language analyzer (`text_analyzer`) indexes the text."""
        self._schema = self.analysis.schema()
        self._index = self._open_index()
        self.analysis.register(self._index)
        self._index.config_reader('manual')
        self._version_lock = threading.Lock()
        self._version = 0
        self._filters = CompiledFilters()
        self._reload()
        self._writer_heap = writer_heap_bytes
        self._writer_threads = writer_threads
        self.regex_scan_limit = regex_scan_limit
        self._writer: tantivy.IndexWriter | None = None
        self._commit_lock = threading.Lock()
        self._pending_lock = threading.Lock()
        self._pending: list[_Write] = []
        self._text_languages: frozenset[str] = frozenset()
        self._queries = self.analysis.query_builder(self._schema, self._known_languages)
        self.text_query_syntax = self.analysis.query_syntax

    def _known_languages(self) -> frozenset[str]:
        """The languages ``'auto'`` analysed this index's texts in: this object's writes' and the manifest's
        (another process's writes; read each time, a small file). Store-wide, not per scope."""
        if self.path is None:
            return self._text_languages
        manifest = read_manifest(self.path)
        return self._text_languages | frozenset(manifest.languages if manifest is not None else ())

    def _record_languages(self, languages: set[str]) -> None:
        """Keep the languages a commit analysed texts in (``'auto'``), in the manifest too."""
        new = frozenset(languages) - self._text_languages
        if not new:
            return
        self._text_languages |= new
        if self.path is not None:
            update_manifest(
                self.path,
                'tantivy',
                lambda m: dataclasses.replace(m, languages=tuple(sorted({*m.languages, *new}))),
            )

    @property
    def text_analyzer(self) -> TextAnalyzer | None:
        """The core analyzer that indexes the text (``language=``); ``None`` for a tantivy analyzer."""
        return self.analysis.text_analyzer

    @property
    def language(self) -> str | None:
        """The language code of `text_analyzer` (``None`` for a tantivy analyzer)."""
        analyzer = self.analysis.text_analyzer
        return analyzer.language if analyzer is not None else None

    # -- opening ------------------------------------------------------------------------

    def _resolve_analysis(self, requested: IndexAnalysis | None) -> IndexAnalysis:
        if self.path is None:
            return requested or IndexAnalysis.default()
        config_path = self.path / CONFIG_FILE
        if config_path.exists():
            config = json.loads(config_path.read_text('utf-8'))
            saved = IndexAnalysis.from_saved(config['analyzer'])
            if config.get('format') != FORMAT_VERSION:
                raise ValueError(
                    f'{self.path} holds a toolish-rag-tantivy index of format {config.get("format")}; this '
                    f'version reads format {FORMAT_VERSION} (format 2 added the fields document listings and '
                    'outlines are read from): delete the directory and ingest the documents again'
                )
            if requested is not None and requested != saved:
                raise saved.mismatch(requested, self.path)
            return saved
        if self.path.exists() and any(p.name not in _OWN_FILES for p in self.path.iterdir()):
            raise ValueError(f'{self.path} is not empty and holds no toolish-rag-tantivy index')
        self.path.mkdir(parents=True, exist_ok=True)
        chosen = requested or IndexAnalysis.default()
        tmp = config_path.with_suffix('.tmp')
        tmp.write_text(json.dumps({'format': FORMAT_VERSION, 'analyzer': chosen.saved}), 'utf-8')
        os.replace(tmp, config_path)
        language = chosen.text_analyzer.language if chosen.text_analyzer is not None else None
        update_manifest(self.path, 'tantivy', lambda m: dataclasses.replace(m, language=language))
        return chosen

    async def upgrade(self) -> list[str]:
        """Write the manifest of an index saved before manifests (docs/stores/manifest.md); ``[]``: already current."""
        if self.path is None or read_manifest(self.path) is not None:
            return []
        language = self.language
        update_manifest(self.path, 'tantivy', lambda m: dataclasses.replace(m, language=language))
        return ['wrote the manifest']

    def _open_index(self) -> tantivy.Index:
        if self.path is None:
            return tantivy.Index(self._schema)
        if tantivy.Index.exists(str(self.path)):
            index = tantivy.Index.open(str(self.path))
            self._schema = index.schema
            return index
        return tantivy.Index(self._schema, path=str(self.path), reuse=True)

    @property
    def index(self) -> tantivy.Index:
        """The underlying `tantivy.Index` (for benchmarks and inspection; write through the store)."""
        return self._index

    def close(self) -> None:
        """Release the index writer (and its lock on the directory). Searches keep working."""
        with self._commit_lock:
            writer, self._writer = self._writer, None
            if writer is not None:
                writer.wait_merging_threads()

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    async def __aenter__(self) -> TantivyStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        where = str(self.path) if self.path is not None else 'RAM'
        return f'TantivyStore({where!r}, {self.analysis.option}, records={self._index.searcher().num_docs})'

    # -- writes ---------------------------------------------------------------------------

    def _get_writer(self) -> tantivy.IndexWriter:
        if self._writer is None:
            try:
                self._writer = self._index.writer(self._writer_heap, self._writer_threads)
            except ValueError as e:
                raise RuntimeError(
                    f'cannot write to the tantivy index at {self.path}: another writer (in this or '
                    f'another process) holds it ({e})'
                ) from e
        return self._writer

    def _submit(self, write: _Write) -> tuple[int, int]:
        """Queue ``write`` and make sure it is committed (by this thread or a concurrent one)."""
        with self._pending_lock:
            self._pending.append(write)
        with self._commit_lock:
            with self._pending_lock:
                batch, self._pending = self._pending, []
            if batch:
                self._commit(batch)
        return write.future.result()

    def _commit(self, batch: list[_Write]) -> None:
        writer = self._get_writer()
        snapshot = self.snapshot()
        applied: list[tuple[_Write, tuple[int, int]]] = []
        overlay = _BatchOverlay()
        languages: set[str] = set()
        for write in batch:
            try:
                counts = self._apply(writer, snapshot, write, overlay, languages)
            except Exception as e:  # this write is rejected; the rest of the batch goes on
                write.future.set_exception(e)
                continue
            applied.append((write, counts))
        if not applied:
            return
        try:
            writer.commit()
        except BaseException as e:
            writer.rollback()
            for write, _ in applied:
                write.future.set_exception(e)
            raise
        self._reload()
        if self.analysis.text_analyzer is not None and self.analysis.text_analyzer.auto:
            self._record_languages(languages)
        for write, counts in applied:
            write.future.set_result(counts)

    def _apply(
        self,
        writer: tantivy.IndexWriter,
        snapshot: IndexSnapshot,
        write: _Write,
        overlay: _BatchOverlay,
        languages: set[str] | None = None,
    ) -> tuple[int, int]:
        docs_gone = write.delete_documents | {d.id for d in write.documents}
        ents_gone = write.delete_entities | {e.id for e in write.entities}
        # Existing counts, for delete_* return values (as of the last commit plus this batch).
        existing_docs = self._count_existing(snapshot, 'doc_head', 'document_id', write.delete_documents, overlay.docs)
        existing_ents = self._count_existing(snapshot, 'kind', 'eid', write.delete_entities, overlay.ents)
        self._check_clashes(snapshot, write, docs_gone, ents_gone, overlay)
        analyzer = self.analysis.text_analyzer
        new_docs = [d for item in write.documents for d in to_tantivy(item, analyzer, languages)]
        new_docs += [d for item in write.entities for d in to_tantivy(item, analyzer, languages)]
        for doc_id in sorted(docs_gone):
            writer.delete_documents_by_term('document_id', doc_id)
        for entity_id in sorted(ents_gone):
            writer.delete_documents_by_term('eid', entity_id)
        for doc in new_docs:
            writer.add_document(doc)
        overlay.record(write)
        return existing_docs, existing_ents

    def _count_existing(
        self, snapshot: IndexSnapshot, marker: str, id_field: str, ids: set[str], overlay: dict[str, bool]
    ) -> int:
        if not ids:
            return 0
        known = {i for i in ids if i in overlay}
        count = sum(1 for i in known if overlay[i])
        rest = sorted(ids - known)
        if rest:
            marker_q = (
                Query.term_query(self._schema, 'doc_head', '1')
                if marker == 'doc_head'
                else Query.term_query(self._schema, 'kind', KIND_ENTITY)
            )
            q = Query.boolean_query(
                [(Occur.Must, marker_q), (Occur.Must, Query.term_set_query(self._schema, id_field, rest))]
            )
            count += snapshot.count(q)
        return count

    def _check_clashes(
        self,
        snapshot: IndexSnapshot,
        write: _Write,
        docs_gone: set[str],
        ents_gone: set[str],
        overlay: _BatchOverlay,
    ) -> None:
        owners = record_owners(write.documents, write.entities)
        if not owners:
            return
        for record_id, owner in owners.items():
            other = overlay.owner_of(record_id)
            if other is not None and other != owner and not _replaced(other, docs_gone, ents_gone):
                raise ValueError(f'record id {record_id!r} already belongs to another document or entity')
        clash = snapshot.clashing_id(
            owners,
            replacing_documents=docs_gone | overlay.replaced_docs,
            replacing_entities=ents_gone | overlay.replaced_ents,
        )
        if clash is not None:
            raise ValueError(f'record id {clash!r} already belongs to another document or entity')

    async def upsert(self, items: Iterable[Document | Entity]) -> None:
        """Insert or replace documents (whole: no stale chunk survives) and entities.

        A batch holding a value the index cannot hold (an integer beyond 64 bits, a lone
        surrogate, a metadata string too long for one term: see `check_storable`) raises
        `UnsupportedValueError` before anything of it is written.
        """
        documents, entities = upsert_batch(items)
        if not documents and not entities:
            return
        check_storable(documents, entities)
        await asyncio.to_thread(self._submit, _Write(documents=documents, entities=entities))

    async def delete_documents(self, document_ids: Iterable[str]) -> int:
        ids = set(document_ids)
        if not ids:
            return 0
        return (await asyncio.to_thread(self._submit, _Write(delete_documents=ids)))[0]

    async def delete_entities(self, entity_ids: Iterable[str]) -> int:
        ids = set(entity_ids)
        if not ids:
            return 0
        return (await asyncio.to_thread(self._submit, _Write(delete_entities=ids)))[1]

    async def list_documents(self) -> Sequence[DocumentInfo]:
        return await asyncio.to_thread(lambda: self.snapshot().documents())

    # -- reads ----------------------------------------------------------------------------

    def supports_filter(self, filter: Filter) -> bool:
        """Every filter node has an exact native translation (see `toolish_rag_tantivy._filters`).

        Unless a value in it is one the index cannot hold (an integer beyond 64 bits, a lone
        surrogate): the core evaluates such a filter.
        """
        return translatable(filter)

    def _reload(self) -> None:
        """Show the last commit to new snapshots: a new version, so no filter compiled before it is reused.

        The reader (manual policy) changes only here, and the version with it under one lock, so a
        snapshot never pairs a searcher with another version's compiled filters.
        """
        with self._version_lock:
            self._index.reload()
            self._version += 1
            self._filters.clear()

    @property
    def compiled_filters(self) -> CompiledFilters:
        """The cache of compiled filter queries (per committed version; for inspection and tests)."""
        return self._filters

    def snapshot(self) -> IndexSnapshot:
        """The index as of its last commit, for reads (`toolish_rag_tantivy._index`); blocks briefly."""
        with self._version_lock:
            return IndexSnapshot(
                self._index, self._schema, self._index.searcher(), filters=self._filters, version=self._version
            )

    async def text_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        if request.top_k <= 0:
            return []
        # A query 'auto' keeps no word of but stop words, or none ('C++'), is scanned for as a substring
        # when BM25 finds nothing (`IndexAnalysis.substring_request`).
        try:
            query = self._queries.build(request.query)
        except QuerySyntaxError:
            fallback = self.analysis.substring_request(request, self._known_languages())
            if fallback is None:
                raise
            return await self.regex_search(fallback)

        def run() -> list[SearchHit]:
            snapshot = self.snapshot()
            return [SearchHit(snapshot.record(address), score) for score, address in snapshot.ranked(query, request)]

        hits = await asyncio.to_thread(run)
        if hits:
            return hits
        fallback = self.analysis.substring_request(request, self._known_languages())
        return await self.regex_search(fallback) if fallback is not None else hits

    async def regex_search(self, request: RegexRequest) -> Sequence[SearchHit]:
        pattern = compile_request(request)
        if request.top_k <= 0:
            return []
        return await asyncio.to_thread(
            lambda: self.snapshot().regex_search(pattern, request, scan_limit=self.regex_scan_limit)
        )

    async def get_records(self, ids: Sequence[str], *, filter: Filter | None = None) -> Sequence[Record]:
        wanted = sorted(set(ids))
        if not wanted:
            return []
        return await asyncio.to_thread(lambda: self.snapshot().get_records(wanted, filter))

    async def expand(self, request: ExpansionRequest) -> Sequence[Chunk]:
        """A range or section, or the window around an anchor: every read on one snapshot."""
        if request.limit <= 0:
            return []

        def run() -> list[Chunk]:
            snapshot = self.snapshot()
            if request.around is None:
                return snapshot.expand(request)
            return snapshot.expand_around(request) or []

        return await asyncio.to_thread(run)

    async def count(self) -> int:
        """How many records (chunks and entities) the index holds."""
        return await asyncio.to_thread(lambda: self.snapshot().record_count())

    # -- navigation (SectionReader): see `toolish_rag_tantivy._sections` -------------------------

    def _sections(self, f: Filter | None) -> list[IndexSections]:
        return [IndexSections(self.snapshot(), f)]  # one snapshot: the answer comes from one commit

    async def document_page(self, request: DocumentPageRequest) -> DocumentPage:
        """One page of the documents with an in-scope chunk; reads no chunk text (any filter is honoured)."""
        return await asyncio.to_thread(lambda: merged_document_page(self._sections(request.filter), request))

    async def chunk_outlines(self, request: OutlineRequest) -> Sequence[ChunkOutline]:
        """The in-scope chunks' skeletons, from navigation terms (no chunk text is read)."""
        return await asyncio.to_thread(lambda: merged_outlines(self._sections(request.filter), request))

    async def read_section(self, request: SectionReadRequest) -> SectionPage:
        """One page of in-scope chunks in reading order; only the page's chunks are read."""
        return await asyncio.to_thread(lambda: merged_section_page(self._sections(request.filter), request))


def _replaced(owner: str, docs_gone: set[str], ents_gone: set[str]) -> bool:
    kind, _, quoted = owner.partition(' ')
    ident = quoted[1:-1]
    return ident in (docs_gone if kind == 'document' else ents_gone)


class _BatchOverlay:
    """What earlier writes of the same group commit did (the searcher cannot see them yet)."""

    def __init__(self) -> None:
        self.docs: dict[str, bool] = {}
        self.ents: dict[str, bool] = {}
        self.replaced_docs: set[str] = set()
        self.replaced_ents: set[str] = set()
        self._owners: dict[str, str] = {}
        self._owned: dict[str, list[str]] = {}

    def owner_of(self, record_id: str) -> str | None:
        return self._owners.get(record_id)

    def _drop(self, owner: str) -> None:
        for record_id in self._owned.pop(owner, []):
            if self._owners.get(record_id) == owner:
                del self._owners[record_id]

    def _own(self, owner: str, ids: list[str]) -> None:
        self._drop(owner)
        self._owned[owner] = ids
        for record_id in ids:
            self._owners[record_id] = owner

    def record(self, write: _Write) -> None:
        for doc_id in write.delete_documents:
            self.docs[doc_id] = False
            self.replaced_docs.add(doc_id)
            self._drop(f'document {doc_id!r}')
        for entity_id in write.delete_entities:
            self.ents[entity_id] = False
            self.replaced_ents.add(entity_id)
            self._drop(f'entity {entity_id!r}')
        for d in write.documents:
            self.docs[d.id] = True
            self.replaced_docs.add(d.id)
            self._own(f'document {d.id!r}', [c.id for c in d.chunks])
        for e in write.entities:
            self.ents[e.id] = True
            self.replaced_ents.add(e.id)
            self._own(f'entity {e.id!r}', [e.id])
