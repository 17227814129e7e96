"""The LanceDB store's manifest (``toolish-rag.json`` in a local store's folder), and what stores
written before manifests recorded in their table metadata instead. See docs/stores/manifest.md.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Sequence

from pydantic_ai.embeddings import Embedder

from toolish_rag.embedding import embedder_identity
from toolish_rag.manifest import (
    EmbedderIdentity,
    EmbedderMismatch,
    StoreManifest,
    read_manifest,
    update_manifest,
    write_manifest,
)

from ._tables import Tables

__all__ = [
    'check_dims',
    'legacy_manifest',
    'opening_manifest',
    'record_languages',
    'record_manifest',
    'record_reembed',
    'upgrade_manifest',
]


def _language(tables: Tables) -> str | None:
    analyzer = tables.text_analyzer
    return analyzer.language if analyzer is not None else None


def legacy_manifest(tables: Tables) -> StoreManifest | None:
    """What the records table's metadata names (the model, maybe by the bundled model's folder, and the size)."""
    if tables.model_name is None:
        return None
    embedder = EmbedderIdentity.from_legacy(tables.model_name, tables.dims)
    return StoreManifest('lancedb', embedder=embedder, language=_language(tables))


def record_manifest(tables: Tables, identity: EmbedderIdentity | None) -> StoreManifest:
    """Record the embedder (``None``: the one the table metadata names) and the language, refusing
    another embedder than the stored vectors'."""

    def recorded(manifest: StoreManifest) -> StoreManifest:
        if identity is None:
            return dataclasses.replace(manifest, language=_language(tables))
        manifest.checked_embedder(identity, tables.uri)
        return dataclasses.replace(manifest, embedder=identity, language=_language(tables))

    return update_manifest(tables.uri, 'lancedb', recorded, legacy=lambda: legacy_manifest(tables))


def record_languages(tables: Tables, languages: Sequence[str]) -> None:
    """Note the languages a write analysed records in (``language='auto'``): on ``tables`` and, for a
    local store, in its manifest, so every process's text search analyses queries in them too."""
    new = frozenset(languages) - tables.text_languages
    if not new:
        return
    tables.text_languages |= new
    if '://' in tables.uri:
        return

    def recorded(manifest: StoreManifest) -> StoreManifest:
        return dataclasses.replace(manifest, languages=tuple(sorted({*manifest.languages, *new})))

    update_manifest(tables.uri, 'lancedb', recorded, legacy=lambda: legacy_manifest(tables))


def record_reembed(tables: Tables, identity: EmbedderIdentity, *, done: bool) -> StoreManifest:
    """A re-embed's manifest steps: ``identity`` marked as re-embedding before the records table is rewritten,
    recorded as the store's embedder after (docs/stores/manifest.md, Re-embedding)."""

    def change(manifest: StoreManifest) -> StoreManifest:
        if done:
            return dataclasses.replace(manifest, embedder=identity, reembedding=None, language=_language(tables))
        return dataclasses.replace(manifest, reembedding=identity)

    return update_manifest(tables.uri, 'lancedb', change, legacy=lambda: legacy_manifest(tables))


def check_dims(tables: Tables, dims: int | None) -> None:
    """Refuse ``dims``-dimensional vectors (a write's or a query's) for a table holding another size."""
    if dims is not None and tables.dims is not None and dims != tables.dims:
        raise EmbedderMismatch(
            f'{tables.uri} holds {tables.dims}-dimensional embeddings but the embedder returns {dims}: '
            'open it with the embedding model it was built with'
        )


def opening_manifest(tables: Tables) -> StoreManifest | None:
    """The manifest a store opens with: the local folder's, else what an older store's table metadata
    names (so another embedder is refused on search too); ``None`` on object storage or for a new store."""
    if '://' in tables.uri:
        return None
    found = read_manifest(tables.uri)
    if found is not None and found.reembedding is not None:  # a re-embed interrupted: the table says which
        peeked = tables.peek_model()
        settled = found.settled(EmbedderIdentity.from_legacy(*peeked) if peeked is not None else None)
        with contextlib.suppress(OSError):  # a reader without write access settles it again next time
            write_manifest(tables.uri, settled)
        return settled
    if found is not None:
        return found
    peeked = tables.peek_model()
    if peeked is None:
        return None
    return StoreManifest('lancedb', embedder=EmbedderIdentity.from_legacy(*peeked))


async def upgrade_manifest(tables: Tables, embedder: Embedder) -> StoreManifest | None:
    """Write the manifest of a local store saved before manifests (``None``: nothing to do): the embedder
    its table metadata names, else ``embedder`` (a table from before the metadata named one)."""
    await tables.connect()
    if '://' in tables.uri or tables.records is None or read_manifest(tables.uri) is not None:
        return None
    return record_manifest(tables, None if tables.model_name is not None else embedder_identity(embedder))
