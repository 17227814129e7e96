"""Where each item of a partitioned upsert goes, and what must be refused before any partition is written.

See docs/stores/tantivy.md#how-the-adapter-is-built.
"""

from __future__ import annotations

from collections.abc import Sequence

from toolish_rag.content import Document, Entity, MetadataValue
from toolish_rag.errors import UnsupportedValueError

from ._index import IndexSnapshot, record_owners
from ._partitions import PartitionId, partition_value_problem

__all__ = ['Groups', 'check_against', 'place']

Groups = dict[PartitionId, list[Document | Entity]]
"""An upsert's items by the partition each belongs in."""


def place(documents: Sequence[Document], entities: Sequence[Entity], key: str) -> Groups:
    """Group the items by partition; raise `UnsupportedValueError` for the first item no partition can hold."""
    groups: Groups = {}
    for document in documents:
        where = f'document {document.id!r}'
        home = _partition(document.metadata.get(key), key, where, document_id=document.id)
        for chunk in document.chunks:
            value = chunk.metadata.get(key)
            pid = _partition(value, key, f'chunk {chunk.id!r} of {where}', document_id=document.id)
            if pid != home:
                raise UnsupportedValueError(
                    f'chunk {chunk.id!r} has {pid.describe(key)} but its {where} has {home.describe(key)}: '
                    f"{key!r} is the partition key, so every chunk of a document must carry the document's value",
                    document_id=document.id,
                    key=key,
                )
        groups.setdefault(home, []).append(document)
    for entity in entities:
        home = _partition(entity.metadata.get(key), key, f'entity {entity.id!r}', entity_id=entity.id)
        groups.setdefault(home, []).append(entity)
    return groups


def _partition(
    value: MetadataValue, key: str, where: str, *, document_id: str | None = None, entity_id: str | None = None
) -> PartitionId:
    problem = partition_value_problem(value)
    if problem is not None:
        raise UnsupportedValueError(
            f'metadata {key!r} of {where} is the partition key: {problem}',
            document_id=document_id,
            entity_id=entity_id,
            key=key,
        )
    return PartitionId.of(value, key=key)


def check_against(groups: Groups, partitions: Sequence[tuple[PartitionId, IndexSnapshot]], key: str) -> None:
    """Refuse ``groups`` if a partition's index would refuse its part, or if it would move a record.

    ``partitions``: a snapshot of every existing partition, taken under the store's write lock,
    so no write lands between this check and the commits it admits.
    """
    for home, items in groups.items():
        for other, snapshot in partitions:
            if other != home:
                _refuse_moves(snapshot, other, home, items, key)
    record_owners(  # raises when two items of the batch, in any partitions, write one record id
        [i for items in groups.values() for i in items if isinstance(i, Document)],
        [i for items in groups.values() for i in items if isinstance(i, Entity)],
    )
    for home, items in groups.items():
        record_ids = sorted(r.id for item in items for r in (item.chunks if isinstance(item, Document) else [item]))
        for other, snapshot in partitions:
            replaced = items if other == home else []  # only in their own partition do items replace records
            clash = snapshot.clashing_id(
                record_ids,
                replacing_documents=[i.id for i in replaced if isinstance(i, Document)],
                replacing_entities=[i.id for i in replaced if isinstance(i, Entity)],
            )
            if clash is not None:
                raise ValueError(f'record id {clash!r} already belongs to another document or entity')


def _refuse_moves(
    snapshot: IndexSnapshot, other: PartitionId, home: PartitionId, items: list[Document | Entity], key: str
) -> None:
    """Raise if partition ``other`` holds one of the documents or entities bound for ``home``."""
    for what, field, ids in (
        ('document', 'document_id', [i.id for i in items if isinstance(i, Document)]),
        ('entity', 'eid', [i.id for i in items if isinstance(i, Entity)]),
    ):
        moved = snapshot.first_held(field, ids)
        if moved is not None:
            raise UnsupportedValueError(
                f'{what} {moved!r} is stored under {other.describe(key)}, not {home.describe(key)}: '
                f'{key!r} is the partition key and a record cannot move partition by an upsert; '
                f'delete the {what}, then upsert it',
                document_id=moved if what == 'document' else None,
                entity_id=moved if what == 'entity' else None,
                key=key,
            )
