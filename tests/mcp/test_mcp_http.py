"""The streamable-HTTP MCP server: bearer tokens, per-token scope, same tools and text as the toolset."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from typing import Any

import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_harness import TOKENS, LiveServer, free_port
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolish_rag import ToolishRag, matches
from toolish_rag.mcp import HITS_META_KEY, build_server
from toolish_rag.stores import available_stores, open_store

ACCEPT = 'application/json, text/event-stream'


def result_text(result: Any) -> str:
    assert len(result.content) == 1
    return str(result.content[0].text)


# -- authentication ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    'authorization',
    [None, 'Bearer', 'Bearer wrong-token-0123456789', f'Basic {TOKENS["acme"]}', f'Bearer {TOKENS["acme"]}x'],
)
async def test_requests_without_a_valid_token_are_refused(live_server: LiveServer, authorization: str | None) -> None:
    headers = {'Accept': ACCEPT, 'Content-Type': 'application/json'}
    if authorization is not None:
        headers['Authorization'] = authorization
    body = {'jsonrpc': '2.0', 'id': 1, 'method': 'tools/list', 'params': {}}
    async with httpx2.AsyncClient() as http:
        for method in ('POST', 'GET', 'DELETE'):
            response = await http.request(
                method, live_server.url, headers=headers, json=body if method == 'POST' else None
            )
            assert response.status_code == 401, (method, response.text)
            assert response.headers['www-authenticate'].startswith('Bearer ')
            assert TOKENS['acme'] not in response.text


async def test_an_sdk_client_without_a_token_cannot_connect(live_server: LiveServer) -> None:
    with pytest.raises((MCPError, ExceptionGroup)):
        async with live_server.client(None) as client:
            await client.list_tools()


# -- the same tools as the toolset -----------------------------------------------------------------


@pytest.mark.parametrize('mode', ['auto', 'legacy'])
async def test_tools_list_is_the_toolsets_definitions_for_every_token(live_server: LiveServer, mode: str) -> None:
    expected = [(d.name, d.description, d.parameters_json_schema) for d in await live_server.rag.tool_definitions()]
    assert len(expected) == 10  # the graph tools come once a graph is built (docs/graph.md)
    for label in TOKENS:
        async with live_server.client(label, mode=mode) as client:
            tools = (await client.list_tools()).tools
            assert [(t.name, t.description, t.input_schema) for t in tools] == expected
            assert all(t.annotations and t.annotations.read_only_hint for t in tools)
            assert client.instructions == await live_server.rag.instructions()
            assert 'Tenant handbooks' in (client.instructions or '')


@pytest.mark.parametrize(
    ('tool', 'arguments'),
    [
        ('docs_text_search', {'query': 'refund receipt'}),
        ('docs_vector_search', {'query': 'how long do refunds take', 'top_k': 3}),
        ('docs_hybrid_search', {'query': 'shipping parcels', 'top_k': 4, 'threshold': 0.1}),
        ('docs_regex_search', {'pattern': 'ERR-40[0-9]{2}', 'top_k': 10}),
    ],
)
async def test_results_are_the_scoped_toolsets_text(
    live_server: LiveServer, tool: str, arguments: dict[str, Any]
) -> None:
    for label in TOKENS:
        expected = await live_server.scoped_rag(label).run_tool(tool, arguments)
        async with live_server.client(label) as client:
            result = await client.call_tool(tool, arguments)
        assert not result.is_error
        assert result_text(result) == expected.return_value
        hits = result.meta[HITS_META_KEY] if result.meta else []
        assert [h['id'] for h in hits] == [h.record.id for h in expected.metadata['hits']]


async def test_expansion_tools_match_the_toolset(live_server: LiveServer) -> None:
    acme = next(
        c
        for c in live_server.chunks.values()
        if c.metadata['tenant'] == 'acme' and c.section_path[-1:] == ('Eligibility',)
    )
    async with live_server.client('acme') as client:
        for tool, args in [
            ('docs_broaden_chunk', {'chunk_id': acme.id, 'chunks_to_add': 1}),
            ('docs_zoom_out', {'id': acme.id}),
            ('docs_zoom_out', {'id': acme.section_ids[0]}),
        ]:
            expected = await live_server.scoped_rag('acme').run_tool(tool, args)
            result = await client.call_tool(tool, args)
            assert not result.is_error
            assert result_text(result) == expected.return_value


async def test_navigation_tools_are_scoped_per_token(live_server: LiveServer) -> None:
    """list_documents, outline and read_section over MCP: each token's answers are its scoped toolset's."""
    for label in TOKENS:
        rag = live_server.scoped_rag(label)
        async with live_server.client(label) as client:
            listing = await client.call_tool('docs_list_documents', {})
            assert not listing.is_error
            assert result_text(listing) == (await rag.run_tool('list_documents', {})).return_value
            scope = rag.retriever().filter
            visible = {c.document_id for c in live_server.chunks.values() if matches(scope, c)}
            for document_id in {c.document_id for c in live_server.chunks.values()}:
                args = {'document': document_id}
                outline = await client.call_tool('docs_outline', args)
                read = await client.call_tool('docs_read_section', {'section': document_id})
                if document_id in visible:
                    assert result_text(outline) == (await rag.run_tool('outline', args)).return_value
                    assert not read.is_error and document_id in result_text(read)
                else:  # another tenant's document answers exactly like one that does not exist
                    assert outline.is_error and read.is_error
                    missing = 'd' + '0' * 15
                    ghost = await client.call_tool('docs_outline', {'document': missing})
                    assert result_text(outline).replace(document_id, 'X') == result_text(ghost).replace(missing, 'X')


@pytest.mark.parametrize(
    ('tool', 'arguments'),
    [
        ('docs_text_search', {'query': 'refund', 'top_k': 999}),
        ('docs_text_search', {'query': '   '}),
        ('docs_text_search', {'top_k': 'three'}),
        ('docs_regex_search', {'pattern': '(unclosed'}),
        ('docs_vector_search', {'query': 'refund', 'threshold': 7}),
        ('docs_broaden_chunk', {'chunk_id': 'no-such-chunk'}),
        ('docs_verify_citations', {'claims': []}),
        ('docs_hybrid_search', {'query': 'refund', 'filter': {'op': 'eq', 'key': 'tenant', 'value': 'globex'}}),
    ],
)
async def test_bad_arguments_give_an_error_result_with_the_retry_message(
    live_server: LiveServer, tool: str, arguments: dict[str, Any]
) -> None:
    with pytest.raises(ModelRetry) as retry:
        await live_server.scoped_rag('acme').run_tool(tool, arguments)
    async with live_server.client('acme') as client:
        result = await client.call_tool(tool, arguments)
    assert result.is_error
    assert result_text(result) == retry.value.message


async def test_an_unknown_tool_is_an_error_result(live_server: LiveServer) -> None:
    async with live_server.client('acme') as client:
        result = await client.call_tool('docs_delete_everything', {})
    assert result.is_error
    assert 'unknown tool' in result_text(result) and 'docs_text_search' in result_text(result)


# -- scope -------------------------------------------------------------------------------------------


async def test_another_tenants_chunk_is_not_found_by_id(live_server: LiveServer) -> None:
    globex = [c for c in live_server.chunks.values() if c.metadata['tenant'] == 'globex']
    async with live_server.client('acme') as client:
        for chunk in globex[:4]:
            for tool, args in [('docs_broaden_chunk', {'chunk_id': chunk.id}), ('docs_zoom_out', {'id': chunk.id})]:
                result = await client.call_tool(tool, args)
                assert result.is_error, result_text(result)
                assert 'was not found' in result_text(result)
                assert 'globex' not in result_text(result)
        for section in {c.section_ids[-1] for c in globex}:
            result = await client.call_tool('docs_zoom_out', {'id': section})
            assert result.is_error and 'globex' not in result_text(result)
        result = await client.call_tool('docs_regex_search', {'pattern': 'globex', 'top_k': 50})
        assert not result.is_error and not result.meta[HITS_META_KEY]  # type: ignore[index]


async def test_verify_citations_is_scoped_per_token(live_server: LiveServer) -> None:
    """A quote from acme's chunk verifies for acme; for globex the chunk is not found, like one that never existed."""
    acme = next(c for c in live_server.chunks.values() if c.metadata['tenant'] == 'acme')
    missing = 'd' + '0' * 15 + acme.id[16:]
    assert missing not in live_server.chunks and len(missing) == len(acme.id)

    def claims(chunk_id: str) -> dict[str, Any]:
        return {'claims': [{'text': 'Refunds.', 'citations': [{'chunk_id': chunk_id, 'quote': acme.urtext}]}]}

    for label, verified in [('acme', True), ('globex', False), ('admin', True)]:
        async with live_server.client(label) as client:
            result = await client.call_tool('docs_verify_citations', claims(acme.id))
            ghost = await client.call_tool('docs_verify_citations', claims(missing))
        expected = await live_server.scoped_rag(label).run_tool('verify_citations', claims(acme.id))
        assert not result.is_error and result_text(result) == expected.return_value
        hits = result.meta[HITS_META_KEY] if result.meta else []
        assert [(h['id'], h['score']) for h in hits] == ([(acme.id, 1.0)] if verified else [])
        assert ('1 of 1 citations verified' in result_text(result)) is verified
        if not verified:
            assert result_text(result).replace(acme.id, 'X') == result_text(ghost).replace(missing, 'X')
            assert 'acme' not in result_text(result)


async def test_an_unscoped_token_sees_every_tenant(live_server: LiveServer) -> None:
    async with live_server.client('admin') as client:
        result = await client.call_tool('docs_regex_search', {'pattern': 'ships parcels', 'top_k': 50})
    tenants = {live_server.chunks[h['id']].metadata['tenant'] for h in result.meta[HITS_META_KEY]}  # type: ignore[index]
    assert tenants == {'acme', 'globex', 'initech'}


def _sse_json(response: httpx2.Response) -> dict[str, Any]:
    if response.headers.get('content-type', '').startswith('application/json'):
        return dict(response.json())
    data = [line[5:].strip() for line in response.text.splitlines() if line.startswith('data:')]
    return dict(json.loads(data[-1]))


_INIT = {
    'jsonrpc': '2.0',
    'id': 1,
    'method': 'initialize',
    'params': {'protocolVersion': '2025-06-18', 'capabilities': {}, 'clientInfo': {'name': 'raw', 'version': '1'}},
}
_CALL = {
    'jsonrpc': '2.0',
    'id': 2,
    'method': 'tools/call',
    'params': {'name': 'docs_regex_search', 'arguments': {'pattern': 'ships parcels', 'top_k': 50}},
}


async def _open_session(http: httpx2.AsyncClient, url: str, label: str) -> dict[str, str]:
    """Open a streamable-HTTP session with ``label``'s token; returns the headers that use it."""
    headers = {'Accept': ACCEPT, 'Content-Type': 'application/json', 'Authorization': f'Bearer {TOKENS[label]}'}
    opened = await http.post(url, headers=headers, json=_INIT)
    assert opened.status_code == 200, opened.text
    version = _sse_json(opened)['result']['protocolVersion']
    headers |= {'mcp-session-id': opened.headers['mcp-session-id'], 'mcp-protocol-version': version}
    await http.post(url, headers=headers, json={'jsonrpc': '2.0', 'method': 'notifications/initialized'})
    return headers


async def test_a_session_is_bound_to_the_token_that_opened_it(live_server: LiveServer) -> None:
    """acme's session id with globex's (valid) token is answered like an unknown session id, and left alone.

    Regression: globex could call tools in acme's session, read its stream and DELETE it.
    """
    url = live_server.url
    async with httpx2.AsyncClient(timeout=15) as http:
        acme = await _open_session(http, url, 'acme')
        as_globex = {**acme, 'Authorization': f'Bearer {TOKENS["globex"]}'}
        unknown = {**as_globex, 'mcp-session-id': uuid.uuid4().hex}
        for method, body in [('POST', _CALL), ('GET', None), ('DELETE', None)]:
            wrong_token = await http.request(method, url, headers=as_globex, json=body)
            no_such_session = await http.request(method, url, headers=unknown, json=body)
            assert no_such_session.status_code == 404, (method, no_such_session.text)
            assert wrong_token.status_code == 404, (method, wrong_token.status_code)
            assert wrong_token.json() == no_such_session.json(), method
            assert 'acme' not in wrong_token.text
        text = _sse_json(await http.post(url, headers=acme, json=_CALL))['result']['content'][0]['text']
        assert 'acme ships' in text and 'globex' not in text  # globex's DELETE did not end the session
        no_token = {k: v for k, v in acme.items() if k != 'Authorization'}
        assert (await http.post(url, headers=no_token, json=_CALL)).status_code == 401
        assert (await http.delete(url, headers=acme)).status_code in (200, 204)  # its own token ends it
        assert (await http.post(url, headers=acme, json=_CALL)).status_code == 404


async def test_each_token_opens_sessions_of_its_own(live_server: LiveServer) -> None:
    """Sessions of two tokens side by side: each gets its own scope, neither can use the other's."""
    async with httpx2.AsyncClient(timeout=15) as http:
        acme = await _open_session(http, live_server.url, 'acme')
        globex = await _open_session(http, live_server.url, 'globex')
        assert acme['mcp-session-id'] != globex['mcp-session-id']
        for own, other, tenant in [(acme, globex, 'acme'), (globex, acme, 'globex')]:
            text = _sse_json(await http.post(live_server.url, headers=own, json=_CALL))['result']['content'][0]['text']
            assert f'{tenant} ships' in text and text.count(' ships parcels') == 2  # the tenant's 2023 and 2024
            swapped = {**own, 'mcp-session-id': other['mcp-session-id']}
            assert (await http.post(live_server.url, headers=swapped, json=_CALL)).status_code == 404


# -- pydantic-ai as the MCP client ---------------------------------------------------------------------


def _script(calls: list[tuple[str, dict[str, Any]]]) -> FunctionModel:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = sum(1 for m in messages if isinstance(m, ModelResponse))
        if step < len(calls):
            return ModelResponse(parts=[ToolCallPart(*calls[step])])
        return ModelResponse(parts=[TextPart('done')])

    return FunctionModel(respond)


def _tool_texts(messages: list[ModelMessage]) -> list[tuple[str, str]]:
    out = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolReturnPart):
                out.append((part.tool_name, part.model_response_str(wrap_if_error=False)))
            elif part.part_kind == 'retry-prompt':
                out.append((part.tool_name or '', str(part.content)))
    return out


async def test_a_pydantic_ai_agent_over_mcp_sees_what_an_in_process_agent_sees(live_server: LiveServer) -> None:
    globex_chunk = next(c.id for c in live_server.chunks.values() if c.metadata['tenant'] == 'globex')
    calls = [
        ('docs_hybrid_search', {'query': 'refund window', 'top_k': 3}),
        ('docs_text_search', {'query': 'refund', 'top_k': 500}),
        ('docs_broaden_chunk', {'chunk_id': globex_chunk}),
        ('docs_regex_search', {'pattern': 'ERR-40[0-9]+'}),
    ]
    in_process = await Agent(_script(calls), toolsets=[live_server.scoped_rag('acme')]).run('q')
    toolset = MCPToolset(
        live_server.url, headers={'Authorization': f'Bearer {TOKENS["acme"]}'}, include_instructions=True
    )
    infos: list[AgentInfo] = []
    scripted = _script(calls)

    def recording(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        infos.append(info)
        assert scripted.function is not None
        return scripted.function(messages, info)  # type: ignore[return-value]

    over_mcp = await Agent(FunctionModel(recording), toolsets=[toolset]).run('q')
    expected = _tool_texts(in_process.all_messages())
    got = _tool_texts(over_mcp.all_messages())
    assert [name for name, _ in got] == [name for name, _ in calls]
    assert [text for _, text in got] == [text for _, text in expected]
    assert 'top_k must be between 1 and 50' in got[1][1] and 'was not found' in got[2][1]
    assert not any('globex' in text for _, text in got)
    assert [t.name for t in infos[0].function_tools] == live_server.rag.tool_names
    assert infos[0].instructions and 'Tenant handbooks' in infos[0].instructions


# -- tool list per store capability ----------------------------------------------------------------------


@pytest.mark.parametrize('store_name', [s for s in ('memory', 'tantivy') if s in available_stores()])
async def test_tools_list_follows_the_store_features(store_name: str, tmp_path: Any) -> None:
    store = open_store(f'{store_name}:{tmp_path / store_name}', embedder='hashing')
    rag: ToolishRag[Any] = ToolishRag(store, name='kb')
    async with Client(await build_server(rag)) as client:
        names = [t.name for t in (await client.list_tools()).tools]
    assert names == rag.tool_names
    if store_name == 'memory':
        assert len(names) == 10 and 'kb_graph_context' not in names  # no graph built: no graph tools
        await store.record_graph_built(['test'])
        async with Client(await build_server(ToolishRag(store, name='kb'))) as client:
            built = [t.name for t in (await client.list_tools()).tools]
        assert built == [*names, 'kb_graph_context', 'kb_multihop_search']  # MCP follows the toolset
    if store_name == 'tantivy':
        assert 'kb_vector_search' not in names and 'kb_text_search' in names
    assert 'kb_verify_citations' in names  # both stores fetch records by id
    assert all(re.fullmatch(r'kb_[a-z_]+', n) for n in names)


async def test_an_app_mounted_without_the_token_middleware_fails_closed(live_server: LiveServer) -> None:
    """The tool handler refuses HTTP requests that did not pass `BearerScopeMiddleware`."""
    bare = (await build_server(live_server.rag)).streamable_http_app()  # the SDK app alone: no scope
    port = free_port()
    web = uvicorn.Server(uvicorn.Config(bare, host='127.0.0.1', port=port, log_level='warning'))
    serving = asyncio.ensure_future(web.serve())
    try:
        while not web.started:
            await asyncio.sleep(0.02)
        async with Client(f'http://127.0.0.1:{port}/mcp') as client:
            result = await client.call_tool('docs_regex_search', {'pattern': 'refund'})
        assert result.is_error and result_text(result) == 'this request is not authenticated'
    finally:
        web.should_exit = True
        await serving
