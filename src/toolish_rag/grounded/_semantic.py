"""The optional semantic check: one model call judging whether each claim follows from its quotes.

Reported beside the answer, never used to accept or reject it; a failing judge gives a report
with ``error`` set, never an exception. See docs/grounded.md#the-semantic-check.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.models import Model, infer_model
from pydantic_ai.usage import RunUsage, UsageLimits

from ..citations._model import GroundedAnswer

__all__ = ['SEMANTIC_TIMEOUT_S', 'SemanticReport', 'SemanticVerdict', 'Verdict', 'judge_claims']

SEMANTIC_TIMEOUT_S = 60.0
"""How long the judge may take before the check is reported as failed."""

Verdict = Literal['supported', 'not_supported', 'unclear']

_INSTRUCTIONS = (
    'You check an answer against its evidence. For each numbered claim, decide from its quotes alone '
    'whether the quotes state or directly imply the claim: "supported", "not_supported" (the quotes say '
    'something else, less, or the opposite) or "unclear". Judge only what the quotes say, not what you know. '
    'Give a one-sentence reason for each claim.'
)


class SemanticVerdict(BaseModel):
    """The judge's view of one claim (``claim`` is its 0-based index in the answer)."""

    model_config = ConfigDict(frozen=True)

    claim: int
    verdict: Verdict
    reason: str = ''


class SemanticReport(BaseModel):
    """What the semantic check found: a quality signal beside a verified answer, not a proof."""

    model_config = ConfigDict(frozen=True)

    model: str
    """The judge model's name."""
    verdicts: tuple[SemanticVerdict, ...] = ()
    """One per claim, in claim order (``unclear`` for a claim the judge skipped)."""
    error: str | None = None
    """Why the check gave no verdicts (the judge failed, timed out or answered garbage), else ``None``."""

    @property
    def all_supported(self) -> bool:
        return self.error is None and all(v.verdict == 'supported' for v in self.verdicts)


class _Judged(BaseModel):
    claim: int = Field(description='The claim number, as given (1-based).')
    verdict: Verdict
    reason: str = Field(default='', max_length=500)


class _Judgement(BaseModel):
    verdicts: list[_Judged] = Field(max_length=100)


def _prompt(answer: GroundedAnswer) -> str:
    parts = []
    for number, claim in enumerate(answer.claims, 1):
        quotes = '\n'.join(f'  - "{c.quote}"' for c in claim.citations) or '  (no quotes)'
        parts.append(f'Claim {number}: {claim.text}\nQuotes:\n{quotes}')
    return '\n\n'.join(parts)


def _failure(error: Exception) -> str:
    return f'{type(error).__name__}: {error}'[:500]


async def judge_claims(
    answer: GroundedAnswer,
    model: Model | str,
    *,
    usage: RunUsage | None = None,
    timeout_s: float = SEMANTIC_TIMEOUT_S,
    capabilities: Sequence[AbstractCapability[None]] = (),
) -> SemanticReport:
    """Ask ``model`` once whether each claim of ``answer`` follows from its quotes.

    At most one model request (none for an answer without claims; no output retries: a garbled
    judgement is reported, not repaired). ``usage`` is charged with it, as pydantic-ai charges a
    delegated agent run; ``capabilities`` go on the judge's run (`ask` counts calls with one).
    """
    try:
        resolved = infer_model(model)
    except Exception as e:  # an unknown provider or a missing provider package: reported like a failed call
        return SemanticReport(model=model if isinstance(model, str) else type(model).__name__, error=_failure(e))
    name = resolved.model_name
    if not answer.claims:
        return SemanticReport(model=name)
    judge: Agent[None, _Judgement] = Agent(
        resolved,
        output_type=_Judgement,
        instructions=_INSTRUCTIONS,
        capabilities=list(capabilities),
        retries={'output': 0, 'tools': 0},
    )
    already = usage.requests if usage is not None else 0
    try:
        result = await asyncio.wait_for(
            # One request, on top of whatever the shared ``usage`` already holds.
            judge.run(_prompt(answer), usage=usage, usage_limits=UsageLimits(request_limit=1 + already)),
            timeout_s,
        )
    except Exception as e:  # a quality signal must never break the answer it describes
        return SemanticReport(model=name, error=_failure(e))
    by_claim = {j.claim - 1: j for j in result.output.verdicts}
    verdicts = tuple(
        SemanticVerdict(claim=i, verdict=by_claim[i].verdict, reason=by_claim[i].reason)
        if i in by_claim
        else SemanticVerdict(claim=i, verdict='unclear', reason='the judge gave no verdict for this claim')
        for i in range(len(answer.claims))
    )
    return SemanticReport(model=name, verdicts=verdicts)
