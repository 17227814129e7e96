"""Inspector sign-ins per token with idle expiry, and forms from another scheme refused (issue 41 items 9, 11).

Before the fix the sessions were one 1,000-entry LRU shared by every token: any token holder
signing in 1,000 times signed everyone else out, and a session never expired while the app ran;
a POST whose ``Origin`` differed from the app's only in its scheme was let through. Over the
real app (Starlette's TestClient).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip('starlette', reason='the inspector needs the web extra: pip install "toolish-rag[web]"')
pytest.importorskip('httpx2', reason='starlette.testclient needs httpx2')
pytest.importorskip('mcp', reason='token files are read by toolish_rag.mcp (the mcp extra)')

from starlette.testclient import TestClient

from tests.inspect.corpus import BASE, LOCAL, TOKENS, documents, run, token_table_data
from toolish_rag import ToolishRag
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.inspect import create_app
from toolish_rag.inspect._access import COOKIE, SESSIONS_PER_TOKEN
from toolish_rag.mcp import TokenTable
from toolish_rag.stores import InMemoryStore


@pytest.fixture(scope='module')
def rag() -> ToolishRag[Any]:
    store = InMemoryStore(HashingEmbeddingModel(64))
    run(store.upsert(documents()))
    return ToolishRag(store)


def _client(rag: ToolishRag[Any], **options: Any) -> TestClient:
    app = create_app(rag, tokens=TokenTable.from_mapping(token_table_data()), **options)
    return TestClient(app, base_url=BASE, client=LOCAL)


def _sign_in(client: TestClient, token: str) -> str:
    client.cookies.clear()
    answer = client.post('/login', data={'token': token}, follow_redirects=False)
    assert answer.status_code == 303
    return str(answer.cookies[COOKIE])


def _signed_in(client: TestClient, session: str) -> bool:
    client.cookies.clear()
    client.cookies.set(COOKIE, session)
    return client.get('/documents', follow_redirects=False).status_code == 200


@pytest.fixture
def client(rag: ToolishRag[Any]) -> Iterator[TestClient]:
    with _client(rag) as opened:
        yield opened


def test_one_token_signing_in_again_and_again_signs_out_no_one_else(client: TestClient) -> None:
    acme = _sign_in(client, TOKENS['acme'])
    globex = [_sign_in(client, TOKENS['globex']) for _ in range(1_000 + SESSIONS_PER_TOKEN)]
    assert _signed_in(client, acme)  # was signed out by globex's 1,000th sign-in
    assert _signed_in(client, globex[-1]) and not _signed_in(client, globex[0])  # its own oldest went
    assert sum(_signed_in(client, s) for s in globex[-SESSIONS_PER_TOKEN - 5 :]) == SESSIONS_PER_TOKEN


def test_a_token_keeps_the_sessions_it_uses(client: TestClient) -> None:
    first = _sign_in(client, TOKENS['acme'])
    for _ in range(3 * SESSIONS_PER_TOKEN):
        assert _signed_in(client, first)  # used: the least recently used are dropped, not this one
        _sign_in(client, TOKENS['acme'])
    assert _signed_in(client, first)


def test_an_idle_session_is_signed_out(rag: ToolishRag[Any]) -> None:
    with _client(rag, session_idle_seconds=0.5) as client:
        kept, idle = _sign_in(client, TOKENS['acme']), _sign_in(client, TOKENS['acme'])
        for _ in range(4):
            time.sleep(0.2)
            assert _signed_in(client, kept)  # in use: its idle clock restarts
        assert not _signed_in(client, idle)
        client.cookies.set(COOKIE, idle)
        answer = client.get('/documents', follow_redirects=False)
        assert answer.status_code == 303 and answer.headers['location'] == '/login'


@pytest.mark.parametrize(
    ('origin', 'status'),
    [('https://127.0.0.1:8765', 403), ('http://127.0.0.1:8766', 403), ('HTTP://127.0.0.1:8765', 303)],
)
def test_a_form_from_another_scheme_is_refused(client: TestClient, origin: str, status: int) -> None:
    client.cookies.clear()
    answer = client.post('/login', data={'token': TOKENS['acme']}, headers={'Origin': origin}, follow_redirects=False)
    assert answer.status_code == status


def test_nonsense_session_settings_are_refused(rag: ToolishRag[Any]) -> None:
    with pytest.raises(ValueError, match='idle_seconds'):
        create_app(rag, tokens=TokenTable.from_mapping(token_table_data()), session_idle_seconds=0)
