"""`RagSettings`: every option of a `ToolishRag`, written once, checked once.

``ToolishRag(store, settings)`` or ``ToolishRag(store, name='docs', max_top_k=20)`` (the keywords
are these fields); copies change them with `dataclasses.replace`. See docs/concepts.md.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, TypeAlias, TypedDict, Unpack

from pydantic_ai import RunContext

from .._tool_names import check_tool_names
from ..filters import Filter
from ..fusion import FusionConfig
from ..graph.walk import MAX_WALK_NODES
from ..rerank._base import Reranker
from ._events import RagListener
from ._filterable import FilterableSpec, ModelFilters

__all__ = ['DEFAULT_GRAPH_SEEDS', 'FilterSource', 'RagOptions', 'RagSettings']

FilterSource: TypeAlias = Filter | Callable[[RunContext[Any]], Filter | None]
"""A scope filter, or a function of the run context (e.g. of ``ctx.deps``) returning one."""

DEFAULT_GRAPH_SEEDS = 5
"""How many search hits seed a ``graph_context`` walk from a ``query``."""


@dataclass(frozen=True)
class RagSettings:
    """The options of a `ToolishRag`; each field is also a keyword of its constructor."""

    name: str = 'docs'
    """Prefix of the tool names (``docs`` gives ``docs_vector_search``): a plain identifier, unique per agent."""
    description: str | None = None
    """What the collection holds, in words for the model."""
    metadata_filter: FilterSource | None = None
    """A scope filter, or a function of the `RunContext` returning one; ANDed into every call."""
    entity_filter: FilterSource | None = None
    """Another scope filter ANDed with ``metadata_filter``, so a label scope reads as one."""
    exclude_tools: Collection[str] = frozenset()
    """Short tool names to leave out (``{'regex_search'}``); kept as a frozenset."""
    default_top_k: int = 5
    """``top_k`` when the model gives none."""
    max_top_k: int = 50
    """The largest ``top_k`` a model may ask for."""
    max_expansion_chars: int = 6000
    """Cap on the text ``broaden_chunk``, ``zoom_out`` and ``graph_context`` return."""
    max_query_chars: int = 2000
    """Longer queries come back as a retry; the schemas state it as ``maxLength``."""
    max_chunks_to_add: int = 10
    """The most chunks ``broaden_chunk`` adds on each side."""
    fusion: FusionConfig = field(default_factory=FusionConfig)
    """How the hybrid tool fuses vector and text results (stores without native hybrid search)."""
    listener: RagListener | None = None
    """Called (sync or async) with a `RagEvent` for every tool call and eager search."""
    id: str | None = None
    """The toolset id (for durable execution); defaults to ``name``."""
    max_retries: int = 3
    """How many retries a tool call may take before the run fails."""
    max_read_chars: int = 12000
    """Cap on the text one ``read_section`` call returns (it pages the rest); at least 200."""
    filterable: ModelFilters | Mapping[str, FilterableSpec] | None = None
    """Metadata keys the model may filter on, with their types; kept as `ModelFilters`. See docs/concepts.md."""
    allow_grouping: bool = False
    """Add ``group_by='document'`` to the vector, text and hybrid search tools."""
    graph_seeds: int = DEFAULT_GRAPH_SEEDS
    """How many of the best search hits seed a ``graph_context`` walk from a ``query``."""
    trace_content: bool = False
    """Let tool-call spans carry the query and arguments (if the run's instrumentation includes content)."""
    reranker: Reranker | None = None
    """Reranks the ranked searches and the eager search (within the scope); fails open. See docs/concepts.md."""
    rerank_candidates: int = 30
    """How many hits a search fetches for the reranker (at least ``top_k``)."""

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f'name must be a plain identifier (it prefixes tool names), got {self.name!r}')
        object.__setattr__(self, 'exclude_tools', frozenset(self.exclude_tools))
        check_tool_names(self.exclude_tools)
        if self.fusion is None:  # accepted, as the constructor always has
            object.__setattr__(self, 'fusion', FusionConfig())
        if self.filterable is not None and not isinstance(self.filterable, ModelFilters):
            object.__setattr__(self, 'filterable', ModelFilters.declare(self.filterable))
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

    @property
    def model_filters(self) -> ModelFilters | None:
        """`filterable` as declared (`__post_init__` made it `ModelFilters`)."""
        assert self.filterable is None or isinstance(self.filterable, ModelFilters)
        return self.filterable

    def changed(self, **changes: Unpack[RagOptions]) -> RagSettings:
        """A copy with ``changes`` (field names); a `TypeError` names any that is not a field."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise TypeError(f'unknown ToolishRag options {unknown}; the options are the fields of RagSettings')
        return replace(self, **changes)


class RagOptions(TypedDict, total=False):
    """`RagSettings`' fields as keywords (``ToolishRag(store, max_top_k=20)``, ``with_settings``), typed.

    Only for type checkers and editors: the values are checked by `RagSettings` itself, and
    `tests/test_rag_options.py` keeps these keys and types equal to its fields.
    """

    name: str
    description: str | None
    metadata_filter: FilterSource | None
    entity_filter: FilterSource | None
    exclude_tools: Collection[str]
    default_top_k: int
    max_top_k: int
    max_expansion_chars: int
    max_query_chars: int
    max_chunks_to_add: int
    fusion: FusionConfig
    listener: RagListener | None
    id: str | None
    max_retries: int
    max_read_chars: int
    filterable: ModelFilters | Mapping[str, FilterableSpec] | None
    allow_grouping: bool
    graph_seeds: int
    trace_content: bool
    reranker: Reranker | None
    rerank_candidates: int
