"""`RagCapability`: a collection as one pydantic-ai capability, the primary way to give an agent retrieval.

``Agent(model, capabilities=[rag.capability()])`` carries the tools and their instructions, eager
searches (as data before the prompt), grounding of a `GroundedAnswer` output, evidence
compaction with one-line references, and an optional search budget; ``defer_loading=True`` shows
only pydantic-ai's catalog entry until the model loads it. Serialisable as ``ToolishRag`` in an
agent spec (`from_spec`). See docs/capabilities.md and docs/compaction.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.agent import AbstractAgent
from pydantic_ai.capabilities import AbstractCapability, CombinedCapability, WrapToolExecuteHandler
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolResultSource,
)
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.output import OutputContext
from pydantic_ai.tools import AgentDepsT, ToolDefinition
from pydantic_ai.toolsets import AbstractToolset

from .._evidence import LEDGER_KEY, EagerResultsPart, EvidenceLedger, offered_readers, opens_turn
from ..citations._quotes import DEFAULT_MIN_QUOTE_CHARS
from ..grounded._capability import DEFAULT_REPAIRS, Grounding, grounded_output
from ..toolset import ToolishRag
from ._budget import budget_sentence, refusal, spent_return
from ._compaction import compacted, plan_compaction, visible_whole
from ._references import with_references
from ._spec import SERIALIZATION_NAME, rag_from_spec
from ._tools import SearchFirst, is_search

__all__ = ['DEFAULT_COMPACTION_BUDGET', 'RagCapability']

DEFAULT_COMPACTION_BUDGET = 4_000
"""Characters of evidence carried whole since the last boundary before the next turn compacts it (docs/compaction.md)."""


@dataclass
class RagCapability(AbstractCapability[AgentDepsT]):
    """A `ToolishRag` collection as a pydantic-ai capability (``rag.capability(**options)``).

    Args:
        rag: the collection (its tools, scope, listeners and eager searches).
        grounding: verify a `GroundedAnswer` output against the evidence ledger (inert for other outputs).
        compaction: shrink earlier questions' evidence to receipts in what the model is sent.
        compaction_budget: characters of evidence carried whole before a turn start compacts it.
        references: a chunk whose text is already on view comes back from a search as a one-line reference.
        search_budget: searches per question (at least 2), announced in the instructions; ``None``: no budget.
        budget_grace_requests: model requests the reading tools keep working after the searches ran out.
        tool_search: show only the search tools; the others wait behind pydantic-ai's `ToolSearch`.
        min_quote_chars, repairs: as `Grounding`'s.
        id, description, defer_loading: pydantic-ai's (``id`` defaults to the collection's name).
    """

    rag: ToolishRag[AgentDepsT]
    grounding: bool = True
    compaction: bool = True
    compaction_budget: int = DEFAULT_COMPACTION_BUDGET
    references: bool = True
    search_budget: int | None = None
    budget_grace_requests: int = 2
    tool_search: bool = False
    min_quote_chars: int = DEFAULT_MIN_QUOTE_CHARS
    repairs: int = DEFAULT_REPAIRS
    _verifier: Grounding[AgentDepsT] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.id is None:
            self.id = self.rag.name
        if self.description is None:
            about = self.rag.settings.description
            self.description = f'Search and read the "{self.rag.name}" documents' + (f': {about}' if about else '')
        if self.search_budget is not None and self.search_budget < 2:
            raise ValueError('search_budget must be at least 2 (or None for no budget)')
        if self.budget_grace_requests < 0 or self.compaction_budget < 0:
            raise ValueError('budget_grace_requests and compaction_budget must be 0 or more')

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return SERIALIZATION_NAME

    @classmethod
    def from_spec(
        cls,
        store: str,
        name: str = 'docs',
        *,
        embedder: str | None = None,
        filterable: dict[str, str] | None = None,
        filter: dict[str, Any] | str | None = None,
        description: str | None = None,
        language: str | None = None,
        id: str | None = None,
        defer_loading: bool = False,
        grounding: bool = True,
        compaction: bool = True,
        search_budget: int | None = None,
        tool_search: bool = False,
    ) -> RagCapability[Any]:
        """From an agent spec: ``{'ToolishRag': {'store': 'lancedb:./kb', 'name': 'docs', ...}}`` (docs/capabilities.md).

        ``store`` is a store spec string as the CLI's ``--store`` takes; ``filterable`` maps keys to
        ``int``/``float``/``str``/``bool``/``a|b|c``; ``filter`` is the hidden scope (``KEY: VALUE``
        pairs, or a filter's JSON).
        """
        rag = rag_from_spec(
            store,
            name,
            embedder=embedder,
            filterable=filterable,
            filter=filter,
            description=description,
            language=language,
        )
        return cls(
            rag,
            id=id,
            defer_loading=defer_loading,
            grounding=grounding,
            compaction=compaction,
            search_budget=search_budget,
            tool_search=tool_search,
        )

    def _copy(self) -> RagCapability[AgentDepsT]:
        copy = replace(self)
        copy._verifier = self._verifier
        return copy

    def for_agent(self, agent: AbstractAgent[AgentDepsT, Any]) -> AbstractCapability[AgentDepsT]:
        """Bound to the agent: with a `GroundedAnswer` output (and ``grounding``), verifying it.

        A deferred capability's hooks wait until the model loads it, but an answer must be verified
        whether or not it did: then grounding goes alongside, as an always-on `Grounding`.
        """
        if not self.grounding or not grounded_output(agent.output_type):
            return self
        verifier = Grounding(self.rag, min_quote_chars=self.min_quote_chars, repairs=self.repairs)
        if self.defer_loading:
            return CombinedCapability([self, verifier])
        bound = self._copy()
        bound._verifier = verifier
        return bound

    async def for_run(self, ctx: RunContext[AgentDepsT]) -> RagCapability[AgentDepsT]:
        run = self._copy()  # the verifier counts its rejections per run
        if self._verifier is not None:
            run._verifier = await self._verifier.for_run(ctx)
        return run

    # -- what the model is given ------------------------------------------------------------

    def get_toolset(self) -> AbstractToolset[AgentDepsT]:
        return SearchFirst(self.rag, self.rag) if self.tool_search else self.rag

    def get_instructions(self) -> str | None:
        parts = []
        if self.search_budget is not None:
            parts.append(budget_sentence(self.search_budget, self.budget_grace_requests))
        if self._verifier is not None:
            parts.append(self._verifier.get_instructions())
        return '\n'.join(parts) or None

    async def before_model_request(
        self, ctx: RunContext[AgentDepsT], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        if not _eager_sent(request_context.messages, self.rag.name):
            await self._send_eager(ctx)
        if self.compaction:
            readers = self._readers()
            messages = request_context.messages
            ledger = EvidenceLedger.from_messages(messages, self.rag.name, tools=readers)
            plan = plan_compaction(messages, self.rag.name, readers, self.compaction_budget)
            request_context.messages = compacted(messages, ledger, readers, plan)
        return request_context

    async def _send_eager(self, ctx: RunContext[AgentDepsT]) -> None:
        """The eager searches' results, as data parts before the prompt (never instructions), hits in metadata."""
        if not self.rag.eager_searches:
            return
        name = self.rag.name
        for result in await self.rag.eager_results(ctx):
            metadata = {'rag': name, 'tool': 'eager_search', 'hits': list(result.hits), 'query': result.search.query}
            source = ToolResultSource(tool_name=f'{name}_eager_search')
            part = EagerResultsPart(content=result.text, source=source, collection=name, metadata=metadata)
            ctx.enqueue(part, placement='before_prompt')

    async def after_model_request(
        self, ctx: RunContext[AgentDepsT], *, request_context: ModelRequestContext, response: ModelResponse
    ) -> ModelResponse:
        """Stamp the ledger's snapshot on the response: it survives a history processor that drops old returns."""
        ledger = EvidenceLedger.from_messages([*ctx.messages, response], self.rag.name, tools=self._readers())
        if not ledger.shown:
            return response
        metadata = dict(response.metadata or {})
        metadata[LEDGER_KEY] = {**metadata.get(LEDGER_KEY, {}), self.rag.name: ledger.snapshot()}
        return replace(response, metadata=metadata)

    # -- tool calls: budget and references -------------------------------------------------

    async def wrap_tool_execute(
        self,
        ctx: RunContext[AgentDepsT],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: Any,
        handler: WrapToolExecuteHandler,
    ) -> Any:
        short = self._short_name(call.tool_name)
        if short is None:
            return await handler(args)
        refused = self._refused(ctx, call, short)
        if refused is not None:
            return refused
        result = await handler(args)
        if self.references and is_search(short):
            result = await self._referenced(ctx, result)
        return result

    def _refused(self, ctx: RunContext[AgentDepsT], call: ToolCallPart, short: str) -> Any:
        if self.search_budget is None:
            return None
        searches = [n for s, n in zip(self.rag.offered_tools, self.rag.tool_names, strict=True) if is_search(s)]
        text = refusal(
            ctx.messages,
            call.tool_call_id,
            searching=is_search(short),
            searches=searches,
            limit=self.search_budget,
            grace=self.budget_grace_requests,
        )
        return None if text is None else spent_return(self.rag.name, short, text)

    async def _referenced(self, ctx: RunContext[AgentDepsT], result: Any) -> Any:
        readers = self._readers()
        scope = self.rag.retriever(ctx).filter
        ledger = EvidenceLedger.from_messages(ctx.messages, self.rag.name, tools=readers, scope=scope)
        plan = (
            plan_compaction(ctx.messages, self.rag.name, readers, self.compaction_budget) if self.compaction else None
        )
        return with_references(result, visible_whole(ctx.messages, ledger, readers, plan), ledger.shown)

    def _short_name(self, full: str) -> str | None:
        for short, name in zip(self.rag.offered_tools, self.rag.tool_names, strict=True):
            if name == full:
                return short
        return None

    def _readers(self) -> frozenset[str]:
        return offered_readers(self.rag.offered_tools, self.rag.tool_names)

    # -- grounding ---------------------------------------------------------------------------

    async def after_output_validate(
        self, ctx: RunContext[AgentDepsT], *, output_context: OutputContext, output: Any
    ) -> Any:
        if self._verifier is None:
            return output
        return await self._verifier.after_output_validate(ctx, output_context=output_context, output=output)

    async def after_output_process(
        self, ctx: RunContext[AgentDepsT], *, output_context: OutputContext, output: Any
    ) -> Any:
        if self._verifier is None:
            return output
        return await self._verifier.after_output_process(ctx, output_context=output_context, output=output)


def _eager_sent(messages: Sequence[ModelMessage], rag: str) -> bool:
    """Whether this question's request already holds ``rag``'s eager results (they go once per question)."""
    for message in reversed(messages):
        if not isinstance(message, ModelRequest):
            continue
        if any(isinstance(p, EagerResultsPart) and (p.metadata or {}).get('rag') == rag for p in message.parts):
            return True
        if opens_turn(message):
            return False
    return False
