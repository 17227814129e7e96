"""The inspector's fixtures: a two-tenant memory store with a graph and a hostile document, its app with and
without a token file, and a client for each."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip('starlette', reason='the inspector needs the web extra: pip install "toolish-rag[web]"')
pytest.importorskip('httpx2', reason='starlette.testclient needs httpx2')

from starlette.testclient import TestClient

from tests.inspect.corpus import BASE, LOCAL, documents, entities, relations, run, token_table_data
from toolish_rag import ToolishRag
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.inspect import create_app
from toolish_rag.stores import InMemoryStore


async def _filled(store: Any) -> Any:
    docs = documents()
    await store.upsert([*docs, *entities(), *relations(docs)])
    await store.record_graph_built(['test'])  # relations written directly: the operator says a graph is built
    return store


@pytest.fixture(scope='module')
def store() -> Any:
    return run(_filled(InMemoryStore(HashingEmbeddingModel(64))))


@pytest.fixture(scope='module')
def rag(store: Any) -> ToolishRag[Any]:
    return ToolishRag(store)


@pytest.fixture(scope='module')
def tokens() -> Any:
    pytest.importorskip('mcp', reason='token files are read by toolish_rag.mcp (the mcp extra)')
    from toolish_rag.mcp import TokenTable

    return TokenTable.from_mapping(token_table_data())


@pytest.fixture(scope='module')
def open_client(rag: ToolishRag[Any]) -> Iterator[TestClient]:
    with TestClient(create_app(rag), base_url=BASE, client=LOCAL) as client:
        yield client


@pytest.fixture(scope='module')
def token_client(rag: ToolishRag[Any], tokens: Any) -> Iterator[TestClient]:
    with TestClient(create_app(rag, tokens=tokens), base_url=BASE, client=LOCAL) as client:
        yield client
