"""A member's text candidates under the scope's statistics, for a federation re-scoring text with one BM25.

A member whose text search reads index-wide statistics (a plain `TantivyStore`, LanceDB) picks
its top hits with them: under a tenant's scope, another tenant's records would change which of
the tenant's records reach the re-scoring. Such a member's candidates are instead chosen from its
census, with the statistics of its records in scope (`Census.ranked`), and read again from the
member so that a record deleted since is not returned. A member that ranks by the scope's
statistics itself (`ScopedTextRanking`) keeps its own candidates. See docs/filters.md#corpus-statistics.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

from ...content import Chunk
from ...filters import Filter, matches
from ...protocols import ResultExpander, ScopedTextRanking, SectionReader
from ...search import SearchHit
from ._core import Member
from ._records import member_records
from ._statistics import Prepared, census_of

__all__ = ['chooses_own_candidates', 'scoped_candidates']


def chooses_own_candidates(member: Member, f: Filter | None) -> bool:
    """Whether ``member``'s own text ranking under the request filter ``f`` depends on in-scope records alone."""
    scope = member.scoped(f)
    if scope is None:
        return True  # its whole store is the scope
    store = member.store
    return isinstance(store, ScopedTextRanking) and store.text_ranking_in_scope(scope)


async def scoped_candidates(
    member: Member, f: Filter | None, n: int, prepared: asyncio.Future[Prepared | None], own: Awaitable[list[SearchHit]]
) -> list[SearchHit]:
    """``member``'s ``n`` best in-scope records under its scope's statistics, then its own hits its census lacks.

    ``own`` is the member's own ranking: its hits the census holds are dropped (chosen with
    index-wide statistics); those it does not hold (written since the census was read, from
    elsewhere) are kept, as the member ranked them, until the census is read again. Without a
    census (the member is no `SectionReader`, or the statistics are unreadable), ``own`` as it is.
    """
    mine = asyncio.ensure_future(own)  # the member searches while its census candidates are chosen
    try:
        ready = await asyncio.shield(prepared)  # shared by the members: one member's timeout does not cancel it
        if ready is None or not isinstance(member.store, SectionReader):
            return await mine
        found = await _from_census(member, f, n, ready)
        where = (await census_of(member.store, ready.analyzer)).where
        return found + [h for h in await mine if h.id not in where]
    finally:
        mine.cancel()  # nothing when it is done
        if mine.done() and not mine.cancelled():
            mine.exception()  # retrieved: a failure of its own was this call's (or does not matter)


async def _from_census(member: Member, f: Filter | None, n: int, ready: Prepared) -> list[SearchHit]:
    census = await census_of(member.store, ready.analyzer)
    scope = member.scoped(f)
    ranked = census.ranked(census.scope(scope), ready.tokens, n)
    if not isinstance(member.store, ResultExpander):
        return [SearchHit(census.records[i], score) for i, score in ranked if matches(scope, census.records[i])]
    # As they are now: a record deleted since the census was read is left out.
    current = {r.id: r for r in await member_records(member, [census.records[i].id for i, _ in ranked], f)}
    return [
        SearchHit(record, score)
        for i, score in ranked
        if isinstance(record := current.get(census.records[i].id), Chunk)
    ]
