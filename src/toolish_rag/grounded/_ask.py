"""`ask`: one question to a grounded answer in a bounded number of steps.

retrieve → grade → (if needed) rewrite and retrieve once more → answer → verify, within
`MAX_RETRIEVALS` searches and `MAX_MODEL_CALLS` model calls. See docs/grounded.md#the-ask-loops-bounds.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import Agent, ModelRetry, RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import AgentRunError, UsageLimitExceeded
from pydantic_ai.models import Model, ModelRequestContext, infer_model
from pydantic_ai.usage import UsageLimits

from .._record_text import chunk_body, fitting, render_record
from ..citations._model import GroundedAnswer
from ..citations._quotes import DEFAULT_MIN_QUOTE_CHARS
from ..citations._verify import UngroundedAnswerError
from ..content import Chunk
from ..errors import InvalidRequestError
from ..search import SearchHit
from ._capability import Grounding
from ._semantic import SemanticReport, judge_claims

if TYPE_CHECKING:
    from ._source import GroundingSource

_log = logging.getLogger(__name__)

__all__ = [
    'ANSWER_REPAIRS',
    'GRADER_TIMEOUT_S',
    'MAX_MODEL_CALLS',
    'MAX_RETRIEVALS',
    'AskResult',
    'Attempt',
    'ask',
]

MAX_RETRIEVALS = 2
MAX_MODEL_CALLS = 6
ANSWER_REPAIRS = 1
GRADER_TIMEOUT_S = 30.0
"""The grader's (and the rewriter's) time limit; past it the passages count as good enough."""
_MAX_REWRITE_CHARS = 300


class Attempt(BaseModel):
    """One retrieval: the query sent, and how many passages came back."""

    model_config = ConfigDict(frozen=True)

    query: str
    hits: int
    error: str | None = None
    """Why the search was refused (a rewritten query the store cannot run), else ``None``."""


class AskResult(BaseModel):
    """What `ask` did and found.

    ``grounded`` is true when the answer model answered and every citation verified (whatever
    the status it chose); false when nothing was found (the answer model was not called) or the
    answer failed verification after its repair (then ``answer`` is ``insufficient_evidence``
    with no claims and ``problems`` says why).
    """

    model_config = ConfigDict(frozen=True)

    question: str
    answer: GroundedAnswer
    grounded: bool
    attempts: tuple[Attempt, ...]
    used: tuple[str, ...] = ()
    """The chunk ids put in the answer prompt, best first."""
    left_out: tuple[str, ...] = ()
    """The chunk ids retrieved but left out of the prompt by the evidence budget."""
    model_calls: int
    problems: tuple[str, ...] = ()
    """Why the answer is not grounded (verification problems, nothing found, a failed answer model)."""
    notes: tuple[str, ...] = ()
    """What went differently from plan without affecting grounding (a failed grader, a refused rewrite)."""
    semantic: SemanticReport | None = None
    """The semantic check's report, when ``semantic_model`` was given and the answer has claims."""


# -- model calls, counted --------------------------------------------------------------------------


@dataclass
class _CallCounter(AbstractCapability[Any]):
    """Counts every attempt at a model request of the runs it is attached to, and refuses one past the cap.

    Counting in the request lifecycle (not from usage) also counts a request that timed out or
    failed, which usage does not record but a provider may still bill.
    """

    cap: int = MAX_MODEL_CALLS
    calls: int = 0

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None

    async def prepare_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        if self.calls >= self.cap:
            raise UsageLimitExceeded(f'ask allows at most {self.cap} model calls')
        self.calls += 1
        return request_context


class _Grade(BaseModel):
    sufficient: bool = Field(description='Whether the passages contain what is needed to answer the question.')
    reason: str = Field(default='', max_length=500, description='What is missing, if anything, in a sentence.')


class _Rewrite(BaseModel):
    query: str = Field(
        max_length=_MAX_REWRITE_CHARS, description='A short search query in the words the documents use.'
    )


_GRADE_INSTRUCTIONS = (
    'You judge retrieval results. Say whether the numbered passages contain the information needed to '
    'answer the question (sufficient), and if not, what is missing. Do not answer the question.'
)
_REWRITE_INSTRUCTIONS = (
    'You rewrite a question into one short search query for a document collection. Use the terms the '
    'documents themselves use (the passages show their vocabulary): names, technical terms, synonyms. '
    'Return only the query.'
)
_ANSWER_INSTRUCTIONS = (
    'Answer the question from the numbered passages only. Each passage starts with "chunk <id>": cite '
    'that id and copy the quote exactly from that passage. Do not use outside knowledge.'
)


async def _small_call(
    model: Model, instructions: str, output: type[BaseModel], prompt: str, counter: _CallCounter, timeout: float
) -> BaseModel | str:
    """One structured call with no retries: its output, or why it failed (never an exception)."""
    agent: Agent[None, BaseModel] = Agent(
        model,
        output_type=output,
        instructions=instructions,
        capabilities=[counter],
        retries={'output': 0, 'tools': 0},
    )
    try:
        result = await asyncio.wait_for(agent.run(prompt, usage_limits=UsageLimits(request_limit=1)), timeout)
    except Exception as e:  # TimeoutError included
        return _failed('the grader or rewriter', e)
    return result.output


# -- retrieval -----------------------------------------------------------------------------------------


def _search_tool(rag: GroundingSource) -> str:
    offered = rag.offered_tools
    for tool in ('hybrid_search', 'vector_search', 'text_search'):
        if tool in offered:
            return tool
    raise InvalidRequestError(
        f'ask needs a toolset offering hybrid_search, vector_search or text_search; {rag.name!r} offers {offered}'
    )


async def _retrieve(rag: GroundingSource, tool: str, query: str, top_k: int, deps: Any) -> list[Chunk]:
    """The chunks a search returns, best first (entities have no source text to cite, so are dropped)."""
    result = await rag.run_tool(tool, {'query': query, 'top_k': top_k}, deps=deps)
    hits: Sequence[SearchHit] = result.metadata['hits']
    return [h.record for h in hits if isinstance(h.record, Chunk)]


def _within_budget(chunks: Sequence[Chunk], budget: int) -> tuple[list[Chunk], list[Chunk]]:
    """Whole passages best first while they fit in ``budget`` characters of text as shown; the rest left out.

    The text shown is the source text, a piece of a split table below its header rows (`chunk_body`).

    The first passage is always used, even alone over budget: an answer from one whole passage
    beats no answer, and a passage is never cut.
    """
    n = fitting(chunks, budget, lambda c: len(chunk_body(c)))
    return list(chunks[:n]), list(chunks[n:])


def _passages(chunks: Sequence[Chunk]) -> str:
    return '\n\n'.join(render_record(c, n) for n, c in enumerate(chunks, 1))


def _merge(first: Sequence[Chunk], second: Sequence[Chunk]) -> list[Chunk]:
    """The rewrite's passages first (the first search was judged insufficient), then the first search's others."""
    merged = {c.id: c for c in second}
    for c in first:
        merged.setdefault(c.id, c)
    return list(merged.values())


# -- the loop ----------------------------------------------------------------------------------------


@dataclass
class _Run:
    """The state of one `ask` call, and the steps that change it (kept apart so each stays short)."""

    rag: GroundingSource
    question: str
    deps: Any
    top_k: int
    evidence_chars: int
    counter: _CallCounter
    grader: Model
    grader_timeout: float
    attempts: list[Attempt] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    async def search(self, query: str, *, first: bool) -> list[Chunk]:
        tool = _search_tool(self.rag)
        try:
            chunks = await _retrieve(self.rag, tool, query, self.top_k, self.deps)
        except ModelRetry as e:
            if first:  # the caller's own question: theirs to fix
                raise InvalidRequestError(f'the search for the question was refused: {e}') from None
            self.attempts.append(Attempt(query=query, hits=0, error=str(e)))
            self.notes.append(f'the rewritten query was refused: {e}')
            return []
        self.attempts.append(Attempt(query=query, hits=len(chunks)))
        return chunks

    async def sufficient(self, chunks: Sequence[Chunk]) -> tuple[bool, str]:
        """The grader's verdict on the passages the answer would get; ``True`` when it fails."""
        used, _ = _within_budget(chunks, self.evidence_chars)
        prompt = f'Question: {self.question}\n\nPassages:\n\n{_passages(used)}'
        grade = await _small_call(self.grader, _GRADE_INSTRUCTIONS, _Grade, prompt, self.counter, self.grader_timeout)
        if not isinstance(grade, _Grade):
            self.notes.append(f'the grader failed ({grade}); the passages were taken as good enough')
            return True, ''
        return grade.sufficient, grade.reason

    async def rewrite(self, chunks: Sequence[Chunk], reason: str) -> str | None:
        used, _ = _within_budget(chunks, min(self.evidence_chars, 4000))
        shown = f'\n\nPassages found so far:\n\n{_passages(used)}' if used else ''
        missing = f'\n\nWhat they lack: {reason}' if reason else ''
        prompt = f'Question: {self.question}{missing}{shown}'
        rewritten = await _small_call(
            self.grader, _REWRITE_INSTRUCTIONS, _Rewrite, prompt, self.counter, self.grader_timeout
        )
        if not isinstance(rewritten, _Rewrite):
            self.notes.append(f'the query rewrite failed ({rewritten}); no second search')
            return None
        query = rewritten.query.strip()
        if not query or query == self.question.strip():
            self.notes.append('the rewrite gave no new query; no second search')
            return None
        return query

    async def retrieve(self) -> list[Chunk]:
        """Search, grade, and search once more with a rewritten query when the grade says so."""
        chunks = await self.search(self.question, first=True)
        if chunks:
            enough, reason = await self.sufficient(chunks)
        else:
            enough, reason = False, 'the search found nothing'
        if enough:
            return chunks
        query = await self.rewrite(chunks, reason)
        if query is None:
            return chunks
        return _merge(chunks, await self.search(query, first=False))


async def ask(
    rag: GroundingSource,
    question: str,
    *,
    model: Model | str,
    deps: Any = None,
    grader_model: Model | str | None = None,
    semantic_model: Model | str | None = None,
    top_k: int = 8,
    evidence_chars: int = 10_000,
    min_quote_chars: int = DEFAULT_MIN_QUOTE_CHARS,
    grader_timeout: float = GRADER_TIMEOUT_S,
) -> AskResult:
    """Answer ``question`` from ``rag``'s documents with verified citations, in bounded steps.

    Args:
        rag: the toolset to search (its scope filters apply; ``deps`` feeds per-run ones).
        question: the user's question (also the first search query).
        model: the answer model (a pydantic-ai model string or `Model`).
        deps: the run dependencies, for scope filters that read ``ctx.deps``.
        grader_model: a smaller model for the grade and the query rewrite (default: ``model``).
        semantic_model: a model for the optional semantic check (one more call; never a gate).
        top_k: passages per search.
        evidence_chars: the answer prompt's budget of passage source text, in characters.
        min_quote_chars: the shortest quote accepted.
        grader_timeout: seconds the grader and the rewriter may take.

    Raises:
        InvalidRequestError: the question is empty or cannot be searched as written.
    """
    if not question.strip():
        raise InvalidRequestError('ask needs a non-empty question')
    if evidence_chars < 1:
        raise ValueError('evidence_chars must be at least 1')
    # Built first so a store Grounding refuses (no lookup by id) fails before any model call.
    grounding: Grounding[Any] = Grounding(rag, min_quote_chars=min_quote_chars, repairs=ANSWER_REPAIRS)
    answer_model = infer_model(model)
    counter = _CallCounter()
    grader = infer_model(grader_model) if grader_model is not None else answer_model
    run = _Run(rag, question, deps, top_k, evidence_chars, counter, grader, grader_timeout)
    chunks = await run.retrieve()
    used, left_out = _within_budget(chunks, evidence_chars)

    def result(answer: GroundedAnswer, *, grounded: bool, problems: Sequence[str] = (), **extra: Any) -> AskResult:
        return AskResult(
            question=question,
            answer=answer,
            grounded=grounded,
            attempts=tuple(run.attempts),
            used=tuple(c.id for c in used),
            left_out=tuple(c.id for c in left_out),
            model_calls=counter.calls,
            problems=tuple(problems),
            notes=tuple(run.notes),
            **extra,
        )

    if not used:
        missing = 'No passage in the documents matched the question.'
        return result(_insufficient(missing), grounded=False, problems=[missing])
    agent = _answer_agent(answer_model, replace(grounding, extra_seen=used), counter)
    prompt = f'Question: {question}\n\nPassages:\n\n{_passages(used)}'
    try:
        answered = await agent.run(prompt, deps=deps, usage_limits=UsageLimits(request_limit=1 + ANSWER_REPAIRS))
    except UngroundedAnswerError as e:
        reasons = [p.message() for p in e.problems]
        return result(
            _insufficient('The answer could not be backed by exact quotes.'), grounded=False, problems=reasons
        )
    except AgentRunError as e:
        reason = f'the answer model did not give a usable answer ({_failed("the answer model", e)})'
        return result(_insufficient('No usable answer was produced.'), grounded=False, problems=[reason])
    semantic = None
    if semantic_model is not None and answered.output.claims:
        semantic = await judge_claims(answered.output, semantic_model, capabilities=[counter])
    return result(answered.output, grounded=True, semantic=semantic)


def _answer_agent(model: Model, grounding: Grounding[Any], counter: _CallCounter) -> Agent[Any, GroundedAnswer]:
    """The answer agent: no tools (the passages are in its prompt), verified output, one repair, counted calls."""
    return Agent(
        model,
        output_type=GroundedAnswer,
        instructions=_ANSWER_INSTRUCTIONS,
        capabilities=[grounding, counter],
        retries={'output': ANSWER_REPAIRS, 'tools': 0},
    )


def _failed(who: str, error: Exception) -> str:
    """A failed model call as the result says it: the exception type only, the detail to the log.

    An error's text can hold a provider's response body; `AskResult` goes to end users (the web
    example returns it), so only the type goes there.
    """
    _log.warning('ask: %s failed: %s: %s', who, type(error).__name__, error)
    return type(error).__name__


def _insufficient(missing: str) -> GroundedAnswer:
    return GroundedAnswer(status='insufficient_evidence', claims=[], missing=missing)
