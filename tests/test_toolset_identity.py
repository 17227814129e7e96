"""The tools a `ToolishRag` hands out belong to it: ``tool.toolset`` is the rag, the id is the rag's.

pydantic-ai's `CombinedToolset` stamps each tool definition with the ``id`` of the toolset that
owns the tool (``tool.toolset``), durable execution names its activities after that id, and
conflict errors name that toolset. The tools are built by an inner `FunctionToolset`; if they
kept it as their toolset, the id would be ``None`` and errors would name a toolset the user
never made. These tests run real pydantic-ai toolsets and agents (``FunctionModel``).
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import FINAL, Call, Script, handbook_corpus, memory_store, returns
from pydantic_ai import Agent, RunContext
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import ToolReturn
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.test import TestModel
from pydantic_ai.toolsets import CombinedToolset, FunctionToolset
from pydantic_ai.usage import RunUsage

from toolish_rag import StoreFeatures, ToolishRag
from toolish_rag.stores import InMemoryStore
from toolish_rag.toolset import TOOL_NAMES, tool_name
from toolish_rag.toolset._direct import direct_context


@pytest.fixture
async def store() -> InMemoryStore:
    s = memory_store()
    await s.upsert(handbook_corpus())
    await s.record_graph_built(['test'])  # the full tool set
    return s


def context() -> RunContext[None]:
    return RunContext(deps=None, model=TestModel(), usage=RunUsage())


def shout(text: str) -> str:
    """A plain function tool beside the rag's."""
    return text.upper()


async def test_through_a_combined_toolset_every_tool_belongs_to_the_rag(store: InMemoryStore) -> None:
    docs: ToolishRag[None] = ToolishRag(store, name='docs')
    kb: ToolishRag[None] = ToolishRag(store, name='kb', id='kb-v2')
    plain: FunctionToolset[None] = FunctionToolset([shout], id='plain')
    combined = CombinedToolset([docs, kb, plain])
    ctx = context()
    tools = await combined.get_tools(ctx)

    assert sorted(tools) == sorted([*docs.tool_names, *kb.tool_names, 'shout'])
    for rag in (docs, kb):
        for name in rag.tool_names:
            assert tools[name].toolset is rag, name
            assert tools[name].tool_def.toolset_id == rag.id, name
    assert (docs.id, kb.id) == ('docs', 'kb-v2')
    assert tools['shout'].toolset is plain and tools['shout'].tool_def.toolset_id == 'plain'

    # Calls still route to the right rag (and the plain tool to its toolset).
    result = await combined.call_tool('kb_text_search', {'query': 'refunds'}, ctx, tools['kb_text_search'])
    assert isinstance(result, ToolReturn)
    assert result.metadata['rag'] == 'kb' and result.metadata['hits']
    result = await combined.call_tool('docs_regex_search', {'pattern': 'ERR-[0-9]{4}'}, ctx, tools['docs_regex_search'])
    assert isinstance(result, ToolReturn) and result.metadata['rag'] == 'docs'
    assert await combined.call_tool('shout', {'text': 'hi'}, ctx, tools['shout']) == 'HI'


async def test_a_run_with_eager_search_keeps_the_toolsets_identity(store: InMemoryStore) -> None:
    # Eager results are held by the run's messages (the capability sends them), not by a run copy.
    rag: ToolishRag[None] = ToolishRag(store, id='handbook').with_eager_search_about('refunds')
    ctx = context()
    run = await rag.for_run(ctx)
    assert run is rag and run.id == 'handbook'
    tools = await CombinedToolset([run]).get_tools(ctx)
    assert {t.toolset for t in tools.values()} == {run}
    assert {t.tool_def.toolset_id for t in tools.values()} == {'handbook'}


async def test_in_an_agent_run_the_model_gets_tool_definitions_with_the_rags_id(store: InMemoryStore) -> None:
    docs: ToolishRag[None] = ToolishRag(store, name='docs')
    kb: ToolishRag[None] = ToolishRag(store, name='kb', id='kb-v2')
    script = Script([[Call('docs_text_search', {'query': 'refunds'}), Call('kb_vector_search', {'query': 'refunds'})]])
    result = await Agent(script.model, toolsets=[docs, kb]).run('question')
    assert result.output == FINAL

    owners = {t.name: t.toolset_id for t in script.infos[0].function_tools}
    assert owners == {**dict.fromkeys(docs.tool_names, 'docs'), **dict.fromkeys(kb.tool_names, 'kb-v2')}
    got = returns(result.all_messages())
    assert [(r.tool, r.metadata['rag'], bool(r.metadata['hits'])) for r in got] == [
        ('docs_text_search', 'docs', True),
        ('kb_vector_search', 'kb', True),
    ]


async def test_a_name_clash_names_both_rags_and_says_how_to_fix_it(store: InMemoryStore) -> None:
    agent = Agent(Script([]).model, toolsets=[ToolishRag(store), ToolishRag(store, id='other')])
    with pytest.raises(UserError) as clash:
        await agent.run('question')
    message = str(clash.value)
    assert "ToolishRag 'docs' defines a tool whose name conflicts with existing tool from ToolishRag 'docs'" in message
    assert 'docs_vector_search' in message and 'its own `name`' in message


async def test_tool_names_are_the_rag_name_and_the_short_name(store: InMemoryStore) -> None:
    rag: ToolishRag[None] = ToolishRag(store, name='kb').without_tools('regex_search')
    # list_values needs `filterable=`; every other tool is offered by a memory store.
    assert rag.offered_tools == [t for t in TOOL_NAMES if t not in ('regex_search', 'list_values')]
    assert rag.tool_names[-4:] == [
        'kb_read_section',
        'kb_verify_citations',
        'kb_graph_context',
        'kb_multihop_search',
    ]  # offered with ResultExpander
    assert rag.tool_names == [tool_name('kb', t) for t in rag.offered_tools]
    assert [d.name for d in await rag.tool_definitions()] == rag.tool_names
    assert rag.store_features == StoreFeatures.of(store)
    assert rag.store_features.hybrid and rag.store_features.any_search
    # run_tool takes either name; an unknown one is reported as given.
    by_short = await rag.run_tool('text_search', {'query': 'refunds'})
    by_full = await rag.run_tool('kb_text_search', {'query': 'refunds'})
    assert by_short.return_value == by_full.return_value
    with pytest.raises(ValueError, match=r"^'kb_regex_search' is not offered"):
        await rag.run_tool('kb_regex_search', {'pattern': 'x'})


@pytest.mark.parametrize(
    ('bad', 'message'),
    [
        ({'exclude_tools': ['grep']}, r"unknown tool names \['grep'\]; tools are \['vector_search'"),
        ({'name': 'my docs'}, 'plain identifier'),
        ({'default_top_k': 0}, 'default_top_k'),
    ],
)
def test_a_bad_configuration_is_refused(store: InMemoryStore, bad: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ToolishRag(store, **bad)


def test_without_tools_refuses_unknown_names_like_the_constructor(store: InMemoryStore) -> None:
    with pytest.raises(ValueError, match=r"unknown tool names \['grep'\]; tools are \['vector_search'"):
        ToolishRag(store).without_tools('regex_search', 'grep')  # type: ignore[arg-type]


async def test_a_direct_tool_call_has_a_model_that_refuses_to_respond() -> None:
    ctx = direct_context(deps=None)
    with pytest.raises(RuntimeError, match='outside an agent run'):
        await ctx.model.request([], None, ModelRequestParameters())
    with pytest.raises(RuntimeError, match='outside an agent run'):
        async with ctx.model.request_stream([], None, ModelRequestParameters()):
            pass  # pragma: no cover
