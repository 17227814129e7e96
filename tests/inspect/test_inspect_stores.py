"""The inspector over each store: every page answers (or says what the store lacks), and the console answers as
``run_tool``. Memory is covered in depth by the other modules; this is the cheap smoke for LanceDB and Tantivy."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.inspect.corpus import BASE, LOCAL, documents, run
from tests.inspect.test_inspect_http import model_text
from toolish_rag import ToolishRag
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.inspect import create_app


def _lancedb(path: Path) -> Any:
    from toolish_rag_lancedb import LanceDBStore

    return LanceDBStore(path / 'kb', embedder=HashingEmbeddingModel(64))


def _tantivy(path: Path) -> Any:
    from toolish_rag_tantivy import TantivyStore

    return TantivyStore()


STORES: dict[str, tuple[str, Callable[[Path], Any]]] = {
    'lancedb': ('toolish_rag_lancedb', _lancedb),
    'tantivy': ('toolish_rag_tantivy', _tantivy),
}


@pytest.mark.parametrize('name', sorted(STORES))
def test_every_page_answers_on_the_store(name: str, tmp_path: Path) -> None:
    module, make = STORES[name]
    pytest.importorskip(module)
    store = make(tmp_path)
    docs = documents()
    run(store.upsert(docs))
    rag: ToolishRag[Any] = ToolishRag(store)
    doc, chunk = docs[0], docs[0].chunks[0]
    with TestClient(create_app(rag), base_url=BASE, client=LOCAL) as client:
        for path in [
            '/documents',
            f'/document?id={doc.id}',
            f'/section?document={doc.id}&id={doc.sections[0].id}',
            f'/chunk?id={chunk.id}',
            f'/graph?node={chunk.id}',
            '/console',
            '/citations',
            '/quality',
        ]:
            response = client.get(path)
            assert response.status_code in (200, 404), (name, path, response.text[-300:])
            assert 'Traceback' not in response.text
        listing = client.get('/documents').text
        assert 'cannot list documents' in listing or '<span id="total">3</span>' in listing
        assert chunk.urtext in client.get(f'/chunk?id={chunk.id}').text
        if not rag.store_features.graph:
            assert 'has no graph' in client.get('/graph').text
        tool = 'hybrid_search' if 'hybrid_search' in rag.offered_tools else rag.offered_tools[0]
        sent = {'tool': tool, 'arg.query': 'refunds damaged', 'arg.top_k': '3'}
        expected = run(rag.run_tool(tool, {'query': 'refunds damaged', 'top_k': 3}))
        assert model_text(client.post('/console', data=sent).text) == str(expected.return_value)
