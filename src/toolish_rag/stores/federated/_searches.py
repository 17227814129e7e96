"""The search capabilities of a federation: each member searched concurrently, then fused.

Each member is sent the request's filter when it evaluates it (its answer passed on as it is, so
the conformance kit sees a member's leak); one that cannot is read through a `Retriever`,
over-fetched and re-checked like any store. See docs/federation.md#fusion.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any

from ...analysis import TextAnalyzer
from ...filters import matches
from ...fusion import fuse
from ...protocols import HybridSearch, RegexSearch, TextSearch, VectorSearch
from ...regex import compile_request, regex_rank_key
from ...retriever import Retriever
from ...search import RegexRequest, SearchHit, SearchRequest
from ._candidates import chooses_own_candidates, scoped_candidates
from ._core import FederationCore, Member, pushes_down
from ._events import SourcedHit
from ._fusion import MemberFusion
from ._languages import query_legs
from ._statistics import Guard, Prepared, prepare, rescored, shared_analyzer

_Method = Callable[[Member], str]
"""Which search method of a member gives its ranking for a leg (``'vector_search'``...)."""


async def member_ranking(member: Member, method: str, request: SearchRequest | RegexRequest) -> list[SearchHit]:
    """One member's answer to ``request`` under its scope.

    A member that evaluates the filter is sent it and its answer is returned as it is, bar the
    member's own scope (only the federation knows it): a member that ignores a filter it claims
    to evaluate then shows in the federation's own answers, where the conformance kit finds it,
    while a `Retriever` over the federation (the tools) re-checks every hit. A member that cannot
    evaluate the filter is read through a `Retriever` (over-fetched and re-checked), like any store.
    """
    f, store = member.scoped(request.filter), member.store
    if f is None or pushes_down(store, f):
        hits = await getattr(store, method)(replace(request, filter=f))
        return [h for h in hits if matches(member.scope, h.record)][: request.top_k]
    retriever = Retriever(store, f)
    if isinstance(request, RegexRequest):
        return await retriever.regex_search(request.pattern, request.top_k, case_sensitive=request.case_sensitive)
    ranked: list[SearchHit] = await getattr(retriever, method)(request.query, request.top_k)
    return ranked


class FusedSearch(FederationCore):
    """Fan a ranked search out to the members that serve it and fuse their rankings."""

    fusion: MemberFusion

    async def fan_out(
        self, members: Sequence[Member], method: _Method, request: SearchRequest, operation: str
    ) -> list[SourcedHit]:
        """The members' rankings for ``request``, concurrently, fused; a failing member adds nothing.

        Each member is first asked for its share of the pool (`MemberFusion.asks`), and asked again
        for the whole pool only when its share may not have been enough (`_short`): most of what a
        member would return beyond its share is never kept, and materialising it is most of a
        member's search time.
        """
        if request.top_k <= 0 or not members:
            return []
        corpus = method is _text and self.fusion.text == 'corpus'
        pool = self.fusion.pool(request.top_k, corpus)
        asks = self.fusion.asks(pool, len(members))
        names = [m.name for m in members]
        analyzer = self.fusion.analyzer or shared_analyzer(members)
        # The re-scoring's preparation (each member's statistics source, the query's analysis) runs while they search.
        guard = self._guard(operation)
        prepared = (
            asyncio.ensure_future(prepare(members, request.filter, request.query, analyzer, guard)) if corpus else None
        )
        try:
            rankings = list(
                await asyncio.gather(
                    *(
                        self._ranking(m, method, request, n, operation, prepared)
                        for m, n in zip(members, asks, strict=True)
                    )
                )
            )
            ready = await prepared if prepared is not None else None
        finally:
            if prepared is not None and not prepared.done():
                prepared.cancel()
        while True:
            merged = await self._merged(names, rankings, request, pool, ready, analyzer, guard)
            short = [
                i for i, n in enumerate(asks) if n < pool and _short(names[i], rankings[i], n, merged, pool, corpus)
            ]
            if not short:
                return merged[: request.top_k]
            found = await asyncio.gather(
                *(self._ranking(members[i], method, request, pool, operation, prepared) for i in short)
            )
            for i, ranking in zip(short, found, strict=True):
                asks[i] = pool
                if len(ranking) >= len(rankings[i]):  # shorter: the second call failed; its first answer stands
                    rankings[i] = ranking

    def _ranking(
        self,
        member: Member,
        method: _Method,
        request: SearchRequest,
        n: int,
        operation: str,
        prepared: asyncio.Future[Prepared | None] | None,
    ) -> Awaitable[list[SearchHit]]:
        """One member's ``n`` candidates, bounded by the timeout; re-scored text (``prepared``) takes them
        under the scope's statistics (`scoped_candidates`) unless the member's own ranking already does."""
        call = member_ranking(member, method(member), replace(request, top_k=n))
        if prepared is not None and not chooses_own_candidates(member, request.filter):
            call = scoped_candidates(member, request.filter, n, prepared, call)
        return self.guarded(member, operation, call, [])

    def _guard(self, operation: str) -> Guard:
        """`guarded` for the re-scoring's calls: ``None`` when the member failed or timed out."""

        def guard(member: Member, call: Awaitable[Any]) -> Awaitable[Any]:
            return self.guarded(member, operation, call, None)

        return guard

    async def _merged(
        self,
        names: Sequence[str],
        rankings: Sequence[Sequence[SearchHit]],
        request: SearchRequest,
        pool: int,
        prepared: Prepared | None,
        analyzer: TextAnalyzer,
        guard: Guard,
    ) -> list[SourcedHit]:
        """The best ``pool`` of the members' rankings: re-scored with one BM25 (``prepared``), else fused."""
        if prepared is not None:
            found = await rescored(prepared, request.filter, _each_once(names, rankings), analyzer, guard)
            if found is not None:
                return found[:pool]
        return self.fusion.fuse(names, rankings, pool)


def _short(
    name: str, ranking: Sequence[SearchHit], asked: int, merged: Sequence[SourcedHit], pool: int, corpus: bool
) -> bool:
    """Whether a member that returned ``ranking`` when asked for ``asked`` hits must be asked for the whole pool.

    Not when it returned fewer (it has no more). Fused by score or rank, exactly when its last hit made
    the pool (or the pool is not full): what it did not return ranks below that hit. Re-scored with one
    BM25, whose order is not the member's, when nine in ten of its hits made the pool.
    """
    if len(ranking) < asked:
        return False
    if len(merged) < pool:
        return True
    if corpus:
        return sum(h.source == name for h in merged) * 10 >= asked * 9
    last = ranking[-1].id
    return any(h.id == last and h.source == name for h in merged)


def _each_once(names: Sequence[str], rankings: Sequence[Sequence[SearchHit]]) -> list[SourcedHit]:
    """Every member's hits in member order, then each member's order; an id two members return, once."""
    seen: set[str] = set()
    out: list[SourcedHit] = []
    for name, hits in zip(names, rankings, strict=True):
        for hit in hits:
            if hit.id not in seen:
                seen.add(hit.id)
                out.append(SourcedHit(hit.record, hit.score, hit.matches, name))
    return out


def _vector(member: Member) -> str:
    return 'vector_search'


def _text(member: Member) -> str:
    return 'text_search'


def _vector_leg(member: Member) -> str:
    """A member's vector ranking or, for a member with only its own hybrid search, that ranking."""
    return 'vector_search' if isinstance(member.store, VectorSearch) else 'hybrid_search'


class FederatedVector(FusedSearch):
    async def vector_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        """The members' vector searches merged by `MemberFusion` (by default on their own scores: cosines)."""
        return await self.fan_out(self.serving(VectorSearch), _vector, request, 'vector_search')


class FederatedText(FusedSearch):
    @property
    def text_query_syntax(self) -> str:
        """The members' syntax, or each distinct one when they differ (the query goes to every member)."""
        syntaxes = list(dict.fromkeys(m.store.text_query_syntax for m in self.serving(TextSearch)))
        if len(syntaxes) == 1:
            return str(syntaxes[0])
        return 'The query goes to several stores, each reading it its own way:\n' + '\n'.join(
            f'- {s}' for s in syntaxes
        )

    async def text_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        """The members' text searches merged by `MemberFusion` (by default on their own BM25 scores)."""
        return await self.fan_out(self.serving(TextSearch), _text, request, 'text_search')


class FederatedHybrid(FusedSearch):
    async def hybrid_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        """The members' vector legs merged, their text legs merged, then the two fused as for one store.

        Fusing each member's own hybrid ranking instead would standardise every member apart and
        lose how good its best match is (docs/federation.md#fusion). A text-only member adds to the
        text leg; a member with only its own hybrid search adds its ranking to the vector leg.
        Scores in ``[0, 1]``.
        """
        if request.top_k <= 0:
            return []
        n = max(request.top_k, self.fusion.candidates)
        wide = replace(request, top_k=n)
        vector_members = [
            m
            for m in self._members
            if isinstance(m.store, VectorSearch)
            or (isinstance(m.store, HybridSearch) and not isinstance(m.store, TextSearch))
        ]
        vector, text = await asyncio.gather(
            self.fan_out(vector_members, _vector_leg, wide, 'hybrid_search'),
            self.fan_out(self.serving(TextSearch), _text, wide, 'hybrid_search'),
        )
        sources = {h.id: h.source for h in (*text, *vector)}
        legs = await query_legs(
            replace(self.fusion.legs, candidates=n), vector_members, self._members, request.query, text
        )
        fused = fuse(vector, text, request.top_k, legs)
        return [SourcedHit(h.record, h.score, h.matches, sources[h.id]) for h in fused]


class FederatedRegex(FederationCore):
    async def regex_search(self, request: RegexRequest) -> Sequence[SearchHit]:
        """Regex scores are match counts, comparable across members: merged in the regex order."""
        compile_request(request)  # an invalid pattern is refused whatever the members hold
        if request.top_k <= 0:
            return []
        members = self.serving(RegexSearch)

        def one(member: Member) -> Awaitable[list[SearchHit]]:
            return self.guarded(member, 'regex_search', member_ranking(member, 'regex_search', request), [])

        hits: dict[str, SearchHit] = {}
        for member, found in zip(members, await asyncio.gather(*(one(m) for m in members)), strict=True):
            for hit in found:
                hits.setdefault(hit.id, SourcedHit(hit.record, hit.score, hit.matches, member.name))
        return sorted(hits.values(), key=_regex_key)[: request.top_k]


def _regex_key(hit: SearchHit) -> tuple[int, str, int]:
    record = hit.record
    document_id = getattr(record, 'document_id', None)
    return regex_rank_key(int(hit.score), record.id, document_id, getattr(record, 'sequence_number', None))


FEDERATED_SEARCHES: tuple[tuple[type, type], ...] = (
    (VectorSearch, FederatedVector),
    (TextSearch, FederatedText),
    (RegexSearch, FederatedRegex),
)
"""A member protocol, and the mixin a federation takes when any member implements it."""
