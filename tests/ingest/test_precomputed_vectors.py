"""Vectors an executor made reach the store through `PrecomputedVectorsWriter.upsert_with_vectors`, its embedder untouched.

An executor that embeds (as `RayExecutor` does, without Ray's start-up: `EmbeddingExecutor` parses in
threads and embeds with a pickled copy of the store's model, as a remote worker would). The store's
model is a `CountingModel`: what the driver's own instance embedded. Stores are real (InMemoryStore,
LanceDB); Postgres has its test beside its store.
"""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import AsyncGenerator, Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.embeddings import Embedder

from tests.ingest._counting import CountingModel, UpsertOnly
from toolish_rag.ingest import LocalExecutor, ParseJob, StoreEmbedding, ingest
from toolish_rag.ingest._parse import Parsed
from toolish_rag.ingest._walk import Found
from toolish_rag.protocols import PrecomputedVectorsWriter
from toolish_rag.search import SearchRequest
from toolish_rag.stores import InMemoryStore
from toolish_rag.writes import embed_documents

DIMS = 32


@dataclasses.dataclass
class EmbeddingExecutor:
    """Parses in threads, then embeds each document's chunks with the store's embedding rebuilt from a pickle.

    ``skip``: file names it hands back without vectors (the store must embed those itself).
    """

    skip: frozenset[str] = frozenset()
    given: list[StoreEmbedding | None] = dataclasses.field(default_factory=list)

    @property
    def embeds(self) -> bool:
        return True

    async def parse(
        self, files: Sequence[Found], job: ParseJob, embedding: StoreEmbedding | None
    ) -> AsyncGenerator[Parsed, None]:
        self.given.append(embedding)
        worker = pickle.loads(pickle.dumps(embedding)).embedder() if embedding is not None else None
        async for parsed in LocalExecutor('thread', 2).parse(files, job, None):
            if worker is None or parsed.document is None or Path(parsed.path).name in self.skip:
                yield parsed
                continue
            result = await worker.embed_documents([c.text for c in parsed.document.chunks])
            yield dataclasses.replace(parsed, vectors=result.embeddings)


def _files(folder: Path, count: int = 6) -> Path:
    folder.mkdir()
    for n in range(count):
        body = '\n\n'.join(f'Parcels to zone {n} leave on day {d} and arrive a week later.' for d in range(40))
        (folder / f'page{n}.md').write_text(f'# Page {n}\n\n{body}\n')
    return folder


async def _ranked(store: Any, query: str) -> list[tuple[str, float]]:
    hits = await store.vector_search(SearchRequest(query=query, top_k=8))
    return [(h.record.id, round(h.score, 5)) for h in hits]


def _lancedb(path: Path, model: CountingModel) -> Any:
    lancedb_store = pytest.importorskip('toolish_rag_lancedb', reason='toolish-rag-lancedb is not installed')
    return lancedb_store.LanceDBStore(str(path), embedder=model)


@pytest.mark.parametrize('kind', ['memory', 'lancedb'])
async def test_the_executors_vectors_are_stored_and_the_store_embeds_only_the_rest(kind: str, tmp_path: Path) -> None:
    docs = _files(tmp_path / 'docs', 3)
    models = CountingModel(DIMS), CountingModel(DIMS)
    plain, given = (
        (InMemoryStore(m) if kind == 'memory' else _lancedb(tmp_path / f'store{i}', m)) for i, m in enumerate(models)
    )
    assert all(isinstance(s, PrecomputedVectorsWriter) for s in (plain, given))
    executor = EmbeddingExecutor(skip=frozenset({'page2.md'}))

    reference = await ingest(plain, docs, progress=False, executor='thread')
    report = await ingest(given, docs, progress=False, executor=executor)

    assert report.chunks == reference.chunks > 6 and not report.failed
    assert executor.given[0] is not None and executor.given[0].model is models[1]
    page2 = next(i for i in await given.list_documents() if i.uri.endswith('/page2.md'))
    assert models[1].document_texts == page2.chunk_count > 0  # the driver embedded the skipped file only
    assert models[0].document_texts == reference.chunks
    for query in ('parcels to zone 4', 'day 17 arrive'):  # the same vectors stored: the same ranking
        assert await _ranked(given, query) == await _ranked(plain, query)


async def test_a_store_without_the_write_protocol_gets_no_embedding_and_embeds_itself(tmp_path: Path) -> None:
    docs = _files(tmp_path / 'docs', 3)
    model = CountingModel(DIMS)
    store = UpsertOnly(InMemoryStore(model), embedder=model)
    executor = EmbeddingExecutor()

    report = await ingest(store, docs, progress=False, executor=executor)

    assert executor.given == [None] and not isinstance(store, PrecomputedVectorsWriter)
    assert model.document_texts == report.chunks > 0


async def test_embed_documents_takes_the_known_and_embeds_the_rest_in_one_call() -> None:
    model = CountingModel(DIMS)
    embedder = Embedder(model)
    known = {'b': [9.0] * DIMS}
    mixed = await embed_documents(embedder, ['a', 'b', 'c'], known)
    assert [list(v) for v in mixed[::2]] == [list(v) for v in (await embedder.embed_documents(['a', 'c'])).embeddings]
    assert mixed[1] == known['b'] and model.document_texts == 4  # 'a' and 'c', twice
    assert await embed_documents(embedder, ['b', 'b'], known) == [known['b'], known['b']]
    assert model.document_texts == 4  # all known: no call
