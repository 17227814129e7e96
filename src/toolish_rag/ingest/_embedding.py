"""`StoreEmbedding`: what a store's embedder does, as plain data a remote worker can rebuild.

See docs/ingestion.md#how-the-pipeline-is-built.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic_ai.embeddings import Embedder, EmbeddingModel, EmbeddingResult, EmbeddingSettings
from pydantic_ai.embeddings.result import EmbedInputType

from .._store_attributes import embedder_of

__all__ = ['StoreEmbedding']


@dataclass(frozen=True, slots=True)
class StoreEmbedding:
    """A store's embedding model and the settings its embedder applies; picklable, rebuilt on workers.

    ``model`` is the object (or model string) the store's ``Embedder`` holds, shipped as it
    is: a sentence-transformers model not yet loaded is only its name or path, so each
    worker loads the weights itself; a remote API model needs its credentials on the workers.
    """

    model: EmbeddingModel | str
    settings: EmbeddingSettings | None

    @classmethod
    async def of(cls, store: object) -> StoreEmbedding | None:
        """The embedding ``store`` applies in ``upsert``, or ``None`` when it exposes no ``Embedder``."""
        embedder = embedder_of(store)
        if embedder is None:
            return None
        probe = _SettingsProbe()
        with embedder.override(model=probe):
            await embedder.embed_documents(['settings probe'])
        return cls(embedder.model, probe.seen)

    def embedder(self) -> Embedder:
        """An ``Embedder`` that embeds as the store's does (not instrumented: no exporter runs on workers)."""
        return Embedder(self.model, settings=self.settings, instrument=False)


class _SettingsProbe(EmbeddingModel):
    """Records the settings an ``Embedder`` passes down, and embeds nothing meaningful."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: EmbeddingSettings | None = None

    @property
    def model_name(self) -> str:
        return 'toolish-rag-settings-probe'

    @property
    def system(self) -> str:
        return 'toolish-rag'

    async def embed(
        self, inputs: str | Sequence[str], *, input_type: EmbedInputType, settings: EmbeddingSettings | None = None
    ) -> EmbeddingResult:
        self.seen = settings
        texts = [inputs] if isinstance(inputs, str) else list(inputs)
        return EmbeddingResult(
            embeddings=[[0.0] for _ in texts],
            inputs=texts,
            input_type=input_type,
            model_name=self.model_name,
            provider_name=self.system,
        )

    async def max_input_tokens(self) -> int | None:
        return None

    async def count_tokens(self, text: str) -> int:
        return 0
