"""Store protocols: what a store can do (so which tools an agent is offered) and what else it tells the library.

The search and navigation protocols map to tools; the optional attribute protocols (`HasEmbedder`,
`HasTextAnalyzer`, `HasEmbeddingWindows`, `HasRegexScanLimit`, `Upgradable`, `Reembeddable`) change
how those tools behave. Each has contracts the conformance kit checks.
See docs/concepts.md#how-the-core-is-built and docs/custom-store.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

from .content import Chunk, Document, Entity, Metadata, Relation
from .filters import Filter
from .graph.model import GraphNode, NeighbourRequest, Neighbours, NodeRequest
from .graph.walk import NeighbourhoodReader
from .search import ExpansionRequest, RegexRequest, SearchHit, SearchRequest
from .sections import ChunkOutline, DocumentPage, DocumentPageRequest, OutlineRequest, SectionPage, SectionReadRequest
from .writes import PrecomputedVectors

if TYPE_CHECKING:
    from pydantic_ai.embeddings import Embedder, EmbeddingModel

    from .analysis import TextAnalyzer
    from .windows import EmbeddingWindows

__all__ = [
    'DocumentInfo',
    'DocumentStore',
    'FilterPushdown',
    'GraphBuilt',
    'GraphBuiltWriter',
    'GraphSearch',
    'GraphStore',
    'NeighbourhoodReader',
    'HasEmbedder',
    'HasEmbeddingWindows',
    'HasRegexScanLimit',
    'HasTextAnalyzer',
    'HybridSearch',
    'PrecomputedVectors',
    'PrecomputedVectorsWriter',
    'Reembeddable',
    'RegexSearch',
    'ResultExpander',
    'ScopedTextRanking',
    'SectionReader',
    'StoreFeatures',
    'StoreLike',
    'TermStatistics',
    'TermStatisticsRequest',
    'TermStatisticsSource',
    'TextSearch',
    'Upgradable',
    'VectorSearch',
]


@runtime_checkable
class VectorSearch(Protocol):
    """Semantic search: the store embeds ``request.query`` and ranks by cosine similarity."""

    async def vector_search(self, request: SearchRequest) -> Sequence[SearchHit]: ...


@runtime_checkable
class TextSearch(Protocol):
    """Lexical search (BM25 or similar) with a query syntax the store explains to the model."""

    @property
    def text_query_syntax(self) -> str:
        """Plain words, for an LLM, on what query text this store accepts.

        It goes verbatim into the text tool's description. Say what works (terms, phrases,
        operators) and what happens to anything else. If a query cannot be run, raise
        `toolish_rag.errors.QuerySyntaxError` with a message that says how to fix it.
        """
        ...

    async def text_search(self, request: SearchRequest) -> Sequence[SearchHit]: ...


@runtime_checkable
class RegexSearch(Protocol):
    """Regular-expression search over record text, in linear time (RE2 semantics)."""

    async def regex_search(self, request: RegexRequest) -> Sequence[SearchHit]: ...


@runtime_checkable
class ResultExpander(Protocol):
    """Look records up by id, and read a document's chunks: a range or section, or around an anchor.

    ``broaden_chunk`` (sequence neighbours) and ``zoom_out`` (the enclosing section) are each
    one anchored `expand` call: the anchor and its window are read together, from one version
    of the store, so a concurrent upsert can never show new neighbours around an old anchor.
    The scope filter always goes along (or the core filters), so an out-of-scope chunk is
    never returned through expansion either.
    """

    async def get_records(self, ids: Sequence[str], *, filter: Filter | None = None) -> Sequence[Chunk | Entity]:
        """The records with these ids that exist (and satisfy ``filter``), in any order."""
        ...

    async def expand(self, request: ExpansionRequest) -> Sequence[Chunk]:
        """Chunks of one document in ``sequence_number`` order (see `ExpansionRequest`).

        An anchored request (``request.around`` set) is answered from one version: read the
        anchor, then the plain request ``request.window(anchor)``, both from the same snapshot.
        """
        ...


@runtime_checkable
class SectionReader(Protocol):
    """Navigate a store: list its documents, outline one, read a whole section, all scoped.

    The three requests and their reference semantics are in `toolish_rag.sections`. Unlike the
    search protocols, a section reader **always honours** ``request.filter``, whatever
    `FilterPushdown.supports_filter` says: its answers carry counts and pages, which the core
    cannot re-filter afterwards without reading every record. A filter the store cannot
    translate is evaluated with `toolish_rag.filters.matches` on the candidates it reads.

    Listing documents and outlining read no chunk text and no vectors: counts and skeletons
    come from ids and positions (and metadata columns, for the filter). Method names differ
    from `DocumentStore.list_documents`, the unscoped listing ingestion syncs against.
    """

    async def document_page(self, request: DocumentPageRequest) -> DocumentPage:
        """One page of the documents with an in-scope chunk, in `toolish_rag.sections.document_order`."""
        ...

    async def chunk_outlines(self, request: OutlineRequest) -> Sequence[ChunkOutline]:
        """The in-scope chunks' skeletons the request asks for, by ``(document_id, sequence_number)``."""
        ...

    async def read_section(self, request: SectionReadRequest) -> SectionPage:
        """One page of a section's (or document's) in-scope chunks in reading order, and their total."""
        ...


@runtime_checkable
class GraphSearch(Protocol):
    """Resolve graph nodes and read one hop of edges around them, always scoped.

    The two requests and the scope rules are in `toolish_rag.graph.model` (reference semantics in
    `toolish_rag.graph.reference`); the walk is the core's (`toolish_rag.graph.walk`). Like a
    section reader, a graph store **always honours** ``request.filter``: an edge's visibility
    depends on both endpoints, which the core cannot re-check without a second round trip, and
    ``truncated`` must not count what the filter hides.
    """

    async def graph_nodes(self, request: NodeRequest) -> Sequence[GraphNode]:
        """The in-scope nodes among ``request.ids`` (chunks, sections, documents, entities), any order."""
        ...

    async def neighbours(self, request: NeighbourRequest) -> Neighbours:
        """The in-scope edges around ``request.ids`` and their in-scope far endpoints (see `NeighbourRequest`)."""
        ...


@runtime_checkable
class GraphBuilt(Protocol):
    """Optional, beside `GraphSearch`: whether a graph has been built for the store.

    The graph tools are offered only once one has (an empty graph answers nothing). It is what
    `toolish_rag.graph_builders.build_graph` recorded (`GraphBuiltWriter`), in the store manifest
    for a store with a folder: an operator's act, never counted from the records, so no tenant's
    data can change another's tool list. A `GraphSearch` store without it is taken to have one.
    """

    @property
    def graph_built(self) -> bool: ...


@runtime_checkable
class GraphBuiltWriter(GraphBuilt, Protocol):
    """`GraphBuilt`, recorded by `toolish_rag.graph_builders.build_graph` (see docs/graph.md)."""

    async def record_graph_built(self, builders: Sequence[str]) -> None:
        """Record that these builders built the store's graph (added to those recorded before); persisted
        with the store (`toolish_rag.manifest.record_graph` for a folder)."""
        ...


@runtime_checkable
class HybridSearch(Protocol):
    """A store's own fusion of vector and text search, used instead of the core's.

    Scores must lie in ``[0, 1]`` (higher is better) so the hybrid tool's threshold means
    the same thing on every store.
    """

    async def hybrid_search(self, request: SearchRequest) -> Sequence[SearchHit]: ...


@runtime_checkable
class FilterPushdown(Protocol):
    """Declares which filters a store evaluates natively.

    When ``supports_filter(f)`` is true the store receives ``f`` in its requests and must
    honour it exactly. Otherwise it receives ``filter=None`` and the facade over-fetches
    with a growing window and filters the results itself. Either way the facade re-checks
    every hit against the filter (defence in depth).
    """

    def supports_filter(self, filter: Filter) -> bool: ...


@dataclass(frozen=True, slots=True)
class TermStatisticsRequest:
    """What a caller scoring text over several stores (a federation) asks one store, for one query.

    The counts are taken under the analyzer named by ``analyzer`` (`toolish_rag.analysis.TextAnalyzer.identity`),
    over the records the store's text search ranks that ``filter`` admits. See docs/federation.md#fusion.
    """

    analyzer: str
    tokens: tuple[str, ...] = ()
    """The query's analysed tokens whose document frequencies are wanted."""
    record_ids: tuple[str, ...] = ()
    """Records whose lengths and term frequencies (of ``tokens``) are wanted; ids outside the scope are left out."""
    filter: Filter | None = None


@dataclass(frozen=True, slots=True)
class TermStatistics:
    """BM25's statistics of one store's records in a scope, under one analyzer (a `TermStatisticsRequest`'s answer)."""

    records: int
    """How many records the scope holds."""
    length: int
    """Their tokens, all together (the mean length is ``length / records``)."""
    document_frequencies: Mapping[str, int]
    """For each requested token, in how many of those records it occurs (0 when in none)."""
    lengths: Mapping[str, int]
    """Each requested record's tokens, for those in scope."""
    term_frequencies: Mapping[str, Mapping[str, int]]
    """Each requested in-scope record's count of each requested token it holds (absent tokens left out)."""
    languages: Mapping[str, int] = field(default_factory=dict)
    """How many of the records were analysed in each language (what an ``'auto'`` analyzer reads a query in)."""


@runtime_checkable
class TermStatisticsSource(Protocol):
    """Optional: a store answers BM25's statistics of its own records, current, for the call's scope.

    A federation re-scoring its members' text hits with one BM25 asks each member that has it
    instead of reading and analysing the member's whole text once (its census): the answer
    reflects every write, including those made from elsewhere. ``None``: the store cannot count
    under that analyzer (the caller falls back to its census). Like distributed IDF in search
    engines: only counts cross, never text. See docs/federation.md#fusion and docs/custom-store.md.
    """

    async def term_statistics(self, request: TermStatisticsRequest) -> TermStatistics | None: ...


@runtime_checkable
class ScopedTextRanking(Protocol):
    """Optional: a store says whether its text search under ``filter`` ranks by the statistics of
    the records ``filter`` admits alone (so out-of-scope records cannot change which ids it returns).

    A federation re-scoring text with one BM25 keeps such a member's own candidates; another
    member's, under a scope, it chooses itself from the member's records in scope (their census).
    See docs/filters.md#corpus-statistics and docs/federation.md#fusion.
    """

    def text_ranking_in_scope(self, filter: Filter) -> bool: ...


@runtime_checkable
class HasEmbedder(Protocol):
    """Optional, beside `VectorSearch`: the pydantic-ai ``Embedder`` the store's vectors come from.

    A record's vector is what ``embed_documents`` gives for its text (for each window, with
    `HasEmbeddingWindows`), and `vector_search` ranks by ``embed_query`` of the query. Without it:
    hybrid search cannot lower the vector leg for a language its model was not trained on (the
    model's languages come from its name), Ray ingestion embeds nothing on its workers, the vector
    graph linker needs ``embedder=``, and ``toolish-rag mcp`` cannot preload the model.
    """

    @property
    def embedder(self) -> Embedder: ...


@runtime_checkable
class HasTextAnalyzer(Protocol):
    """Optional, beside `TextSearch`: the core `toolish_rag.analysis.TextAnalyzer` that cuts the store's text.

    Records and queries are both analysed with it, so a text hit holds one of the query's analysed
    tokens. ``None``: the engine analyses the text its own way. Its ``language`` is the store's
    language: hybrid fusion's per-language rule (a federation's too), the OCR language default of
    ingestion and the text tool's description (what a query's words become) read it, and a
    federation re-scoring text with one BM25 analyses with it.
    """

    @property
    def text_analyzer(self) -> TextAnalyzer | None: ...


@runtime_checkable
class HasEmbeddingWindows(HasEmbedder, Protocol):
    """Optional: how a chunk longer than the embedder reads is embedded as several windows (``None``: its start).

    The inspector shows the texts a chunk's vectors embed (`toolish_rag.windows.window_texts`).
    """

    @property
    def windows(self) -> EmbeddingWindows | None: ...


@runtime_checkable
class HasRegexScanLimit(Protocol):
    """Optional, beside `RegexSearch`: the most records one regex search scans (``None``: no limit).

    A pattern selecting more is refused (`toolish_rag.regex.scan_limit_error`); the regex tool's
    description states the limit and the ways under it, so a model narrows its pattern first.
    """

    @property
    def regex_scan_limit(self) -> int | None: ...


@runtime_checkable
class Upgradable(Protocol):
    """Optional: bring a store saved by an older version to the current format, in place (``toolish-rag upgrade``)."""

    async def upgrade(self) -> list[str]:
        """What was done, one phrase each; ``[]``: already current. Records and vectors are kept."""
        ...


@runtime_checkable
class Reembeddable(Protocol):
    """Optional: embed every stored record again with another embedder (``toolish-rag ingest --reembed``)."""

    async def reembed(self, embedder: Embedder | EmbeddingModel | str) -> int:
        """Re-embed with ``embedder`` (a model string, model or ``Embedder``); returns how many records."""
        ...


StoreLike: TypeAlias = (
    VectorSearch | TextSearch | RegexSearch | ResultExpander | HybridSearch | SectionReader | GraphSearch
)
"""Any object implementing at least one search or expansion protocol: what `ToolishRag` and `Retriever` take.

A union of protocols, not a base class: a third-party store subclasses nothing from
toolish-rag, it implements the methods of the protocols it serves and type-checks as a
`StoreLike` structurally. Which tools it gets is decided at run time (`StoreFeatures`).
"""


@dataclass(frozen=True, slots=True)
class StoreFeatures:
    """Which search and navigation protocols a store implements, and so which tools it can serve.

    Formerly ``StoreCapabilities`` (a deprecated alias for one release): pydantic-ai's capabilities
    are agent extensions (``ToolishRag.capability()``), these are what the *store* can do.
    """

    vector: bool
    text: bool
    regex: bool
    expand: bool
    native_hybrid: bool
    sections: bool = False
    graph: bool = False
    graph_built: bool = False
    """A `GraphSearch` store whose graph has been built (`GraphBuilt`; a store that does not say has one)."""

    @classmethod
    def of(cls, store: object) -> StoreFeatures:
        graph = isinstance(store, GraphSearch)
        return cls(
            vector=isinstance(store, VectorSearch),
            text=isinstance(store, TextSearch),
            regex=isinstance(store, RegexSearch),
            expand=isinstance(store, ResultExpander),
            native_hybrid=isinstance(store, HybridSearch),
            sections=isinstance(store, SectionReader),
            graph=graph,
            graph_built=graph and (store.graph_built if isinstance(store, GraphBuilt) else True),
        )

    @property
    def hybrid(self) -> bool:
        """Native hybrid search, or both legs for the core to fuse."""
        return self.native_hybrid or (self.vector and self.text)

    @property
    def any_search(self) -> bool:
        return self.vector or self.text or self.hybrid


@dataclass(frozen=True, slots=True)
class DocumentInfo:
    """What a store knows about a stored document, without its chunks."""

    id: str
    uri: str
    title: str
    fingerprint: str | None = None
    chunk_count: int = 0
    metadata: Metadata = field(default_factory=dict)


@runtime_checkable
class DocumentStore(Protocol):
    """The write side: idempotent upserts, deletes and a listing for sync.

    ``upsert`` replaces a document whole: after it returns, the store holds exactly the
    new version's chunks for that document id and no stale ones, and a concurrent reader
    sees either the old version or the new one, never a mix.
    """

    async def upsert(self, items: Iterable[Document | Entity]) -> None: ...

    async def delete_documents(self, document_ids: Iterable[str]) -> int:
        """Delete these documents and their chunks; returns how many documents existed."""
        ...

    async def delete_entities(self, entity_ids: Iterable[str]) -> int: ...

    async def list_documents(self) -> Sequence[DocumentInfo]: ...


@runtime_checkable
class GraphStore(Protocol):
    """The graph's write side, beside `DocumentStore`: relations and the builders' ledger.

    Relations are written with ``upsert`` like documents and entities (a graph store's ``upsert``
    takes `Relation` objects too; start it with `toolish_rag.writes.graph_upsert_batch`). A
    relation with a ``document_id`` belongs to that document: upserting or deleting the document
    removes its relations (those in the same upsert batch are written after the removal).

    The **ledger** lets builders skip unchanged input: per builder name, a map of keys to strings
    (a builder stores a fingerprint of its input, or a cached model answer). A key equal to a
    document id is bound to that document and removed with it whenever the document is upserted or
    deleted, so a replaced document is always rebuilt; other keys live until the builder clears
    them (``None`` as a value deletes a key). None of this is scoped: it is for builders, never
    shown to a model.
    """

    async def upsert(self, items: Iterable[Document | Entity | Relation]) -> None: ...

    async def list_relations(
        self, *, document_ids: Sequence[str] | None = None, origin: str | None = None
    ) -> Sequence[Relation]:
        """Stored relations, unscoped: of these documents (``None``: all, standalone ones included) and origin."""
        ...

    async def delete_relations(self, ids: Iterable[str]) -> int:
        """Delete relations by id; returns how many existed."""
        ...

    async def list_entities(self) -> Sequence[Entity]:
        """Every stored entity, unscoped (the exact-name linker's dictionary, extraction's merge)."""
        ...

    async def graph_marks(self, builder: str) -> dict[str, str]:
        """The ledger of ``builder``: key -> value."""
        ...

    async def set_graph_marks(self, builder: str, marks: Mapping[str, str | None]) -> None:
        """Set (or, with ``None``, delete) ledger keys of ``builder``."""
        ...


# -- Precomputed vectors: an optional write protocol beside `DocumentStore` ---------------------------------


@runtime_checkable
class PrecomputedVectorsWriter(Protocol):
    """A store that embeds in ``upsert`` and can take the vectors of some texts made elsewhere (Ray workers).

    ``upsert_with_vectors`` is ``upsert``, except that a record (or window) whose text is a key of
    ``vectors`` takes that vector instead of being embedded; every other text is embedded as
    ``upsert`` would (`toolish_rag.writes.embed_documents` does both). The vectors were made with
    the store's ``embedder`` and the settings it applies (what `ingest` reads before the run), so
    the stored result is the one ``upsert`` would have written; a store whose ``embedder`` is not a
    pydantic-ai ``Embedder`` is given none (it embeds everything itself). See
    docs/ingestion.md#how-the-pipeline-is-built.
    """

    async def upsert_with_vectors(self, items: Iterable[Document | Entity], vectors: PrecomputedVectors) -> None: ...


def __getattr__(name: str) -> Any:
    """``StoreCapabilities``: the deprecated name of `StoreFeatures` (removed in the next release)."""
    if name == 'StoreCapabilities':
        import warnings

        warnings.warn('StoreCapabilities is renamed StoreFeatures', DeprecationWarning, stacklevel=2)
        return StoreFeatures
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
