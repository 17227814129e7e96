"""`ToolishRag`: a pydantic-ai toolset offering what a store can do (its `StoreFeatures`) as tools.

A facade over the tool specs (`toolish_rag.toolset._tools`), the settings (`RagSettings`) and the one
call path (`_calls`); each ``with_*`` returns a new toolset. See docs/concepts.md and docs/toolset.md.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Generic, Self, Unpack

from pydantic import ValidationError
from pydantic_ai import ModelRetry, RunContext, Tool
from pydantic_ai.capabilities import AbstractCapability, Toolset as ToolsetCapability
from pydantic_ai.messages import ToolReturn
from pydantic_ai.tools import AgentDepsT, ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from .._tool_names import TOOL_NAMES, ToolName, tool_name
from ..grounded._ask import AskResult, ask as grounded_ask
from ..grounded._capability import Grounding, SemanticListener
from ..protocols import StoreFeatures, StoreLike
from ..rerank._base import Reranker
from ..retriever import Retriever
from ..search import QUERY_RULE
from ._arguments import tool_schema
from ._calls import ToolCalls
from ._direct import direct_context
from ._eager import EagerResult, EagerSearch, eager_result
from ._events import RagListener
from ._exposed import exposed_names, mark
from ._factory import capability_factory
from ._instructions import build_instructions
from ._retries import BoundedArgsValidator, retry_message
from ._settings import FilterSource, RagOptions, RagSettings
from ._spec import ToolEnv
from ._tools import SPECS

if TYPE_CHECKING:
    from pydantic_ai.models import Model

__all__ = ['TOOL_NAMES', 'EagerResult', 'EagerSearch', 'FilterSource', 'RagSettings', 'ToolName', 'ToolishRag']

_SPECS = {spec.name: spec for spec in SPECS}


@dataclass(frozen=True)
class _State:
    """A toolset: its store, the protocols it implements, its settings, and what ``with_*`` added on top (more
    scope, listeners, eager searches). Detected once per store: a `with_*` copy keeps its original's (the same
    store), so a scoped copy per request reads no manifest, and every copy offers the tools its original lists."""

    store: StoreLike
    features: StoreFeatures
    settings: RagSettings
    filters: tuple[FilterSource, ...] = ()
    listeners: tuple[RagListener, ...] = ()
    eager: tuple[EagerSearch, ...] = ()


class ToolishRag(AbstractToolset[AgentDepsT], Generic[AgentDepsT]):
    """Retrieval tools over ``store``, detected from the store protocols it implements.

    ``ToolishRag(store, settings)`` takes a `RagSettings`; keyword options are its fields
    (``ToolishRag(store, name='docs', max_top_k=20)``), an unknown one a `TypeError`. The options
    are documented on `RagSettings`; how the tools and scope work: docs/concepts.md.
    """

    def __init__(self, store: StoreLike, settings: RagSettings | None = None, **options: Unpack[RagOptions]) -> None:
        self._configure(_State(store, StoreFeatures.of(store), (settings or RagSettings()).changed(**options)))

    def __replace__(self, **changes: Any) -> Self:
        """A copy with these `_State` fields changed (``copy.replace`` on Python 3.13): how every ``with_*`` copies.

        A copy with the same settings (a narrower scope, another listener, an eager search) keeps the
        declared tools: a scoped copy per request builds no schema.
        """
        copied = copy.copy(self)
        state = replace(self._state, **changes)
        copied._configure(state, self._calls.wrapped if state.settings is self._state.settings else None)
        return copied

    def _configure(self, state: _State, declared: AbstractToolset[AgentDepsT] | None = None) -> None:
        """Everything a toolset derives from its state, for the constructor and for `__replace__` alike."""
        self._state = state
        settings = state.settings
        self._store_features = state.features
        offered = self._offered()
        if declared is None:
            # Built once: the filter's schema is the same for every run (and get_tools runs per model request).
            filters = settings.model_filters
            schema = filters.json_schema() if filters is not None else None
            env = ToolEnv(settings, state.store, state.features, schema)
            self._declared = {t: _SPECS[t].build(env) for t in offered}
            declared = FunctionToolset(self._tools(), max_retries=settings.max_retries)
        scope = tuple(f for f in (settings.metadata_filter, settings.entity_filter) if f is not None)
        listeners = (settings.listener,) if settings.listener is not None else ()
        self._calls: ToolCalls[AgentDepsT] = ToolCalls(
            declared,
            store=state.store,
            settings=settings,
            filters=(*scope, *state.filters),
            listeners=(*listeners, *state.listeners),
            short_names={tool_name(settings.name, t): t for t in offered},
        )
        # `run_tool`'s tools: outside a run they depend on the configuration alone (no tool has a
        # `prepare` function, and a direct context carries no retries), so they are built once.
        self._direct_tools: dict[str, ToolsetTool[AgentDepsT]] | None = None

    def _tools(self) -> list[Tool[AgentDepsT]]:
        """The offered tools, as their specs declared them for these settings (`Declared.function`)."""
        store, settings = self._state.store, self._state.settings
        return [
            Tool(
                declared.function(short),
                name=tool_name(settings.name, short),
                description=_SPECS[short].describe(store, settings),
                takes_ctx=False,
            )
            for short, declared in self._declared.items()
        ]

    # -- immutable configuration ------------------------------------------------------------

    @property
    def settings(self) -> RagSettings:
        """The options this toolset was built with (`with_settings` changes them in a copy)."""
        return self._state.settings

    def with_settings(self, **changes: Unpack[RagOptions]) -> ToolishRag[AgentDepsT]:
        """A copy with these `RagSettings` fields changed (``rag.with_settings(max_top_k=20)``)."""
        return self.__replace__(settings=self._state.settings.changed(**changes))

    def with_metadata_filter(self, filter: FilterSource) -> ToolishRag[AgentDepsT]:
        """A copy narrowed by ``filter`` (ANDed with the filters already set: never wider).

        ``filter`` is any `Filter` (property and label predicates alike) or a function of the
        `RunContext` returning one.
        """
        return self.__replace__(filters=(*self._state.filters, filter))

    def with_entity_filter(self, filter: FilterSource) -> ToolishRag[AgentDepsT]:
        """Deprecated: `with_metadata_filter` takes label scopes (``EntityFilter.has_any_label(...)``) too.

        Labels are a field of every record, so a label filter is a metadata filter like any other.
        """
        warnings.warn(
            'ToolishRag.with_entity_filter is deprecated: call with_metadata_filter, which takes label filters too',
            DeprecationWarning,
            stacklevel=2,
        )
        return self.with_metadata_filter(filter)

    def with_eager_search_about(self, query: str, top_k: int = 5) -> ToolishRag[AgentDepsT]:
        """A copy that searches ``query`` at the start of every run of its capability (`capability`).

        The results reach the model as data before the prompt (an `EagerResultsPart`), never in the
        instructions. Uses hybrid search when the store can, else vector, else text; the run's scope
        filters apply and listeners fire. The tools stay available.
        """
        if not self._store_features.any_search:
            raise ValueError(f'{type(self._state.store).__name__} has no search to preload results with')
        if not query.strip():
            raise ValueError('eager search needs a non-empty query')
        QUERY_RULE.check(query)  # an InvalidRequestError (a ValueError) now, not at the first run
        max_top_k = self._state.settings.max_top_k
        if not 1 <= top_k <= max_top_k:
            raise ValueError(f'top_k must be between 1 and {max_top_k}')
        return self.__replace__(eager=(*self._state.eager, EagerSearch(query, top_k)))

    def with_reranker(self, reranker: Reranker | None, *, candidates: int | None = None) -> ToolishRag[AgentDepsT]:
        """A copy whose ranked searches are reranked by ``reranker`` (``None``: not reranked).

        ``candidates`` sets ``rerank_candidates`` (kept as it is when omitted).
        """
        if candidates is None:
            return self.with_settings(reranker=reranker)
        return self.with_settings(reranker=reranker, rerank_candidates=candidates)

    def with_listener(self, listener: RagListener) -> ToolishRag[AgentDepsT]:
        """A copy that also calls ``listener`` with a `RagEvent` for every tool call and eager search."""
        return self.__replace__(listeners=(*self._state.listeners, listener))

    def without_tools(self, *names: ToolName) -> ToolishRag[AgentDepsT]:
        """A copy that does not offer these tools (short names, e.g. ``'regex_search'``)."""
        return self.with_settings(exclude_tools=frozenset(self._state.settings.exclude_tools) | set(names))

    def grounding(
        self,
        *,
        min_quote_chars: int = 12,
        repairs: int = 1,
        semantic_model: Model | str | None = None,
        on_semantic: SemanticListener | None = None,
    ) -> Grounding[AgentDepsT]:
        """A capability that verifies a `GroundedAnswer` output against this toolset's retrievals.

        ``Agent(..., toolsets=[rag], output_type=GroundedAnswer, capabilities=[rag.grounding()])``:
        every cited chunk must have reached the model through this toolset in the conversation and
        be in the run's scope, every quote must stand in its chunk; a failed check is sent back for
        ``repairs`` repairs, then raises `UngroundedAnswerError`. See docs/grounded.md.
        """
        return Grounding(
            self,
            min_quote_chars=min_quote_chars,
            repairs=repairs,
            semantic_model=semantic_model,
            on_semantic=on_semantic,
        )

    async def ask(
        self,
        question: str,
        *,
        model: Model | str,
        deps: Any = None,
        grader_model: Model | str | None = None,
        semantic_model: Model | str | None = None,
        top_k: int = 8,
        evidence_chars: int = 10_000,
        min_quote_chars: int = 12,
        grader_timeout: float = 30.0,
    ) -> AskResult:
        """Retrieve, grade, rewrite once if needed, answer with verified citations: a bounded loop.

        At most 2 retrievals and 6 model calls; an empty retrieval calls no answer model. See
        `toolish_rag.grounded._ask` and docs/grounded.md.
        """
        return await grounded_ask(
            self,
            question,
            model=model,
            deps=deps,
            grader_model=grader_model,
            semantic_model=semantic_model,
            top_k=top_k,
            evidence_chars=evidence_chars,
            min_quote_chars=min_quote_chars,
            grader_timeout=grader_timeout,
        )

    def as_capability(self) -> ToolsetCapability[AgentDepsT]:
        """This toolset in pydantic-ai's bare `Toolset` capability (no eager search, grounding or compaction).

        `capability` is the full one.
        """
        return ToolsetCapability(self)

    def capability(self, **options: Any) -> AbstractCapability[AgentDepsT]:
        """This collection as a pydantic-ai capability: tools, instructions, eager search, grounding, compaction.

        ``Agent(model, capabilities=[rag.capability()])``; the options are the fields of
        `toolish_rag.capability.RagCapability` (``compaction=``, ``grounding=``, ``search_budget=``,
        ``defer_loading=``, ``tool_search=``, ``id=``, ``description=``...), which it returns. See
        docs/capabilities.md.
        """
        built: AbstractCapability[AgentDepsT] = capability_factory()(self, **options)
        return built

    # -- introspection ----------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self._state.settings.name

    @property
    def store(self) -> StoreLike:
        return self._state.store

    @property
    def store_features(self) -> StoreFeatures:
        """Which search and navigation protocols the store implements, and so which tools it can serve."""
        return self._store_features

    @property
    def store_capabilities(self) -> StoreFeatures:
        """Deprecated: `store_features` (renamed: pydantic-ai's capabilities are agent extensions)."""
        warnings.warn('ToolishRag.store_capabilities is renamed store_features', DeprecationWarning, stacklevel=2)
        return self._store_features

    @property
    def tool_names(self) -> list[str]:
        """The full names of the tools this toolset offers, as a model calls them (``docs_vector_search``)."""
        return [tool_name(self.name, t) for t in self._offered()]

    @property
    def offered_tools(self) -> list[ToolName]:
        """The short names of the tools this toolset offers (``vector_search``), in `tool_names` order."""
        return self._offered()

    def _offered(self) -> list[ToolName]:
        settings, caps = self._state.settings, self._store_features
        return [s.name for s in SPECS if s.offered(caps, settings) and s.name not in settings.exclude_tools]

    def retriever(self, ctx: RunContext[Any] | None = None) -> Retriever:
        """The scoped `Retriever` for a run (static filters, plus per-run ones when ``ctx`` is given)."""
        return self._calls.retriever(ctx)

    # -- direct use, outside an agent run ------------------------------------------------------

    async def tool_definitions(self, deps: Any = None) -> list[ToolDefinition]:
        """The tool definitions (names, descriptions, JSON schemas) exactly as a model sees them."""
        tools = await self.get_tools(direct_context(deps))
        return [t.tool_def for t in tools.values()]

    async def instructions(self, deps: Any = None) -> str | None:
        """The instructions this toolset contributes to a run (never search results: see `eager_results`)."""
        return await self.get_instructions(direct_context(deps))

    @property
    def eager_searches(self) -> tuple[EagerSearch, ...]:
        """The searches `with_eager_search_about` added, run at the start of every run of the capability."""
        return self._state.eager

    async def eager_results(self, ctx: RunContext[Any] | None = None, *, deps: Any = None) -> list[EagerResult]:
        """Run the eager searches in the run's scope (``ctx``'s, else a direct context with ``deps``).

        Their spans and listener events fire as for a tool call (tool ``eager_search``).
        """
        ctx = ctx if ctx is not None else direct_context(deps)
        retriever, traced = self.retriever(ctx), self._calls.tracing(ctx)
        return [await eager_result(self._calls, self._store_features, e, retriever, traced) for e in self._state.eager]

    async def run_tool(self, tool: str, arguments: Mapping[str, Any], *, deps: Any = None) -> ToolReturn:
        """Call one tool as an agent would, outside an agent run (CLI, MCP server, tests).

        ``tool`` is the short or full name. Arguments are validated against the tool's schema;
        bad ones raise ``ModelRetry`` with a message as short as a model's would be (at most
        `~toolish_rag.toolset._retries.MAX_RETRY_CHARS` characters, whatever was sent).
        """
        ctx = direct_context(deps)
        tools = self._direct_tools
        if tools is None:
            tools = self._direct_tools = await self.get_tools(ctx)
        full = tool if tool in tools else tool_name(self.name, tool)
        if full not in tools:
            raise ValueError(f'{tool!r} is not offered by this toolset; it offers {sorted(tools)}')
        toolset_tool = tools[full]
        try:
            args = toolset_tool.args_validator.validate_python(dict(arguments))
        except ValidationError as e:  # already bounded by the tool's BoundedArgsValidator
            raise ModelRetry(retry_message(f'invalid arguments for {full}: {e}')) from None
        result = await self.call_tool(full, args, replace(ctx, tool_name=full), toolset_tool)
        assert isinstance(result, ToolReturn)
        return result

    # -- AbstractToolset ----------------------------------------------------------------------

    @property
    def id(self) -> str | None:
        return self._state.settings.id or self.name

    @property
    def _tool_marker(self) -> str:
        """What marks this toolset's tool definitions (`_exposed.mark`): its id, unique on an agent."""
        return self.id or self.name

    @property
    def _short_names(self) -> dict[str, ToolName]:
        """Full name -> short name of the offered tools."""
        return {tool_name(self.name, t): t for t in self._offered()}

    @property
    def label(self) -> str:
        return f'ToolishRag {self.name!r}'

    @property
    def tool_name_conflict_hint(self) -> str:
        return 'Give each ToolishRag on an agent its own `name` (it prefixes the tool names).'

    async def get_instructions(self, ctx: RunContext[AgentDepsT]) -> str | None:
        return self.instructions_naming(self._offered(), ctx)

    def instructions_naming(self, tools: Sequence[ToolName], ctx: RunContext[Any] | None = None) -> str | None:
        """The instructions as they read when the model can see only ``tools`` (short names) of this toolset.

        The capability uses it when it hides tools (``tool_search=True``): no instruction names a tool
        the model cannot see.
        """
        settings = self._state.settings
        offered = [t for t in self._offered() if t in tools]
        takes_filter = any('filter' in self._declared[t].names for t in offered)
        filters = settings.model_filters.describe() if settings.model_filters is not None and takes_filter else None
        names = self._exposed_names(ctx, offered)
        return build_instructions(settings.name, settings.description, names, filters, settings.allow_grouping)

    def _exposed_names(self, ctx: RunContext[Any] | None, offered: list[ToolName]) -> dict[ToolName, str]:
        """The offered tools by the names the model sees this step (through any wrapper): see `_exposed`."""
        own = {t: tool_name(self.name, t) for t in offered}
        return own if ctx is None else exposed_names(ctx, self._tool_marker, own)

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        # The tools are declared in an inner FunctionToolset, wrapped by the call path; stamp them as ours,
        # as pydantic-ai's own wrappers do, so `tool.toolset` is this toolset: a CombinedToolset then gives
        # each tool definition our `id` (durable execution names its activities after it) and errors name us.
        # Their schemas are made compact, and their validators say a refused argument as a retry.
        tools = await self._calls.get_tools(ctx)
        short = self._calls.short_names
        return {
            name: replace(
                tool,
                toolset=self,
                tool_def=mark(
                    replace(tool.tool_def, parameters_json_schema=tool_schema(tool.tool_def.parameters_json_schema)),
                    self._tool_marker,
                    short[name],
                ),
                args_validator=BoundedArgsValidator(tool.args_validator),
            )
            for name, tool in tools.items()
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[AgentDepsT], tool: ToolsetTool[AgentDepsT]
    ) -> Any:
        return await self._calls.call_tool(name, tool_args, ctx, tool)
