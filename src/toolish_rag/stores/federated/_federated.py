"""`Federated`: several stores searched, read and written as one store.

The constructor returns an instance of a class with exactly the store protocols the
members can serve, so `StoreFeatures.of` (and so the toolset) sees the right tools.
See docs/federation.md.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from ...filters import Filter
from ...protocols import DocumentStore, GraphSearch, ResultExpander, SectionReader, StoreFeatures
from ._core import FederationCore, Member, both
from ._events import MemberListener
from ._fusion import MemberFusion
from ._navigation import FederatedGraph, FederatedSections
from ._records import FederatedRecords
from ._routing import ByHash, Route
from ._searches import FEDERATED_SEARCHES, FederatedHybrid
from ._writes import FederatedWrites


class Federated(FederationCore):
    """Several stores (members, by name) as one store.

    Args:
        members: name -> store, in the order ties are broken in. Names are 1 to 32 lower-case
            letters, digits, ``_`` and ``-``.
        scopes: name -> a filter every read of that member is narrowed by (on top of the request's).
        descriptions: name -> what the member holds, in a few words (the search tools show it).
        route: which writable member takes each upserted document or entity (default `ByHash`).
        fusion: how the members' rankings are merged (`MemberFusion`).
        timeout: seconds a member may take to answer one call (``None``: no limit); a member that
            fails or times out adds nothing to that answer, and ``on_unavailable`` is told.
        on_unavailable: called with a `MemberUnavailable` for each member that could not answer.

    It implements each search protocol some member implements (hybrid search when any member
    searches: a text-only member adds its text ranking), `ResultExpander` when a member does,
    `SectionReader` and `GraphSearch` when a member does (each document and its graph live in one
    member), `DocumentStore` when a member does, and `FilterPushdown` always. Search hits are
    `SourcedHit` objects naming their member. Members keep their own ids; see docs/federation.md.
    """

    route: Route
    fusion: MemberFusion

    if TYPE_CHECKING:
        # The protocols are chosen at run time, from the members; statically a federation may be
        # any store (as `open_store`'s ``Any``): what it serves is `StoreFeatures.of(federation)`.
        def __getattr__(self, name: str) -> Any: ...

    def __new__(cls, members: Mapping[str, Any], **options: Any) -> Federated:
        if cls is Federated:
            cls = _composed(_mixins(tuple(members.values())))
        return super().__new__(cls)

    def __init__(
        self,
        members: Mapping[str, Any],
        *,
        scopes: Mapping[str, Filter] | None = None,
        descriptions: Mapping[str, str] | None = None,
        route: Route | None = None,
        fusion: MemberFusion | None = None,
        timeout: float | None = None,
        on_unavailable: MemberListener | None = None,
    ) -> None:
        scopes, descriptions = dict(scopes or {}), dict(descriptions or {})
        unknown = sorted((set(scopes) | set(descriptions)) - set(members))
        if unknown:
            raise ValueError(f'scopes or descriptions name members the federation does not have: {unknown}')
        self._setup(
            tuple(Member(name, store, scopes.get(name), descriptions.get(name, '')) for name, store in members.items()),
            timeout,
            on_unavailable,
        )
        self.route = route if route is not None else ByHash()
        self.fusion = fusion if fusion is not None else MemberFusion()

    def narrowed(self, sources: Collection[str] | None = None, scopes: Mapping[str, Filter] | None = None) -> Federated:
        """A view of some members (``sources``; ``None``: all), each also narrowed by ``scopes[name]``.

        Never wider: a member left out is not in the view at all (its name, its records, its
        capabilities), and a scope adds to the member's scope. For a tenant: ``narrowed({'docs'})``.
        """
        names = [m.name for m in self._members]
        unknown = sorted(set(sources or ()) - set(names)) + sorted(set(scopes or {}) - set(names))
        if unknown:
            raise ValueError(f'no such members: {unknown}')
        kept = [m for m in self._members if sources is None or m.name in sources]
        if not kept:
            raise ValueError('a view needs at least one member')
        added = scopes or {}
        return Federated(
            {m.name: m.store for m in kept},
            scopes={m.name: f for m in kept if (f := both(m.scope, added.get(m.name))) is not None},
            descriptions={m.name: m.description for m in kept},
            route=self.route,
            fusion=self.fusion,
            timeout=self.timeout,
            on_unavailable=self.on_unavailable,
        )


def _mixins(stores: tuple[Any, ...]) -> tuple[type, ...]:
    chosen = [mixin for protocol, mixin in FEDERATED_SEARCHES if any(isinstance(s, protocol) for s in stores)]
    if any(StoreFeatures.of(s).any_search for s in stores):
        chosen.append(FederatedHybrid)
    if any(isinstance(s, ResultExpander) for s in stores):
        chosen.append(FederatedRecords)
    if any(isinstance(s, SectionReader) for s in stores):
        chosen.append(FederatedSections)
    if any(isinstance(s, GraphSearch) for s in stores):
        chosen.append(FederatedGraph)
    if any(isinstance(s, DocumentStore) for s in stores):
        chosen.append(FederatedWrites)
    return tuple(chosen)


@functools.cache
def _composed(mixins: tuple[type, ...]) -> type[Federated]:
    """The `Federated` subclass with these capability mixins (one class per combination)."""
    return type('Federated', (Federated, *mixins), {'__module__': Federated.__module__, '__doc__': Federated.__doc__})
