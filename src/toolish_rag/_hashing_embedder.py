"""`HashingEmbeddingModel`: hashed word and character-trigram counts, no weights (exported by `toolish_rag.embedding`)."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence

from pydantic_ai.embeddings import EmbeddingModel, EmbeddingResult, EmbeddingSettings
from pydantic_ai.embeddings.result import EmbedInputType

__all__ = ['HashingEmbeddingModel']

_TOKEN = re.compile(r'\w+', re.UNICODE)


class HashingEmbeddingModel(EmbeddingModel):
    """A dependency-free lexical embedder: hashed word and character-trigram counts.

    It needs no weights and no network and is deterministic across processes, which
    makes it the right embedder for fast tests, CI smoke runs and demos on machines with
    no model. Its similarities are lexical (overlapping words score high), not semantic:
    use a real model for real retrieval.
    """

    def __init__(self, dimensions: int = 256, *, settings: EmbeddingSettings | None = None) -> None:
        if dimensions < 8:
            raise ValueError('dimensions must be at least 8')
        self._dimensions = dimensions
        super().__init__(settings=settings)

    @property
    def model_name(self) -> str:
        return f'hashing-{self._dimensions}'

    @property
    def system(self) -> str:
        return 'toolish-rag'

    def _vector(self, text: str) -> list[float]:
        vec = [0.0] * self._dimensions
        words = [w.lower() for w in _TOKEN.findall(text)]
        whole = set(words)
        features: list[str] = list(words)
        for w in words:
            padded = f'#{w}#'
            features.extend(padded[i : i + 3] for i in range(max(1, len(padded) - 2)))
        for feat in features:
            digest = hashlib.blake2b(feat.encode('utf-8'), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], 'little') % self._dimensions
            sign = 1.0 if digest[4] & 1 else -1.0
            vec[bucket] += sign * (2.0 if feat in whole else 1.0)
        norm = math.sqrt(sum(v * v for v in vec))
        return [v / norm for v in vec] if norm else vec

    async def embed(
        self, inputs: str | Sequence[str], *, input_type: EmbedInputType, settings: EmbeddingSettings | None = None
    ) -> EmbeddingResult:
        inputs, settings = self.prepare_embed(inputs, settings)
        return EmbeddingResult(
            embeddings=[self._vector(t) for t in inputs],
            inputs=inputs,
            input_type=input_type,
            model_name=self.model_name,
            provider_name=self.system,
        )

    async def max_input_tokens(self) -> int | None:
        return None

    async def count_tokens(self, text: str) -> int:
        return len(_TOKEN.findall(text))
