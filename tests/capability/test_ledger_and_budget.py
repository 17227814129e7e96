"""The evidence ledger: rebuilt from the history alone, scoped, and what grounding reads; and the search budget."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import FunctionModel

from tests.capability.cap_helpers import acme, evidence_parts, grounded_agent
from tests.grounded.grounded_helpers import (
    ACME_0_ID,
    GLOBEX_0_ID,
    Scripted,
    answer,
    build_store,
    cite,
    search,
)
from toolish_rag import GroundedAnswer, PropertyFilter as F, ToolishRag
from toolish_rag.capability import EvidenceLedger
from toolish_rag.toolset._direct import direct_context

REFUND = answer(
    'answered', ('Refunds take 30 days.', [cite(ACME_0_ID, 'Refunds are paid within 30 days of the request.')])
)


def drop_old_returns(messages: list[ModelMessage]) -> list[ModelMessage]:
    """A user's history processor: every tool return before the latest user prompt loses its text and metadata."""
    last_prompt = max(
        i
        for i, m in enumerate(messages)
        if isinstance(m, ModelRequest) and m.parts and any(p.part_kind == 'user-prompt' for p in m.parts)
    )
    out: list[ModelMessage] = []
    for i, message in enumerate(messages):
        if isinstance(message, ModelRequest) and i < last_prompt:
            parts = [
                replace(p, content='(dropped)', metadata=None) if isinstance(p, ToolReturnPart) else p
                for p in message.parts
            ]
            message = replace(message, parts=parts)
        out.append(message)
    return out


async def test_grounding_holds_under_a_history_processor_that_drops_old_tool_returns() -> None:
    store = await build_store()
    first = await grounded_agent(
        Scripted([search('refunds paid within 30 days'), REFUND]), acme(store).capability()
    ).run('q1')
    history = ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(first.all_messages()))  # stored
    script = Scripted([REFUND])  # no search this turn: the chunk was shown in turn 1
    agent = grounded_agent(script, acme(store).capability(), ProcessHistory(drop_old_returns))
    result = await agent.run('q2 again?', message_history=history)
    assert result.output.claims[0].citations[0].source is not None
    assert all('Refunds are paid' not in str(getattr(p, 'content', '')) for m in script.requests[0] for p in m.parts)


async def test_the_ledger_is_rebuilt_from_the_history_alone_and_grounding_needs_no_tool_manager() -> None:
    store = await build_store()
    rag = acme(store)
    result = await grounded_agent(Scripted([search('refunds paid within 30 days'), REFUND]), rag.capability()).run('q')
    stored = ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(result.all_messages()))
    ledger = EvidenceLedger.from_messages(stored, 'docs')
    assert ACME_0_ID in ledger.shown and ledger.cited == {ACME_0_ID: 1}
    assert ledger.shown[ACME_0_ID].turn == 1 and ledger.shown[ACME_0_ID].tool == 'docs_vector_search'
    assert EvidenceLedger.from_messages(stored, 'docs').snapshot() == ledger.snapshot()  # no process-local state
    # As inside a durable-execution activity: a context with the messages and deps, no tool manager.
    ctx = replace(direct_context(None), messages=stored)
    assert ctx.tool_manager is None
    grounding = rag.grounding()
    verification = await grounding.verify(ctx, GroundedAnswer.model_validate(REFUND))
    assert verification.ok


async def test_a_chunk_outside_the_runs_scope_never_enters_the_ledger() -> None:
    store = await build_store()
    everyone = ToolishRag(store, name='docs')  # another tenant's session, or a forged history
    found = await everyone.run_tool('text_search', {'query': 'Globex refunds 14 days'})
    assert GLOBEX_0_ID in [h.id for h in found.metadata['hits']]
    part = ToolReturnPart('docs_text_search', found.return_value, tool_call_id='x', metadata=found.metadata)
    history: list[ModelMessage] = [ModelRequest(parts=[part])]
    scope = acme(store).retriever().filter
    assert GLOBEX_0_ID in EvidenceLedger.from_messages(history, 'docs').shown
    assert GLOBEX_0_ID not in EvidenceLedger.from_messages(history, 'docs', scope=scope).shown
    snapshot_only = EvidenceLedger(
        'docs', {GLOBEX_0_ID: replace(EvidenceLedger.from_messages(history, 'docs').shown[GLOBEX_0_ID], record=None)}
    )
    assert GLOBEX_0_ID not in (await snapshot_only.within(acme(store).retriever())).shown


async def test_a_spent_search_budget_answers_and_keeps_the_tool_list() -> None:
    store = await build_store()
    steps: list[Any] = [search(f'refunds {n}') for n in range(3)]
    steps += [('docs_broaden_chunk', {'chunk_id': ACME_0_ID})] * 3 + ['done']
    script = Scripted(steps)
    agent = Agent(script.model, capabilities=[acme(store).capability(search_budget=2, budget_grace_requests=3)])
    result = await agent.run('q')
    texts = [str(p.content) for p in evidence_parts(result.all_messages())]
    assert 'budget spent: answer from what you have' not in texts[0] + texts[1]
    assert 'budget spent: answer from what you have' in texts[2].lower()
    assert texts[3].startswith('Chunks around') and texts[4].startswith('Chunks around')  # reading goes on a while
    assert texts[5].startswith('Budget spent: answer now')
    assert 'at most 2 times' in (result.all_messages()[0].instructions or '')


async def test_the_tool_list_is_the_same_on_every_request_of_a_budgeted_run() -> None:
    store = await build_store()
    seen: list[list[str]] = []
    script = Scripted([search(f'refunds {n}') for n in range(3)] + ['done'])

    def spy(messages: list[ModelMessage], info: Any) -> Any:
        seen.append([t.name for t in info.function_tools])
        return script.respond(messages, info)

    await Agent(FunctionModel(spy), capabilities=[acme(store).capability(search_budget=2)]).run('q')
    assert len(seen) == 4 and all(names == seen[0] for names in seen)


async def test_a_budget_below_two_is_refused() -> None:
    rag = ToolishRag(await build_store(), name='docs').with_metadata_filter(F.eq('tenant', 'acme'))
    with pytest.raises(ValueError, match='at least 2'):
        rag.capability(search_budget=1)


async def test_parallel_searches_count_in_order_against_the_budget() -> None:
    store = await build_store()

    def three(messages: list[ModelMessage], info: Any) -> ModelResponse:
        calls = [ToolCallPart('docs_text_search', {'query': f'refunds {n}'}, tool_call_id=f'c{n}') for n in range(3)]
        return ModelResponse(parts=calls)

    script = Scripted([three, 'done'])
    result = await Agent(script.model, capabilities=[acme(store).capability(search_budget=2)]).run('q')
    texts = {p.tool_call_id: str(p.content) for p in evidence_parts(result.all_messages())}
    assert [('budget spent' in texts[f'c{n}'].lower()) for n in range(3)] == [False, False, True]
