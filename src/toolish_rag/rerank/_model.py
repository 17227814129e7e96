"""`ModelReranker`: a language model ranks the candidates listwise, in one bounded call.

See docs/reranking.md#how-the-rerankers-are-built.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, Field, field_validator
from pydantic_ai import Agent
from pydantic_ai.models import Model, infer_model
from pydantic_ai.usage import UsageLimits

from ..search import SearchHit

__all__ = ['DEFAULT_RERANK_INSTRUCTIONS', 'ModelReranker']

log = logging.getLogger('toolish_rag.rerank')

DEFAULT_RERANK_INSTRUCTIONS = (
    'You rank search results. You get a search query and numbered candidate passages. Return the '
    'numbers of the passages ordered by how well each answers or matches the query, most relevant '
    'first. Leave out passages that are not relevant at all. Judge only from the text shown.'
)

MAX_QUERY_CHARS = 2000
"""The query is cut to this many characters in the prompt (the toolset's default query cap)."""

_MAX_RANKING = 1000
"""An answer's ranking is read up to this many entries (the rest of a runaway list is ignored)."""


class _Ranking(BaseModel):
    ranking: list[int] = Field(description='The candidate numbers, most relevant first.')

    @field_validator('ranking', mode='before')
    @classmethod
    def _numbers_only(cls, value: Any) -> Any:
        """Keep the entries that are candidate numbers (ints, or digit strings); drop any other garbage."""
        if not isinstance(value, list):
            return value  # not a list at all: the answer fails, and the original order stands
        kept: list[int] = []
        for entry in value[:_MAX_RANKING]:
            if isinstance(entry, bool):
                continue
            if isinstance(entry, int):
                kept.append(entry)
            elif isinstance(entry, str) and entry.strip().isdigit():
                kept.append(int(entry.strip()))
        return kept


def _flat(text: str, limit: int) -> str:
    return ' '.join(text.split())[:limit]


class ModelReranker:
    """Reranks hits by asking a pydantic-ai model to order them (listwise, one call).

    Args:
        model: a pydantic-ai ``Model`` or model string (``'openai:gpt-5-mini'``); resolved at the
            first rerank, inside the fail-open guard (an unknown provider leaves the order as is).
        max_candidates: how many of the first hits the model is shown and ranks; the rest follow.
        max_chars: each candidate's text is cut to this many characters (whitespace collapsed).
        timeout: seconds the model may take before the original order is kept.
        instructions: the ranking instructions (default `DEFAULT_RERANK_INSTRUCTIONS`).
    """

    def __init__(
        self,
        model: Model | str,
        *,
        max_candidates: int = 20,
        max_chars: int = 600,
        timeout: float = 10.0,
        instructions: str = DEFAULT_RERANK_INSTRUCTIONS,
    ) -> None:
        if max_candidates < 1:
            raise ValueError('max_candidates must be at least 1')
        if max_chars < 1:
            raise ValueError('max_chars must be at least 1')
        if not timeout > 0:
            raise ValueError('timeout must be positive')
        self._model = model
        self._agent: Agent[None, _Ranking] | None = None
        self.max_candidates = max_candidates
        self.max_chars = max_chars
        self.timeout = timeout
        self.instructions = instructions

    @property
    def score_meaning(self) -> str:
        return "a rank-based score from a language model's ordering (1 - position/n: 1 for its first choice)"

    def __repr__(self) -> str:
        model = self._model if isinstance(self._model, str) else self._model.model_name
        return f'ModelReranker({model!r}, max_candidates={self.max_candidates})'

    def _ranker(self) -> Agent[None, _Ranking]:
        if self._agent is None:
            self._agent = Agent(
                infer_model(self._model),
                output_type=_Ranking,
                instructions=self.instructions,
                retries={'output': 0, 'tools': 0},
                name='toolish-rag-reranker',
            )
        return self._agent

    def prompt(self, query: str, candidates: Sequence[SearchHit]) -> str:
        """What the model is shown: the query, then each candidate as ``[number] text``."""
        lines = [f'Query: {_flat(query, MAX_QUERY_CHARS)}', '', 'Candidates:']
        lines += [f'[{n}] {_flat(h.record.text, self.max_chars)}' for n, h in enumerate(candidates, start=1)]
        return '\n'.join(lines)

    async def rerank(self, query: str, hits: Sequence[SearchHit]) -> list[SearchHit]:
        """``hits`` in the model's order, scored by position; unchanged if the model fails."""
        original = list(hits)
        if not original:
            return original
        candidates = original[: self.max_candidates]
        try:
            agent = self._ranker()
            result = await asyncio.wait_for(
                agent.run(self.prompt(query, candidates), usage_limits=UsageLimits(request_limit=1)), self.timeout
            )
            ranking = result.output.ranking
        except Exception as e:  # TimeoutError included: fail open, the search order stands
            log.warning('ModelReranker failed (%s); keeping the search order', type(e).__name__)
            return original
        order: list[int] = []
        chosen: set[int] = set()
        for number in ranking:  # unknown numbers and repeats are ignored
            if 1 <= number <= len(candidates) and number - 1 not in chosen:
                order.append(number - 1)
                chosen.add(number - 1)
        ordered = [candidates[i] for i in order]
        ordered += [h for i, h in enumerate(candidates) if i not in chosen]
        ordered += original[len(candidates) :]
        n = len(ordered)
        return [replace(h, score=1.0 - position / n) for position, h in enumerate(ordered)]
