"""`ask`: the bounded retrieve → grade → rewrite → answer → verify loop, with scripted models.

The grader and the answer model are separate `Scripted` FunctionModels, so each test counts the
calls each one received and checks them against `AskResult.model_calls` and the budget.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from pydantic_ai.exceptions import ModelHTTPError, UserError
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

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
)
from tests.helpers import compose_store
from toolish_rag import PropertyFilter as F, ToolishRag
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.errors import InvalidRequestError
from toolish_rag.grounded._ask import MAX_MODEL_CALLS, AskResult, ask
from toolish_rag.stores import InMemoryStore

GOOD = cite(ACME_0_ID, 'Refunds are paid within 30 days of the request.')
GOOD_ANSWER = answer('answered', ('Refunds are paid within 30 days.', [GOOD]))
BAD_ANSWER = answer('answered', ('Refunds are instant.', [cite(ACME_0_ID, 'Refunds are always paid instantly.')]))
SUFFICIENT = {'sufficient': True, 'reason': ''}
INSUFFICIENT = {'sufficient': False, 'reason': 'nothing on timing'}


async def acme_rag() -> ToolishRag[Any]:
    return ToolishRag(await build_store(), name='docs').with_metadata_filter(F.eq('tenant', 'acme'))


def prompt_of(script: Scripted, request: int = 0) -> str:
    """The user prompt text of one request the script received."""
    first = script.requests[request][0]
    return '\n'.join(str(getattr(p, 'content', '')) for p in first.parts)


def assert_budget(result: AskResult, *scripts: Scripted) -> None:
    assert result.model_calls == sum(s.calls for s in scripts)
    assert result.model_calls <= MAX_MODEL_CALLS


async def test_sufficient_passages_are_answered_in_two_calls() -> None:
    grader, model = Scripted([SUFFICIENT]), Scripted([GOOD_ANSWER])
    result = await ask(await acme_rag(), 'How long do refunds take?', model=model.model, grader_model=grader.model)
    assert result.grounded and result.answer.status == 'answered'
    source = result.answer.claims[0].citations[0].source
    assert source is not None and source.document_title == 'Acme refund policy'
    assert [(a.query, a.hits) for a in result.attempts] == [('How long do refunds take?', 4)]
    assert (grader.calls, model.calls) == (1, 1)
    assert_budget(result, grader, model)
    assert ACME_0_ID in result.used and GLOBEX_0_ID not in result.used  # the scope applies
    assert f'chunk {ACME_0_ID}' in prompt_of(model) and ACME_0 in prompt_of(model)


async def test_empty_retrieval_never_calls_the_answer_model() -> None:
    empty = ToolishRag(InMemoryStore(HashingEmbeddingModel()), name='docs')
    grader = Scripted([{'query': 'refund period'}])
    model = Scripted([])
    result = await ask(empty, 'How long do refunds take?', model=model.model, grader_model=grader.model)
    assert model.calls == 0
    assert not result.grounded and result.answer.status == 'insufficient_evidence' and not result.answer.claims
    assert [(a.query, a.hits) for a in result.attempts] == [('How long do refunds take?', 0), ('refund period', 0)]
    assert result.problems and result.used == ()
    assert_budget(result, grader, model)


async def test_scope_with_no_documents_is_empty_retrieval() -> None:
    rag = ToolishRag(await build_store(), name='docs').with_metadata_filter(F.eq('tenant', 'initech'))
    grader, model = Scripted([{'query': 'refund period'}]), Scripted([])
    result = await ask(rag, 'Refunds?', model=model.model, grader_model=grader.model)
    assert model.calls == 0 and not result.grounded


async def test_an_insufficient_grade_triggers_exactly_one_rewrite() -> None:
    grader = Scripted([INSUFFICIENT, {'query': 'store credit expiry'}])
    model = Scripted([GOOD_ANSWER])
    result = await ask(await acme_rag(), 'Does my voucher lapse?', model=model.model, grader_model=grader.model)
    assert [a.query for a in result.attempts] == ['Does my voucher lapse?', 'store credit expiry']
    assert grader.calls == 2 and model.calls == 1  # one grade, one rewrite, no second grade
    assert 'nothing on timing' in prompt_of(grader, 1)  # the rewrite is told what was missing
    assert result.grounded
    assert_budget(result, grader, model)


async def test_the_answer_model_grades_when_no_grader_is_given() -> None:
    model = Scripted([SUFFICIENT, GOOD_ANSWER])
    result = await ask(await acme_rag(), 'How long do refunds take?', model=model.model)
    assert result.grounded and model.calls == 2 == result.model_calls


@pytest.mark.parametrize('failure', ['crash', 'garbage', 'timeout'])
async def test_a_failing_grader_counts_as_good_enough_with_no_retry(failure: str) -> None:
    async def slow(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        await asyncio.sleep(5)
        raise AssertionError('not reached')

    def crash(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise RuntimeError('grader down')

    calls: list[int] = []
    grader_fn = {'crash': crash, 'garbage': lambda m, i: ModelResponse(parts=[ToolCallPart('nope', {})])}.get(failure)

    def counted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls.append(1)
        assert grader_fn is not None
        return grader_fn(messages, info)

    async def counted_slow(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls.append(1)
        return await slow(messages, info)

    grader = FunctionModel(counted_slow if failure == 'timeout' else counted)
    model = Scripted([GOOD_ANSWER])
    result = await ask(
        await acme_rag(), 'How long do refunds take?', model=model.model, grader_model=grader, grader_timeout=0.3
    )
    assert len(calls) == 1 and len(result.attempts) == 1  # no retry, no rewrite, no second search
    assert result.grounded and model.calls == 1
    assert result.model_calls == 2
    assert any('grader failed' in n for n in result.notes)
    assert not any('grader down' in n for n in result.notes)  # the type only: an error's text can hold a response body


async def test_an_ungrounded_answer_becomes_insufficient_evidence_with_the_reasons() -> None:
    grader, model = Scripted([SUFFICIENT]), Scripted([BAD_ANSWER, BAD_ANSWER])
    result = await ask(await acme_rag(), 'How long do refunds take?', model=model.model, grader_model=grader.model)
    assert model.calls == 2  # the answer and one repair
    assert not result.grounded
    assert result.answer.status == 'insufficient_evidence' and result.answer.claims == []
    assert any('does not stand in this chunk' in p for p in result.problems)
    assert_budget(result, grader, model)


async def test_a_repair_after_one_retry_passes() -> None:
    grader, model = Scripted([SUFFICIENT]), Scripted([BAD_ANSWER, GOOD_ANSWER])
    result = await ask(await acme_rag(), 'How long do refunds take?', model=model.model, grader_model=grader.model)
    assert result.grounded and model.calls == 2 and result.model_calls == 3


async def test_an_answer_model_that_never_answers_is_reported_not_raised() -> None:
    grader, model = Scripted([SUFFICIENT]), Scripted(['no idea', 'still no idea'])
    result = await ask(await acme_rag(), 'How long do refunds take?', model=model.model, grader_model=grader.model)
    assert not result.grounded and result.answer.status == 'insufficient_evidence'
    assert any('did not give a usable answer' in p for p in result.problems)
    assert_budget(result, grader, model)


async def test_a_provider_error_body_stays_out_of_the_result_and_goes_to_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def failing(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise ModelHTTPError(500, 'answer-model', body={'error': 'internal detail sk-SECRET'})

    grader = Scripted([SUFFICIENT])
    with caplog.at_level(logging.WARNING, logger='toolish_rag.grounded._ask'):
        result = await ask(await acme_rag(), 'Refunds?', model=FunctionModel(failing), grader_model=grader.model)
    assert not result.grounded
    assert result.problems == ('the answer model did not give a usable answer (ModelHTTPError)',)
    assert 'sk-SECRET' not in repr(result)
    assert 'sk-SECRET' in caplog.text


async def test_a_semantic_model_that_cannot_be_resolved_keeps_the_verified_answer() -> None:
    grader, model = Scripted([SUFFICIENT]), Scripted([GOOD_ANSWER])
    result = await ask(
        await acme_rag(), 'Refunds?', model=model.model, grader_model=grader.model, semantic_model='nosuchprovider:x'
    )
    assert result.grounded and result.answer.claims[0].citations[0].source is not None
    assert result.semantic is not None and result.semantic.error is not None and not result.semantic.verdicts


async def test_a_store_that_cannot_look_records_up_is_refused_before_any_model_call() -> None:
    rag = ToolishRag(compose_store(frozenset({'vector'}))(await build_store()), name='docs')
    grader, model = Scripted([]), Scripted([])
    with pytest.raises(UserError, match='look records up by id'):
        await ask(rag, 'Refunds?', model=model.model, grader_model=grader.model)
    assert grader.calls == model.calls == 0


async def test_the_worst_case_stays_within_the_budget() -> None:
    """Insufficient grade, rewrite, a failed answer, a repair, and the semantic check: five calls."""
    grader = Scripted([INSUFFICIENT, {'query': 'refund days receipt'}])
    model = Scripted([BAD_ANSWER, GOOD_ANSWER])
    judge = Scripted([{'verdicts': [{'claim': 1, 'verdict': 'supported', 'reason': 'stated'}]}])
    result = await ask(
        await acme_rag(),
        'How long do refunds take?',
        model=model.model,
        grader_model=grader.model,
        semantic_model=judge.model,
    )
    assert result.grounded and len(result.attempts) == 2
    assert result.semantic is not None and [v.verdict for v in result.semantic.verdicts] == ['supported']
    assert result.model_calls == 5
    assert_budget(result, grader, model, judge)


async def test_no_semantic_call_for_an_ungrounded_answer() -> None:
    grader, model, judge = Scripted([SUFFICIENT]), Scripted([BAD_ANSWER, BAD_ANSWER]), Scripted([])
    result = await ask(
        await acme_rag(), 'Refunds?', model=model.model, grader_model=grader.model, semantic_model=judge.model
    )
    assert judge.calls == 0 and result.semantic is None


async def test_the_evidence_budget_keeps_whole_passages_and_records_the_rest() -> None:
    grader = Scripted([SUFFICIENT])
    # Cite a passage the budget left out: it never reached the model, so it cannot verify.
    left_out_answer = answer(
        'answered', ('Credit lasts.', [cite(ACME_2_ID, 'Store credit never expires and can be used')])
    )
    model = Scripted([left_out_answer, left_out_answer])
    budget = len(ACME_0) + 10
    result = await ask(
        await acme_rag(), 'refunds paid within 30 days', model=model.model, grader_model=grader.model,
        evidence_chars=budget, top_k=4,
    )  # fmt: skip
    assert result.used == (ACME_0_ID,)  # the best passage; the next would overflow the budget
    assert result.left_out[:2] == (ACME_1_ID, ACME_2_ID) and len(result.left_out) == 3
    prompt = prompt_of(model)
    assert ACME_0 in prompt
    for chunk_id in result.left_out:
        assert f'chunk {chunk_id}' not in prompt
    assert not result.grounded
    assert any('was not returned' in p for p in result.problems)


async def test_the_first_passage_is_used_whole_even_over_budget() -> None:
    grader, model = Scripted([SUFFICIENT]), Scripted([GOOD_ANSWER])
    result = await ask(
        await acme_rag(), 'refunds paid within 30 days', model=model.model, grader_model=grader.model, evidence_chars=5
    )
    assert result.used == (ACME_0_ID,) and ACME_0 in prompt_of(model)  # whole, not cut to 5 characters
    assert result.grounded


async def test_a_question_the_store_cannot_search_is_the_callers_error() -> None:
    with pytest.raises(InvalidRequestError):
        await ask(await acme_rag(), 'x' * 5000, model=Scripted([]).model)
    with pytest.raises(InvalidRequestError):
        await ask(await acme_rag(), '   ', model=Scripted([]).model)


async def test_a_refused_rewrite_is_a_note_and_the_first_passages_are_used() -> None:
    grader = Scripted([INSUFFICIENT, {'query': 'bad\x00query'}])
    model = Scripted([GOOD_ANSWER])
    result = await ask(await acme_rag(), 'How long do refunds take?', model=model.model, grader_model=grader.model)
    assert result.attempts[1].hits == 0 and result.attempts[1].error
    assert result.grounded and result.used
