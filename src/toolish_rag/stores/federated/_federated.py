"""`Federated`: several stores searched, read and written as one store.

The constructor returns an instance of a class with exactly the capability protocols the
members can serve, so `StoreCapabilities.of` (and so the toolset) sees the right tools.
See docs/federation.md.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...protocols import DocumentStore, ResultExpander, StoreCapabilities
from ._core import FederationCore
from ._fusion import MemberFusion
from ._records import FederatedRecords
from ._routing import ByHash, Route
from ._searches import FEDERATED_SEARCHES, FederatedHybrid
from ._writes import FederatedWrites


class Federated(FederationCore):
    """Several stores (members, by name) as one store.

    Args:
        members: name -> store, in the order ties are broken in. Names are 1 to 32 lower-case
            letters, digits, ``_`` and ``-``.
        route: which writable member takes each upserted document or entity (default `ByHash`).
        fusion: how the members' rankings are merged (`MemberFusion`).

    It implements each search protocol some member implements (hybrid search when any member
    searches: a text-only member adds its text ranking), `ResultExpander` when a member does,
    `DocumentStore` when a member does, and `FilterPushdown` always. Members keep their own
    ids; see docs/federation.md for ids, fusion and the write rule.
    """

    route: Route
    fusion: MemberFusion

    if TYPE_CHECKING:
        # The protocols are chosen at run time, from the members; statically a federation may be
        # any store (as `open_store`'s ``Any``): what it serves is `StoreCapabilities.of(federation)`.
        def __getattr__(self, name: str) -> Any: ...

    def __new__(cls, members: Mapping[str, Any], **options: Any) -> Federated:
        if cls is Federated:
            cls = _composed(_mixins(tuple(members.values())))
        return super().__new__(cls)

    def __init__(
        self, members: Mapping[str, Any], *, route: Route | None = None, fusion: MemberFusion | None = None
    ) -> None:
        super().__init__(members)
        self.route = route if route is not None else ByHash()
        self.fusion = fusion if fusion is not None else MemberFusion()


def _mixins(stores: tuple[Any, ...]) -> tuple[type, ...]:
    chosen: list[type] = [
        mixin for protocol, mixin in FEDERATED_SEARCHES if any(isinstance(s, protocol) for s in stores)
    ]
    if any(StoreCapabilities.of(s).any_search for s in stores):
        chosen.append(FederatedHybrid)
    if any(isinstance(s, ResultExpander) for s in stores):
        chosen.append(FederatedRecords)
    if any(isinstance(s, DocumentStore) for s in stores):
        chosen.append(FederatedWrites)
    return tuple(chosen)


@functools.cache
def _composed(mixins: tuple[type, ...]) -> type[Federated]:
    """The `Federated` subclass with these capability mixins (one class per combination)."""
    return type('Federated', (Federated, *mixins), {'__module__': Federated.__module__, '__doc__': Federated.__doc__})
