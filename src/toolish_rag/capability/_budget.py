"""The search budget (per question): after it, searches answer "budget spent" while the tool list stays the same.

pydantic-ai's rule is that the tools a model is shown stay stable mid-run (a changed list re-renders
the prompt and breaks its cache), so a spent budget is an answer, not a removed tool. Reading and
citation tools go on working for ``grace_requests`` more model requests, then answer the same way.
Everything is counted from the question's messages (`refusal`), never held in the process. See
docs/capabilities.md#budgets.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart, ToolReturn

from .._evidence import opens_turn

__all__ = ['READING_SPENT', 'SEARCH_SPENT', 'budget_sentence', 'refusal', 'spent_return']

SEARCH_SPENT = 'Search budget spent: answer from what you have (the results and passages already shown).'
READING_SPENT = 'Budget spent: answer now from what you have; no more tool calls are served this run.'


def _turn_responses(messages: Sequence[ModelMessage]) -> list[ModelResponse]:
    """The model responses since the latest request holding a user prompt (this question's)."""
    start = 0
    for n, message in enumerate(messages):
        if opens_turn(message):
            start = n
    return [m for m in messages[start:] if isinstance(m, ModelResponse)]


def refusal(
    messages: Sequence[ModelMessage],
    call_id: str,
    *,
    searching: bool,
    searches: Collection[str],
    limit: int,
    grace: int,
) -> str | None:
    """What a call answers instead of running when the budget is spent (``None``: it runs).

    Counted from the history alone, so a fresh capability instance (a durable worker's) counts the
    same: the search calls since the question's prompt, in order (parallel calls included), and the
    response at which the ``limit``-th was made; reading tools work for ``grace`` responses after it.
    """
    responses = _turn_responses(messages)
    count, position, spent_at = 0, None, None
    for n, response in enumerate(responses):
        for part in response.parts:
            if isinstance(part, ToolCallPart) and part.tool_name in searches:
                count += 1
                position = count if part.tool_call_id == call_id else position
                spent_at = n if count == limit and spent_at is None else spent_at
    if searching:
        return SEARCH_SPENT if position is not None and position > limit else None
    spent = spent_at is not None and len(responses) - 1 - spent_at > grace
    return READING_SPENT if spent else None


def budget_sentence(limit: int, grace_requests: int) -> str:
    """What the instructions say about the budget (the same every request, so the prefix stays cached)."""
    return (
        f'You may search at most {limit} times for each question; after that a search answers "budget spent" '
        f'and reading tools work for {grace_requests} more steps: plan your searches, then answer from what you have.'
    )


def spent_return(rag: str, tool: str, text: str) -> ToolReturn:
    """The return of a call the budget refused: no hits, marked in its metadata."""
    return ToolReturn(return_value=text, metadata={'rag': rag, 'tool': tool, 'hits': [], 'budget': 'spent'})
