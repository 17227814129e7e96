"""`ToolSpec`: one tool in one place (its name, when it is offered, its words, its parameters and body).

The tool families in `toolish_rag.toolset._tools` export specs; `ToolishRag` derives its tools and
instructions from them, and `toolish_rag.toolset._calls.ToolCalls` runs their bodies. See docs/toolset.md.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from types import MappingProxyType
from typing import Any, NamedTuple, TypeAlias

from .._tool_names import ToolName, tool_name
from ..protocols import StoreFeatures, StoreLike
from ..retriever import Retriever
from ..search import SearchHit
from ._settings import RagSettings

__all__ = ['Body', 'Bound', 'Declared', 'Found', 'Param', 'ToolEnv', 'ToolFunction', 'ToolSpec']


class Found(NamedTuple):
    """What a tool body returns: the text the model reads, the chunks it shows (as hits), and span attributes."""

    text: str
    hits: Sequence[SearchHit]
    attributes: Mapping[str, bool] = MappingProxyType({})


Body: TypeAlias = Callable[..., Awaitable[Found]]
"""A tool body: called with the run's scoped retriever, then the validated arguments as keywords."""
Bound: TypeAlias = Callable[[Retriever], Awaitable[Found]]
"""A body bound to one call's arguments: what is left is the scope to run it in."""
ToolFunction: TypeAlias = Callable[..., Awaitable[Bound]]
"""A tool function as pydantic-ai reads it: the parameters (typed and constrained) in its signature."""


@dataclass(frozen=True, slots=True)
class Param:
    """One tool parameter, declared once: its name, its type with its pydantic constraints, its default.

    The constraints (`~toolish_rag.toolset._arguments.StringArgument`, ``IntBounds``, ``Field``) are built
    per settings, so the schema states them and pydantic enforces them, saying what to send instead.
    """

    name: str
    annotation: Any
    default: Any = inspect.Parameter.empty


@dataclass(frozen=True, slots=True)
class Declared:
    """A tool as its spec builds it for one toolset: its parameters (those the settings turn on) and its body."""

    parameters: tuple[Param, ...]
    body: Body

    @property
    def names(self) -> frozenset[str]:
        return frozenset(p.name for p in self.parameters)

    def function(self, name: str) -> ToolFunction:
        """The function pydantic-ai reads the tool's schema and validator from, named ``name``.

        Called with the validated arguments it returns the body bound to them; `ToolCalls.call_tool`
        runs that in the call's scope. A parameter the settings turn off is not in the signature at all.
        """
        body, empty = self.body, inspect.Parameter.empty
        defaults = {p.name: p.default for p in self.parameters if p.default is not empty}

        async def function(**arguments: Any) -> Bound:
            return partial(body, **{**defaults, **arguments})  # as Python fills a function's defaults

        function.__name__ = function.__qualname__ = name
        function.__annotations__ = {p.name: p.annotation for p in self.parameters}
        keyword = inspect.Parameter.KEYWORD_ONLY
        signature = [
            inspect.Parameter(p.name, keyword, default=p.default, annotation=p.annotation) for p in self.parameters
        ]
        function.__signature__ = inspect.Signature(signature)  # type: ignore[attr-defined]
        return function


@dataclass(frozen=True, slots=True)
class ToolEnv:
    """What a spec builds its tool from: the settings and the store (and which protocols it implements)."""

    settings: RagSettings
    store: StoreLike
    caps: StoreFeatures
    filter_schema: Mapping[str, Any] | None = None
    """The JSON schema of the model's ``filter`` (`RagSettings.filterable`'s), built once per toolset; ``None``
    when the model may not filter (no tool then takes a ``filter``)."""

    def full_name(self, tool: ToolName) -> str:
        """The name the model calls ``tool`` by (for hints such as "call docs_outline with...")."""
        return tool_name(self.settings.name, tool)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool: everything the toolset, its instructions, the CLI, MCP and the hardening tests need of it."""

    name: ToolName
    """The short name (``vector_search``); the model calls ``<rag name>_<name>``."""
    offered: Callable[[StoreFeatures, RagSettings], bool]
    """Whether a store with these capabilities, under these settings, gets the tool."""
    describe: Callable[[StoreLike, RagSettings], str]
    """The tool description the model reads."""
    build: Callable[[ToolEnv], Declared]
    """The tool's parameters (each declared once, constrained per settings) and its body."""
