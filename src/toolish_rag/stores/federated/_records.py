"""Reading by id across a federation: each id is answered by the member that holds it.

Every member is asked concurrently (only the owner has the id); an anchored expansion is
answered by the member holding its anchor. See docs/federation.md#ids.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace

from ...content import Chunk, Entity
from ...filters import Filter, matches
from ...protocols import ResultExpander
from ...search import ExpansionRequest
from ._core import FederationCore, Member, pushes_down

_MAX_WINDOW = 10_000
"""The widest window asked of a member that cannot evaluate the filter (its answer is filtered here)."""


async def _member_expand(member: Member, request: ExpansionRequest) -> list[Chunk]:
    """One member's in-scope answer to ``request`` (its own scope added), whether or not it evaluates filters."""
    store, f = member.store, member.scoped(request.filter)
    request = replace(request, filter=f)
    if f is None or pushes_down(store, f):  # its answer as it is, bar the member's own scope (see member_ranking)
        return [c for c in await store.expand(request) if matches(member.scope, c)]
    window = request.limit * 4
    while True:
        chunks = list(await store.expand(replace(request, filter=None, limit=window)))
        kept = [c for c in chunks if matches(f, c)]
        if len(kept) >= request.limit or len(chunks) < window or window >= _MAX_WINDOW:
            return kept[: request.limit]
        window *= 4


async def member_records(member: Member, ids: list[str], f: Filter | None) -> list[Chunk | Entity]:
    scope = member.scoped(f)
    if scope is None or pushes_down(member.store, scope):  # as it is, bar the member's own scope (see member_ranking)
        return [r for r in await member.store.get_records(ids, filter=scope) if matches(member.scope, r)]
    return [r for r in await member.store.get_records(ids) if matches(scope, r)]


class FederatedRecords(FederationCore):
    async def get_records(self, ids: Sequence[str], *, filter: Filter | None = None) -> Sequence[Chunk | Entity]:
        """The records with these ids that some member holds (the first member's, should two hold one)."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return []
        members = self.serving(ResultExpander)
        answers = await asyncio.gather(
            *(self.guarded(m, 'get_records', member_records(m, wanted, filter), []) for m in members)
        )
        found: dict[str, Chunk | Entity] = {}
        for records in answers:
            for record in records:
                found.setdefault(record.id, record)
        return list(found.values())

    async def expand(self, request: ExpansionRequest) -> Sequence[Chunk]:
        """A document lives in one member: an anchored request is its anchor's member's answer, whole.

        A plain request (a document, a section) is answered by the members holding its chunks,
        merged in sequence order (stable: members in declared order on ties).
        """
        answers = await asyncio.gather(
            *(self.guarded(m, 'expand', _member_expand(m, request), []) for m in self.serving(ResultExpander))
        )
        if request.around is not None:
            return next((chunks for chunks in answers if chunks), [])
        merged = sorted((c for chunks in answers for c in chunks), key=lambda c: c.sequence_number)
        return merged[: request.limit]
