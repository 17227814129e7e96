"""`Retriever`: every search and expansion, scoped by a filter, over any store.

The one code path between the tools (and the CLI, MCP, evaluation) and a store: where the scope is
enforced and a caller's text is checked. See docs/concepts.md#how-the-core-is-built.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

from ._store_attributes import embedder_of, text_analyzer_of
from .content import Chunk, Entity
from .embedding import embedder_languages
from .errors import InvalidRequestError, ToolishRagError, echo
from .filters import Filter, and_, matches
from .fusion import CONFIRMING_PASSAGES, FusionConfig, fuse
from .graph.walk import GraphWalk, WalkRequest, walk
from .grouping import DocumentGroup, group_by_document
from .navigation import Navigator
from .protocols import (
    FilterPushdown,
    GraphSearch,
    HybridSearch,
    RegexSearch,
    ResultExpander,
    SectionReader,
    StoreLike,
    TextSearch,
    VectorSearch,
)
from .search import ID_RULE, PATTERN_RULE, QUERY_RULE, ExpansionRequest, RegexRequest, SearchHit, SearchRequest
from .tracing import EDGES, HOPS, NODES, SCOPED, SEEDS, STORE, TRUNCATED, Attributes, current, span

__all__ = ['Retriever', 'SectionView']

log = logging.getLogger('toolish_rag')

_R = TypeVar('_R', SearchRequest, RegexRequest)
_MAX_WINDOW = 1 << 22


@dataclass(frozen=True, slots=True)
class SectionView:
    """What ``zoom_out`` returns: a section (or whole document) and its in-scope chunks."""

    document_id: str
    document_title: str
    document_uri: str
    section_id: str | None
    """``None`` when the view is the whole document."""
    section_path: tuple[str, ...]
    chunks: tuple[Chunk, ...]
    truncated: bool
    zoom_id: str | None
    """The id to pass to ``zoom_out`` to widen further (``None`` at document level)."""


@dataclass(frozen=True)
class Retriever:
    """Scoped access to a store. Immutable: `with_filter` returns a narrowed copy."""

    store: StoreLike
    filter: Filter | None = None
    fusion: FusionConfig = field(default_factory=FusionConfig)

    def with_filter(self, f: Filter | None) -> Retriever:
        """A copy whose scope is this scope AND ``f`` (never wider)."""
        if f is None:
            return self
        return replace(self, filter=f if self.filter is None else and_(self.filter, f))

    def _pushdown(self) -> bool:
        return (
            self.filter is not None
            and isinstance(self.store, FilterPushdown)
            and self.store.supports_filter(self.filter)
        )

    def _in_scope(self, record: Chunk | Entity) -> bool:
        return matches(self.filter, record)

    async def _scoped(self, call: Callable[[_R], Awaitable[Sequence[SearchHit]]], request: _R) -> list[SearchHit]:
        top_k = request.top_k
        if self.filter is None:
            return list(await call(request))[:top_k]
        if self._pushdown():
            hits = list(await call(replace(request, filter=self.filter)))  # type: ignore[type-var]
            kept = [h for h in hits if self._in_scope(h.record)]
            if len(kept) == len(hits):
                return kept[:top_k]
            log.warning(
                '%s returned %d out-of-scope hits despite pushdown; dropping them and re-querying',
                type(self.store).__name__,
                len(hits) - len(kept),
            )
        window = max(top_k * 4, 16)
        while True:
            hits = list(await call(replace(request, top_k=window, filter=None)))  # type: ignore[type-var]
            kept = [h for h in hits if self._in_scope(h.record)]
            if len(kept) >= top_k or len(hits) < window or window >= _MAX_WINDOW:
                return kept[:top_k]
            window *= 4

    # -- searches -------------------------------------------------------------------------

    # Each public method checks its text argument; the private legs trust an already checked one.

    async def vector_search(self, query: str, top_k: int) -> list[SearchHit]:
        return await self._vector(QUERY_RULE.check(query), top_k)

    async def text_search(self, query: str, top_k: int) -> list[SearchHit]:
        return await self._text(QUERY_RULE.check(query), top_k)

    async def hybrid_search(self, query: str, top_k: int) -> list[SearchHit]:
        query = QUERY_RULE.check(query)
        if isinstance(self.store, HybridSearch):
            return await self._scoped(self.store.hybrid_search, SearchRequest(query, top_k))
        if not (isinstance(self.store, VectorSearch) and isinstance(self.store, TextSearch)):
            raise InvalidRequestError('hybrid search needs a store with both vector and text search')
        n = max(top_k, self.fusion.candidates)
        # The legs are independent: run them concurrently (the embedder and BM25 both release the GIL).
        vector_hits, text_hits = await asyncio.gather(self._vector(query, n), self._text(query, n))
        fusion = await self.query_fusion(query, text_hits)
        return fuse(vector_hits, text_hits, top_k, fusion)

    async def query_fusion(self, query: str, text_hits: Sequence[SearchHit] = ()) -> FusionConfig:
        """``fusion`` for one query: the vector leg weighted down when the embedder cannot read the query's language.

        `toolish_rag.fusion.FusionConfig.for_query`: the query's detected language (else the
        store's fixed analyzer language, `collection_fusion`), confirmed by the best of
        ``text_hits`` (the in-scope text leg), against the embedder's languages. The weights
        depend on the query, the configuration and hits the scope already shows, nothing else.
        """
        covered = self._embedder_languages()
        if self.fusion.uncovered_vector_weight is None or (covered is None and self.fusion.vector_languages is None):
            return self.fusion
        passages = [h.record.text for h in text_hits[:CONFIRMING_PASSAGES] if isinstance(h.record, Chunk)]
        return await asyncio.to_thread(
            self.fusion.for_query, query, covered, fallback_language=self._store_language(), passages=passages
        )

    def collection_fusion(self) -> FusionConfig:
        """``fusion`` for this store's fixed text language, whatever the query (see `query_fusion`).

        The language is the store's text analyzer's (``store.text_analyzer.language``, e.g. an
        ``InMemoryStore(language='zh')``; ``'auto'`` names none) and the embedder's languages come
        from its model name (`toolish_rag.embedding.embedder_languages`) unless
        ``fusion.vector_languages`` states them. A store exposing neither keeps ``fusion`` as it is.
        """
        language = self._store_language()
        if language is None or self.fusion.uncovered_vector_weight is None:
            return self.fusion
        return self.fusion.for_language(language, self._embedder_languages())

    def _store_language(self) -> str | None:
        analyzer = text_analyzer_of(self.store)
        return analyzer.language if analyzer is not None else None

    def _embedder_languages(self) -> frozenset[str] | None:
        if self.fusion.vector_languages is not None:
            return self.fusion.vector_languages
        try:
            return embedder_languages(embedder_of(self.store))
        except Exception:  # an embedder that fails to resolve fails the vector leg itself, with its own error
            return None

    async def regex_search(self, pattern: str, top_k: int, *, case_sensitive: bool = True) -> list[SearchHit]:
        if not isinstance(self.store, RegexSearch):
            raise InvalidRequestError('this store has no regex search')
        request = RegexRequest(PATTERN_RULE.check(pattern), top_k, case_sensitive=case_sensitive)
        return await self._scoped(self.store.regex_search, request)

    async def _vector(self, query: str, top_k: int) -> list[SearchHit]:
        if not isinstance(self.store, VectorSearch):
            raise InvalidRequestError('this store has no vector search')
        return await self._scoped(self.store.vector_search, SearchRequest(query, top_k))

    async def _text(self, query: str, top_k: int) -> list[SearchHit]:
        if not isinstance(self.store, TextSearch):
            raise InvalidRequestError('this store has no text search')
        return await self._scoped(self.store.text_search, SearchRequest(query, top_k))

    async def grouped(
        self, search: Callable[[Retriever], Callable[[str, int], Awaitable[list[SearchHit]]]], query: str, top_k: int
    ) -> list[DocumentGroup]:
        """The best hit of each of the ``top_k`` best documents (see `toolish_rag.grouping`).

        ``search`` picks the leg (``lambda r: r.hybrid_search``); it is asked for a growing number
        of hits until ``top_k`` documents are found or the store runs out, so a filter or one
        document holding every good chunk does not leave fewer than ``top_k`` documents (up to
        `toolish_rag.grouping.MAX_GROUPING_WINDOW` hits read). Hybrid scores come from fusing the
        hits read, so once the window grows they can differ from the ungrouped search's.
        """
        leg = search(self)
        return await group_by_document(lambda n: leg(query, n), top_k)

    # -- navigation -----------------------------------------------------------------------

    def navigator(self) -> Navigator:
        """Scoped navigation (documents, outlines, whole sections), if the store is a `SectionReader`."""
        if not isinstance(self.store, SectionReader):
            raise InvalidRequestError('this store cannot list documents or read sections')
        return Navigator(self.store, self.filter)

    # -- graph --------------------------------------------------------------------------

    async def graph_walk(self, request: WalkRequest) -> GraphWalk:
        """`toolish_rag.graph.walk.walk` inside this scope: the scope is ANDed into ``request.filter``.

        The one scoped path to a graph, as `navigator` is to sections: the tool, the CLI and the
        MCP server walk through here, so no caller can walk a store unscoped by forgetting the
        filter. The seeds are checked like every id a caller sends (`ID_RULE`). Every edge the
        store returns must satisfy the scope; one that does not is a store bug, raised rather
        than dropped, since dropping it would leave ``truncated`` counting what the scope hides.

        The walk is a ``toolish_rag.graph_walk`` span: the store, whether a scope applied, the
        seed count and hops, then the nodes, edges and ``truncated`` found (never a seed id or
        the scope's values).
        """
        if not isinstance(self.store, GraphSearch):
            raise InvalidRequestError('this store has no graph to walk')
        for seed in request.seeds:
            ID_RULE.check(seed)
        scope = request.filter if self.filter is None else self.with_filter(request.filter).filter
        store = type(self.store).__name__
        opened: Attributes = {STORE: store, SCOPED: scope is not None, SEEDS: len(request.seeds), HOPS: request.hops}
        with span(current(), 'toolish_rag.graph_walk', opened) as walk_span:
            found = await walk(self.store, replace(request, filter=scope))
            stray = next((e for e in found.edges if not matches(scope, e)), None)
            if stray is not None:
                raise ToolishRagError(
                    f'{store}.neighbours returned relation {echo(stray.id)}, which its '
                    'NeighbourRequest.filter excludes: a graph store must answer inside the filter it is sent'
                )
            walk_span.set_attributes({NODES: len(found.nodes), EDGES: len(found.edges), TRUNCATED: found.truncated})
        return found

    # -- expansion ------------------------------------------------------------------------

    def _expander(self) -> ResultExpander:
        if not isinstance(self.store, ResultExpander):
            raise InvalidRequestError('this store cannot expand results')
        return self.store

    async def get(self, record_id: str) -> Chunk | Entity | None:
        """The record, if it exists and is in scope (else ``None``: the two are not told apart).

        The expansions do not start here: `neighbours` and `section` read their anchor together
        with its window, in one store call, so that both come from one version of the store.
        """
        store = self._expander()
        ID_RULE.check(record_id)
        found = await store.get_records([record_id], filter=self.filter if self._pushdown() else None)
        for record in found:
            if record.id == record_id and self._in_scope(record):
                return record
        return None

    async def records(self, record_ids: Sequence[str]) -> list[Chunk | Entity]:
        """The records among ``record_ids`` that exist and are in scope, in the order asked, from one store call.

        For a caller that already holds ids the scope produced (a graph walk's chunk nodes) and
        needs their records: one batched lookup, not one `get` per id.
        """
        store = self._expander()
        wanted = [ID_RULE.check(record_id) for record_id in dict.fromkeys(record_ids)]
        if not wanted:
            return []
        found = await store.get_records(wanted, filter=self.filter if self._pushdown() else None)
        by_id = {record.id: record for record in found if self._in_scope(record)}
        return [by_id[record_id] for record_id in wanted if record_id in by_id]

    async def _around(
        self, request: ExpansionRequest, anchor_of: Callable[[list[Chunk]], Chunk | None]
    ) -> _Window | None:
        """Run an anchored request scoped: its in-scope anchor and up to ``limit`` chunks, or ``None``.

        One `expand` call reads the anchor and its window from one version of the store, so
        what is returned is always one call's answer whole, never pieced from two calls: a
        concurrent upsert cannot put a new version's chunks around an old version's anchor.
        ``anchor_of`` finds the anchor among the call's in-scope chunks. The call is repeated
        with a growing ``limit`` only while its answer is not enough to decide: the anchor lies
        past ``limit`` (a chunk deep in a long section), or a store without pushdown returned
        chunks the scope drops.
        """
        store = self._expander()
        limit = request.limit
        sent = self.filter if self._pushdown() else None
        window = limit + 1 if sent is not None or self.filter is None else (limit + 1) * 4
        while True:
            chunks = list(await store.expand(replace(request, filter=sent, limit=window)))
            kept = [c for c in chunks if self._in_scope(c)]
            if sent is not None and len(kept) != len(chunks):
                log.warning(
                    '%s expanded %d out-of-scope chunks despite pushdown; dropping them and re-reading',
                    type(self.store).__name__,
                    len(chunks) - len(kept),
                )
                sent, window = None, (limit + 1) * 4
                continue
            anchor = anchor_of(kept)
            if anchor is not None:
                self._check_window(request.window(anchor), anchor, chunks)
            exhausted = len(chunks) < window
            decided = exhausted if anchor is None else exhausted or len(kept) > limit
            if decided or window >= _MAX_WINDOW:
                return None if anchor is None else _Window(anchor, kept[:limit], len(kept) > limit)
            window *= 4

    def _check_window(self, window: ExpansionRequest, anchor: Chunk, chunks: list[Chunk]) -> None:
        """Every chunk of an anchored answer lies in the window of the anchor it came with.

        A store that reads an anchored request as a plain one (it sets no document, range or
        section) would answer with chunks from anywhere: an error, not a wrong answer.
        """
        stray = next((c for c in chunks if not window.holds(c)), None)
        if stray is not None:
            raise ToolishRagError(
                f'{type(self.store).__name__}.expand answered an anchored ExpansionRequest with chunk '
                f'{echo(stray.id)}, outside the window of its anchor {echo(anchor.id)}: it must read the window '
                'around the anchor, from one version (see ExpansionRequest and docs/custom-store.md)'
            )

    async def neighbours(self, chunk_id: str, count: int) -> tuple[Chunk, list[Chunk]] | None:
        """The chunk and the in-scope chunks among the ``count`` positions either side, in order."""
        request = ExpansionRequest.around_chunk(ID_RULE.check(chunk_id), count, count, limit=2 * count + 1)
        found = await self._around(request, lambda kept: next((c for c in kept if c.id == chunk_id), None))
        if found is None:
            return None
        anchor, chunks = found.anchor, found.chunks
        if not any(c.id == anchor.id for c in chunks):
            chunks = sorted([*chunks, anchor], key=lambda c: c.sequence_number)
        return anchor, chunks

    async def section(self, record_id: str, max_chunks: int) -> SectionView | None:
        """The section enclosing a chunk, or the parent of a section id, with its chunks.

        For a section id the anchor is its first in-scope chunk: a section with none is "not found".
        """
        request = ExpansionRequest.enclosing(ID_RULE.check(record_id), limit=max_chunks)
        found = await self._around(request, lambda kept: _zoom_anchor(kept, record_id))
        if found is None:
            return None
        anchor = found.anchor
        if anchor.id == record_id:
            target = anchor.section_id
        else:
            position = anchor.section_ids.index(record_id)
            target = anchor.section_ids[position - 1] if position > 0 else None
        path = anchor.section_path[: anchor.section_ids.index(target) + 1] if target is not None else ()
        return SectionView(
            document_id=anchor.document_id,
            document_title=anchor.document_title,
            document_uri=anchor.document_uri,
            section_id=target,
            section_path=path,
            chunks=tuple(found.chunks),
            truncated=found.more,
            zoom_id=target,
        )


@dataclass(frozen=True, slots=True)
class _Window:
    """One anchored expansion's answer, scoped: the anchor, up to ``limit`` chunks, and whether more exist."""

    anchor: Chunk
    chunks: list[Chunk]
    more: bool


def _zoom_anchor(kept: list[Chunk], record_id: str) -> Chunk | None:
    """The chunk named ``record_id``, else the first chunk inside section ``record_id``."""
    named = next((c for c in kept if c.id == record_id), None)
    return named if named is not None else next((c for c in kept if record_id in c.section_ids), None)
