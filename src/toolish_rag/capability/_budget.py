"""The per-run search budget: after it, searches answer "budget spent" while the tool list stays the same.

pydantic-ai's rule is that the tools a model is shown stay stable mid-run (a changed list re-renders
the prompt and breaks its cache), so a spent budget is an answer, not a removed tool. Reading and
citation tools go on working for ``grace_requests`` more model requests, then answer the same way.
The counters live in the run's own capability instance (`RagCapability.for_run`). See
docs/capabilities.md#budgets.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic_ai.messages import ToolReturn

__all__ = ['BudgetState', 'budget_sentence', 'spent_return']

SEARCH_SPENT = 'Search budget spent: answer from what you have (the results and passages already shown).'
READING_SPENT = 'Budget spent: answer now from what you have; no more tool calls are served this run.'


@dataclass
class BudgetState:
    """One run's counts: searches served, model requests made, and the request at which searching ran out."""

    searches: int = 0
    requests: int = 0
    spent_at: int | None = None

    def take_search(self, limit: int) -> bool:
        """Count a search if the budget allows it (``False``: spent)."""
        if self.searches >= limit:
            return False
        self.searches += 1
        if self.searches == limit:
            self.spent_at = self.requests
        return True

    def reading_allowed(self, grace_requests: int) -> bool:
        """Whether reading tools still work: always before searching ran out, then for ``grace_requests`` requests."""
        return self.spent_at is None or self.requests - self.spent_at <= grace_requests


def budget_sentence(limit: int, grace_requests: int) -> str:
    """What the instructions say about the budget (the same every request, so the prefix stays cached)."""
    return (
        f'You may search at most {limit} times for each question; after that a search answers "budget spent" '
        f'and reading tools work for {grace_requests} more steps: plan your searches, then answer from what you have.'
    )


def spent_return(rag: str, tool: str, text: str) -> ToolReturn:
    """The return of a call the budget refused: no hits, marked in its metadata."""
    return ToolReturn(return_value=text, metadata={'rag': rag, 'tool': tool, 'hits': [], 'budget': 'spent'})
