"""What a store's ``upsert`` writes, from whatever the caller passed.

`DocumentStore.upsert` takes any iterable of documents and entities, and callers do name an
id twice in one batch (a sync that sees a file edited twice, a bulk load that concatenates
sources). The contract every store keeps: the last occurrence of an id wins, documents and
entities are separate id spaces, and anything else in the batch is a ``TypeError`` before any
write. Store adapters (a third-party one included) start their ``upsert`` with `upsert_batch`
so they all read a batch the same way::

    async def upsert(self, items: Iterable[Document | Entity]) -> None:
        documents, entities = upsert_batch(items)
        if not documents and not entities:
            return
        ...
"""

from __future__ import annotations

from collections.abc import Iterable

from .content import Document, Entity, dedupe_last, split_items

__all__ = ['upsert_batch']


def upsert_batch(items: Iterable[Document | Entity]) -> tuple[list[Document], list[Entity]]:
    """The documents and entities of an upsert: of an id named twice, the last occurrence, in its place.

    Raises ``TypeError`` for an item that is neither a `Document` nor an `Entity`.
    """
    return split_items(dedupe_last(list(items)))
