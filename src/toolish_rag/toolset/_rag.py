"""`ToolishRag`: a pydantic-ai toolset offering a store's capabilities as tools.

A facade over the tool specs (`toolish_rag.toolset._tools`), the settings (`RagSettings`) and the one
call path (`_calls`); each ``with_*`` returns a new toolset. See docs/concepts.md and docs/toolset.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Generic, Unpack

from pydantic import ValidationError
from pydantic_ai import ModelRetry, RunContext, Tool
from pydantic_ai.capabilities import Toolset as ToolsetCapability
from pydantic_ai.messages import ToolReturn
from pydantic_ai.tools import AgentDepsT, ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from ..grounded._ask import AskResult, ask as grounded_ask
from ..grounded._capability import Grounding, SemanticListener
from ..protocols import StoreCapabilities, StoreLike
from ..rerank._base import Reranker
from ..retriever import Retriever
from ..search import QUERY_RULE, SearchHit
from ..stores.federated import Federated
from ._calls import ToolCalls
from ._direct import direct_context
from ._eager import EagerRun, EagerSearch, eager_text
from ._events import RagListener
from ._exposed import exposed_names, mark
from ._instructions import build_instructions
from ._names import TOOL_NAMES, ToolName, tool_name
from ._retries import BoundedArgsValidator, retry_message
from ._settings import FilterSource, RagOptions, RagSettings
from ._spec import ToolEnv
from ._tools import SPECS, string_arguments

if TYPE_CHECKING:
    from pydantic_ai.models import Model

__all__ = ['TOOL_NAMES', 'EagerSearch', 'FilterSource', 'RagSettings', 'ToolName', 'ToolishRag']

_FILTER_DESCRIPTION = (
    'Optional: narrow the results by metadata. Keys and operators are as this schema shows: '
    'a value means equals, an object of operators must all hold, any_of matches one of '
    'several condition objects, not excludes one.'
)


@dataclass(frozen=True)
class _State:
    """A toolset: its store and settings, and what ``with_*`` added on top (more scope, listeners, eager searches)."""

    store: StoreLike
    settings: RagSettings
    filters: tuple[FilterSource, ...] = ()
    listeners: tuple[RagListener, ...] = ()
    eager: tuple[EagerSearch, ...] = ()


class ToolishRag(AbstractToolset[AgentDepsT], Generic[AgentDepsT]):
    """Retrieval tools over ``store``, detected from the capability protocols it implements.

    ``ToolishRag(store, settings)`` takes a `RagSettings`; keyword options are its fields
    (``ToolishRag(store, name='docs', max_top_k=20)``), an unknown one a `TypeError`. The options
    are documented on `RagSettings`; how the tools and scope work: docs/concepts.md.
    """

    def __init__(self, store: StoreLike, settings: RagSettings | None = None, **options: Unpack[RagOptions]) -> None:
        self._init(_State(store, (settings or RagSettings()).changed(**options)))

    def _init(self, state: _State, eager_run: EagerRun | None = None) -> None:
        self._state = state
        settings = state.settings
        self._store_capabilities = StoreCapabilities.of(state.store)
        self._eager_run = eager_run
        scope = tuple(f for f in (settings.metadata_filter, settings.entity_filter) if f is not None)
        listeners = (settings.listener,) if settings.listener is not None else ()
        self._calls = ToolCalls(
            state.store,
            settings,
            (*scope, *state.filters),
            (*listeners, *state.listeners),
            string_arguments(settings),
        )
        # Built once: the filter's schema is the same for every run (and get_tools runs per model request).
        filters = settings.model_filters
        self._filter_schema = filters.json_schema() if filters is not None else None
        self._functions: FunctionToolset[AgentDepsT] = FunctionToolset(
            self._build_tools(), max_retries=settings.max_retries
        )
        # `run_tool`'s tools: outside a run they depend on the configuration alone (no tool has a
        # `prepare` function, and a direct context carries no retries), so they are built once.
        self._direct_tools: dict[str, ToolsetTool[AgentDepsT]] | None = None

    @classmethod
    def _from(cls, state: _State, eager_run: EagerRun | None = None) -> ToolishRag[AgentDepsT]:
        obj = cls.__new__(cls)
        obj._init(state, eager_run)
        return obj

    # -- immutable configuration ------------------------------------------------------------

    @property
    def settings(self) -> RagSettings:
        """The options this toolset was built with (`with_settings` changes them in a copy)."""
        return self._state.settings

    def with_settings(self, **changes: Unpack[RagOptions]) -> ToolishRag[AgentDepsT]:
        """A copy with these `RagSettings` fields changed (``rag.with_settings(max_top_k=20)``)."""
        return self._from(replace(self._state, settings=self._state.settings.changed(**changes)))

    def with_metadata_filter(self, filter: FilterSource) -> ToolishRag[AgentDepsT]:
        """A copy narrowed by ``filter`` (ANDed with the filters already set: never wider).

        ``filter`` is any `Filter` (property and label predicates alike) or a function of the
        `RunContext` returning one.
        """
        return self._from(replace(self._state, filters=(*self._state.filters, filter)))

    def with_entity_filter(self, filter: FilterSource) -> ToolishRag[AgentDepsT]:
        """An alias of `with_metadata_filter`, for label scopes (``EntityFilter.has_any_label(...)``).

        Labels are a field of every record, so a label filter is a metadata filter like any other.
        """
        return self.with_metadata_filter(filter)

    def with_eager_search_about(self, query: str, top_k: int = 5) -> ToolishRag[AgentDepsT]:
        """A copy that preloads the results for ``query`` into every run's instructions.

        Uses hybrid search when the store can, else vector, else text; the run's scope
        filters apply and listeners fire. The tools stay available.
        """
        if not self._store_capabilities.any_search:
            raise ValueError(f'{type(self._state.store).__name__} has no search capability to preload results with')
        if not query.strip():
            raise ValueError('eager search needs a non-empty query')
        QUERY_RULE.check(query)  # an InvalidRequestError (a ValueError) now, not at the first run
        max_top_k = self._state.settings.max_top_k
        if not 1 <= top_k <= max_top_k:
            raise ValueError(f'top_k must be between 1 and {max_top_k}')
        return self._from(replace(self._state, eager=(*self._state.eager, EagerSearch(query, top_k))))

    def with_reranker(self, reranker: Reranker | None, *, candidates: int | None = None) -> ToolishRag[AgentDepsT]:
        """A copy whose ranked searches are reranked by ``reranker`` (``None``: not reranked).

        ``candidates`` sets ``rerank_candidates`` (kept as it is when omitted).
        """
        if candidates is None:
            return self.with_settings(reranker=reranker)
        return self.with_settings(reranker=reranker, rerank_candidates=candidates)

    def with_listener(self, listener: RagListener) -> ToolishRag[AgentDepsT]:
        """A copy that also calls ``listener`` with a `RagEvent` for every tool call and eager search."""
        return self._from(replace(self._state, listeners=(*self._state.listeners, listener)))

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
        """This toolset as a pydantic-ai capability: ``Agent(capabilities=[rag.as_capability()])``."""
        return ToolsetCapability(self)

    # -- introspection ----------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self._state.settings.name

    @property
    def store(self) -> StoreLike:
        return self._state.store

    @property
    def store_capabilities(self) -> StoreCapabilities:
        """Which capability protocols the store implements (not a pydantic-ai capability: see `as_capability`)."""
        return self._store_capabilities

    @property
    def tool_names(self) -> list[str]:
        """The full names of the tools this toolset offers, as a model calls them (``docs_vector_search``)."""
        return [tool_name(self.name, t) for t in self._offered()]

    @property
    def offered_tools(self) -> list[ToolName]:
        """The short names of the tools this toolset offers (``vector_search``), in `tool_names` order."""
        return self._offered()

    def _offered(self) -> list[ToolName]:
        settings, caps = self._state.settings, self._store_capabilities
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
        """The instructions this toolset contributes to a run (eager searches included)."""
        ctx = direct_context(deps)
        run = await self.for_run(ctx)
        assert isinstance(run, ToolishRag)
        return await run.get_instructions(ctx)

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

    async def for_run(self, ctx: RunContext[AgentDepsT]) -> AbstractToolset[AgentDepsT]:
        """With eager searches, the run's own copy, holding the run's scope; they run at its first instructions.

        Not here: pydantic-ai calls ``for_run`` before it opens the agent run's span, and the
        eager searches' spans belong inside it, as every other span of the run.
        """
        if not self._state.eager:
            return self
        return self._from(self._state, EagerRun(self.retriever(ctx)))

    @property
    def eager_hits(self) -> tuple[SearchHit, ...]:
        """The hits this run's eager searches put in its instructions (none before they ran, or outside a run)."""
        return () if self._eager_run is None else tuple(self._eager_run.hits)

    async def get_instructions(self, ctx: RunContext[AgentDepsT]) -> str | None:
        settings = self._state.settings
        offered = self._offered()
        takes_filter = any(s.takes_filter for s in SPECS if s.name in offered)
        filters = settings.model_filters.describe() if settings.model_filters is not None and takes_filter else None
        names = self._exposed_names(ctx, offered)
        grouping = settings.allow_grouping
        return build_instructions(
            settings.name, settings.description, names, await self._preloaded(ctx), filters, grouping
        )

    def _exposed_names(self, ctx: RunContext[Any], offered: list[ToolName]) -> dict[ToolName, str]:
        """The offered tools by the names the model sees this step (through any wrapper): see `_exposed`."""
        return exposed_names(ctx, self._tool_marker, {t: tool_name(self.name, t) for t in offered})

    async def _preloaded(self, ctx: RunContext[Any]) -> str | None:
        """The run's eager search results, searched once per run (at its first instructions), else ``None``."""
        run = self._eager_run
        if run is None:
            return None
        if run.text is None:
            traced, caps = self._calls.tracing(ctx), self._store_capabilities
            texts = [await eager_text(self._calls, caps, e, run, traced) for e in self._state.eager]
            run.text = '\n\n'.join(texts)
        return run.text

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        # The tools are built by an inner FunctionToolset; stamp them as ours, as pydantic-ai's own
        # wrappers do, so `tool.toolset` is this toolset: a CombinedToolset then gives each tool
        # definition our `id` (durable execution names its activities after it) and errors name us.
        # Their schemas gain the string caps, and their validators bound what a bad call is told.
        tools = await self._functions.get_tools(ctx)
        caps, short = self._calls.arguments, self._short_names
        return {
            name: replace(
                tool,
                toolset=self,
                tool_def=mark(
                    replace(
                        tool.tool_def,
                        parameters_json_schema=caps.schema(self._optional(tool.tool_def.parameters_json_schema)),
                    ),
                    self._tool_marker,
                    short[name],
                ),
                args_validator=BoundedArgsValidator(tool.args_validator),
            )
            for name, tool in tools.items()
        }

    def _optional(self, parameters: dict[str, Any]) -> dict[str, Any]:
        """A tool's schema with ``filter``, ``group_by`` and ``sources`` as configured: dropped unless enabled."""
        properties = dict(parameters.get('properties', {}))
        settings = self._state.settings
        if 'filter' in properties:
            if settings.filterable is None:
                del properties['filter']
            else:
                filter_schema = [self._filter_schema, {'type': 'null'}]
                properties['filter'] = {'anyOf': filter_schema, 'default': None, 'description': _FILTER_DESCRIPTION}
        if 'group_by' in properties and not settings.allow_grouping:
            del properties['group_by']
        if 'sources' in properties and not isinstance(self._state.store, Federated):
            del properties['sources']
        return {**parameters, 'properties': properties}

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[AgentDepsT], tool: ToolsetTool[AgentDepsT]
    ) -> Any:
        return await self._functions.call_tool(name, tool_args, ctx, tool)

    def _build_tools(self) -> list[Tool[AgentDepsT]]:
        """One tool per offered spec, each built with its `ToolEnv` (the call path bound to it)."""
        state, caps = self._state, self._store_capabilities
        offered = self._offered()
        return [
            Tool(
                spec.build(ToolEnv(state.settings, state.store, caps, self._calls.bound(spec))),
                name=tool_name(state.settings.name, spec.name),
                description=spec.describe(state.store, state.settings),
                takes_ctx=True,
            )
            for spec in SPECS
            if spec.name in offered
        ]
