"""`Grounding`: the pydantic-ai capability that lets no unverified `GroundedAnswer` out of a run.

``Agent(model, toolsets=[rag], output_type=GroundedAnswer, capabilities=[Grounding(rag)])`` (or
``capabilities=[rag.capability()]``, which carries it): the answer's citations are checked against
the chunks ``rag`` showed the model in this conversation (the evidence ledger, rebuilt from the
message history), re-read through the run's scope; a failed answer is sent back for ``repairs``
repairs, then raises `UngroundedAnswerError`. See docs/grounded.md#the-capability.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.agent import AbstractAgent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import Model
from pydantic_ai.output import NativeOutput, OutputContext, PromptedOutput, ToolOutput
from pydantic_ai.tools import AgentDepsT

from .._evidence import EvidenceLedger, offered_readers
from ..citations._model import GroundedAnswer
from ..citations._quotes import DEFAULT_MIN_QUOTE_CHARS
from ..citations._verify import NOT_SEEN, UngroundedAnswerError, Verification, normalise_chunk_id, verify_answer
from ..content import Chunk
from ..errors import InvalidRequestError
from ..retriever import Retriever
from ._semantic import SemanticReport, judge_claims
from ._source import GroundingSource

__all__ = ['DEFAULT_REPAIRS', 'MAX_HINT_CHUNKS', 'Grounding', 'SemanticListener', 'grounded_output', 'seen_chunk_ids']

DEFAULT_REPAIRS = 1
MAX_HINT_CHUNKS = 100
"""After a failed check, up to this many other seen chunks (latest first) are read to improve the
feedback ("the quote is in chunk X"); the check itself only needs the cited chunks."""
_FETCH_CONCURRENCY = 8

SemanticListener = Callable[[SemanticReport], Awaitable[None] | None]
"""Receives the semantic check's report for a verified answer (sync or async)."""


@dataclass
class _RunState:
    """Per-run counters: a fresh one for every run (`Grounding.for_run`)."""

    rejections: int = 0


@dataclass
class Grounding(AbstractCapability[AgentDepsT]):
    """Verify a `GroundedAnswer` against what ``rag`` showed the model in this conversation.

    Args:
        rag: the toolset whose chunks the answer may cite (its run scope applies).
        min_quote_chars: the shortest quote accepted (after whitespace normalisation).
        repairs: how many times a failed answer is sent back to the model before
            `UngroundedAnswerError`; the agent's output retries must be at least this.
        extra_seen: chunks that reached the model outside the toolset's tools (e.g. in the prompt).
        semantic_model: a model to judge, in one extra call, whether each claim follows from its
            quotes; the report goes to ``on_semantic`` and never rejects an answer.
        on_semantic: receives the `SemanticReport` (ignored without ``semantic_model``).

    Raises:
        UserError: ``rag``'s store cannot look records up by id (no `ResultExpander`); or, when
            the agent is built or an output arrives, the output is not exactly a `GroundedAnswer`.
    """

    rag: GroundingSource
    min_quote_chars: int = DEFAULT_MIN_QUOTE_CHARS
    repairs: int = DEFAULT_REPAIRS
    extra_seen: Sequence[Chunk] = ()
    semantic_model: Model | str | None = None
    on_semantic: SemanticListener | None = None
    _state: _RunState = field(default_factory=_RunState, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.repairs < 0:
            raise ValueError('repairs must be 0 or more')
        if self.min_quote_chars < 1:
            raise ValueError('min_quote_chars must be at least 1')
        if not self.rag.store_features.expand:
            raise UserError(
                f'Grounding needs a store that can look records up by id (ResultExpander); the store of '
                f'{self.rag.name!r} cannot, so a citation could only be checked against the record the message '
                'history carries, which the history could have forged'
            )

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds a toolset and callables: not spec-serialisable

    def for_agent(self, agent: AbstractAgent[AgentDepsT, Any]) -> Grounding[AgentDepsT]:
        # Refuse a misconfigured agent when it is built, before any model call.
        if not grounded_output(agent.output_type):
            raise UserError(_WRONG_OUTPUT.format(got=repr(agent.output_type)))
        return self

    async def for_run(self, ctx: RunContext[AgentDepsT]) -> Grounding[AgentDepsT]:
        # A fresh instance (``replace`` re-creates ``_state``), so one run's repairs never count in another.
        return replace(self)

    def get_instructions(self) -> str:
        return (
            'Answer in the structured answer format. Back every claim with citations: the id of a chunk shown to '
            f'you in this conversation from the "{self.rag.name}" collection (the id after "chunk" in a search '
            'result or passage), '
            f'and an exact quote copied from that chunk, a whole sentence or clause of at least '
            f'{self.min_quote_chars} characters, never stitched across chunks. If the documents do not cover the '
            'question, use status insufficient_evidence and say what is missing; if they disagree, use '
            'conflicting_evidence and cite both sides; if the question is ambiguous, use needs_clarification.'
        )

    async def after_output_validate(
        self, ctx: RunContext[AgentDepsT], *, output_context: OutputContext, output: Any
    ) -> Any:
        _require_grounded(output)
        if ctx.partial_output:  # a streamed draft: only the final output is verified
            return output
        verification = await self.verify(ctx, output)
        if verification.ok:
            await self._semantic(ctx, verification.answer)
            return verification.answer
        self._state.rejections += 1
        if self._state.rejections > self.repairs or ctx.retry >= ctx.max_retries:
            raise UngroundedAnswerError(verification.answer, verification.problems)
        raise ModelRetry(verification.feedback())

    async def after_output_process(
        self, ctx: RunContext[AgentDepsT], *, output_context: OutputContext, output: Any
    ) -> Any:
        # Fires for every output (text too, which skips validation): catches a per-run output type.
        _require_grounded(output)
        return output

    async def verify(self, ctx: RunContext[Any], answer: GroundedAnswer) -> Verification:
        """Verify ``answer`` against the chunks this conversation saw through ``rag`` (no retry, no raise)."""
        answer = _normalised(answer)
        retriever = self.rag.retriever(ctx)
        ledger = EvidenceLedger.from_messages(ctx.messages, self.rag.name, tools=self._tool_names())
        seen: dict[str, Chunk | Mapping[str, Any] | None] = {i: s.record for i, s in ledger.shown.items()}
        for chunk in self.extra_seen:
            seen.setdefault(chunk.id, chunk)
        cited = [c.chunk_id for c in answer.citations if c.chunk_id in seen]
        chunks = await self._in_scope(retriever, seen, cited, with_neighbours=True)
        verification = verify_answer(answer, chunks, min_quote_chars=self.min_quote_chars)
        if verification.ok or not _worth_hints(verification):
            return verification
        # Failed: read more of what the model saw, so the feedback can say where a quote really is.
        others = [i for i in reversed(seen) if i not in chunks][:MAX_HINT_CHUNKS]
        chunks.update(await self._in_scope(retriever, seen, others, with_neighbours=False))
        return verify_answer(answer, chunks, min_quote_chars=self.min_quote_chars)

    async def _in_scope(
        self,
        retriever: Retriever,
        seen: Mapping[str, Chunk | Mapping[str, Any] | None],
        ids: Collection[str],
        *,
        with_neighbours: bool,
    ) -> dict[str, Chunk]:
        """The in-scope chunks among ``ids`` (and their seen sequence neighbours), read from the store."""
        limit = asyncio.Semaphore(_FETCH_CONCURRENCY)

        async def read(chunk_id: str) -> list[Chunk]:
            async with limit:
                try:
                    if not with_neighbours:
                        record = await retriever.get(chunk_id)
                        return [record] if isinstance(record, Chunk) else []
                    found = await retriever.neighbours(chunk_id, 1)
                except InvalidRequestError:  # an id no store accepts (a forged history): not seen
                    return []
                return [] if found is None else [c for c in found[1] if c.id in seen]

        found: dict[str, Chunk] = {}
        for chunks in await asyncio.gather(*(read(i) for i in dict.fromkeys(ids))):
            found.update((c.id, c) for c in chunks)
        return found

    def _tool_names(self) -> frozenset[str]:
        """The full names of this toolset's tools whose returns show the model chunks."""
        return offered_readers(self.rag.offered_tools, self.rag.tool_names)

    async def _semantic(self, ctx: RunContext[Any], answer: GroundedAnswer) -> None:
        if self.semantic_model is None or not answer.claims:
            return
        report = await judge_claims(answer, self.semantic_model, usage=ctx.usage)
        if self.on_semantic is not None:
            outcome = self.on_semantic(report)
            if inspect.isawaitable(outcome):
                await outcome


_WRONG_OUTPUT = (
    'Grounding verifies only a GroundedAnswer output: give the agent output_type=GroundedAnswer (got {got}). '
    "Any other output (text, a model holding the answer, an output function's result) would leave the run unverified."
)


def grounded_output(spec: Any) -> bool:
    """Whether an output spec yields exactly `GroundedAnswer` (bare, or in one pydantic-ai output marker)."""
    if isinstance(spec, ToolOutput):
        spec = spec.output
    elif isinstance(spec, NativeOutput | PromptedOutput):
        spec = spec.outputs
        if isinstance(spec, Sequence) and len(spec) == 1:
            spec = spec[0]
    return spec is GroundedAnswer


def _require_grounded(output: Any) -> None:
    # Exactly the class: a subclass could carry fields this check never reads.
    if type(output) is not GroundedAnswer:
        raise UserError(_WRONG_OUTPUT.format(got=type(output).__name__))


def _normalised(answer: GroundedAnswer) -> GroundedAnswer:
    """``answer`` with each cited id normalised as ``verify_citations`` normalises it (stripped)."""
    if all(normalise_chunk_id(c.chunk_id) == c.chunk_id for c in answer.citations):
        return answer
    claims = [
        claim.model_copy(
            update={
                'citations': [
                    c.model_copy(update={'chunk_id': normalise_chunk_id(c.chunk_id)}) for c in claim.citations
                ]
            }
        )
        for claim in answer.claims
    ]
    return answer.model_copy(update={'claims': claims})


def _worth_hints(verification: Verification) -> bool:
    """Whether reading more seen chunks could improve the feedback (a quote not found where cited)."""
    return any(p.chunk_id is not None and p.reason != NOT_SEEN for p in verification.problems)


# -- what reached the model ------------------------------------------------------------------


def seen_chunk_ids(
    messages: Iterable[ModelMessage], rag_name: str, tools: Collection[str] | None = None
) -> dict[str, Chunk | Mapping[str, Any] | None]:
    """The ids of the chunks ``rag_name`` showed the model in ``messages``, in first-seen order.

    Only returns of the tools named in ``tools`` count (default: every search and read tool a
    toolset named ``rag_name`` can offer), and the capability's eager-search parts, so another tool
    cannot make a chunk "seen" by putting ``rag_name`` in its metadata; ``verify_citations`` is never
    a search or read. Each id maps to the record the message carried (a `Chunk`, or its dict after a
    JSON round trip; ``None`` when only a ledger snapshot names it). Only structured results count
    (the ``hits`` metadata), never any text, which a record's fields could forge. Entities are left
    out: they have no source text to quote. The `EvidenceLedger` of ``messages``, as a dict.
    """
    ledger = EvidenceLedger.from_messages(list(messages), rag_name, tools=tools)
    return {i: s.record for i, s in ledger.shown.items()}
