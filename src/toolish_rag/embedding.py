"""Embedding models: pydantic-ai's `Embedder`, with an offline default.

`resolve_embedder` turns a name into an `Embedder`; a store's manifest records and checks it
(`embedder_identity`, `embedder_for_store`). The rest is defined beside this module and exported
here: the local models (`toolish_rag._local_embedder`: the default loads on first use and needs the
``embeddings`` extra), the languages a model reads (`toolish_rag._embedder_languages`) and the
weight-free `HashingEmbeddingModel`. See docs/concepts.md#how-the-core-is-built.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai.embeddings import Embedder, EmbeddingModel

from ._embedder_languages import embedder_languages, model_card_languages
from ._hashing_embedder import HashingEmbeddingModel
from ._local_embedder import (
    DEFAULT_EMBEDDING_MODEL,
    MINILM_NAMES,
    NORMALIZE,
    LazyModel,
    bundled_minilm_path,
    prefer_passive_openmp,
    preload_embedder,
    sentence_transformer_factory,
)
from .manifest import EmbedderIdentity, StoreManifest

__all__ = [
    'DEFAULT_EMBEDDING_MODEL',
    'HashingEmbeddingModel',
    'bundled_minilm_path',
    'embedder_for_store',
    'embedder_identity',
    'embedder_languages',
    'model_card_languages',
    'prefer_passive_openmp',
    'preload_embedder',
    'resolve_embedder',
]


def resolve_embedder(model: Embedder | EmbeddingModel | str | None = None) -> Embedder:
    """Turn a model string, an ``EmbeddingModel`` or an ``Embedder`` into an ``Embedder``.

    ``None`` means the offline default (`DEFAULT_EMBEDDING_MODEL`); ``"hashing"`` or
    ``"hashing:DIMENSIONS"`` the weight-free `HashingEmbeddingModel`.
    """
    if isinstance(model, Embedder):
        return model
    if isinstance(model, EmbeddingModel):
        return Embedder(model)
    name = model or DEFAULT_EMBEDDING_MODEL
    if name == 'hashing' or name.startswith('hashing:'):
        # 'hashing' or 'hashing:DIMENSIONS': the weight-free lexical embedder (tests, demos).
        _, _, dims = name.partition(':')
        return Embedder(HashingEmbeddingModel(int(dims) if dims else 256))
    if name.startswith('sentence-transformers:'):
        prefer_passive_openmp()
        name = DEFAULT_EMBEDDING_MODEL if name in MINILM_NAMES else name
        return Embedder(LazyModel(name, sentence_transformer_factory(name)), settings=NORMALIZE)
    return Embedder(name)


def embedder_identity(
    embedder: Embedder | EmbeddingModel | str | None, dimensions: int | None = None
) -> EmbedderIdentity:
    """What a store's manifest records of ``embedder`` (`toolish_rag.manifest.EmbedderIdentity`), without loading it.

    ``dimensions``: the vectors' size when the caller knows it (else the model's, when it states it).
    """
    resolved = resolve_embedder(embedder)
    settings: Any = getattr(resolved, '_settings', None) or {}
    model = resolved.model
    if isinstance(model, str):
        name = model if ':' in model else f'?:{model}'
    else:
        name = f'{model.system}:{model.model_name}'
        settings = {**(model.settings or {}), **settings}
        if dimensions is None:
            dimensions = getattr(model, 'dimensions', None) or getattr(model, '_dimensions', None)
    normalized = bool(settings.get('sentence_transformers_normalize_embeddings', False))
    return EmbedderIdentity(name, dimensions, normalized=normalized)


def embedder_for_store(
    manifest: StoreManifest | None, requested: Embedder | EmbeddingModel | str | None, location: str
) -> Embedder:
    """The embedder to open a store with: ``requested``, checked against the one its manifest recorded
    (`toolish_rag.manifest.EmbedderMismatch` when they differ), or with ``None`` the recorded one.

    A recorded model this process cannot build by name (a custom ``EmbeddingModel``) must be passed.
    """
    if manifest is None or manifest.embedder is None:
        return resolve_embedder(requested)
    recorded = manifest.embedder
    if requested is None and recorded.spec.startswith(('hashing:', 'sentence-transformers:')):
        requested = recorded.spec
    embedder = resolve_embedder(requested)
    manifest.checked_embedder(embedder_identity(embedder), location)
    return embedder
