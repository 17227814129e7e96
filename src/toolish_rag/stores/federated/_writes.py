"""Writes across a federation: each document or entity goes to the one member its route names.

See docs/federation.md#writes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence

from ...content import Document, Entity
from ...protocols import DocumentInfo, DocumentStore
from ...writes import upsert_batch
from ._core import FederationCore
from ._routing import Route
from ._statistics import forget


class FederatedWrites(FederationCore):
    route: Route

    def writable(self) -> list[str]:
        """The names of the members that take writes (`DocumentStore`), in declared order."""
        return [m.name for m in self.serving(DocumentStore)]

    def placement(self, items: Iterable[Document | Entity]) -> dict[str, list[Document | Entity]]:
        """Each item of an upsert under the member its route names; ``ValueError`` if one names no writable member."""
        documents, entities = upsert_batch(items)
        writable = self.writable()
        groups: dict[str, list[Document | Entity]] = {name: [] for name in writable}
        items_in_order: list[Document | Entity] = [*documents, *entities]
        for item in items_in_order:
            name = self.route(item, writable)
            if name not in groups:
                raise ValueError(f'the route sent {item.id!r} to {name!r}, which is not a writable member')
            groups[name].append(item)
        return groups

    async def upsert(self, items: Iterable[Document | Entity]) -> None:
        """Write each item to its member, then remove it from every other member (it may have moved).

        The whole batch is routed before anything is written. Not atomic across members: a member
        that refuses its part leaves the parts written before it (members are written in declared order).
        """
        groups = self.placement(items)
        members = self.members
        async with self._write_lock:
            try:
                for name, group in groups.items():
                    if group:
                        await members[name].upsert(group)
                for name in groups:
                    elsewhere = [item for other, group in groups.items() if other != name for item in group]
                    documents = [i.id for i in elsewhere if isinstance(i, Document)]
                    entities = [i.id for i in elsewhere if isinstance(i, Entity)]
                    if documents:
                        await members[name].delete_documents(documents)
                    if entities:
                        await members[name].delete_entities(entities)
            finally:
                for store in members.values():
                    forget(store)  # its text statistics changed (docs/federation.md#fusion)

    async def delete_documents(self, document_ids: Iterable[str]) -> int:
        return await self._delete('delete_documents', list(dict.fromkeys(document_ids)))

    async def delete_entities(self, entity_ids: Iterable[str]) -> int:
        return await self._delete('delete_entities', list(dict.fromkeys(entity_ids)))

    async def _delete(self, method: str, ids: list[str]) -> int:
        if not ids:
            return 0
        async with self._write_lock:
            try:
                counts = await asyncio.gather(*(getattr(m.store, method)(ids) for m in self.serving(DocumentStore)))
            finally:
                for m in self.serving(DocumentStore):
                    forget(m.store)
        return int(sum(counts))

    async def list_documents(self) -> Sequence[DocumentInfo]:
        """Every member's documents, by id (a document two members hold is listed once, the first member's)."""
        listings = await asyncio.gather(*(m.store.list_documents() for m in self.serving(DocumentStore)))
        found: dict[str, DocumentInfo] = {}
        for listing in listings:
            for info in listing:
                found.setdefault(info.id, info)
        return [found[key] for key in sorted(found)]
