"""The inspector over HTTP (Starlette's TestClient): every page answers, the console answers as ``run_tool``,
a token sees nothing of another tenant on any page (a foreign id reads exactly like a missing one), a hostile
document renders as text, and pages for a capability the store lacks say so. See docs/inspect.md."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import ModelRetry
from starlette.testclient import TestClient

from tests.inspect.corpus import BASE, HOSTILE_TEXT, LOCAL, TOKENS, run
from toolish_rag import ToolishRag
from toolish_rag.content import Chunk
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.inspect import create_app
from toolish_rag.search import SearchHit, SearchRequest
from toolish_rag.stores import InMemoryStore

MODEL_TEXT = re.compile(r'<pre class="[^"]*" id="model-text">(.*?)</pre>', re.DOTALL)


def model_text(page: str) -> str:
    found = MODEL_TEXT.search(page)
    assert found, page[-2000:]
    return html.unescape(found.group(1))


def chunks_of(store: Any, tenant: str) -> list[Chunk]:
    return [c for d in store_documents(store) if d.metadata['tenant'] == tenant for c in d.chunks]


def store_documents(store: Any) -> Any:
    from tests.inspect.corpus import documents

    return documents()


def ids_of(tenant: str) -> dict[str, str]:
    from tests.inspect.corpus import documents

    doc = next(d for d in documents() if d.metadata['tenant'] == tenant and 'policies' in d.title)
    return {
        'document': doc.id,
        'section': doc.sections[0].id,
        'chunk': doc.chunks[0].id,
        'entity': f'{tenant}-carrier',
    }


def pages_for(ids: dict[str, str]) -> list[str]:
    return [
        '/documents',
        f'/document?id={ids["document"]}',
        f'/section?document={ids["document"]}&id={ids["section"]}',
        f'/section?document={ids["document"]}',
        f'/chunk?id={ids["chunk"]}',
        f'/chunk?id={ids["entity"]}',
        '/console',
        f'/graph?node={ids["chunk"]}&hops=2',
        f'/graph?node={ids["entity"]}',
        '/citations',
    ]


def test_every_page_answers_with_the_security_headers(open_client: TestClient) -> None:
    for path in [*pages_for(ids_of('acme')), '/quality', '/graph', '/console?tool=graph_context']:
        response = open_client.get(path)
        assert response.status_code == 200, (path, response.text[-500:])
        csp = response.headers['content-security-policy']
        assert "script-src 'self'" in csp and 'unsafe-inline' not in csp
        assert response.headers['x-content-type-options'] == 'nosniff'
    listing = open_client.get('/documents').text
    assert '<span id="total">3</span>' in listing
    assert 'ACMEWORD policies' in listing and 'GLOBEXWORD policies' in listing


def test_the_console_answers_as_run_tool(open_client: TestClient, rag: ToolishRag[Any]) -> None:
    sent = {'tool': 'docs_hybrid_search', 'arg.query': 'refunds damaged item', 'arg.top_k': '3'}
    page = open_client.post('/console', data=sent).text
    expected = run(rag.run_tool('hybrid_search', {'query': 'refunds damaged item', 'top_k': 3}))
    assert model_text(page) == str(expected.return_value)
    for hit in expected.metadata['hits']:
        assert f'href="/chunk?id={hit.record.id}"' in page  # each hit links to Browse

    bad = open_client.post('/console', data={**sent, 'arg.top_k': 'many'}).text
    with pytest.raises(ModelRetry) as retry:
        run(rag.run_tool('hybrid_search', {'query': 'refunds damaged item', 'top_k': 'many'}))
    assert model_text(bad) == retry.value.message

    walked = open_client.post('/console', data={'tool': 'graph_context', 'arg.ids': 'acme-carrier', 'arg.hops': '1'})
    expected_walk = run(rag.run_tool('graph_context', {'ids': ['acme-carrier'], 'hops': 1}))
    assert model_text(walked.text) == str(expected_walk.return_value)


def test_a_console_filter_narrows_the_call(open_client: TestClient) -> None:
    sent = {'tool': 'docs_text_search', 'arg.query': 'refunds shipping', 'arg.top_k': '10'}
    both = model_text(open_client.post('/console', data=sent).text)
    assert 'ACMEWORD' in both and 'GLOBEXWORD' in both
    narrowed = model_text(open_client.post('/console', data={**sent, 'scope_filter': '{"tenant": "globex"}'}).text)
    assert 'GLOBEXWORD' in narrowed and 'ACMEWORD' not in narrowed
    wrong = open_client.post('/console', data={**sent, 'scope_filter': '{"tenant": '})
    assert wrong.status_code == 400 and 'not JSON' in wrong.text


def _acme(client: TestClient, path: str, **kwargs: Any) -> Any:
    headers = {'Authorization': f'Bearer {TOKENS["acme"]}'}
    if 'data' in kwargs:
        return client.post(path, headers=headers, **kwargs)
    return client.get(path, headers=headers)


def test_a_token_sees_nothing_of_another_tenant(token_client: TestClient) -> None:
    mine, foreign = ids_of('acme'), ids_of('globex')
    missing = {k: f'{v}-missing' for k, v in foreign.items()}
    for path in pages_for(mine):
        page = _acme(token_client, path)
        assert page.status_code == 200, path
        assert 'GLOBEXWORD' not in page.text and 'globex' not in page.text.lower(), path
    for path_foreign, path_missing in zip(pages_for(foreign), pages_for(missing), strict=True):
        seen, absent = _acme(token_client, path_foreign), _acme(token_client, path_missing)
        assert 'GLOBEXWORD' not in seen.text, path_foreign
        assert (seen.status_code, seen.text) == (absent.status_code, absent.text), path_foreign
    assert '<span id="total">2</span>' in _acme(token_client, '/documents').text  # acme's own two documents

    calls = [
        {'tool': 'docs_vector_search', 'arg.query': 'refunds shipping carrier', 'arg.top_k': '20'},
        {'tool': 'docs_text_search', 'arg.query': 'refunds issued parcels', 'arg.top_k': '20'},
        {'tool': 'docs_hybrid_search', 'arg.query': 'express shipping', 'arg.top_k': '20'},
        {'tool': 'docs_regex_search', 'arg.pattern': 'WORD', 'arg.top_k': '20'},
        {'tool': 'docs_list_documents'},
        {'tool': 'docs_outline', 'arg.document': foreign['document']},
        {'tool': 'docs_read_section', 'arg.section': foreign['section']},
        {'tool': 'docs_broaden_chunk', 'arg.chunk_id': foreign['chunk']},
        {'tool': 'docs_graph_context', 'arg.query': 'carrier', 'arg.hops': '3'},
        {'tool': 'docs_graph_context', 'arg.ids': foreign['entity']},
        {'tool': 'docs_vector_search', 'arg.query': 'refunds', 'scope_filter': '{"tenant": "globex"}'},
    ]
    for call in calls:
        page = _acme(token_client, '/console', data=call)
        assert page.status_code == 200, call
        assert 'GLOBEXWORD' not in page.text, call
        assert 'globex-carrier' not in page.text or foreign['entity'] in call.values(), call
        assert f'/chunk?id={foreign["chunk"]}' not in page.text, call  # nothing foreign is linked
        if any(v in foreign.values() for v in call.values()):  # a foreign id is answered like a missing one
            absent = {k: f'{v}-missing' if v in foreign.values() else v for k, v in call.items()}
            told = model_text(_acme(token_client, '/console', data=absent).text)
            for key, value in foreign.items():
                told = told.replace(missing[key], value)
            assert model_text(page.text) == told, call
    preview = _acme(token_client, '/console', data={**calls[0], 'scope_token': 'globex'})
    assert preview.status_code == 400 and 'GLOBEXWORD' not in preview.text  # a scoped token previews no token
    answer = {
        'status': 'answered',
        'claims': [
            {
                'text': 't',
                'citations': [{'chunk_id': foreign['chunk'], 'quote': 'GLOBEXWORD refunds are issued within 30 days'}],
            }
        ],
    }
    cited = _acme(token_client, '/citations', data={'answer': json.dumps(answer)}).text
    assert 'no chunk with this id in this scope' in cited
    assert 'within 30 days of the return' not in cited  # the foreign chunk's text is never shown
    assert _acme(token_client, '/quality').status_code == 404
    assert _acme(token_client, '/quality/status').status_code == 404


def test_signing_in_and_the_admin_preview(token_client: TestClient) -> None:
    token_client.cookies.clear()
    first = token_client.get('/documents', follow_redirects=False)
    assert first.status_code == 303 and first.headers['location'] == '/login'
    assert token_client.post('/console', data={'tool': 'docs_list_documents'}).status_code == 401
    assert token_client.post('/login', data={'token': 'not-a-token-at-all'}).status_code == 401
    signed = token_client.post('/login', data={'token': TOKENS['globex']}, follow_redirects=False)
    assert signed.status_code == 303 and 'httponly' in signed.headers['set-cookie'].lower()
    listing = token_client.get('/documents').text
    assert 'GLOBEXWORD policies' in listing and 'ACMEWORD' not in listing
    token_client.post('/logout')
    assert token_client.get('/documents', follow_redirects=False).status_code == 303

    admin = {'Authorization': f'Bearer {TOKENS["admin"]}'}
    console = token_client.get('/console', headers=admin).text
    assert 'name="scope_token"' in console  # an unscoped token may preview any token's scope
    sent = {'tool': 'docs_text_search', 'arg.query': 'refunds', 'arg.top_k': '10', 'scope_token': 'acme'}
    previewed = model_text(token_client.post('/console', headers=admin, data=sent).text)
    assert 'ACMEWORD' in previewed and 'GLOBEXWORD' not in previewed


def test_a_hostile_document_renders_as_text(open_client: TestClient, store: Any) -> None:
    from tests.inspect.corpus import documents

    hostile = next(d for d in documents() if d.uri.startswith('javascript:'))
    for path in [
        '/documents',
        f'/document?id={hostile.id}',
        f'/section?document={hostile.id}',
        f'/section?document={hostile.id}&id={hostile.sections[0].id}',
        f'/chunk?id={hostile.chunks[0].id}',
    ]:
        page = open_client.get(path).text
        assert '<script>alert' not in page and '<img src=x' not in page and '<b onmouseover' not in page, path
        assert not re.search(r'(href|src|action)\s*=\s*["\']?\s*javascript:', page, re.IGNORECASE), path
    chunk_page = open_client.get(f'/chunk?id={hostile.chunks[0].id}').text
    assert html.escape(HOSTILE_TEXT, quote=True) in chunk_page


def test_requests_to_another_host_or_from_another_origin_are_refused(open_client: TestClient) -> None:
    assert open_client.get('/documents', headers={'Host': 'evil.example:8765'}).status_code == 421
    posted = open_client.post(
        '/console', data={'tool': 'docs_list_documents'}, headers={'Origin': 'http://evil.example'}
    )
    assert posted.status_code == 403


class VectorOnly:
    """A store with vector search alone (a third-party store needs nothing more)."""

    def __init__(self, inner: InMemoryStore) -> None:
        self.inner = inner

    async def vector_search(self, request: SearchRequest) -> list[SearchHit]:
        return list(await self.inner.vector_search(request))


def test_pages_for_what_a_store_lacks_say_so(store: Any) -> None:
    rag: ToolishRag[Any] = ToolishRag(VectorOnly(store))
    with TestClient(create_app(rag), base_url=BASE, client=LOCAL) as client:
        assert 'cannot list documents' in client.get('/documents').text
        assert 'has no graph' in client.get('/graph?node=x').text
        assert 'cannot look records up' in client.get('/chunk?id=x').text
        sent = {'tool': 'docs_vector_search', 'arg.query': 'refunds'}
        assert 'ACMEWORD' in model_text(client.post('/console', data=sent).text)


def _beir(folder: Path) -> Path:
    (folder / 'qrels').mkdir(parents=True)
    corpus = [
        {'_id': 'd1', 'title': 'Refunds', 'text': 'refunds are issued within 30 days'},
        {'_id': 'd2', 'title': 'Shipping', 'text': 'parcels ship every weekday'},
        {'_id': 'd3', 'title': 'Returns', 'text': 'returns need the receipt'},
    ]
    (folder / 'corpus.jsonl').write_text('\n'.join(json.dumps(c) for c in corpus))
    queries = [{'_id': 'q1', 'text': 'refunds days'}, {'_id': 'q2', 'text': 'parcels weekday'}]
    (folder / 'queries.jsonl').write_text('\n'.join(json.dumps(q) for q in queries))
    (folder / 'qrels' / 'test.tsv').write_text('query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n')
    return folder


def test_quality_evaluates_beside_the_store_and_lists_ingest_failures(store: Any, tmp_path: Path) -> None:
    pytest.importorskip('pytrec_eval', reason='eval needs the eval extra')
    import time

    from toolish_rag.ingest import IngestIssue, IngestReport

    rag: ToolishRag[Any] = ToolishRag(store)
    report = IngestReport(added=['a.md'], failed=[IngestIssue('broken.pdf', 'encrypted PDF')])
    before = run(store.list_documents())
    app = create_app(
        rag, eval_data=_beir(tmp_path / 'mini'), eval_embedder=HashingEmbeddingModel(64), ingest_report=report
    )
    with TestClient(app, base_url=BASE, client=LOCAL) as client:
        page = client.get('/quality').text
        assert 'broken.pdf' in page and 'encrypted PDF' in page and 'eval-progress' in page
        assert client.post('/quality', follow_redirects=False).status_code == 303
        deadline = time.monotonic() + 60
        while client.get('/quality/status').json()['state'] not in ('done', 'failed'):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        status = client.get('/quality/status').json()
        assert status['state'] == 'done' and status['done'] == status['total'] == 6, status
        done = client.get('/quality').text
        assert '<svg xmlns="http://www.w3.org/2000/svg" class="chart"' in done and 'nDCG@10' in done
    assert run(store.list_documents()) == before  # the inspected store is never written


def test_the_command_refuses_a_public_host_without_tokens(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from toolish_rag.cli import main

    assert main(['inspect', '--http', '0.0.0.0:8765', '--store', f'memory:{tmp_path / "kb"}']) == 2
    assert '--tokens' in capsys.readouterr().err


def test_the_command_takes_the_store_options_and_refuses_eval_under_tokens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.inspect.corpus import token_table_data
    from toolish_rag.cli import build_parser, main

    args = build_parser().parse_args(
        ['inspect', '--store', 'memory:kb', '--embedder', 'hashing', '--name', 'kb', '--filter', 'tenant=acme']
    )
    assert (args.http, args.store, args.embedder, args.name, args.filter) == (
        '127.0.0.1:8765',
        'memory:kb',
        'hashing',
        'kb',
        ['tenant=acme'],
    )
    tokens = tmp_path / 'tokens.json'
    tokens.write_text(json.dumps(token_table_data()))
    assert (
        main(['inspect', '--tokens', str(tokens), '--eval-data', str(tmp_path), '--store', f'memory:{tmp_path / "kb"}'])
        == 2
    )
    assert 'not offered with --tokens' in capsys.readouterr().err


def test_without_tokens_only_this_machine_is_answered(rag: ToolishRag[Any]) -> None:
    with TestClient(create_app(rag), base_url=BASE, client=('203.0.113.9', 50000)) as remote:
        assert remote.get('/documents').status_code == 403


def test_counts_read_in_the_singular_and_the_plural(open_client: TestClient) -> None:
    """Singular counts: "1 chunks" and "1 hits" read "1 chunk" and "1 hit"."""
    ids = ids_of('acme')
    pages = [open_client.get(p).text for p in pages_for(ids)[1:4]]
    one_hit = {'tool': 'docs_text_search', 'arg.query': 'refunds', 'arg.top_k': '1'}
    pages.append(open_client.post('/console', data=one_hit).text)
    shown = ' '.join(re.sub(r'<[^>]+>', ' ', p) for p in pages)
    assert not re.search(r'\b1 (chunks|hits)\b', shown)
    assert re.search(r'\b1 hit\b', shown) and re.search(r'\b\d+ chunks?\b', shown)
