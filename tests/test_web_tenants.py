"""examples/web_tenants: each user's agent run is scoped to the user's tenant, whatever the model asks for.

``POST /ask`` drives the agent; ``POST /ask/grounded`` drives `ToolishRag.ask`, whose verified
citations can only come from the signed-in user's tenant, shown as JSON or escaped Markdown.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip('starlette', reason='needs the web extra: pip install "toolish-rag[web]"')
pytest.importorskip('httpx2', reason='starlette.testclient needs httpx2')

from markdown_it import MarkdownIt
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from starlette.testclient import TestClient

from tests.grounded.grounded_helpers import Scripted, answer, cite, retry_texts
from toolish_rag import DocumentBuilder
from toolish_rag.content import Document
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.stores import InMemoryStore

APP = Path(__file__).resolve().parents[1] / 'examples' / 'web_tenants' / 'app.py'
FACTS = {'acme': ('30 days', 'DHL', 'ERR-1001'), 'globex': ('14 days', 'UPS', 'ERR-2002')}
USERS = {'acme': 'alice-token', 'globex': 'bob-token'}
NOT_SEEN = 'was not returned by a search or read in this conversation'
SUFFICIENT = {'sufficient': True, 'reason': ''}  # the grade `ask` asks for before answering


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
            p.model_response_str(wrap_if_error=False) if isinstance(p, ToolReturnPart) else p.model_response()
            for m in messages
            for p in m.parts
            if isinstance(p, ToolReturnPart | RetryPromptPart)
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


@pytest.mark.parametrize('route', ['/ask', '/ask/grounded'])
def test_requests_are_authenticated_and_validated(docs: list[Document], route: str) -> None:
    with client_for(docs, FunctionModel(Nosy([]).respond)) as client:
        assert client.post(route, json={'question': 'hi'}).status_code == 401
        assert (
            client.post(route, json={'question': 'hi'}, headers={'Authorization': 'Bearer mallory'}).status_code == 401
        )
        bad = client.post(route, content=b'not json', headers={'Authorization': 'Bearer alice-token'})
        assert bad.status_code == 400
        blank = client.post(route, json={'question': '  '}, headers={'Authorization': 'Bearer alice-token'})
        assert blank.status_code == 400


def test_a_tenant_in_the_body_changes_nothing(docs: list[Document]) -> None:
    """The scope comes from the signed-in user only."""
    with client_for(docs, FunctionModel(Nosy([]).respond)) as client:
        sneaky = client.post(
            '/ask', json={'question': 'hi', 'tenant': 'globex'}, headers={'Authorization': 'Bearer alice-token'}
        )
        assert sneaky.status_code == 200 and 'UPS' not in sneaky.json()['answer'] and 'DHL' in sneaky.json()['answer']


# -- POST /ask/grounded ---------------------------------------------------------------------------


def refunds_chunk(docs: list[Document], tenant: str) -> tuple[str, str]:
    """The id and text of ``tenant``'s refund-period chunk."""
    doc = next(d for d in docs if d.metadata['tenant'] == tenant)
    chunk = doc.chunks[0]
    assert FACTS[tenant][0] in chunk.urtext
    return chunk.id, chunk.urtext


def ask_grounded(client: TestClient, tenant: str, question: str, **headers: str) -> Any:
    return client.post(
        '/ask/grounded', json={'question': question}, headers={'Authorization': f'Bearer {USERS[tenant]}', **headers}
    )


@pytest.mark.parametrize(('own', 'other'), [('acme', 'globex'), ('globex', 'acme')])
def test_grounded_answer_cites_only_the_users_tenant(docs: list[Document], own: str, other: str) -> None:
    own_id, own_text = refunds_chunk(docs, own)
    other_id, other_text = refunds_chunk(docs, other)
    both = answer(
        'answered',
        ('Refunds take this long.', [cite(own_id, own_text)]),
        ('Or that long.', [cite(other_id, other_text)]),
    )
    repaired = answer('answered', ('Refunds take this long.', [cite(own_id, own_text)]))
    script = Scripted([SUFFICIENT, both, repaired])
    with client_for(docs, script.model) as client:
        response = ask_grounded(client, own, 'How long do refunds take?')
    assert response.status_code == 200, response.text
    assert response.headers['content-type'].startswith('application/json')
    body: dict[str, Any] = response.json()
    assert body['grounded'] is True and body['answer']['status'] == 'answered'
    citations = [c for claim in body['answer']['claims'] for c in claim['citations']]
    assert [c['chunk_id'] for c in citations] == [own_id]
    assert citations[0]['source']['document_uri'] == f'https://intranet.example/{own}/policies'
    # The other tenant's chunk never reached the answer model, and citing it was sent back for repair.
    assert own_id in body['used'] and other_id not in body['used'] + body['left_out']
    for request in script.requests[:2]:  # the grade and the answer prompts show only the user's passages
        assert other_id not in str(request) and other_text not in str(request) and own_text in str(request)
    feedback = '\n'.join(retry_texts(script.requests[-1]))
    assert NOT_SEEN in feedback and other_id in feedback
    for fact in FACTS[other]:
        assert fact not in response.text


def test_grounded_answer_that_keeps_citing_another_tenant_is_not_an_answer(docs: list[Document]) -> None:
    other_id, other_text = refunds_chunk(docs, 'globex')
    foreign = answer('answered', ('Refunds take 14 days.', [cite(other_id, other_text)]))
    script = Scripted([SUFFICIENT, foreign, foreign])
    with client_for(docs, script.model) as client:
        response = ask_grounded(client, 'acme', 'How long do refunds take?')
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body['grounded'] is False
    assert body['answer']['status'] == 'insufficient_evidence' and body['answer']['claims'] == []
    assert any(NOT_SEEN in p and other_id in p for p in body['problems'])
    assert '14 days' not in response.text and other_text not in response.text


def test_grounded_markdown_escapes_what_the_documents_say(docs: list[Document]) -> None:
    hostile = DocumentBuilder(
        'https://intranet.example/acme/claims', 'acme <b>claims</b> *FAQ*', metadata={'tenant': 'acme'}
    )
    text = 'File refund claims with <script>alert(1)</script> the [claim form](http://x.example/claim) online.'
    hostile.add_chunk(hostile.section('[Claims](http://x.example/s)'), text)
    hostile_doc = hostile.build()
    script = Scripted(
        [SUFFICIENT, answer('answered', ('Use the <i>claim form</i>.', [cite(hostile_doc.chunks[0].id, text)]))]
    )
    with client_for([*docs, hostile_doc], script.model) as client:
        response = ask_grounded(client, 'acme', 'How do I file refund claims?', Accept='text/markdown')
    assert response.status_code == 200, response.text
    assert response.headers['content-type'].startswith('text/markdown')
    markdown = response.text
    assert markdown.splitlines()[0] == 'Use the \\<i\\>claim form\\<\\/i\\>\\. [1]'
    assert '\\<script\\>alert\\(1\\)\\<\\/script\\>' in markdown
    assert '\\[claim form\\]\\(http\\:\\/\\/x\\.example\\/claim\\)' in markdown
    html = MarkdownIt('commonmark').render(markdown)  # raw HTML on: what an unescaped document would inject
    assert '<script' not in html and '<a ' not in html and '<b>' not in html and '<i>' not in html
    assert '&lt;script&gt;alert(1)&lt;/script&gt;' in html and '[claim form](http://x.example/claim)' in html
    assert '`https://intranet.example/acme/claims`' in markdown  # the uri is shown, never a link


def _keeps_calling_a_tool_wrongly(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart('policies_broaden_chunk', {'chunk_id': 'no-such-chunk'})])


def _provider_down(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    from pydantic_ai.exceptions import ModelHTTPError

    raise ModelHTTPError(529, 'scripted', body={'error': 'overloaded'})


def test_a_model_that_fails_gets_a_clear_json_error_not_a_bare_500(docs: list[Document]) -> None:
    """/ask once answered a bare 500 when the model exhausted its tool retries."""
    alice = {'Authorization': 'Bearer alice-token'}
    with client_for(docs, FunctionModel(_keeps_calling_a_tool_wrongly)) as client:
        failed = client.post('/ask', json={'question': 'refunds?'}, headers=alice)
    assert failed.status_code == 502
    assert failed.json()['error'] == 'the model gave no usable answer'
    assert 'exceeded max retries' in failed.json()['reason'] and 'policies_broaden_chunk' in failed.json()['reason']
    with client_for(docs, FunctionModel(_provider_down)) as client:
        down = client.post('/ask', json={'question': 'refunds?'}, headers=alice)
        assert down.status_code == 503
        assert down.json() == {
            'error': 'the model is unavailable, try again later',
            'reason': 'the model provider answered 529',
        }
        grounded = client.post('/ask/grounded', json={'question': 'refunds?'}, headers=alice)
        assert grounded.status_code == 200 and grounded.json()['grounded'] is False  # ask reports its own failures
