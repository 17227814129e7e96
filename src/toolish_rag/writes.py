"""What a store's ``upsert`` writes, from whatever the caller passed.

See docs/concepts.md#how-the-core-is-built and docs/custom-store.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeAlias

from pydantic_ai.embeddings import Embedder

from .content import Document, Entity, Metadata, Relation, Scalar, dedupe_last, split_graph_items, split_items
from .errors import UnsupportedValueError

__all__ = [
    'INT64_MAX',
    'INT64_MIN',
    'ValueProblem',
    'check_storable',
    'describe_int',
    'embed_documents',
    'graph_upsert_batch',
    'int64_problem',
    'upsert_batch',
]

PrecomputedVectors: TypeAlias = Mapping[str, Sequence[float]]
"""Document texts -> their vectors, made elsewhere with the store's own embedding (`embedder.embed_documents`)."""

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
"""The integers of a signed 64-bit column: what LanceDB and Tantivy hold (Python ints are unbounded)."""

ValueProblem = Callable[[str, Scalar], str | None]
"""Why a store cannot hold ``value`` under metadata ``key`` (a sentence for a message), or ``None``."""

_SURROGATE = re.compile('[\ud800-\udfff]')


def upsert_batch(items: Iterable[Document | Entity | Relation]) -> tuple[list[Document], list[Entity]]:
    """The documents and entities of an upsert: of an id named twice, the last occurrence, in its place.

    Raises ``TypeError`` for an item that is neither a `Document` nor an `Entity` (a `Relation`
    included: a store using this holds no graph; see `graph_upsert_batch`).
    """
    return split_items(dedupe_last(list(items)))


def graph_upsert_batch(
    items: Iterable[Document | Entity | Relation],
) -> tuple[list[Document], list[Entity], list[Relation]]:
    """`upsert_batch` for a graph store: documents, entities and relations, the last of each id in its place.

    Relations are a third id space. Raises ``TypeError`` for anything else.
    """
    return split_graph_items(dedupe_last(list(items)))


async def embed_documents(
    embedder: Embedder, texts: Sequence[str], known: PrecomputedVectors | None = None
) -> list[Sequence[float]]:
    """``embedder.embed_documents(texts)``'s vectors, in order, each text in ``known`` taken from there.

    What a `PrecomputedVectorsWriter`'s ``upsert_with_vectors`` embeds with: the texts ``known``
    lacks go to the embedder in one call (none when it has them all).
    """
    found: list[Sequence[float] | None] = [known.get(t) if known else None for t in texts]
    missing = [i for i, vector in enumerate(found) if vector is None]
    if missing:
        result = await embedder.embed_documents([texts[i] for i in missing])
        for i, vector in zip(missing, result.embeddings, strict=True):
            found[i] = vector
    return [vector for vector in found if vector is not None]


def describe_int(value: int) -> str:
    """A huge integer for a message: its size, not its digits (``str`` refuses past 4300 digits)."""
    sign = 'a negative' if value < 0 else 'an'
    try:
        return f'{sign} integer of {len(str(abs(value)))} digits'
    except ValueError:
        return f'{sign} integer of {value.bit_length()} bits'


def int64_problem(value: Scalar) -> str | None:
    """Why a store of signed 64-bit integers and UTF-8 strings cannot hold ``value``, or ``None``.

    The rule LanceDB and Tantivy share, for values written and values filtered on alike (a
    filter holding such a value cannot be translated: the store declines to push it down).
    """
    if isinstance(value, int) and not isinstance(value, bool) and not INT64_MIN <= value <= INT64_MAX:
        return f'{describe_int(value)} is outside the signed 64-bit range this store holds'
    if isinstance(value, str):
        found = _SURROGATE.search(value)
        if found is not None:
            return f'a string with a lone UTF-16 surrogate (U+{ord(found.group()):04X}), which UTF-8 cannot encode'
    return None


def check_storable(
    documents: Sequence[Document],
    entities: Sequence[Entity],
    problem: ValueProblem = lambda key, value: int64_problem(value),
) -> None:
    """Refuse a batch holding a value the store cannot hold, before anything of it is written.

    Walks every title, metadata value (list elements too) and chunk ``sequence_number`` and
    raises `UnsupportedValueError` naming the first offending item and key, with ``problem``'s
    reason. Stores never change a value to fit, so a bulk writer (ingestion) can set that item
    aside and write the rest of the batch. ``problem`` is the store's own rule (default: 64-bit
    integers and valid UTF-8, `int64_problem`); the title is checked with the key ``'title'``.
    """
    for document in documents:
        where = f'document {document.id!r}'
        reason = int64_problem(document.title)
        if reason is not None:
            raise UnsupportedValueError(f'title of {where}: {reason}', document_id=document.id, key='title')
        _check_metadata(document.metadata, where, problem, document_id=document.id)
        for chunk in document.chunks:
            if not INT64_MIN <= chunk.sequence_number <= INT64_MAX:
                raise UnsupportedValueError(
                    f'sequence_number of chunk {chunk.id!r} of {where}: it is outside the signed 64-bit range',
                    document_id=document.id,
                    key='sequence_number',
                )
            _check_metadata(chunk.metadata, f'chunk {chunk.id!r} of {where}', problem, document_id=document.id)
    for entity in entities:
        _check_metadata(entity.metadata, f'entity {entity.id!r}', problem, entity_id=entity.id)


def _check_metadata(
    metadata: Metadata,
    where: str,
    problem: ValueProblem,
    *,
    document_id: str | None = None,
    entity_id: str | None = None,
) -> None:
    for key, value in metadata.items():
        for element in value if isinstance(value, list) else [value]:
            reason = None if element is None else problem(key, element)
            if reason is not None:
                raise UnsupportedValueError(
                    f'metadata {key!r} of {where}: {reason}', document_id=document_id, entity_id=entity_id, key=key
                )
