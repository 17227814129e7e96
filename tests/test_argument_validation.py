"""Every string argument is checked once, before any store sees it, and no refusal echoes it at length.

Regressions from an attacker's report (issue 12, items 4 and 8), on all three stores:

* a NUL in an id crashed LanceDB (``ValueError`` from its filter), a lone UTF-16 surrogate in a
  query, pattern or id crashed LanceDB and Tantivy (``UnicodeEncodeError``, ``ValueError``), and
  the in-memory store searched with them; now each is a retry naming the character;
* a refused id came back whole in the retry (a 1 MB id, a 1 MB message, over MCP too), and
  pydantic's validation errors quote the model's input whole (for malformed JSON, every byte of
  it); now every string parameter states a ``maxLength`` in the schema, echoes are cut to 60
  characters and '…', and no retry message is over 2,000 characters.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import Call, Script, handbook_corpus, returns
from pydantic_ai import Agent, ModelRetry

from toolish_rag import Retriever, ToolishRag
from toolish_rag.citations._model import MAX_QUOTE_CHARS
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.errors import InvalidRequestError
from toolish_rag.stores import InMemoryStore

MAX_MESSAGE = 2000
MEGABYTE = 1_000_000


def _memory(path: Path) -> Any:
    return InMemoryStore(HashingEmbeddingModel(64))


def _lancedb(path: Path) -> Any:
    from toolish_rag_lancedb import LanceDBStore

    return LanceDBStore(path / 'kb', embedder=HashingEmbeddingModel(64))


def _tantivy(path: Path) -> Any:
    from toolish_rag_tantivy import TantivyStore

    return TantivyStore()


STORES: dict[str, Callable[[Path], Any]] = {'memory': _memory, 'lancedb': _lancedb, 'tantivy': _tantivy}


@pytest.fixture(params=sorted(STORES))
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    pytest.importorskip(
        {'memory': 'toolish_rag', 'lancedb': 'toolish_rag_lancedb', 'tantivy': 'toolish_rag_tantivy'}[request.param]
    )
    made = STORES[request.param](tmp_path)
    await made.upsert(handbook_corpus())
    yield made


ARGUMENT = {
    'vector_search': 'query',
    'text_search': 'query',
    'hybrid_search': 'query',
    'regex_search': 'pattern',
    'broaden_chunk': 'chunk_id',
    'zoom_out': 'id',
    'list_documents': 'title_contains',
    'outline': 'document',
    'read_section': 'section',
    'verify_citations': 'chunk_id',
    'graph_context': 'query',
    'multihop_search': 'query',
}
"""The string argument each tool is tried with (``verify_citations``: a chunk id nested in its claims)."""
NESTED_CAPS = {'chunk_id': 200, 'quote': MAX_QUOTE_CHARS, 'text': 4000}
"""The caps of the strings nested in ``verify_citations``'s claims (the `Claim` model's, enforced by pydantic)."""


def _with(tool: str, value: Any) -> dict[str, Any]:
    """Arguments of ``tool`` holding ``value`` in its `ARGUMENT` (inside a claim's citation for verify_citations)."""
    if tool == 'verify_citations':
        quote = 'Keep the receipt for every refund claim.'
        return {'claims': [{'text': 'A claim.', 'citations': [{'chunk_id': value, 'quote': quote}]}]}
    return {ARGUMENT[tool]: value}


async def _retry(rag: ToolishRag[Any], tool: str, arguments: dict[str, Any]) -> str:
    """The retry message ``tool`` gives for ``arguments`` (any other outcome fails the test)."""
    with pytest.raises(ModelRetry) as retry:
        await rag.run_tool(tool, arguments)
    message = retry.value.message
    assert len(message) <= MAX_MESSAGE, (tool, len(message))
    return message


# -- item 4: characters no store should see -----------------------------------------------------------------

TEXT_CASES = [
    pytest.param('refund\x00policy', 'a control character (U+0000) at character 7', id='NUL'),
    pytest.param('refund \x1b[2J window', 'a control character (U+001B) at character 8', id='escape'),
    pytest.param('refund \ud800', 'a lone UTF-16 surrogate (U+D800) at character 8', id='high surrogate'),
    pytest.param('\udfffrefund', 'a lone UTF-16 surrogate (U+DFFF) at character 1', id='low surrogate'),
]
ID_CASES = [
    *TEXT_CASES,
    pytest.param('d1-\n2', 'a control character (U+000A) at character 4', id='newline'),
    pytest.param('d1-\t2', 'a control character (U+0009) at character 4', id='tab'),
    pytest.param('d1-\x7f', 'a control character (U+007F) at character 4', id='DEL'),
    pytest.param('d1-\x9b2', 'a control character (U+009B) at character 4', id='C1'),
]


@pytest.mark.parametrize(('value', 'expected'), TEXT_CASES)
async def test_bad_characters_in_queries_and_patterns_are_retries(store: Any, value: str, expected: str) -> None:
    rag: ToolishRag[Any] = ToolishRag(store, name='kb')
    searches = [t for t in rag.offered_tools if t.endswith('_search')]
    assert searches
    for tool in searches:
        argument = ARGUMENT[tool]
        message = await _retry(rag, tool, {argument: value})
        assert f'the {argument} holds {expected}' in message, (tool, message)
        assert value not in message  # named by code point, not echoed raw


@pytest.mark.parametrize(('value', 'expected'), ID_CASES)
async def test_bad_characters_in_ids_are_retries(store: Any, value: str, expected: str) -> None:
    rag: ToolishRag[Any] = ToolishRag(store, name='kb')
    for tool in ('broaden_chunk', 'zoom_out'):
        message = await _retry(rag, tool, {ARGUMENT[tool]: value})
        assert f'the id holds {expected}' in message, (tool, message)
        assert 'pass the id exactly as it appears in a search result' in message


async def test_the_retriever_checks_for_every_caller(store: Any) -> None:
    """Not only the toolset: code using a `Retriever` directly gets the same refusal, not a store crash."""
    retriever = Retriever(store)
    with pytest.raises(InvalidRequestError, match='the query holds a lone UTF-16 surrogate'):
        await retriever.text_search('refund\ud800', 3)
    with pytest.raises(InvalidRequestError, match='the pattern holds a control character'):
        await retriever.regex_search('ERR\x00', 3)
    for call in (retriever.get('a\x00b'), retriever.neighbours('\ud800', 1), retriever.section('x\x00', 5)):
        with pytest.raises(InvalidRequestError, match='the id holds'):
            await call


async def test_tabs_newlines_and_non_ascii_text_are_still_searched(store: Any) -> None:
    rag: ToolishRag[Any] = ToolishRag(store, name='kb')
    found = await rag.run_tool('text_search', {'query': 'refunds\tpaid\r\nwithin 30 days'})
    assert found.metadata['hits']
    found = await rag.run_tool('regex_search', {'pattern': 'ERR-[0-9]{4}|\n'})
    assert found.metadata['hits']
    message = await _retry(rag, 'zoom_out', {'id': 'rückgabe-§3'})  # printable: merely unknown
    assert "'rückgabe-§3' was not found" in message


def test_eager_search_refuses_a_bad_query_when_configured() -> None:
    rag: ToolishRag[Any] = ToolishRag(_memory(Path()), name='kb')
    with pytest.raises(ValueError, match='control character'):
        rag.with_eager_search_about('refunds\x00')


# -- item 8: lengths capped in the schema and in every message ------------------------------------------------


def _nested_properties(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``properties`` of every object schema inside ``spec`` (through ``items``), outermost first."""
    found: list[dict[str, Any]] = []
    items = spec.get('items')
    if isinstance(items, dict):
        if isinstance(items.get('properties'), dict):
            found.append(items['properties'])
            for inner in items['properties'].values():
                found += _nested_properties(inner)
        found += _nested_properties(items)
    return found


async def test_every_string_parameter_states_its_cap(store: Any) -> None:
    rag: ToolishRag[Any] = ToolishRag(store, name='kb', max_query_chars=300)
    caps = {'query': 300, 'pattern': 1000, 'chunk_id': 200, 'id': 200, 'title_contains': 300, 'document': 300}
    caps |= {'section': 300, 'direction': 4, 'order': 10}
    with_strings = set()
    for definition in await rag.tool_definitions():
        schema = definition.parameters_json_schema
        # The tool's own parameters, then the strings nested in its models (verify_citations' claims, inlined).
        nested = [(p, NESTED_CAPS) for spec in schema['properties'].values() for p in _nested_properties(spec)]
        for properties, limits in [(schema['properties'], caps), *nested]:
            for name, spec in properties.items():
                # A required string, or an optional one (``str | None``: a string inside ``anyOf``).
                for option in [spec, *spec.get('anyOf', [])]:
                    if option.get('type') == 'string':
                        with_strings.add(definition.name)
                        assert option['maxLength'] == limits[name], (definition.name, name)
    assert with_strings == set(rag.tool_names)


async def test_over_long_arguments_get_a_short_friendly_retry(store: Any) -> None:
    rag: ToolishRag[Any] = ToolishRag(store, name='kb')
    huge = 'x' * MEGABYTE
    for tool in rag.offered_tools:
        message = await _retry(rag, tool, _with(tool, huge))
        assert 'x' * 61 not in message
        if tool == 'verify_citations':  # a nested string: pydantic's own refusal, bounded (its location too)
            assert 'claims.0.citations' in message and 'at most 200 characters' in message, message
            continue
        friendly = {
            'query': 'the query is over 2000 characters: send a short search query, not a document',
            'pattern': 'the pattern is over 1000 characters: send a short regular expression',
            'chunk_id': 'the chunk id is over 200 characters',
            'id': 'the id is over 200 characters',
            'title_contains': 'title_contains is over 300 characters: send a word or two of the title',
            'document': 'the document is over 300 characters',
            'section': 'the section is over 300 characters',
        }[ARGUMENT[tool]]
        assert friendly in message, (tool, message)


async def test_an_unknown_id_is_echoed_shortened(store: Any) -> None:
    rag: ToolishRag[Any] = ToolishRag(store, name='kb')
    unknown = 'n' * 199
    for tool in ('broaden_chunk', 'zoom_out'):
        message = await _retry(rag, tool, {ARGUMENT[tool]: unknown})
        assert f"'{'n' * 60}…' was not found" in message
        assert 'n' * 61 not in message


async def test_a_store_message_quoting_a_long_pattern_is_shortened(store: Any) -> None:
    """The RE2 error quotes the pattern whole; the retry a model gets quotes 60 characters of it."""
    rag: ToolishRag[Any] = ToolishRag(store, name='kb')
    pattern = '(' + 'a' * 990
    message = await _retry(rag, 'regex_search', {'pattern': pattern})
    assert 'invalid regular expression' in message
    assert 'a' * 61 not in message


BAD_ARGUMENTS = [
    pytest.param({'query': 'refunds', 'x' * MEGABYTE: 1}, id='huge unknown key'),
    pytest.param({'qeury': 'x' * MEGABYTE}, id='missing query, huge misspelt one'),
    pytest.param({'query': ['x' * MEGABYTE] * 3}, id='huge list as query'),
    pytest.param({'query': 'refunds', 'top_k': 'x' * MEGABYTE}, id='huge string as top_k'),
    pytest.param({'query': 'refunds', **{f'extra{i}': i for i in range(10_000)}}, id='ten thousand unknown keys'),
    pytest.param({'query': 'refunds', 'top_k': 10**5000}, id='huge integer top_k'),
    pytest.param({'query': 'refunds', 'threshold': 'x' * MEGABYTE}, id='huge string as threshold'),
]


@pytest.mark.parametrize('arguments', BAD_ARGUMENTS)
async def test_validation_errors_are_bounded_in_run_tool(arguments: dict[str, Any]) -> None:
    store = _memory(Path())
    await store.upsert(handbook_corpus())
    message = await _retry(ToolishRag(store, name='kb'), 'text_search', arguments)
    assert 'x' * 61 not in message


async def test_validation_errors_are_bounded_in_an_agent_run() -> None:
    """What pydantic-ai itself tells the model about bad arguments (inputs included) is bounded too."""
    store = _memory(Path())
    await store.upsert(handbook_corpus())
    huge = 'x' * MEGABYTE
    script = Script(
        [
            Call('kb_text_search', '{"query": "' + huge),  # malformed JSON: pydantic quotes all of it
            Call('kb_text_search', {'qeury': huge}),
            Call('kb_zoom_out', {'id': huge}),
            Call('kb_broaden_chunk', json.dumps({'chunk_id': 'refund', 'top_k': huge})),
            Call('kb_regex_search', {'pattern': 'ERR\x00'}),
        ]
    )
    agent = Agent(script.model, toolsets=[ToolishRag(store, name='kb', max_retries=10)])
    result = await agent.run('question')
    got = returns(result.all_messages())
    assert len(got) == 5 and all(r.retried for r in got)
    for r in got:
        assert len(r.text) <= MAX_MESSAGE, (r.tool, len(r.text))
        assert 'x' * 61 not in r.text
    assert 'the id is over 200 characters' in got[2].text
    assert 'the pattern holds a control character (U+0000)' in got[4].text


async def test_over_mcp_a_bad_id_is_a_short_error(tmp_path: Path) -> None:
    pytest.importorskip('mcp', reason='needs the mcp extra')
    pytest.importorskip('toolish_rag_lancedb')
    from mcp import Client

    from toolish_rag.mcp import build_server

    store = _lancedb(tmp_path)
    await store.upsert(handbook_corpus())
    async with Client(await build_server(ToolishRag(store, name='kb'))) as client:
        for arguments, expected in [
            ({'id': 'a\x00b'}, 'the id holds a control character (U+0000)'),
            ({'id': 'x' * MEGABYTE}, 'the id is over 200 characters'),
        ]:
            got = await client.call_tool('kb_zoom_out', arguments)
            text = got.content[0].text  # type: ignore[union-attr]
            assert got.is_error and expected in text
            assert len(text) <= MAX_MESSAGE


async def test_a_string_argument_is_stripped_before_the_body_sees_it() -> None:
    """The parameter's constraint (pydantic's, declared with the parameter) strips, then checks the cap."""
    store = InMemoryStore(HashingEmbeddingModel(64))
    await store.upsert(handbook_corpus())
    rag = ToolishRag(store, name='kb', max_query_chars=7)
    got = await rag.run_tool('text_search', {'query': '  refunds   '})
    assert str(got.return_value).startswith("Text search results for 'refunds'")
    assert await _retry(rag, 'text_search', {'query': ' refunds! '}) == (
        'the query is over 7 characters: send a short search query, not a document'
    )


async def test_an_argument_the_tool_does_not_take_is_named_in_the_retry() -> None:
    """Not pydantic's 'Extra inputs are not permitted': which argument, and what to do (a long name cut)."""
    store = InMemoryStore(HashingEmbeddingModel(64))
    await store.upsert(handbook_corpus())
    rag = ToolishRag(store, name='kb')
    message = await _retry(rag, 'zoom_out', {'id': 'x', 'depth': 2})
    assert message == 'this tool takes no depth argument: call it without one'
    long = await _retry(rag, 'zoom_out', {'id': 'x', 'k' * MEGABYTE: 1})
    assert long.startswith('this tool takes no kkk') and len(long) < 200
    mixed = await _retry(rag, 'zoom_out', {'id': 42, 'depth': 2})  # with a type error: pydantic's report, bounded
    assert mixed.startswith('invalid arguments for kb_zoom_out: 2 validation errors for zoom_out')
