"""examples/web_tenants: each user's agent run is scoped to the user's tenant, whatever the model asks for."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip('starlette', reason='needs the web extra: pip install "toolish-rag[web]"')
pytest.importorskip('httpx2', reason='starlette.testclient needs httpx2')

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from starlette.testclient import TestClient

from toolish_rag import DocumentBuilder
from toolish_rag.content import Document
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.stores import InMemoryStore

APP = Path(__file__).resolve().parents[1] / 'examples' / 'web_tenants' / 'app.py'
FACTS = {'acme': ('30 days', 'DHL', 'ERR-1001'), 'globex': ('14 days', 'UPS', 'ERR-2002')}


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location('web_tenants_app', APP)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def tenant_docs() -> list[Document]:
    docs = []
    for tenant, (days, carrier, code) in FACTS.items():
        b = DocumentBuilder(
            f'https://intranet.example/{tenant}/policies', f'{tenant} policies', metadata={'tenant': tenant}
        )
        refunds = b.section('Refunds')
        b.add_chunk(refunds, f'{tenant} refunds are paid within {days} of the return.')
        b.add_chunk(refunds, f'A late refund claim fails with {code}.')
        b.add_chunk(b.section('Shipping'), f'{tenant} ships every parcel with {carrier}.')
        docs.append(b.build())
    return docs


class Nosy:
    """A model that searches, then asks for another tenant's chunks and sections by id, then repeats all it read."""

    def __init__(self, foreign_ids: list[str]) -> None:
        self.foreign_ids = foreign_ids

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        steps = sum(isinstance(m, ModelResponse) for m in messages)
        plan = [
            [ToolCallPart('policies_hybrid_search', {'query': 'refunds shipping parcel', 'top_k': 10})],
            [ToolCallPart('policies_regex_search', {'pattern': '(?i)ships|refunds? |ERR-[0-9]+', 'top_k': 50})],
            [ToolCallPart('policies_broaden_chunk', {'chunk_id': i, 'chunks_to_add': 5}) for i in self.foreign_ids],
            [ToolCallPart('policies_zoom_out', {'id': i}) for i in self.foreign_ids],
        ]
        plan = [step for step in plan if step]
        if steps < len(plan):
            return ModelResponse(parts=plan[steps])
        seen = [
            p.model_response_str(wrap_if_error=False)
            for m in messages
            for p in m.parts
            if isinstance(p, ToolReturnPart) or p.part_kind == 'retry-prompt'
        ]
        return ModelResponse(parts=[TextPart('\n---\n'.join(seen))])


@pytest.fixture(scope='module')
def docs() -> list[Document]:
    return tenant_docs()


def client_for(docs: list[Document], model: FunctionModel) -> TestClient:
    module = load_example()
    store = InMemoryStore(HashingEmbeddingModel())
    import asyncio

    asyncio.run(store.upsert(docs))
    return TestClient(module.create_app(store, model))


@pytest.mark.parametrize(
    ('token', 'own', 'other'), [('alice-token', 'acme', 'globex'), ('bob-token', 'globex', 'acme')]
)
def test_a_user_never_sees_another_tenants_chunks(docs: list[Document], token: str, own: str, other: str) -> None:
    foreign = next(d for d in docs if d.metadata['tenant'] == other)
    foreign_ids = [c.id for c in foreign.chunks] + sorted({s for c in foreign.chunks for s in c.section_ids})
    with client_for(docs, FunctionModel(Nosy(foreign_ids).respond)) as client:
        response = client.post(
            '/ask', json={'question': 'Tell me everything'}, headers={'Authorization': f'Bearer {token}'}
        )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    answer = body['answer']
    for fact in FACTS[own]:
        assert fact in answer  # the run did find its own tenant's documents
    assert f'{other} ' not in answer and f'/{other}/' not in answer
    for fact in FACTS[other]:
        assert fact not in answer
    assert answer.count('was not found') == 2 * len(foreign_ids)
    assert body['sources'] and {s['document'] for s in body['sources']} == {f'https://intranet.example/{own}/policies'}


def test_requests_are_authenticated_and_validated(docs: list[Document]) -> None:
    with client_for(docs, FunctionModel(Nosy([]).respond)) as client:
        assert client.post('/ask', json={'question': 'hi'}).status_code == 401
        assert (
            client.post('/ask', json={'question': 'hi'}, headers={'Authorization': 'Bearer mallory'}).status_code == 401
        )
        bad = client.post('/ask', content=b'not json', headers={'Authorization': 'Bearer alice-token'})
        assert bad.status_code == 400
        # A tenant in the body changes nothing: the scope comes from the signed-in user only.
        sneaky = client.post(
            '/ask', json={'question': 'hi', 'tenant': 'globex'}, headers={'Authorization': 'Bearer alice-token'}
        )
        assert sneaky.status_code == 200 and 'UPS' not in sneaky.json()['answer'] and 'DHL' in sneaky.json()['answer']
