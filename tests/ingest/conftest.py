from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from pydantic_ai.embeddings import EmbeddingResult, EmbeddingSettings
from pydantic_ai.embeddings.result import EmbedInputType

from toolish_rag.embedding import HashingEmbeddingModel

SHARED = Path(__file__).resolve().parents[3] / 'shared' / 'data'
DOCUMENTS = SHARED / 'documents'


class CountingEmbedder(HashingEmbeddingModel):
    """The real hashing embedder, counting how many texts it embeds."""

    def __init__(self) -> None:
        super().__init__(64)
        self.calls = 0
        self.texts = 0

    async def embed(
        self, inputs: str | Sequence[str], *, input_type: EmbedInputType, settings: EmbeddingSettings | None = None
    ) -> EmbeddingResult:
        self.calls += 1
        self.texts += 1 if isinstance(inputs, str) else len(inputs)
        return await super().embed(inputs, input_type=input_type, settings=settings)


@pytest.fixture
def documents_dir() -> Path:
    if not (DOCUMENTS / 'SOURCES.md').is_file():
        pytest.skip(f'shared documents not found at {DOCUMENTS} (../shared/data is absent)')
    return DOCUMENTS


@pytest.fixture
def counting() -> CountingEmbedder:
    return CountingEmbedder()
