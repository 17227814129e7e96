"""`Retriever`: every search and expansion, scoped by a filter, over any store.

This is the one code path between the tools and a store. The agent toolset, the CLI, the
evaluation command and the MCP server all call it, so what an agent gets is what they
measure. It is where scope is enforced:

* a store that pushes the filter down (`FilterPushdown`) receives it in the request;
* a store that cannot is queried with a growing window (4x, 16x, ... ``top_k``) until
  ``top_k`` in-scope hits are found or the store runs out, so filtered searches return
  exactly ``top_k`` hits whenever that many in-scope records exist (Embabel's
  post-filtering can return fewer);
* every hit, from every store, is re-checked against the filter with the reference
  evaluator (defence in depth: a store bug cannot leak an out-of-scope record);
* expansion passes the same filter, so an out-of-scope chunk or section is "not found".

It is also where a caller's text is checked (`QUERY_RULE`, `PATTERN_RULE`, `ID_RULE`), once,
before any store sees it: a NUL or a lone surrogate would otherwise crash a store's native
code rather than come back as an error the caller can fix. The check lives here rather than
in the toolset because this is the layer every path crosses: the agent's tools, the CLI, the
MCP server and the evaluation command (all through `ToolishRag.run_tool`), and code that uses
a `Retriever` directly. The toolset adds what is a matter of policy towards a model (length
caps, shown in the tool schemas) on top.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

from .content import Chunk, Entity
from .errors import InvalidRequestError
from .filters import Filter, and_, matches
from .fusion import FusionConfig, fuse
from .protocols import FilterPushdown, HybridSearch, RegexSearch, ResultExpander, StoreLike, TextSearch, VectorSearch
from .search import ID_RULE, PATTERN_RULE, QUERY_RULE, ExpansionRequest, RegexRequest, SearchHit, SearchRequest

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
        return fuse(vector_hits, text_hits, top_k, self.fusion)

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

    # -- expansion ------------------------------------------------------------------------

    def _expander(self) -> ResultExpander:
        if not isinstance(self.store, ResultExpander):
            raise InvalidRequestError('this store cannot expand results')
        return self.store

    async def get(self, record_id: str) -> Chunk | Entity | None:
        """The record, if it exists and is in scope (else ``None``: the two are not told apart).

        Every expansion (`neighbours`, `section`) starts here, so this is where an id is checked.
        """
        store = self._expander()
        ID_RULE.check(record_id)
        found = await store.get_records([record_id], filter=self.filter if self._pushdown() else None)
        for record in found:
            if record.id == record_id and self._in_scope(record):
                return record
        return None

    async def _expand(self, request: ExpansionRequest) -> tuple[list[Chunk], bool]:
        """Run ``request`` scoped; returns up to ``limit`` chunks and whether more exist."""
        store = self._expander()
        limit = request.limit
        if self.filter is None or self._pushdown():
            chunks = list(await store.expand(replace(request, filter=self.filter, limit=limit + 1)))
            kept = [c for c in chunks if self._in_scope(c)]
            if len(kept) == len(chunks):
                return kept[:limit], len(kept) > limit
        window = (limit + 1) * 4
        while True:
            chunks = list(await store.expand(replace(request, filter=None, limit=window)))
            kept = [c for c in chunks if self._in_scope(c)]
            if len(kept) > limit or len(chunks) < window or window >= _MAX_WINDOW:
                return kept[:limit], len(kept) > limit
            window *= 4

    async def neighbours(self, chunk_id: str, count: int) -> tuple[Chunk, list[Chunk]] | None:
        """The chunk and the in-scope chunks among the ``count`` positions either side, in order."""
        record = await self.get(chunk_id)
        if not isinstance(record, Chunk):
            return None
        seq = record.sequence_number
        chunks, _ = await self._expand(
            ExpansionRequest(
                document_id=record.document_id, first=max(0, seq - count), last=seq + count, limit=2 * count + 1
            )
        )
        if not any(c.id == record.id for c in chunks):
            chunks = sorted([*chunks, record], key=lambda c: c.sequence_number)
        return record, chunks

    async def section(self, record_id: str, max_chunks: int) -> SectionView | None:
        """The section enclosing a chunk, or the parent of a section id, with its chunks."""
        record = await self.get(record_id)
        if isinstance(record, Entity):
            return None
        if isinstance(record, Chunk):
            anchor = record
            target = record.section_id
        else:
            # A section id: find an in-scope chunk inside it to learn its place in the tree.
            inside, _ = await self._expand(ExpansionRequest(section_id=record_id, limit=1))
            if not inside:
                return None
            anchor = inside[0]
            position = anchor.section_ids.index(record_id)
            target = anchor.section_ids[position - 1] if position > 0 else None
        if target is None:
            chunks, truncated = await self._expand(ExpansionRequest(document_id=anchor.document_id, limit=max_chunks))
            path: tuple[str, ...] = ()
            parent = None
        else:
            chunks, truncated = await self._expand(
                ExpansionRequest(document_id=anchor.document_id, section_id=target, limit=max_chunks)
            )
            position = anchor.section_ids.index(target)
            path = anchor.section_path[: position + 1]
            parent = target
        return SectionView(
            document_id=anchor.document_id,
            document_title=anchor.document_title,
            document_uri=anchor.document_uri,
            section_id=target,
            section_path=path,
            chunks=tuple(chunks),
            truncated=truncated,
            zoom_id=parent,
        )
