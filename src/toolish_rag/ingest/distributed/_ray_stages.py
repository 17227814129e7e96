"""What runs on the Ray workers: read, parse and chunk a batch of files (`parse_batch`), and embed it too (`ParseAndEmbed`).

See docs/ingestion.md#how-the-pipeline-is-built.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import pickle
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ...embedding import prefer_passive_openmp
from .._embedding import StoreEmbedding
from .._parse import Parsed, ParseJob, parse_file

__all__ = ['PAYLOAD', 'ParseAndEmbed', 'parse_batch']

PAYLOAD = 'payload'
"""The one column after parsing: a pickled `Parsed` per file."""

TEXTS_PER_CALL = 256
"""Texts per embedding call: what a remote API takes in one request; a local model batches inside it."""


def parse_batch(batch: Mapping[str, Any], job: ParseJob) -> dict[str, list[bytes]]:
    """Ray Data ``map_batches``: each file of the batch read, parsed and chunked (`parse_file`, which never raises)."""
    paths = zip(batch['path'], batch['relative_path'], strict=True)
    parsed = [parse_file(str(path), job, str(relative)) for path, relative in paths]
    return {PAYLOAD: [pickle.dumps(p, protocol=pickle.HIGHEST_PROTOCOL) for p in parsed]}


class ParseAndEmbed:
    """Ray Data actor (``map_batches``): parses a batch of files, then embeds all their chunks together.

    The store's model is built here, once per actor, and its weights load with the first
    batch and stay for every later one: an actor pool, not tasks, so the load is paid once
    per worker and not once per batch. Each batch's distinct chunk texts are embedded
    together (the batching that makes a model fast) through an ``Embedder`` made as the
    store's (`StoreEmbedding`), so the vectors are the ones the store would make. The model
    runs on ``threads`` threads: the CPUs Ray reserved for this actor, not every core of the
    node (several actors share a node).
    """

    def __init__(self, job: ParseJob, embedding: StoreEmbedding, threads: int) -> None:
        _limit_threads(threads)
        prefer_passive_openmp()
        self._job = job
        self._embedder = embedding.embedder()
        self._runner = asyncio.Runner()
        """One event loop for the actor's life: an API model's HTTP client stays on the loop it was made on."""

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, list[bytes]]:
        parsed: list[Parsed] = [pickle.loads(payload) for payload in parse_batch(batch, self._job)[PAYLOAD]]
        texts = list(dict.fromkeys(c.text for p in parsed if p.document is not None for c in p.document.chunks))
        try:
            by_text = dict(zip(texts, self._embed(texts), strict=True))
        except Exception as exc:  # the driver embeds them instead, and meets any real failure as in-process
            note = f'embedding on a Ray worker failed ({type(exc).__name__}: {exc}): embedded on the driver instead'
            done = [dataclasses.replace(p, warnings=(*p.warnings, note)) if p.document else p for p in parsed]
        else:
            done = [
                dataclasses.replace(p, vectors=[by_text[c.text] for c in p.document.chunks]) if p.document else p
                for p in parsed
            ]
        return {PAYLOAD: [pickle.dumps(p, protocol=pickle.HIGHEST_PROTOCOL) for p in done]}

    def _embed(self, texts: list[str]) -> list[Sequence[float]]:
        vectors: list[Sequence[float]] = []
        for start in range(0, len(texts), TEXTS_PER_CALL):
            result = self._runner.run(self._embedder.embed_documents(texts[start : start + TEXTS_PER_CALL]))
            vectors.extend(result.embeddings)
        return vectors


def _limit_threads(threads: int) -> None:
    """Run this process's OpenMP / torch on ``threads`` threads (read when torch loads, so set it first)."""
    os.environ['OMP_NUM_THREADS'] = str(threads)
    os.environ.setdefault('TOKENIZERS_PARALLELISM', 'false')
    torch = sys.modules.get('torch')
    if torch is not None:
        torch.set_num_threads(threads)
