"""`LanceDBStore`'s `toolish_rag.protocols.GraphStore` methods: relations, entities, graph builders' ledgers,
and whether a graph was built (`toolish_rag.protocols.GraphBuiltWriter`).

A mixin over the store's tables, ledger and upkeep; the relations' storage is `toolish_rag_lancedb._relations`.
See docs/stores/lancedb.md (Modules).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

import toolish_rag_lancedb._relations as relations
from toolish_rag.content import Entity, Relation
from toolish_rag.manifest import StoreManifest, record_graph, recorded_graph

from ._manifest import legacy_manifest
from ._schema import RESULT_COLUMNS, record_from_row
from ._settling import DocumentLedger
from ._tables import Tables

__all__ = ['GraphStoreMethods']


class _Host(Protocol):
    _tables: Tables
    _ledger: DocumentLedger
    _local: bool
    _manifest: StoreManifest | None

    async def _maintain(self) -> None: ...


class GraphStoreMethods:
    """The graph's reads and writes that `LanceDBStore` offers beside its documents' (unscoped, by id)."""

    _manifest: StoreManifest | None

    async def list_relations(
        self: _Host, *, document_ids: Sequence[str] | None = None, origin: str | None = None
    ) -> Sequence[Relation]:
        """Stored relations, unscoped, by id: of these documents (``None``: all) and origin (``None``: any)."""
        return await relations.list_relations(self._tables, document_ids, origin)

    async def delete_relations(self: _Host, ids: Iterable[str]) -> int:
        """Delete relations by id; returns how many were stored."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return 0
        async with self._tables.write_lock:
            await self._ledger.settle()
            await self._tables.open_graph()
            existed = await relations.delete_relations(self._tables, wanted)
            await self._maintain()
            return existed

    async def list_entities(self: _Host) -> Sequence[Entity]:
        """Every stored entity, unscoped, by id."""
        table = await self._tables.records_for_read()
        if table is None:
            return []
        rows = await table.query().where("kind = 'entity'").select(RESULT_COLUMNS).to_arrow()
        entities = [r for r in map(record_from_row, rows.to_pylist()) if isinstance(r, Entity)]
        return sorted(entities, key=lambda e: e.id)

    @property
    def graph_built(self: _Host) -> bool:
        """`GraphBuilt`: whether `build_graph` ran on this store: a local store's manifest records it (read afresh:
        another process may have built it), a remote one keeps it on this object."""
        if self._local:
            return bool(recorded_graph(self._tables.uri))
        return bool(getattr(self, '_graph_builders', ()))

    async def record_graph_built(self: _Host, builders: Sequence[str]) -> None:
        """`GraphBuiltWriter`: in a local store's manifest (docs/graph.md), else on this object."""
        if not self._local:
            setattr(self, '_graph_builders', (*getattr(self, '_graph_builders', ()), *builders))  # noqa: B010
            return
        tables = self._tables
        async with tables.write_lock:
            legacy = lambda: legacy_manifest(tables)  # noqa: E731
            self._manifest = await asyncio.to_thread(record_graph, tables.uri, 'lancedb', builders, legacy=legacy)

    async def graph_marks(self: _Host, builder: str) -> dict[str, str]:
        """The ledger of ``builder``: key -> value (see `toolish_rag.protocols.GraphStore`)."""
        return await relations.read_marks(self._tables, builder)

    async def set_graph_marks(self: _Host, builder: str, marks: Mapping[str, str | None]) -> None:
        """Set (or, with ``None``, delete) ledger keys of ``builder``, in one commit."""
        if not marks:
            return
        async with self._tables.write_lock:
            await self._ledger.settle()
            await self._tables.open_graph()
            await relations.set_marks(self._tables, builder, marks)
