"""The builders' driver and ledger: read each document, skip what is unchanged, write only the difference.

See docs/graph.md (How the builders work).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..content import Chunk, Document, Entity, Metadata, NodeKind, Relation
from ..protocols import DocumentInfo, DocumentStore, GraphBuiltWriter, GraphStore, ResultExpander
from ..search import ExpansionRequest

__all__ = [
    'CACHE_KEY_PREFIX',
    'DERIVED_SCOPE_VERSION',
    'BuildReport',
    'DocumentGraph',
    'DocumentInput',
    'DocumentSync',
    'GraphBuildStore',
    'GraphBuilder',
    'SyncCounts',
    'build_documents',
    'build_graph',
    'cache_key',
    'chunks_digest',
    'derived_relation',
    'failure_line',
    'fingerprint',
    'group_mark',
    'model_identity',
    'iter_documents',
    'read_chunks',
    'scope_group',
    'scope_of',
]

CACHE_KEY_PREFIX = 'cache:'
"""Ledger keys starting with this are a builder's own (a cache), never taken for a document id."""

CHUNK_PAGE = 500
"""How many chunks one ``expand`` call reads while paging through a document."""

BATCH_DOCUMENTS = 256
"""Documents whose writes go out together (one upsert, one delete, one ledger write)."""

DERIVED_SCOPE_VERSION = 2
"""Part of every builder's marks; bumped when what derived records carry for scope changes.

Version 2: every relation carries its provenance chunk's full metadata and labels (version 1
carried only the ``scope_keys``). A store built under an older rule then rebuilds every document
on the next run, instead of keeping edges a negative scope predicate would not see.
"""


@dataclass(frozen=True, slots=True)
class BuildReport:
    """What one builder run did; ``writes == 0`` on a second run over an unchanged store."""

    builder: str
    documents_seen: int
    documents_built: int
    relations_written: int
    relations_deleted: int
    entities_written: int
    model_calls: int = 0
    failures: tuple[str, ...] = ()
    """One line per document that could not be built (``'<document id>: <why>'``); the others were."""

    @property
    def writes(self) -> int:
        return self.relations_written + self.relations_deleted + self.entities_written


@runtime_checkable
class GraphBuildStore(GraphStore, DocumentStore, ResultExpander, Protocol):
    """What a builder needs: the graph's write side, the document listing, and chunks by document."""

    async def upsert(self, items: Iterable[Document | Entity | Relation]) -> None: ...


@runtime_checkable
class GraphBuilder(Protocol):
    """Writes part of the graph. ``name`` is the relations' ``origin`` and the ledger's key."""

    @property
    def name(self) -> str: ...

    async def build(self, store: GraphBuildStore) -> BuildReport: ...


async def build_graph(store: GraphBuildStore, *builders: GraphBuilder) -> list[BuildReport]:
    """Run ``builders`` one after another, in the order given, and report each.

    Sequential on purpose: a later builder reads what an earlier one wrote (the exact-name
    linker matches the entities extraction created). Then the store records that its graph
    was built (`toolish_rag.protocols.GraphBuiltWriter`, in its manifest): from then on the
    graph tools are offered for it (docs/graph.md#when-the-graph-tools-are-offered).
    """
    reports = [await builder.build(store) for builder in builders]
    if builders and isinstance(store, GraphBuiltWriter):
        await store.record_graph_built([builder.name for builder in builders])
    return reports


# -- reading -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DocumentInput:
    """A stored document and its chunks in reading order: what a document-wise builder reads."""

    info: DocumentInfo
    chunks: tuple[Chunk, ...]

    @property
    def id(self) -> str:
        return self.info.id


async def read_chunks(store: ResultExpander, document_id: str) -> list[Chunk]:
    """Every chunk of a document in ``sequence_number`` order, paged so no single read is huge."""
    chunks: list[Chunk] = []
    first: int | None = None
    while True:
        page = await store.expand(ExpansionRequest(document_id=document_id, first=first, limit=CHUNK_PAGE))
        chunks.extend(page)
        if len(page) < CHUNK_PAGE:
            return chunks
        first = page[-1].sequence_number + 1


async def iter_documents(
    store: GraphBuildStore, infos: Iterable[DocumentInfo] | None = None
) -> AsyncIterator[DocumentInput]:
    """Every stored document (or those of ``infos``, a listing the caller already holds) with its chunks, by id."""
    for info in sorted(await store.list_documents() if infos is None else infos, key=lambda d: d.id):
        yield DocumentInput(info, tuple(await read_chunks(store, info.id)))


# -- fingerprints and scope --------------------------------------------------------------


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(',', ':'), default=repr)


def fingerprint(*parts: Any) -> str:
    """A digest of JSON-able ``parts`` (config, digests of inputs): a ledger value."""
    return hashlib.sha256(_json(parts).encode('utf-8', 'surrogatepass')).hexdigest()[:32]


def chunks_digest(chunks: Iterable[Chunk]) -> str:
    """A digest of everything a builder may read of chunks (ids, texts, sections, metadata, labels)."""
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(chunk.model_dump_json().encode('utf-8', 'surrogatepass'))
        digest.update(b'\x1e')
    return digest.hexdigest()[:32]


def cache_key(*parts: Any) -> str:
    """A ledger key for a builder's own cache entry: never mistaken for a document id."""
    return CACHE_KEY_PREFIX + fingerprint(*parts)


def scope_of(metadata: Metadata, scope_keys: Sequence[str]) -> Metadata:
    """The ``scope_keys`` set in ``metadata``: what a linker compares to decide whether two records may link.

    A convenience, not the security boundary: every derived relation carries its provenance
    chunk's *full* metadata and labels, and stores check both endpoints of an edge, so a scope
    filter on any key cuts derived records exactly where it cuts the chunks they come from.
    """
    return {k: metadata[k] for k in scope_keys if metadata.get(k) is not None}


def group_mark(config: Any, document: DocumentInput, scope_keys: Sequence[str], digests: Mapping[str, str]) -> str:
    """A linker's mark: its config, the document's chunks, and the digest of every scope group they fall in
    (what the chunks can link to: a change there relinks the document)."""
    groups = sorted({scope_group(chunk.metadata, scope_keys) for chunk in document.chunks})
    return fingerprint(config, chunks_digest(document.chunks), [(g, digests.get(g, '')) for g in groups])


def model_identity(model: Any) -> str:
    """What names a model in marks and cache keys: a model string as given, else ``'system:model_name'``."""
    return model if isinstance(model, str) else f'{model.system}:{model.model_name}'


def scope_group(metadata: Metadata, scope_keys: Sequence[str]) -> str:
    """A key equal exactly for records of equal ``scope_keys`` values: linking happens only within one group."""
    return _json(scope_of(metadata, scope_keys))


def derived_relation(
    chunk: Chunk,
    origin: str,
    source: str,
    source_kind: NodeKind,
    target: str,
    target_kind: NodeKind,
    type: str,
    *,
    weight: float = 1.0,
    read_from_chunk: bool = True,
) -> Relation:
    """A relation a builder derived from ``chunk``: it carries the chunk's full metadata and labels, and belongs to its document.

    The one place the fail-closed rule lives: an edge read from a chunk is visible under exactly the
    scopes that chunk is, whatever keys a filter names. ``read_from_chunk=False`` for an edge the
    chunk only scopes (a section's PART_OF): no provenance then.
    """
    return Relation(
        source=source,
        source_kind=source_kind,
        target=target,
        target_kind=target_kind,
        type=type,
        weight=weight,
        metadata=chunk.metadata,
        labels=chunk.labels,
        provenance=chunk.id if read_from_chunk else None,
        document_id=chunk.document_id,
        origin=origin,
    )


# -- writing -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DocumentGraph:
    """What a builder wants stored for one document: its relations (all with ``document_id`` set to it
    and ``origin`` the builder's name) and the entities they need (written when new or changed)."""

    relations: tuple[Relation, ...] = ()
    entities: tuple[Entity, ...] = ()


@dataclass(frozen=True, slots=True)
class SyncCounts:
    relations_written: int = 0
    relations_deleted: int = 0
    entities_written: int = 0

    def __add__(self, other: SyncCounts) -> SyncCounts:
        return SyncCounts(
            self.relations_written + other.relations_written,
            self.relations_deleted + other.relations_deleted,
            self.entities_written + other.entities_written,
        )


@dataclass(slots=True)
class DocumentSync:
    """Brings documents' relations to what a builder wants, writing only the difference, in batches.

    ``stage`` records one document's desired graph and its new mark; ``flush`` diffs every staged
    document against the store (one ``list_relations`` for the batch), writes, then sets the marks.
    ``known_entities`` (read once from the store when not given, and only if a document brings entities) decides which entities are new or
    changed, and is kept current as entities are written.
    """

    store: GraphBuildStore
    builder: str
    known_entities: dict[str, Entity] | None = None
    _graphs: dict[str, DocumentGraph] = field(default_factory=dict)
    _marks: dict[str, str | None] = field(default_factory=dict)

    @property
    def pending(self) -> int:
        return len(self._graphs)

    def stage(self, document_id: str, mark: str, graph: DocumentGraph) -> None:
        """Queue ``graph`` as the whole of ``document_id``'s relations of this builder (``ValueError`` if foreign)."""
        for relation in graph.relations:
            if relation.document_id != document_id or relation.origin != self.builder:
                raise ValueError(
                    f'relation {relation.id!r} must belong to document {document_id!r} and origin {self.builder!r}'
                )
        self._graphs[document_id] = graph
        self._marks[document_id] = mark

    def clear_mark(self, key: str) -> None:
        """Queue the removal of a ledger key (a document no longer stored)."""
        self._marks[key] = None

    async def flush(self) -> SyncCounts:
        graphs, marks = self._graphs, self._marks
        self._graphs, self._marks = {}, {}
        counts = SyncCounts()
        if graphs:
            counts = await self._write(graphs)
        if marks:
            await self.store.set_graph_marks(self.builder, marks)
        return counts

    async def _write(self, graphs: Mapping[str, DocumentGraph]) -> SyncCounts:
        if self.known_entities is None and any(graph.entities for graph in graphs.values()):
            self.known_entities = {e.id: e for e in await self.store.list_entities()}
        known = self.known_entities or {}
        stored = await self.store.list_relations(document_ids=sorted(graphs), origin=self.builder)
        existing = {r.id: r for r in stored if r.document_id in graphs}
        desired = {r.id: r for graph in graphs.values() for r in graph.relations}
        relations = [r for rid, r in desired.items() if existing.get(rid) != r]
        stale = sorted(rid for rid in existing if rid not in desired)
        entities: dict[str, Entity] = {}
        for graph in graphs.values():
            for entity in graph.entities:
                if known.get(entity.id) != entity:
                    entities[entity.id] = entity
        if entities or relations:
            await self.store.upsert([*entities.values(), *relations])
            known.update(entities)
        if stale:
            await self.store.delete_relations(stale)
        return SyncCounts(len(relations), len(stale), len(entities))


async def build_documents(
    store: GraphBuildStore,
    builder: str,
    documents: AsyncIterable[DocumentInput] | Iterable[DocumentInput],
    mark_of: Callable[[DocumentInput], str],
    graph_of: Callable[[DocumentInput], Awaitable[DocumentGraph]],
    *,
    known_entities: dict[str, Entity] | None = None,
    marks: Mapping[str, str] | None = None,
) -> BuildReport:
    """The document-wise driver: skip documents whose mark is unchanged, build and diff the others.

    ``documents`` must be every stored document (marks of ids it does not yield are cleared).
    ``mark_of`` is the document's fingerprint (config, chunks, global inputs); ``graph_of`` computes
    its desired relations. A document whose ``mark_of`` or ``graph_of`` raises is reported in
    ``failures`` (one line, `failure_line`) and left as it was (its old mark stays, so it is retried
    next run); the others are built. ``marks``: the builder's ledger when the caller already read it.
    """
    if marks is None:
        marks = await store.graph_marks(builder)
    sync = DocumentSync(store, builder, known_entities)
    seen: set[str] = set()
    built = 0
    failures: list[str] = []
    counts = SyncCounts()
    async for document in _aiter(documents):
        seen.add(document.id)
        try:
            mark = mark_of(document)
            if marks.get(document.id) == mark:
                continue
            sync.stage(document.id, mark, await graph_of(document))
        except Exception as e:  # one document's failure must not stop the others (reported)
            failures.append(failure_line(document.id, e))
            continue
        built += 1
        if sync.pending >= BATCH_DOCUMENTS:
            counts += await sync.flush()
    for key in marks:
        if key not in seen and not key.startswith(CACHE_KEY_PREFIX):
            sync.clear_mark(key)
    counts += await sync.flush()
    return BuildReport(
        builder=builder,
        documents_seen=len(seen),
        documents_built=built,
        relations_written=counts.relations_written,
        relations_deleted=counts.relations_deleted,
        entities_written=counts.entities_written,
        failures=tuple(failures),
    )


def failure_line(name: str, error: BaseException) -> str:
    """``'<name>: <Error>: <message>'`` on one line: what a report lists for a document it could not build."""
    message = ' '.join(str(error).split())
    return f'{name}: {type(error).__name__}: {message}' if message else f'{name}: {type(error).__name__}'


async def _aiter(items: AsyncIterable[DocumentInput] | Iterable[DocumentInput]) -> AsyncIterator[DocumentInput]:
    if isinstance(items, AsyncIterable):
        async for item in items:
            yield item
    else:
        for item in items:
            yield item
