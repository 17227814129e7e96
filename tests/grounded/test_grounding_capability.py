"""`Grounding`: scripted agent runs (pydantic-ai's FunctionModel) over a real InMemoryStore.

Each rejection test checks the retry text the model itself received in the message history,
and that a run whose answer never verifies ends in `UngroundedAnswerError`, never an output.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, RunContext, ToolReturn
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.output import PromptedOutput, ToolOutput

from tests.grounded.grounded_helpers import (
    ACME_0,
    ACME_0_ID,
    ACME_1_ID,
    ACME_2_ID,
    GLOBEX_0_ID,
    Scripted,
    answer,
    build_store,
    cite,
    retry_texts,
    search,
)
from tests.helpers import compose_store
from toolish_rag import PropertyFilter as F, SearchHit, ToolishRag
from toolish_rag.citations._model import GroundedAnswer
from toolish_rag.citations._verify import UngroundedAnswerError
from toolish_rag.grounded._capability import Grounding, seen_chunk_ids
from toolish_rag.grounded._semantic import SemanticReport

GOOD = cite(ACME_0_ID, 'Refunds are paid within 30 days of the request.')
GOOD_CLAIM = ('Refunds are paid within 30 days.', [GOOD])
NOT_SEEN = 'was not returned by a search or read in this conversation'


@dataclass
class Tenant:
    tenant: str


async def acme_rag() -> ToolishRag[Any]:
    return ToolishRag(await build_store(), name='docs').with_metadata_filter(F.eq('tenant', 'acme'))


def tool_return(messages: list[ModelMessage], tool: str) -> str:
    """The text the model received from the first return of ``tool`` in ``messages``."""
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolReturnPart) and part.tool_name == tool:
                return part.model_response_str()
    raise AssertionError(f'no return of {tool}')


def agent_for(rag: ToolishRag[Any], script: Scripted, *, output_retries: int = 1, **grounding: Any) -> Agent[Any, Any]:
    return Agent(
        script.model,
        toolsets=[rag],
        output_type=GroundedAnswer,
        capabilities=[Grounding(rag, **grounding)],
        retries={'output': output_retries},
    )


async def rejected_then_repaired(rag: ToolishRag[Any], bad: dict[str, Any], top_k: int = 5) -> str:
    """Run: search, a bad answer, a good one; the good one must come out. Returns the retry text."""
    script = Scripted([search('refunds paid within 30 days', top_k=top_k), bad, answer('answered', GOOD_CLAIM)])
    result = await agent_for(rag, script).run('How long do refunds take?')
    assert result.output.claims[0].citations[0].source is not None
    texts = retry_texts(script.requests[-1])
    assert len(texts) == 1
    return texts[0]


# -- a verified answer ---------------------------------------------------------------------------


async def test_valid_answer_passes_with_sources_from_the_store() -> None:
    rag = await acme_rag()
    script = Scripted([search('refunds paid'), answer('answered', GOOD_CLAIM)])
    result = await agent_for(rag, script).run('How long do refunds take?')
    source = result.output.claims[0].citations[0].source
    assert source is not None
    assert (source.document_title, source.document_uri, source.section_path) == (
        'Acme refund policy',
        'file:///acme/refunds.md',
        ('Refunds',),
    )
    assert (source.chunk_start, source.chunk_end, source.page) == (0, 47, 2)
    assert ACME_0[source.chunk_start : source.chunk_end] == GOOD['quote']
    assert script.calls == 2


async def test_a_source_the_model_sends_is_replaced_by_the_stores() -> None:
    rag = await acme_rag()
    fake = {'document_id': 'x', 'document_title': 'Forged', 'document_uri': 'https://evil', 'chunk_start': 0}
    forged = {**GOOD, 'source': {**fake, 'chunk_end': 5}}
    script = Scripted([search('refunds paid'), answer('answered', ('Refunds take 30 days.', [forged]))])
    result = await agent_for(rag, script).run('q')
    source = result.output.claims[0].citations[0].source
    assert source is not None and source.document_title == 'Acme refund policy'


# -- each kind of bad citation is rejected with its reason -------------------------------------------


async def test_fabricated_quote_is_rejected() -> None:
    bad = answer('answered', ('Refunds are instant.', [cite(ACME_0_ID, 'Refunds are always paid instantly by card.')]))
    text = await rejected_then_repaired(await acme_rag(), bad)
    assert 'Claim 1, citation 1' in text and 'does not stand in this chunk' in text


async def test_one_character_edit_is_rejected_with_the_closest_sentence() -> None:
    bad = answer(
        'answered', ('Refunds take 31 days.', [cite(ACME_0_ID, 'Refunds are paid within 31 days of the request.')])
    )
    text = await rejected_then_repaired(await acme_rag(), bad)
    assert 'does not stand in this chunk' in text
    assert 'closest sentence' in text and 'Refunds are paid within 30 days of the request.' in text


async def test_quote_from_a_chunk_not_retrieved_in_this_run_is_rejected() -> None:
    # ACME_2 is in scope and in the store, but no search in this conversation returned it.
    bad = answer('answered', ('Credit lasts.', [cite(ACME_2_ID, 'Store credit never expires and can be used')]))
    text = await rejected_then_repaired(await acme_rag(), bad, top_k=1)
    assert NOT_SEEN in text and ACME_2_ID in text


async def test_quote_from_another_tenants_chunk_is_rejected_the_same_way() -> None:
    bad = answer('answered', ('Globex pays in 14 days.', [cite(GLOBEX_0_ID, 'Globex refunds are paid within 14 days')]))
    text = await rejected_then_repaired(await acme_rag(), bad)
    assert NOT_SEEN in text


async def test_another_tenants_chunk_seen_in_an_earlier_turn_does_not_count_under_this_scope() -> None:
    """Turn 1 runs as globex and sees its chunk; turn 2 (same history) runs as acme and cites it."""
    store = await build_store()
    rag: ToolishRag[Tenant] = ToolishRag(
        store, name='docs', metadata_filter=lambda ctx: F.eq('tenant', ctx.deps.tenant)
    )
    globex_cite = cite(GLOBEX_0_ID, 'Globex refunds are paid within 14 days of the request')
    first = Scripted([search('globex refunds'), answer('answered', ('Globex pays in 14 days.', [globex_cite]))])
    turn1 = await agent_for(rag, first).run('Globex refunds?', deps=Tenant('globex'))
    assert turn1.output.claims[0].citations[0].source is not None
    second = Scripted([answer('answered', ('Globex pays in 14 days.', [globex_cite]))] * 2)
    with pytest.raises(UngroundedAnswerError) as caught:
        await agent_for(rag, second).run('And now?', deps=Tenant('acme'), message_history=turn1.all_messages())
    assert NOT_SEEN in retry_texts(second.requests[-1])[0]
    assert caught.value.problems[0].chunk_id == GLOBEX_0_ID


async def test_quote_stitched_across_two_chunks_is_rejected() -> None:
    stitched = 'Customers must keep the original receipt. Refunds for digital goods are not available'
    bad = answer('answered', ('Keep receipts; no digital refunds.', [cite(ACME_0_ID, stitched)]))
    script = Scripted([search('refunds receipt digital goods', top_k=5), bad, answer('answered', GOOD_CLAIM)])
    result = await agent_for(await acme_rag(), script).run('q')
    assert result.output.claims
    text = retry_texts(script.requests[-1])[0]
    assert 'spans two chunks' in text and ACME_1_ID in text


async def test_quote_below_the_minimum_length_is_rejected() -> None:
    bad = answer('answered', ('Refunds are paid.', [cite(ACME_0_ID, 'Refunds')]))
    text = await rejected_then_repaired(await acme_rag(), bad)
    assert 'shorter than the minimum of 12' in text


# -- repairs and the typed failure ------------------------------------------------------------------


async def test_a_second_failure_raises_and_never_returns_the_answer() -> None:
    bad = answer('answered', ('Refunds are instant.', [cite(ACME_0_ID, 'Refunds are always paid instantly.')]))
    script = Scripted([search('refunds paid'), bad, bad])
    with pytest.raises(UngroundedAnswerError) as caught:
        await agent_for(await acme_rag(), script).run('q')
    assert script.calls == 3  # one search, the answer, one repair: no third attempt
    error = caught.value
    assert error.draft.claims[0].text == 'Refunds are instant.'
    assert error.draft.claims[0].citations[0].source is None
    assert error.problems and 'does not stand in this chunk' in error.problems[0].reason


async def test_repairs_stay_authoritative_under_a_larger_output_budget() -> None:
    bad = answer('answered', ('Refunds are instant.', [cite(ACME_0_ID, 'Refunds are always paid instantly.')]))
    script = Scripted([search('refunds paid'), bad, bad, answer('answered', GOOD_CLAIM)])
    with pytest.raises(UngroundedAnswerError):
        await agent_for(await acme_rag(), script, output_retries=5, repairs=1).run('q')
    assert script.calls == 3


async def test_more_repairs_than_the_output_budget_still_ends_in_the_typed_error() -> None:
    """pydantic-ai would end the run with UnexpectedModelBehavior; the capability raises its own error first."""
    bad = answer('answered', ('Refunds are instant.', [cite(ACME_0_ID, 'Refunds are always paid instantly.')]))
    script = Scripted([search('refunds paid'), bad, bad, bad])
    with pytest.raises(UngroundedAnswerError):
        await agent_for(await acme_rag(), script, output_retries=1, repairs=3).run('q')
    assert script.calls == 3


async def test_repairs_zero_rejects_at_once_and_the_count_is_per_run() -> None:
    rag = await acme_rag()
    bad = answer('answered', ('Refunds are instant.', [cite(ACME_0_ID, 'Refunds are always paid instantly.')]))
    capability = Grounding(rag, repairs=1)
    for _ in range(2):  # one agent, two runs: the second gets its own repair
        script = Scripted([search('refunds paid'), bad, answer('answered', GOOD_CLAIM)])
        agent = Agent(script.model, toolsets=[rag], output_type=GroundedAnswer, capabilities=[capability])
        assert (await agent.run('q')).output.claims
    script = Scripted([search('refunds paid'), bad])
    with pytest.raises(UngroundedAnswerError):
        await agent_for(rag, script, repairs=0).run('q')
    assert script.calls == 2


# -- statuses --------------------------------------------------------------------------------------


async def test_insufficient_evidence_without_claims_passes() -> None:
    script = Scripted([search('warranty'), answer('insufficient_evidence', missing='Nothing about warranties.')])
    result = await agent_for(await acme_rag(), script).run('Warranty?')
    assert result.output.status == 'insufficient_evidence' and result.output.missing


async def test_insufficient_evidence_with_an_uncited_claim_is_rejected() -> None:
    bad = answer('insufficient_evidence', ('Refunds exist.', []), missing='Warranty terms.')
    text = await rejected_then_repaired(await acme_rag(), bad)
    assert 'no citation' in text


async def test_answered_without_claims_is_rejected() -> None:
    text = await rejected_then_repaired(await acme_rag(), answer('answered'))
    assert "'answered' needs at least one claim" in text


async def test_conflicting_evidence_needs_two_chunks() -> None:
    rag = await acme_rag()
    one_side = answer('conflicting_evidence', GOOD_CLAIM)
    both = answer(
        'conflicting_evidence',
        GOOD_CLAIM,
        ('Digital goods are not refunded.', [cite(ACME_1_ID, 'Refunds for digital goods are not available')]),
    )
    script = Scripted([search('refunds digital goods paid'), one_side, both])
    result = await agent_for(rag, script).run('q')
    assert result.output.status == 'conflicting_evidence' and len(result.output.claims) == 2
    assert 'at least two different chunks' in retry_texts(script.requests[-1])[0]


async def test_needs_clarification_needs_a_question() -> None:
    rag = await acme_rag()
    script = Scripted([answer('needs_clarification'), answer('needs_clarification', clarifying_question='Which shop?')])
    result = await agent_for(rag, script).run('Refunds?')
    assert result.output.clarifying_question == 'Which shop?'
    assert 'clarifying_question' in retry_texts(script.requests[-1])[0]


# -- what counts as seen ------------------------------------------------------------------------------


async def test_earlier_turns_count_after_a_json_round_trip_of_the_history() -> None:
    rag = await acme_rag()
    first = Scripted([search('refunds paid'), answer('insufficient_evidence', missing='Not sure yet.')])
    turn1 = await agent_for(rag, first).run('Refunds?')
    history = ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(turn1.all_messages()))
    assert ACME_0_ID in seen_chunk_ids(history, 'docs')
    assert isinstance(seen_chunk_ids(history, 'docs')[ACME_0_ID], dict)  # a plain dict now, not a SearchHit
    second = Scripted([answer('answered', GOOD_CLAIM)])
    turn2 = await agent_for(rag, second).run('How long exactly?', message_history=history)
    assert turn2.output.claims[0].citations[0].source is not None


async def test_another_toolsets_returns_do_not_count() -> None:
    store = await build_store()
    docs, other = ToolishRag(store, name='docs'), ToolishRag(store, name='other')
    script = Scripted([search('refunds paid', tool='other_vector_search'), *[answer('answered', GOOD_CLAIM)] * 2])
    agent = Agent(script.model, toolsets=[docs, other], output_type=GroundedAnswer, capabilities=[Grounding(docs)])
    with pytest.raises(UngroundedAnswerError):
        await agent.run('q')
    assert NOT_SEEN in retry_texts(script.requests[-1])[0]


async def test_eager_search_chunks_count_and_others_do_not() -> None:
    rag = (await acme_rag()).with_eager_search_about('refunds paid within days receipt', top_k=1)
    assert [h.id for h in (await rag.eager_results())[0].hits] == [ACME_0_ID]

    def capable(script: Scripted) -> Agent[Any, Any]:  # eager searches run in the capability, before the prompt
        return Agent(script.model, output_type=GroundedAnswer, capabilities=[rag.capability()], retries={'output': 1})

    script = Scripted([answer('answered', GOOD_CLAIM)])
    result = await capable(script).run('q')
    assert result.output.claims[0].citations[0].source is not None
    bad = answer('answered', ('Credit lasts.', [cite(ACME_2_ID, 'Store credit never expires and can be used')]))
    script = Scripted([bad, bad])
    with pytest.raises(UngroundedAnswerError):
        await capable(script).run('q')


async def test_extra_seen_counts_but_stays_scoped() -> None:
    store = await build_store()
    globex_chunk = await ToolishRag(store).retriever().get(GLOBEX_0_ID)
    acme_chunk = await ToolishRag(store).retriever().get(ACME_0_ID)
    rag = ToolishRag(store, name='docs').with_metadata_filter(F.eq('tenant', 'acme'))
    globex_cite = cite(GLOBEX_0_ID, 'Globex refunds are paid within 14 days of the request')
    script = Scripted([answer('answered', GOOD_CLAIM, ('Globex is faster.', [globex_cite]))] * 2)
    agent = Agent(
        script.model,
        output_type=GroundedAnswer,
        capabilities=[Grounding(rag, extra_seen=[acme_chunk, globex_chunk])],  # type: ignore[list-item]
    )
    with pytest.raises(UngroundedAnswerError) as caught:
        await agent.run('q')
    assert [p.chunk_id for p in caught.value.problems] == [GLOBEX_0_ID]  # the acme citation verified


async def test_a_store_without_lookup_is_refused_at_construction() -> None:
    # Without a lookup by id the only record of a chunk is the one the (forgeable) history carries.
    store = compose_store(frozenset({'vector'}))(await build_store())
    rag = ToolishRag(store, name='docs')
    assert not rag.store_features.expand
    with pytest.raises(UserError, match='look records up by id'):
        Grounding(rag)


async def test_another_tools_metadata_naming_this_rag_does_not_count() -> None:
    # A developer's own tool whose metadata happens to say rag='docs' with hits: not a return of this toolset.
    rag = await acme_rag()
    chunk = await rag.retriever().get(ACME_2_ID)
    assert chunk is not None
    credit = cite(ACME_2_ID, 'Store credit never expires and can be used in any branch')
    script = Scripted([('lookup', {}), *[answer('answered', ('Credit lasts.', [credit]))] * 2])
    agent = agent_for(rag, script)

    @agent.tool_plain
    def lookup() -> ToolReturn:
        hits = [{'record': {'id': ACME_2_ID}}, SearchHit(chunk, 1.0)]
        return ToolReturn(return_value='nothing', metadata={'rag': 'docs', 'hits': hits})

    with pytest.raises(UngroundedAnswerError):
        await agent.run('q')
    assert NOT_SEEN in retry_texts(script.requests[-1])[0]


async def test_verify_citations_does_not_make_a_guessed_id_seen() -> None:
    # The tool looks up any id it is sent; its verdict is advisory, not a read of the chunk.
    rag = await acme_rag()
    credit = cite(ACME_2_ID, 'Store credit never expires and can be used in any branch')
    check = ('docs_verify_citations', {'claims': [{'text': 'x', 'citations': [credit]}]})
    script = Scripted([check, *[answer('answered', ('Credit lasts.', [credit]))] * 2])
    with pytest.raises(UngroundedAnswerError) as caught:
        await agent_for(rag, script).run('q')
    assert 'Citation check: 1 of 1 citations verified.' in tool_return(script.requests[1], 'docs_verify_citations')
    assert [p.chunk_id for p in caught.value.problems] == [ACME_2_ID]
    assert NOT_SEEN in caught.value.problems[0].reason


async def test_a_padded_cited_id_is_compared_stripped_as_verify_citations_does() -> None:
    rag = await acme_rag()
    padded = {**GOOD, 'chunk_id': f' {ACME_0_ID}\n'}
    check = ('docs_verify_citations', {'claims': [{'text': 'x', 'citations': [padded]}]})
    script = Scripted([search('refunds paid'), check, answer('answered', ('Refunds take 30 days.', [padded]))])
    result = await agent_for(rag, script).run('q')
    assert 'Citation check: 1 of 1 citations verified.' in tool_return(script.requests[-1], 'docs_verify_citations')
    citation = result.output.claims[0].citations[0]
    assert citation.chunk_id == ACME_0_ID and citation.source is not None


# -- only a GroundedAnswer comes out ---------------------------------------------------------------


class Reply(BaseModel):
    answer: GroundedAnswer
    followups: list[str] = []


@pytest.mark.parametrize(
    'output_type',
    [Reply, [GroundedAnswer, str], str, ToolOutput(Reply)],
    ids=['a model holding the answer', 'a union with text', 'text', 'a tool output of a wrapper'],
)
async def test_an_agent_whose_output_is_not_exactly_a_grounded_answer_is_refused(output_type: Any) -> None:
    rag = await acme_rag()
    with pytest.raises(UserError, match='verifies only a GroundedAnswer'):
        Agent(Scripted([]).model, toolsets=[rag], output_type=output_type, capabilities=[Grounding(rag)])


@pytest.mark.parametrize('output_type', [ToolOutput(GroundedAnswer), PromptedOutput(GroundedAnswer)])
async def test_output_markers_of_a_grounded_answer_are_accepted(output_type: Any) -> None:
    rag = await acme_rag()
    Agent(Scripted([]).model, toolsets=[rag], output_type=output_type, capabilities=[Grounding(rag)])


async def test_a_per_run_output_type_other_than_grounded_answer_is_refused_at_output() -> None:
    # The agent passes construction; the run's own output_type only shows when the output arrives.
    rag = await acme_rag()
    script = Scripted([search('refunds paid'), f'Refunds are instant [chunk {ACME_0_ID}]'])
    agent = agent_for(rag, script)
    with pytest.raises(UserError, match='verifies only a GroundedAnswer'):
        await agent.run('q', output_type=[GroundedAnswer, str])


# -- streaming ---------------------------------------------------------------------------------------


def streamed(script: list[str | dict[str, Any]]) -> FunctionModel:
    """A streaming FunctionModel: a search call, then each answer streamed in pieces as the output tool's args."""
    calls: list[int] = []

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[DeltaToolCalls]:
        calls.append(1)
        if len(calls) == 1:
            yield {
                0: DeltaToolCall(
                    name='docs_vector_search',
                    json_args=json.dumps({'query': 'refunds paid', 'top_k': 5}),
                    tool_call_id='a',
                )
            }
            return
        body = json.dumps(script[len(calls) - 2])
        for i in range(0, len(body), 40):
            yield {
                0: DeltaToolCall(
                    name=info.output_tools[0].name if i == 0 else None, json_args=body[i : i + 40], tool_call_id='o'
                )
            }

    return FunctionModel(stream_function=stream)


async def test_run_stream_verifies_the_final_output() -> None:
    rag = await acme_rag()
    agent = Agent(
        streamed([answer('answered', GOOD_CLAIM)]),
        toolsets=[rag],
        output_type=GroundedAnswer,
        capabilities=[Grounding(rag)],
    )
    async with agent.run_stream('q') as run:
        output = await run.get_output()
    assert output.claims[0].citations[0].source is not None


async def test_run_stream_with_no_repairs_ends_in_the_typed_error() -> None:
    rag = await acme_rag()
    bad = answer('answered', ('Refunds are instant.', [cite(ACME_0_ID, 'Refunds are always paid instantly by card.')]))
    agent = Agent(streamed([bad]), toolsets=[rag], output_type=GroundedAnswer, capabilities=[Grounding(rag, repairs=0)])
    with pytest.raises(UngroundedAnswerError) as caught:
        async with agent.run_stream('q') as run:
            await run.get_output()
    assert caught.value.draft.claims[0].citations[0].source is None
    assert 'does not stand in this chunk' in caught.value.problems[0].reason


# -- the semantic check ---------------------------------------------------------------------------


def judge(verdicts: list[dict[str, Any]]) -> FunctionModel:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        from pydantic_ai.messages import ToolCallPart

        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {'verdicts': verdicts})])

    return FunctionModel(respond)


async def test_semantic_report_goes_to_the_listener_and_never_gates() -> None:
    rag = await acme_rag()
    reports: list[SemanticReport] = []
    script = Scripted([search('refunds paid'), answer('answered', GOOD_CLAIM)])
    verdict = judge([{'claim': 1, 'verdict': 'not_supported', 'reason': 'made up for the test'}])
    agent = agent_for(rag, script, semantic_model=verdict, on_semantic=reports.append)
    result = await agent.run('q')
    assert result.output.claims  # a "not supported" verdict is reported, not enforced
    assert [(v.claim, v.verdict) for v in reports[0].verdicts] == [(0, 'not_supported')]
    assert result.usage.requests == 3  # the judge's call is charged to the run


async def test_a_failing_judge_is_reported_not_raised() -> None:
    def broken(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise RuntimeError('judge down')

    reports: list[SemanticReport] = []
    script = Scripted([search('refunds paid'), answer('answered', GOOD_CLAIM)])

    async def collect(report: SemanticReport) -> None:
        reports.append(report)

    agent = agent_for(await acme_rag(), script, semantic_model=FunctionModel(broken), on_semantic=collect)
    assert (await agent.run('q')).output.claims
    assert reports[0].error is not None and 'judge down' in reports[0].error and not reports[0].verdicts


async def test_a_judge_model_that_cannot_be_resolved_is_reported_and_the_answer_kept() -> None:
    reports: list[SemanticReport] = []
    script = Scripted([search('refunds paid'), answer('answered', GOOD_CLAIM)])
    agent = agent_for(await acme_rag(), script, semantic_model='nosuchprovider:judge', on_semantic=reports.append)
    result = await agent.run('q')
    assert result.output.claims[0].citations[0].source is not None
    assert reports[0].model == 'nosuchprovider:judge' and not reports[0].verdicts
    assert reports[0].error is not None and 'nosuchprovider' in reports[0].error


async def test_per_run_scope_reads_deps() -> None:
    store = await build_store()
    rag: ToolishRag[Tenant] = ToolishRag(
        store, name='docs', metadata_filter=lambda ctx: F.eq('tenant', ctx.deps.tenant)
    )
    capability: Grounding[Tenant] = Grounding(rag)
    script = Scripted([search('refunds paid'), answer('answered', GOOD_CLAIM)])
    agent = Agent(script.model, toolsets=[rag], output_type=GroundedAnswer, capabilities=[capability], deps_type=Tenant)
    assert (await agent.run('q', deps=Tenant('acme'))).output.claims

    def ctx_of(deps: Tenant) -> RunContext[Tenant]:
        from toolish_rag.toolset._direct import direct_context

        return direct_context(deps)

    checked = await capability.verify(
        ctx_of(Tenant('globex')), GroundedAnswer.model_validate(answer('answered', GOOD_CLAIM))
    )
    assert not checked.ok  # no messages in a bare context: nothing was seen
