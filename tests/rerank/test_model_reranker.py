"""`ModelReranker` with scripted answers (pydantic-ai's `FunctionModel`): order, garbage, timeout, caps.

Each test drives a real pydantic-ai `Agent` through a `FunctionModel` that answers as a ranking
model might (well, badly, slowly) and records what it was shown, so the prompt caps and the
number of model calls are asserted on what actually reached the model.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolish_rag import DocumentBuilder, ModelReranker, Reranker, SearchHit
from toolish_rag.rerank import rerank_or_keep

Answer = Callable[[AgentInfo], ModelResponse]


def hits(n: int, text: Callable[[int], str] = lambda i: f'passage {i} about refunds') -> list[SearchHit]:
    """``n`` hits of one document, scored 1.0, 0.9, ... (their order is the search's)."""
    b = DocumentBuilder('file:///doc.md', 'Doc', indexed_text=None)
    for i in range(n):
        b.add_chunk(None, text(i))
    return [SearchHit(c, 1.0 - i / 10) for i, c in enumerate(b.build().chunks)]


def ranking(*numbers: Any) -> Answer:
    """An answer with this ranking (anything JSON-serialisable, garbage included)."""
    return lambda info: ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {'ranking': list(numbers)})])


@dataclass
class Scripted:
    """A ranking model: answers with ``answer``, after ``delay`` seconds, recording every prompt."""

    answer: Answer
    delay: float = 0.0
    prompts: list[str] = field(default_factory=list)

    async def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        request = messages[-1]
        assert isinstance(request, ModelRequest)
        self.prompts += [str(p.content) for p in request.parts if isinstance(p, UserPromptPart)]
        if self.delay:
            await asyncio.sleep(self.delay)
        return self.answer(info)

    def reranker(self, **options: Any) -> ModelReranker:
        return ModelReranker(FunctionModel(self.respond), **options)


def texts(result: list[SearchHit]) -> list[str]:
    return [h.record.text for h in result]


def test_it_is_a_reranker() -> None:
    assert isinstance(Scripted(ranking()).reranker(), Reranker)


async def test_the_models_order_is_applied_and_scored_by_position() -> None:
    given = hits(4)
    result = await Scripted(ranking(3, 1, 4, 2)).reranker().rerank('refunds', given)
    assert [h.id for h in result] == [given[i].id for i in (2, 0, 3, 1)]
    assert [h.score for h in result] == [1.0, 0.75, 0.5, 0.25]
    assert [h.record for h in result] == [given[i].record for i in (2, 0, 3, 1)]


async def test_unranked_candidates_follow_in_their_original_order() -> None:
    given = hits(5)
    result = await Scripted(ranking(4)).reranker().rerank('q', given)
    assert [h.id for h in result] == [given[i].id for i in (3, 0, 1, 2, 4)]


@pytest.mark.parametrize(
    'answer',
    [
        ranking(9, 2, 0, -1, 2, 'x', None, 1.5, True, [1], {'n': 3}, '4'),  # unknown, repeated, not numbers
        ranking(2, 4, 2, 4, 2),
    ],
    ids=['garbage-entries', 'repeats'],
)
async def test_garbage_entries_are_ignored_and_the_rest_keep_their_order(answer: Answer) -> None:
    given = hits(5)
    result = await Scripted(answer).reranker().rerank('q', given)
    # Only 2 and 4 name candidates (the digit string '4' counts as 4): then 1, 3, 5 in their order.
    assert [h.id for h in result] == [given[i].id for i in (1, 3, 0, 2, 4)]


@pytest.mark.parametrize(
    'answer',
    [
        lambda info: ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, '{"ranking": [3, 1')]),
        lambda info: ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {'ranking': 'three, one'})]),
        lambda info: ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {'order': [3, 1]})]),
        lambda info: ModelResponse(parts=[TextPart('Candidate 3 is best, then 1.')]),
    ],
    ids=['invalid-json', 'wrong-type', 'wrong-field', 'prose'],
)
async def test_a_malformed_answer_leaves_the_hits_unchanged_after_one_call(answer: Answer) -> None:
    model = Scripted(answer)
    given = hits(4)
    result = await model.reranker().rerank('q', given)
    assert all(a is b for a, b in zip(result, given, strict=True))  # the very same hits: not re-scored
    assert len(model.prompts) == 1  # no output retry, whatever the answer


async def test_a_failing_model_leaves_the_hits_unchanged_after_one_call() -> None:
    calls = 0

    def broken(info: AgentInfo) -> ModelResponse:
        nonlocal calls
        calls += 1
        raise RuntimeError('provider down')

    given = hits(3)
    result = await Scripted(broken).reranker().rerank('q', given)
    assert result == given
    assert calls == 1


async def test_a_slow_model_is_cut_off_at_the_timeout() -> None:
    model = Scripted(ranking(2, 1), delay=5.0)
    given = hits(3)
    start = time.perf_counter()
    result = await model.reranker(timeout=0.2).rerank('q', given)
    elapsed = time.perf_counter() - start
    assert result == given
    assert elapsed < 2.0
    assert len(model.prompts) == 1


async def test_the_model_sees_at_most_max_candidates_cut_to_max_chars() -> None:
    long = 'refund ' * 200  # 1400 characters
    given = hits(8, lambda i: f'<{i}> {long}')
    model = Scripted(ranking(3, 1))
    result = await model.reranker(max_candidates=3, max_chars=50).rerank('when are refunds paid?', given)
    (prompt,) = model.prompts
    assert 'Query: when are refunds paid?' in prompt
    shown = [line for line in prompt.splitlines() if line.startswith('[')]
    assert [line.split(']')[0] for line in shown] == ['[1', '[2', '[3']
    assert all(len(line.split('] ', 1)[1]) == 50 for line in shown)
    assert '<3>' not in prompt and '<7>' not in prompt
    # Ranked 3, 1; then 2 (unranked); then the hits beyond the cap, in order. Scores fall with position.
    assert [h.id for h in result] == [given[i].id for i in (2, 0, 1, 3, 4, 5, 6, 7)]
    assert [h.score for h in result] == sorted((h.score for h in result), reverse=True)
    assert result[-1].score == pytest.approx(1 / 8)


async def test_a_number_past_the_cap_names_no_candidate() -> None:
    given = hits(5)
    result = await Scripted(ranking(5, 2)).reranker(max_candidates=3).rerank('q', given)
    assert [h.id for h in result] == [given[i].id for i in (1, 0, 2, 3, 4)]


async def test_an_unknown_model_fails_open() -> None:
    given = hits(2)
    result = await ModelReranker('no-such-provider:model').rerank('q', given)
    assert result == given


async def test_rerank_or_keep_reports_whether_the_model_ranked() -> None:
    given = hits(3)
    ok = await rerank_or_keep(Scripted(ranking(2)).reranker(), 'q', given)
    assert ok.reranked and [h.id for h in ok.hits] == [given[i].id for i in (1, 0, 2)]
    failed = await rerank_or_keep(Scripted(ranking('x'), delay=1.0).reranker(timeout=0.05), 'q', given)
    assert not failed.reranked and failed.hits == given


@pytest.mark.parametrize(
    ('options', 'message'),
    [({'max_candidates': 0}, 'max_candidates'), ({'max_chars': 0}, 'max_chars'), ({'timeout': 0}, 'timeout')],
)
def test_bad_options_are_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ModelReranker('test', **options)
