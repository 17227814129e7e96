"""`ToolishRag`: a pydantic-ai toolset that offers a store's capabilities as tools.

``ToolishRag(store, name="docs")`` inspects which capability protocols the store
implements and offers exactly the matching tools, named ``<name>_<tool>`` so several
RAGs can serve one agent. Scope filters (``with_metadata_filter``, or a per-run callable of
the ``RunContext``) are ANDed into every tool call and eager search; the model never sees
them in a schema and cannot widen them.

Everything is immutable: each ``with_*`` returns a new toolset, so one configured
instance can be shared across requests and narrowed per request or tenant.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Annotated, Any, Generic, Literal, TypeAlias

from pydantic import BaseModel, Field, ValidationError
from pydantic_ai import ModelRetry, RunContext, Tool
from pydantic_ai.capabilities import Toolset as ToolsetCapability
from pydantic_ai.messages import ToolReturn
from pydantic_ai.tools import AgentDepsT, ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from ..citations.model import MAX_CLAIMS, Claim
from ..errors import InvalidRequestError, echo
from ..filters import Filter, combine_all
from ..fusion import FusionConfig
from ..graph.walk import MAX_WALK_NODES
from ..grounded.ask import AskResult, ask as grounded_ask
from ..grounded.capability import Grounding, SemanticListener
from ..grouping import DocumentGroup, group_hits
from ..protocols import StoreCapabilities, StoreLike
from ..rerank._base import Reranked, Reranker, rerank_or_keep
from ..retriever import Retriever
from ..search import QUERY_RULE, SearchHit
from ..tracing import HITS, RERANKED, RETRY, CallTrace, Tracing
from . import navigation_tools, verify_tool
from .arguments import StringArguments
from .direct import direct_context
from .events import RagEvent, RagListener
from .filterable import FilterableSpec, ModelFilters
from .graph_tool import DEFAULT_GRAPH_SEEDS, GraphSettings, graph_context_tool
from .render import NO_RESULTS, render_hits, render_neighbours, render_section

if TYPE_CHECKING:
    from pydantic_ai.models import Model
from .instructions import build_instructions, tool_descriptions
from .names import TOOL_NAMES, ToolName, check_tool_names, tool_name
from .render_navigation import render_groups
from .retries import BoundedArgsValidator, retry_message, short_repr

__all__ = ['TOOL_NAMES', 'EagerSearch', 'FilterSource', 'ToolName', 'ToolishRag']

FilterSource: TypeAlias = Filter | Callable[[RunContext[Any]], Filter | None]
"""A scope filter, or a function of the run context (e.g. of ``ctx.deps``) returning one."""


@dataclass(frozen=True, slots=True)
class EagerSearch:
    """A search run at the start of every agent run, its results put in the instructions."""

    query: str
    top_k: int = 5


@dataclass(slots=True)
class _EagerRun:
    """One run's eager searches: the run's scoped retriever, and their text once searched."""

    retriever: Retriever
    text: str | None = None


@dataclass(frozen=True)
class _Config:
    """Everything a `ToolishRag` is; each ``with_*`` is a `replace` of it, so it checks itself."""

    store: StoreLike
    name: str
    description: str | None
    filters: tuple[FilterSource, ...] = ()
    exclude: frozenset[str] = frozenset()
    listeners: tuple[RagListener, ...] = ()
    eager: tuple[EagerSearch, ...] = ()
    default_top_k: int = 5
    max_top_k: int = 50
    max_expansion_chars: int = 6000
    max_query_chars: int = 2000
    max_chunks_to_add: int = 10
    fusion: FusionConfig = field(default_factory=FusionConfig)
    id: str | None = None
    max_retries: int = 3
    max_read_chars: int = 12000
    filterable: ModelFilters | None = None
    allow_grouping: bool = False
    graph_seeds: int = DEFAULT_GRAPH_SEEDS
    trace_content: bool = False
    reranker: Reranker | None = None
    rerank_candidates: int = 30

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f'name must be a plain identifier (it prefixes tool names), got {self.name!r}')
        check_tool_names(self.exclude)
        if not 1 <= self.default_top_k <= self.max_top_k:
            raise ValueError('need 1 <= default_top_k <= max_top_k')
        if self.max_read_chars < 200:
            raise ValueError('max_read_chars must be at least 200')
        if not 1 <= self.graph_seeds <= MAX_WALK_NODES:
            raise ValueError(f'graph_seeds must be between 1 and {MAX_WALK_NODES}')
        if self.reranker is not None and not isinstance(self.reranker, Reranker):
            raise TypeError(
                f'reranker must implement Reranker (an async rerank(query, hits) and a score_meaning), '
                f'got {type(self.reranker).__name__}'
            )
        if self.rerank_candidates < 1:
            raise ValueError('rerank_candidates must be at least 1')


# The string parameters' ``maxLength`` is added to the schemas from `StringArguments` (it depends on
# the configuration); a string parameter must have an entry there, or its first call fails loudly.
_Query = Annotated[str, Field(description='What to search for.')]
_TopK = Annotated[int, Field(description='How many results to return (see the tool description for the maximum).')]
_ChunkId = Annotated[str, Field(description='A chunk id from a search result.')]
_ChunksToAdd = Annotated[int, Field(description='How many chunks to add on each side of the chunk.')]
_ZoomId = Annotated[
    str,
    Field(description='A chunk id (gives its section) or a section id from an earlier zoom_out (gives its parent).'),
]
_Pattern = Annotated[str, Field(description='An RE2 regular expression, e.g. ERR-[0-9]{4} or (?i)refund.')]
_Threshold = Annotated[
    float | None,
    Field(description='Optional minimum score; see the tool description. Omit it unless results are noisy.'),
]
# `filter` and `group_by` are in every search tool's signature; `get_tools` drops them from the schemas
# of a toolset without `filterable` / `allow_grouping` (and `_run` refuses them), so enabling neither
# changes no schema. With `filterable`, the filter's schema is generated from the declaration.
_ModelFilter = Annotated[dict[str, Any] | None, Field(description='Optional filter; see the tool description.')]
_GroupBy = Annotated[
    Literal['document'] | None,
    Field(
        description=(
            'Set to "document" for at most one result per document (its best chunk, with its other matching '
            'chunks named): top_k documents in all.'
        )
    ),
]
_Document = Annotated[str, Field(description='A document id, its exact title, or a part of its title.')]
_Section = Annotated[
    str,
    Field(description='A section id from outline, an exact section title, or a document id (the whole document).'),
]
_SectionDocument = Annotated[
    str | None, Field(description='Optional: the document (id or title) when several have a section with that title.')
]
_Offset = Annotated[int, Field(description='Where to start: 0 first, then the offset the previous answer gave.')]
_Limit = Annotated[int, Field(description='How many documents per page (at most 100).')]
_TitleContains = Annotated[
    str | None, Field(description='Optional: keep documents whose title contains this, ignoring case.')
]
_Key = Annotated[str, Field(description='A filterable key (see the tool description).')]
# The claims' nested strings (chunk ids, quotes) are bounded by the `Claim` model's own ``max_length``s.
_Claims = Annotated[
    list[Claim],
    Field(
        max_length=MAX_CLAIMS,
        description='The claims of your draft answer, each with its citations (a chunk id and an exact quote).',
    ),
]


class ToolishRag(AbstractToolset[AgentDepsT], Generic[AgentDepsT]):
    """Retrieval tools over ``store``, detected from the protocols it implements.

    Args:
        store: a `StoreLike`: any object implementing some of `VectorSearch`, `TextSearch`,
            `RegexSearch`, `ResultExpander` (and optionally `HybridSearch`).
        name: prefix of the tool names (``docs`` gives ``docs_vector_search``...); a
            plain identifier, unique among the RAGs of one agent.
        description: what the collection holds, in words for the model.
        metadata_filter: a scope filter, or a function of the `RunContext` returning one
            (e.g. ``lambda ctx: F.eq("tenant", ctx.deps.tenant)``); ANDed into every call.
        entity_filter: another scope filter, ANDed with ``metadata_filter``; the same filter
            algebra (labels are a field of every record), kept as a separate argument so a
            label scope such as ``EntityFilter.has_any_label(...)`` reads as one.
        exclude_tools: short tool names to leave out (``{"regex_search"}``).
        default_top_k: ``top_k`` when the model gives none.
        max_top_k: the largest ``top_k`` a model may ask for.
        max_expansion_chars: cap on the text ``broaden_chunk`` and ``zoom_out`` return.
        max_query_chars: longer search queries are sent back to the model as a retry
            ("send a short search query, not a document"), and the tool schemas state it as
            the query's ``maxLength``; raise it for evaluation sets whose queries are whole
            paragraphs (``toolish-rag eval`` does). Patterns and ids have fixed caps (see
            `toolish_rag.toolset.arguments`).
        fusion: how the hybrid tool fuses vector and text results (stores without
            native hybrid search).
        listener: called (sync or async) with a `RagEvent` for every tool call.
        id: the toolset id (for durable execution); defaults to ``name``.
        max_read_chars: cap on the text one ``read_section`` call returns (it pages the rest).
        filterable: metadata keys the model may filter on, with their types (``{'year': int,
            'product': Literal['a', 'b'], 'path': str}``, or `FilterableKey` for allowed values and
            operators): the search tools and ``list_documents`` then take a ``filter`` argument whose
            schema lists exactly these, ANDed with the scope (it can only narrow), and a store that
            can list documents gets ``list_values``. Without it no schema changes.
        allow_grouping: add ``group_by='document'`` to the vector, text and hybrid search tools
            (one result per document, ``top_k`` documents). Without it no schema changes.
        graph_seeds: how many of the best search hits seed a ``graph_context`` walk from a
            ``query`` (a store implementing `GraphSearch` offers that tool).
        trace_content: let the OpenTelemetry span of each tool call and eager search carry the
            query text (or regex pattern) and the call's arguments. Even then only when the agent
            run's instrumentation includes content (``InstrumentationSettings(include_content=...)``);
            filter values never (see `toolish_rag.tracing`). Spans go to the run's tracer, so an
            uninstrumented agent records none.
        reranker: a `Reranker` (`CrossEncoderReranker`, `ModelReranker`, or your own) applied by the
            vector, text and hybrid search tools and the eager search: each fetches
            ``max(top_k, rerank_candidates)`` hits through the run's scoped retriever (so the reranker
            only ever sees in-scope hits), reranks them and keeps the ``top_k`` best. A hit's score is
            then the reranker's (in ``[0, 1]``; the tool descriptions say what it means and the results
            heading says "reranked"), and ``threshold`` applies to it. With ``group_by='document'`` the
            candidates are reranked before grouping, a document ranking by its best reranked chunk.
            A reranker that fails leaves the search's own order and scores (fail open; the heading then
            does not say "reranked" and ``threshold`` means what it means without a reranker). The
            ``graph_context`` seeds are not reranked. Without a reranker nothing the model sees changes.
        rerank_candidates: how many hits a search fetches for the reranker (at least ``top_k``).
    """

    def __init__(
        self,
        store: StoreLike,
        *,
        name: str = 'docs',
        description: str | None = None,
        metadata_filter: FilterSource | None = None,
        entity_filter: FilterSource | None = None,
        exclude_tools: Collection[str] = (),
        default_top_k: int = 5,
        max_top_k: int = 50,
        max_expansion_chars: int = 6000,
        max_query_chars: int = 2000,
        fusion: FusionConfig | None = None,
        listener: RagListener | None = None,
        id: str | None = None,
        max_retries: int = 3,
        max_read_chars: int = 12000,
        filterable: Mapping[str, FilterableSpec] | ModelFilters | None = None,
        allow_grouping: bool = False,
        graph_seeds: int = DEFAULT_GRAPH_SEEDS,
        trace_content: bool = False,
        reranker: Reranker | None = None,
        rerank_candidates: int = 30,
    ) -> None:
        filters = tuple(f for f in (metadata_filter, entity_filter) if f is not None)
        if filterable is not None and not isinstance(filterable, ModelFilters):
            filterable = ModelFilters.declare(filterable)
        config = _Config(
            store=store,
            name=name,
            description=description,
            filters=filters,
            exclude=frozenset(exclude_tools),
            listeners=(listener,) if listener else (),
            default_top_k=default_top_k,
            max_top_k=max_top_k,
            max_expansion_chars=max_expansion_chars,
            max_query_chars=max_query_chars,
            fusion=fusion or FusionConfig(),
            id=id,
            max_retries=max_retries,
            max_read_chars=max_read_chars,
            filterable=filterable,
            allow_grouping=allow_grouping,
            graph_seeds=graph_seeds,
            trace_content=trace_content,
            reranker=reranker,
            rerank_candidates=rerank_candidates,
        )
        self._init(config)

    def _init(self, config: _Config, eager_run: _EagerRun | None = None) -> None:
        self._config = config
        self._store_capabilities = StoreCapabilities.of(config.store)
        self._eager_run = eager_run
        self._arguments = StringArguments.for_toolset(config.max_query_chars)
        # Built once: the filter's schema is the same for every run (and get_tools runs per model request).
        self._filter_schema = config.filterable.json_schema() if config.filterable is not None else None
        self._functions: FunctionToolset[AgentDepsT] = FunctionToolset(
            self._build_tools(), max_retries=config.max_retries
        )
        # `run_tool`'s tools: outside a run they depend on the configuration alone (no tool has a
        # `prepare` function, and a direct context carries no retries), so they are built once.
        self._direct_tools: dict[str, ToolsetTool[AgentDepsT]] | None = None

    @classmethod
    def _from(cls, config: _Config, eager_run: _EagerRun | None = None) -> ToolishRag[AgentDepsT]:
        obj = cls.__new__(cls)
        obj._init(config, eager_run)
        return obj

    # -- immutable configuration ------------------------------------------------------------

    def _with(self, **changes: Any) -> ToolishRag[AgentDepsT]:
        return self._from(replace(self._config, **changes))

    def with_metadata_filter(self, filter: FilterSource) -> ToolishRag[AgentDepsT]:
        """A copy narrowed by ``filter`` (ANDed with the filters already set: never wider).

        ``filter`` is any `Filter` (property and label predicates alike) or a function of the
        `RunContext` returning one.
        """
        return self._with(filters=(*self._config.filters, filter))

    def with_entity_filter(self, filter: FilterSource) -> ToolishRag[AgentDepsT]:
        """An alias of `with_metadata_filter`, for label scopes (``EntityFilter.has_any_label(...)``).

        There is one filter algebra: labels are a field of every record (a chunk carries its
        document's labels), so a label filter is a metadata filter like any other. This name
        only makes a label scope read as one; it behaves exactly like `with_metadata_filter`.
        """
        return self.with_metadata_filter(filter)

    def with_eager_search_about(self, query: str, top_k: int = 5) -> ToolishRag[AgentDepsT]:
        """A copy that preloads the results for ``query`` into every run's instructions.

        Uses hybrid search when the store can, else vector, else text; the run's scope
        filters apply and listeners fire. The tools stay available.
        """
        if not self._store_capabilities.any_search:
            raise ValueError(f'{type(self._config.store).__name__} has no search capability to preload results with')
        if not query.strip():
            raise ValueError('eager search needs a non-empty query')
        QUERY_RULE.check(query)  # an InvalidRequestError (a ValueError) now, not at the first run
        if not 1 <= top_k <= self._config.max_top_k:
            raise ValueError(f'top_k must be between 1 and {self._config.max_top_k}')
        return self._with(eager=(*self._config.eager, EagerSearch(query, top_k)))

    def with_reranker(self, reranker: Reranker | None, *, candidates: int | None = None) -> ToolishRag[AgentDepsT]:
        """A copy whose ranked searches are reranked by ``reranker`` (``None``: not reranked).

        ``candidates`` sets ``rerank_candidates`` (kept as it is when omitted).
        """
        return self._with(
            reranker=reranker, rerank_candidates=self._config.rerank_candidates if candidates is None else candidates
        )

    def with_listener(self, listener: RagListener) -> ToolishRag[AgentDepsT]:
        """A copy that also calls ``listener`` with a `RagEvent` for every tool call and eager search."""
        return self._with(listeners=(*self._config.listeners, listener))

    def without_tools(self, *names: ToolName) -> ToolishRag[AgentDepsT]:
        """A copy that does not offer these tools (short names, e.g. ``'regex_search'``)."""
        return self._with(exclude=self._config.exclude | set(names))

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
        `toolish_rag.grounded.ask` and docs/grounded.md.
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
        return self._config.name

    @property
    def store(self) -> StoreLike:
        return self._config.store

    @property
    def store_capabilities(self) -> StoreCapabilities:
        """Which capability protocols the store implements (not a pydantic-ai capability: see `as_capability`)."""
        return self._store_capabilities

    @property
    def tool_names(self) -> list[str]:
        """The full names of the tools this toolset offers, as a model calls them (``docs_vector_search``)."""
        return [tool_name(self._config.name, t) for t in self._offered()]

    @property
    def offered_tools(self) -> list[ToolName]:
        """The short names of the tools this toolset offers (``vector_search``), in `tool_names` order."""
        return self._offered()

    def _offered(self) -> list[ToolName]:
        caps = self._store_capabilities
        available = {
            'vector_search': caps.vector,
            'text_search': caps.text,
            'hybrid_search': caps.hybrid,
            'regex_search': caps.regex,
            'broaden_chunk': caps.expand,
            'zoom_out': caps.expand,
            'list_documents': caps.sections,
            'outline': caps.sections,
            'read_section': caps.sections,
            'verify_citations': caps.expand,
            'list_values': caps.sections and self._config.filterable is not None,
            'graph_context': caps.graph,
        }
        return [t for t in TOOL_NAMES if available[t] and t not in self._config.exclude]

    def retriever(self, ctx: RunContext[Any] | None = None) -> Retriever:
        """The scoped `Retriever` for a run (static filters, plus per-run ones when ``ctx`` is given)."""
        resolved: list[Filter | None] = []
        for source in self._config.filters:
            if not isinstance(source, BaseModel):
                if ctx is None:
                    raise ValueError('this toolset has a per-run filter: pass the RunContext')
                resolved.append(source(ctx))
            else:
                resolved.append(source)  # type: ignore[arg-type]
        return Retriever(self._config.store, combine_all(resolved), self._config.fusion)

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
        `~toolish_rag.toolset.retries.MAX_RETRY_CHARS` characters, whatever was sent).
        """
        ctx = direct_context(deps)
        tools = self._direct_tools
        if tools is None:
            tools = self._direct_tools = await self.get_tools(ctx)
        full = tool if tool in tools else tool_name(self._config.name, tool)
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
        return self._config.id or self._config.name

    @property
    def label(self) -> str:
        return f'ToolishRag {self._config.name!r}'

    @property
    def tool_name_conflict_hint(self) -> str:
        return 'Give each ToolishRag on an agent its own `name` (it prefixes the tool names).'

    async def for_run(self, ctx: RunContext[AgentDepsT]) -> AbstractToolset[AgentDepsT]:
        """With eager searches, the run's own copy, holding the run's scope; they run at its first instructions.

        Not here: pydantic-ai calls ``for_run`` before it opens the agent run's span, and the
        eager searches' spans belong inside it, as every other span of the run.
        """
        if not self._config.eager:
            return self
        return self._from(self._config, _EagerRun(self.retriever(ctx)))

    async def get_instructions(self, ctx: RunContext[AgentDepsT]) -> str | None:
        cfg = self._config
        filters = cfg.filterable.describe() if cfg.filterable is not None and self._takes_filter() else None
        return build_instructions(cfg.name, cfg.description, self._offered(), await self._preloaded(ctx), filters)

    async def _preloaded(self, ctx: RunContext[Any]) -> str | None:
        """The run's eager search results, searched once per run (at its first instructions), else ``None``."""
        run = self._eager_run
        if run is None:
            return None
        if run.text is None:
            traced = self._tracing(ctx)
            run.text = '\n\n'.join([await self._eager(run.retriever, e, traced) for e in self._config.eager])
        return run.text

    def _takes_filter(self) -> bool:
        return any(t.endswith('_search') or t == 'list_documents' for t in self._offered())

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        # The tools are built by an inner FunctionToolset; stamp them as ours, as pydantic-ai's own
        # wrappers do, so `tool.toolset` is this toolset: a CombinedToolset then gives each tool
        # definition our `id` (durable execution names its activities after it) and errors name us.
        # Their schemas gain the string caps, and their validators bound what a bad call is told.
        tools = await self._functions.get_tools(ctx)
        return {
            name: replace(
                tool,
                toolset=self,
                tool_def=replace(
                    tool.tool_def,
                    parameters_json_schema=self._arguments.schema(self._optional(tool.tool_def.parameters_json_schema)),
                ),
                args_validator=BoundedArgsValidator(tool.args_validator),
            )
            for name, tool in tools.items()
        }

    def _optional(self, parameters: dict[str, Any]) -> dict[str, Any]:
        """A tool's schema with ``filter`` and ``group_by`` as configured: dropped unless enabled."""
        properties = dict(parameters.get('properties', {}))
        cfg = self._config
        if 'filter' in properties:
            if cfg.filterable is None:
                del properties['filter']
            else:
                properties['filter'] = {
                    'anyOf': [self._filter_schema, {'type': 'null'}],
                    'default': None,
                    'description': (
                        'Optional: narrow the results by metadata. Keys and operators are as this schema shows: '
                        'a value means equals, an object of operators must all hold, any_of matches one of '
                        'several condition objects, not excludes one.'
                    ),
                }
        if 'group_by' in properties and not cfg.allow_grouping:
            del properties['group_by']
        return {**parameters, 'properties': properties}

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[AgentDepsT], tool: ToolsetTool[AgentDepsT]
    ) -> Any:
        return await self._functions.call_tool(name, tool_args, ctx, tool)

    # -- tool implementations -------------------------------------------------------------------

    async def _emit(self, event: RagEvent) -> None:
        for listener in self._config.listeners:
            outcome = listener(event)
            if inspect.isawaitable(outcome):
                await outcome

    def _tracing(self, ctx: RunContext[Any]) -> Tracing:
        """Where this run's spans go, with content only if both the developer and the run's instrumentation allow."""
        return Tracing.of_run(ctx, opted_in=self._config.trace_content)

    def _call_trace(self, tool: str, arguments: Mapping[str, Any], retriever: Retriever) -> CallTrace:
        store = type(self._config.store).__name__
        return CallTrace(self._config.name, store, tool, retriever.filter is not None, arguments)

    async def _eager(self, retriever: Retriever, eager: EagerSearch, traced: Tracing) -> str:
        start = time.perf_counter()
        caps = self._store_capabilities
        arguments = {'query': eager.query, 'top_k': eager.top_k}
        with self._call_trace('eager_search', arguments, retriever).span(traced) as span:
            available = {'hybrid_search': caps.hybrid, 'vector_search': caps.vector, 'text_search': caps.text}
            search = next(spec.search for spec in _SEED_ORDER if available[spec.name])
            found = await self._ranked(retriever, search, eager.query, eager.top_k)
            hits = found.hits
            span.set_attribute(HITS, len(hits))
            if self._config.reranker is not None:
                span.set_attribute(RERANKED, found.reranked)
        text = render_hits(hits, heading=f'Preloaded search results for {eager.query!r}{_mark(found)}:')
        if not hits:
            text = f'Preloaded search results for {eager.query!r}: none. {NO_RESULTS}'
        await self._emit(
            RagEvent(
                rag=self._config.name,
                tool='eager_search',
                arguments=arguments,
                result_text=text,
                hits=tuple(hits),
                duration_s=time.perf_counter() - start,
                filtered=retriever.filter is not None,
            )
        )
        return text

    def _check_top_k(self, top_k: int) -> None:
        if not 1 <= top_k <= self._config.max_top_k:
            raise InvalidRequestError(
                f'top_k must be between 1 and {self._config.max_top_k}; you sent {short_repr(top_k)}. '
                f'Use {self._config.default_top_k} unless you need more.'
            )

    @staticmethod
    def _check_threshold(threshold: float | None, low: float, high: float, meaning: str) -> None:
        if threshold is not None and not low <= threshold <= high:
            raise InvalidRequestError(
                f'threshold must be between {low} and {high} ({meaning}); you sent {threshold}. '
                'Omit it to get the best matches whatever their score.'
            )

    async def _run(
        self,
        ctx: RunContext[Any],
        tool: ToolName,
        arguments: Mapping[str, Any],
        body: Callable[[Retriever, Mapping[str, Any]], Awaitable[tuple[str, list[SearchHit]]]],
        notes: Mapping[str, bool] | None = None,
    ) -> ToolReturn:
        """Run one tool call: argument checks, scope, timing, retry translation and the listener event.

        Every tool goes through here, so this is where its string arguments are checked
        (`StringArguments.check`); ``body`` gets them checked and normalised. A refusal becomes
        a ``ModelRetry`` whose message is bounded (`retry_message`), whoever wrote it. The call
        is one OpenTelemetry span (`toolish_rag.tracing`), current while ``body`` runs so a graph
        walk's span nests in it; it covers the listener events too. ``notes`` are span attributes
        ``body`` fills in as it runs (whether it reranked), set on the span once it returns.
        """
        start = time.perf_counter()
        retriever = self.retriever(ctx)
        arguments = {k: v for k, v in arguments.items() if not (k in _OPTIONAL and v is None)}
        with self._call_trace(tool, arguments, retriever).span(self._tracing(ctx)) as span:
            try:
                retriever = self._narrowed(retriever, arguments)
                text, hits = await body(retriever, self._arguments.check(arguments))
            except InvalidRequestError as e:
                sent = [
                    s for v in arguments.values() for s in (v if isinstance(v, list) else [v]) if isinstance(s, str)
                ]
                message = retry_message(str(e), echoed=[*sent, *(v.strip() for v in sent)])
                span.set_attribute(RETRY, True)
                await self._emit(
                    RagEvent(
                        rag=self._config.name,
                        tool=tool,
                        arguments=dict(arguments),
                        result_text=message,
                        duration_s=time.perf_counter() - start,
                        filtered=retriever.filter is not None,
                        error=message,
                    )
                )
                raise ModelRetry(message) from e
            span.set_attribute(HITS, len(hits))
            if notes:
                span.set_attributes(notes)
            await self._emit(
                RagEvent(
                    rag=self._config.name,
                    tool=tool,
                    arguments=dict(arguments),
                    result_text=text,
                    hits=tuple(hits),
                    duration_s=time.perf_counter() - start,
                    filtered=retriever.filter is not None,
                )
            )
        return ToolReturn(return_value=text, metadata={'hits': list(hits), 'rag': self._config.name, 'tool': tool})

    def _narrowed(self, retriever: Retriever, arguments: Mapping[str, Any]) -> Retriever:
        """The run's retriever narrowed by the model's ``filter`` (parsed from the declaration), if sent."""
        cfg = self._config
        if arguments.get('group_by') is not None and not cfg.allow_grouping:
            raise InvalidRequestError('this tool takes no group_by argument: call it without one')
        sent = arguments.get('filter')
        if sent is None:
            return retriever
        if cfg.filterable is None:
            raise InvalidRequestError('this tool takes no filter argument: call it without one')
        return retriever.with_filter(cfg.filterable.parse(sent))

    async def _ranked_search(self, ctx: RunContext[Any], spec: _RankedTool, arguments: dict[str, Any]) -> ToolReturn:
        """One vector, text or hybrid search tool call (they differ only in `_RankedTool`)."""
        top_k, threshold = arguments['top_k'], arguments['threshold']
        reranker = self._config.reranker
        notes: dict[str, bool] = {}

        async def body(r: Retriever, args: Mapping[str, Any]) -> tuple[str, list[SearchHit]]:
            q = args['query']
            self._check_top_k(top_k)
            if reranker is None:
                self._check_threshold(threshold, spec.low, 1.0, spec.meaning)
            else:
                self._check_threshold(threshold, 0.0, 1.0, reranker.score_meaning)
            grouped = args.get('group_by') == 'document'
            if grouped:
                groups, reranked = await self._groups(r, spec.search, q, top_k)
                found = Reranked([g.best for g in groups], reranked)
            else:
                groups, found = [], await self._ranked(r, spec.search, q, top_k)
            if reranker is not None:
                notes[RERANKED] = found.reranked
            # A reranked score is absolute (the reranker's, in [0, 1]); failed open, the search's own meaning holds.
            hits = _apply_threshold(found.hits, threshold, relative=spec.relative and not found.reranked)
            heading = f'{spec.label} search results for {q!r}{_mark(found)}:'
            if grouped:
                kept = {id(h) for h in hits}
                groups = [g for g in groups if id(g.best) in kept]
                return render_groups(groups, heading=heading), [g.best for g in groups]
            return render_hits(hits, heading=heading), hits

        return await self._run(ctx, spec.name, arguments, body, notes)

    async def _ranked(self, r: Retriever, search: _Search, query: str, top_k: int) -> Reranked:
        """The ``top_k`` best hits of ``search``: with a reranker, the best of ``rerank_candidates`` hits reranked.

        The candidates come through ``r``, the run's scoped retriever: the reranker sees only in-scope hits.
        """
        reranker = self._config.reranker
        if reranker is None:
            return Reranked(await search(r)(query, top_k), reranked=False)
        candidates = await search(r)(query, max(top_k, self._config.rerank_candidates))
        outcome = await rerank_or_keep(reranker, query, candidates)
        return Reranked(outcome.hits[:top_k], outcome.reranked)

    async def _groups(self, r: Retriever, search: _Search, query: str, top_k: int) -> tuple[list[DocumentGroup], bool]:
        """The ``top_k`` best documents' groups, and whether they were reranked.

        With a reranker, the candidates are reranked before grouping, so a document ranks by its best
        reranked chunk. When the candidates span fewer than ``top_k`` documents and the store holds
        more, the best hit of each further document (from the grouped search) joins the candidates,
        so ``top_k`` documents come back whenever that many match, as without a reranker.
        """
        reranker = self._config.reranker
        if reranker is None:
            return await r.grouped(search, query, top_k), False
        n = max(top_k, self._config.rerank_candidates)
        candidates = await search(r)(query, n)
        seen = {g.key for g in group_hits(candidates)}
        if len(seen) < top_k and len(candidates) == n:
            candidates += [g.best for g in await r.grouped(search, query, top_k) if g.key not in seen]
        outcome = await rerank_or_keep(reranker, query, candidates)
        if not outcome.reranked:
            return await r.grouped(search, query, top_k), False
        return group_hits(outcome.hits)[:top_k], True

    def _build_tools(self) -> list[Tool[AgentDepsT]]:
        cfg = self._config
        reranking = (cfg.reranker.score_meaning, cfg.rerank_candidates) if cfg.reranker is not None else None
        descriptions = tool_descriptions(cfg.store, cfg.default_top_k, cfg.max_top_k, reranking=reranking)
        tools: dict[ToolName, Callable[..., Any]] = {
            **self._search_tools(),
            **self._reading_tools(),
            **self._navigation_tools(),
            'graph_context': graph_context_tool(self._run, self._graph_settings()),
        }
        return [
            Tool(tools[t], name=tool_name(cfg.name, t), description=descriptions[t], takes_ctx=True)
            for t in self._offered()
        ]

    def _graph_settings(self) -> GraphSettings:
        """What ``graph_context`` needs: its budgets, and the best search to seed from (as the eager search picks)."""
        caps = self._store_capabilities
        available = {'hybrid_search': caps.hybrid, 'vector_search': caps.vector, 'text_search': caps.text}
        search = next((spec.search for spec in _SEED_ORDER if available[spec.name]), None)
        cfg = self._config
        return GraphSettings(cfg.graph_seeds, cfg.max_expansion_chars, search, lookup=caps.expand)

    def _search_tools(self) -> dict[ToolName, Callable[..., Any]]:
        """``vector_search``, ``text_search``, ``hybrid_search`` (one `_RankedTool` each) and ``regex_search``."""
        default_k = self._config.default_top_k

        def ranked(spec: _RankedTool) -> Callable[..., Any]:
            async def search(
                ctx: RunContext[Any],
                query: _Query,
                top_k: _TopK = default_k,
                threshold: _Threshold = None,
                filter: _ModelFilter = None,
                group_by: _GroupBy = None,
            ) -> ToolReturn:
                arguments = {'query': query, 'top_k': top_k, 'threshold': threshold, 'filter': filter}
                return await self._ranked_search(ctx, spec, {**arguments, 'group_by': group_by})

            return search

        vector_search, text_search, hybrid_search = (ranked(spec) for spec in _RANKED_TOOLS)

        async def regex_search(
            ctx: RunContext[Any],
            pattern: _Pattern,
            top_k: _TopK = default_k,
            filter: _ModelFilter = None,
        ) -> ToolReturn:
            async def body(r: Retriever, args: Mapping[str, Any]) -> tuple[str, list[SearchHit]]:
                self._check_top_k(top_k)
                hits = await r.regex_search(args['pattern'], top_k)
                return render_hits(hits, heading=f'Regex matches for {args["pattern"]!r}:'), hits

            arguments = {'pattern': pattern, 'top_k': top_k, 'filter': filter}
            return await self._run(ctx, 'regex_search', arguments, body)

        return {
            'vector_search': vector_search,
            'text_search': text_search,
            'hybrid_search': hybrid_search,
            'regex_search': regex_search,
        }

    def _reading_tools(self) -> dict[ToolName, Callable[..., Any]]:
        """``broaden_chunk`` and ``zoom_out`` (reading around a hit) and ``verify_citations``."""
        cfg = self._config

        async def broaden_chunk(
            ctx: RunContext[Any],
            chunk_id: _ChunkId,
            chunks_to_add: _ChunksToAdd = 2,
        ) -> ToolReturn:
            async def body(r: Retriever, args: Mapping[str, Any]) -> tuple[str, list[SearchHit]]:
                if not 0 <= chunks_to_add <= cfg.max_chunks_to_add:
                    raise InvalidRequestError(
                        f'chunks_to_add must be between 0 and {cfg.max_chunks_to_add}; '
                        f'you sent {short_repr(chunks_to_add)}'
                    )
                found = await r.neighbours(args['chunk_id'], chunks_to_add)
                if found is None:
                    raise InvalidRequestError(_not_found(chunk_id, 'a chunk id'))
                anchor, chunks = found
                text, shown = render_neighbours(anchor, chunks, cfg.max_expansion_chars)
                # Only the chunks shown are hits: grounding counts hits as chunks the model has read.
                return text, [SearchHit(c, 1.0 if c.id == anchor.id else 0.0) for c in shown]

            return await self._run(ctx, 'broaden_chunk', {'chunk_id': chunk_id, 'chunks_to_add': chunks_to_add}, body)

        async def zoom_out(
            ctx: RunContext[Any],
            id: _ZoomId,
        ) -> ToolReturn:
            async def body(r: Retriever, args: Mapping[str, Any]) -> tuple[str, list[SearchHit]]:
                max_chunks = max(1, cfg.max_expansion_chars // 50)
                view = await r.section(args['id'], max_chunks)
                if view is None:
                    raise InvalidRequestError(_not_found(id, 'a chunk id or section id'))
                text, shown = render_section(view, cfg.max_expansion_chars)
                return text, [SearchHit(c, 0.0) for c in shown]

            return await self._run(ctx, 'zoom_out', {'id': id}, body)

        async def verify_citations(ctx: RunContext[Any], claims: _Claims) -> ToolReturn:
            # The event shows the claims as the model sent them (plain data); the body checks the models.
            sent = {'claims': [c.model_dump(exclude={'citations': {'__all__': {'source'}}}) for c in claims]}
            check_id = self._arguments.by_name['chunk_id']
            return await self._run(
                ctx, 'verify_citations', sent, lambda r, a: verify_tool.verify_citations(r, claims, check_id)
            )

        return {'broaden_chunk': broaden_chunk, 'zoom_out': zoom_out, 'verify_citations': verify_citations}

    def _navigation_tools(self) -> dict[ToolName, Callable[..., Any]]:
        """``list_documents``, ``outline``, ``read_section`` and ``list_values`` (bodies in `navigation_tools`)."""
        cfg = self._config
        names = navigation_tools.ToolNames(
            list_documents=tool_name(cfg.name, 'list_documents'),
            outline=tool_name(cfg.name, 'outline'),
            read_section=tool_name(cfg.name, 'read_section'),
        )
        shown = tuple(cfg.filterable.keys) if cfg.filterable is not None else ()

        async def list_documents(
            ctx: RunContext[Any],
            title_contains: _TitleContains = None,
            offset: _Offset = 0,
            limit: _Limit = navigation_tools.DEFAULT_PAGE,
            filter: _ModelFilter = None,
        ) -> ToolReturn:
            arguments = {'title_contains': title_contains, 'offset': offset, 'limit': limit, 'filter': filter}
            return await self._run(
                ctx, 'list_documents', arguments, lambda r, a: navigation_tools.list_documents(r, a, names, shown)
            )

        async def outline(ctx: RunContext[Any], document: _Document) -> ToolReturn:
            return await self._run(
                ctx, 'outline', {'document': document}, lambda r, a: navigation_tools.outline(r, a, names, shown)
            )

        async def read_section(
            ctx: RunContext[Any], section: _Section, document: _SectionDocument = None, offset: _Offset = 0
        ) -> ToolReturn:
            arguments = {'section': section, 'document': document, 'offset': offset}
            return await self._run(
                ctx,
                'read_section',
                arguments,
                lambda r, a: navigation_tools.read_section(r, a, names, shown, cfg.max_read_chars),
            )

        async def list_values(ctx: RunContext[Any], key: _Key) -> ToolReturn:
            return await self._run(
                ctx, 'list_values', {'key': key}, lambda r, a: navigation_tools.list_values(r, a, cfg.filterable)
            )

        return {
            'list_documents': list_documents,
            'outline': outline,
            'read_section': read_section,
            'list_values': list_values,
        }


_OPTIONAL = frozenset({'filter', 'group_by', 'title_contains', 'document', 'query', 'ids', 'edge_types', 'rerank'})
"""Optional arguments left out of the checked arguments (and the listener's event) when not sent."""


def _mark(found: Reranked) -> str:
    """What a results heading adds when the hits carry the reranker's scores."""
    return ', reranked' if found.reranked else ''


def _apply_threshold(hits: list[SearchHit], threshold: float | None, *, relative: bool) -> list[SearchHit]:
    if threshold is None or not hits:
        return hits
    if relative:
        best = hits[0].score
        return [h for h in hits if best > 0 and h.score / best >= threshold]
    return [h for h in hits if h.score >= threshold]


_Search: TypeAlias = Callable[[Retriever], Callable[[str, int], Awaitable[list[SearchHit]]]]
"""A ranked search, picked from a retriever (``lambda r: r.hybrid_search``)."""


@dataclass(frozen=True, slots=True)
class _RankedTool:
    """What distinguishes the vector, text and hybrid tools: their search and their score's meaning."""

    name: ToolName
    label: str
    search: _Search
    low: float
    """The lowest meaningful threshold (the highest is 1)."""
    meaning: str
    relative: bool
    """Whether the threshold is a fraction of the best hit's score rather than an absolute score."""


_RANKED_TOOLS = (
    _RankedTool('vector_search', 'Vector', lambda r: r.vector_search, -1.0, 'a cosine similarity', relative=False),
    _RankedTool(
        'text_search', 'Text', lambda r: r.text_search, 0.0, "a fraction of the best hit's score", relative=True
    ),
    _RankedTool('hybrid_search', 'Hybrid', lambda r: r.hybrid_search, 0.0, 'a fused relevance score', relative=False),
)

_SEED_ORDER = sorted(_RANKED_TOOLS, key=lambda spec: ('hybrid_search', 'vector_search', 'text_search').index(spec.name))
"""The searches that seed a ``graph_context`` walk, best first (as the eager search picks): the first the store has."""


def _not_found(value: str, what: str) -> str:
    return (
        f'{echo(value)} was not found. Pass {what} exactly as it appears in a search result '
        '(for example the id after "chunk" in a result heading), or search again.'
    )
