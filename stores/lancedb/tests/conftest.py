from __future__ import annotations

import pathlib

import pytest

from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag_lancedb import LanceDBStore


@pytest.fixture
def embedder() -> HashingEmbeddingModel:
    return HashingEmbeddingModel(64)


@pytest.fixture
def store(tmp_path: pathlib.Path, embedder: HashingEmbeddingModel) -> LanceDBStore:
    return LanceDBStore(tmp_path / 'kb', embedder=embedder)
