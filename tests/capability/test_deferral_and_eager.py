"""Deferral hides tools and their names until loaded; eager results arrive as messages, never instructions."""

from __future__ import annotations

from pydantic_ai import Agent
from pydantic_ai.capabilities import ToolSearch
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo

from tests.capability.cap_helpers import acme, grounded_agent
from tests.grounded.grounded_helpers import ACME_0_ID, ACME_2_ID, Scripted, answer, build_store, cite
from toolish_rag import UngroundedAnswerError
from toolish_rag.capability import EagerResultsPart

GOOD = answer(
    'answered', ('Refunds take 30 days.', [cite(ACME_0_ID, 'Refunds are paid within 30 days of the request.')])
)


def _mentions_a_tool(text: str) -> bool:
    return 'docs_' in text


async def test_a_deferred_capability_shows_only_its_catalog_entry_until_loaded() -> None:
    rag = acme(await build_store())
    infos: list[AgentInfo] = []

    def load(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        infos.append(info)
        return ModelResponse(parts=[ToolCallPart('load_capability', {'id': 'docs'})])

    def after_load(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        infos.append(info)
        return ModelResponse(parts=[ToolCallPart('docs_text_search', {'query': 'refunds paid within 30 days'})])

    script = Scripted([load, after_load, GOOD])
    result = await grounded_agent(script, rag.capability(defer_loading=True)).run('How long do refunds take?')
    before, loaded = infos
    assert [t.name for t in before.function_tools] == ['load_capability']
    assert not _mentions_a_tool(before.instructions or '')  # no instruction names a tool it cannot see
    assert 'Search and read the "docs" documents' in (before.instructions or '') + str(before.function_tools)
    assert set(rag.tool_names) <= {t.name for t in loaded.function_tools}
    assert result.output.claims[0].citations[0].source is not None


async def test_grounding_verifies_while_the_deferred_capability_is_not_loaded() -> None:
    rag = acme(await build_store())
    bad = answer('answered', ('Credit lasts.', [cite(ACME_2_ID, 'Store credit never expires')]))
    script = Scripted([bad, bad])
    try:
        await grounded_agent(script, rag.capability(defer_loading=True)).run('How long does credit last?')
    except UngroundedAnswerError as e:
        assert [p.chunk_id for p in e.problems] == [ACME_2_ID]
    else:
        raise AssertionError('an unverified answer left a run whose capability was never loaded')


async def test_tool_search_defers_all_but_the_searches_and_finds_them_by_keywords() -> None:
    rag = acme(await build_store())
    infos: list[AgentInfo] = []

    def find(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        infos.append(info)
        return ModelResponse(parts=[ToolCallPart('search_tools', {'queries': ['neighbouring chunks broaden']})])

    def broaden(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        infos.append(info)
        return ModelResponse(parts=[ToolCallPart('docs_broaden_chunk', {'chunk_id': ACME_0_ID})])

    script = Scripted([find, broaden, 'done'])
    agent = Agent(script.model, capabilities=[rag.capability(tool_search=True), ToolSearch(strategy='keywords')])
    await agent.run('What is next to the refund rule?')
    first, found = infos
    shown = {t.name for t in first.function_tools}
    searches = {n for n in rag.tool_names if n.endswith('_search')}
    assert searches <= shown and 'docs_broaden_chunk' not in shown and 'search_tools' in shown
    assert 'docs_broaden_chunk' not in (first.instructions or '') and 'docs_text_search' in (first.instructions or '')
    assert 'docs_broaden_chunk' in {t.name for t in found.function_tools}


async def test_eager_results_arrive_as_data_before_the_prompt_and_count_as_seen() -> None:
    rag = acme(await build_store()).with_eager_search_about('refunds paid within 30 days receipt', top_k=1)
    script = Scripted([GOOD])
    result = await grounded_agent(script, rag.capability()).run('How long do refunds take?')
    first = result.all_messages()[0].parts  # the history holds the typed part; the model gets it rendered as data
    kinds = [type(p) for p in first]
    assert kinds.index(EagerResultsPart) < kinds.index(UserPromptPart)
    (eager,) = [p for p in first if isinstance(p, EagerResultsPart)]
    assert f'chunk {ACME_0_ID}' in eager.content and eager.metadata is not None
    assert [h.id for h in eager.metadata['hits']] == [ACME_0_ID]
    sent = [str(getattr(p, 'content', '')) for p in script.requests[0][0].parts]
    shown_at = next(i for i, text in enumerate(sent) if f'chunk {ACME_0_ID}' in text)
    assert shown_at < sent.index('How long do refunds take?')
    instructions = script.requests[0][0].instructions or ''
    assert 'Preloaded' not in instructions and ACME_0_ID not in instructions
    assert 'Preloaded' not in (await rag.instructions() or '')
    assert result.output.claims[0].citations[0].source is not None  # verified: the eager hit counts as seen
