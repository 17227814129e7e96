"""`ToolSpec`: one tool in one place (its name, when it is offered, its words, its string caps, its function).

The tool families in `toolish_rag.toolset._tools` export specs; `ToolishRag` derives its tools,
instructions, argument caps and schemas from them. See docs/toolset.md.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias

from pydantic_ai import RunContext
from pydantic_ai.messages import ToolReturn

from ..protocols import StoreFeatures, StoreLike
from ..retriever import Retriever
from ..search import SearchHit
from ._arguments import Bounds, StringArgument
from ._names import ToolName, tool_name
from ._settings import RagSettings

__all__ = ['Body', 'RunTool', 'ToolEnv', 'ToolFunction', 'ToolSpec']

Result: TypeAlias = tuple[str, list[SearchHit]]
"""What a tool body returns: the text the model reads, and the chunks it shows (as hits)."""
Body: TypeAlias = Callable[[Retriever, Mapping[str, Any]], Awaitable[Result]]
"""A tool body: the run's scoped retriever and the checked arguments (by parameter name)."""
ToolFunction: TypeAlias = Callable[..., Awaitable[ToolReturn]]
"""A tool function as pydantic-ai reads it: ``ctx`` first, then the typed (``Annotated``) parameters."""


class RunTool(Protocol):
    """The one tool-call path (`toolish_rag.toolset._calls.ToolCalls.run`), bound to one tool."""

    def __call__(
        self,
        ctx: RunContext[Any],
        arguments: Mapping[str, Any],
        body: Body,
        notes: Mapping[str, bool] | None = None,
    ) -> Awaitable[ToolReturn]: ...


@dataclass(frozen=True, slots=True)
class ToolEnv:
    """What a spec builds its tool function from: the settings, the store, and the call path bound to the tool."""

    settings: RagSettings
    store: StoreLike
    caps: StoreFeatures
    run: RunTool

    def full_name(self, tool: ToolName) -> str:
        """The name the model calls ``tool`` by (for hints such as "call docs_outline with...")."""
        return tool_name(self.settings.name, tool)


def _no_strings(settings: RagSettings) -> Mapping[str, StringArgument]:
    return {}


def _no_bounds(settings: RagSettings) -> Mapping[str, Bounds]:
    return {}


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool: everything the toolset, its instructions, the CLI, MCP and the hardening tests need of it."""

    name: ToolName
    """The short name (``vector_search``); the model calls ``<rag name>_<name>``."""
    offered: Callable[[StoreFeatures, RagSettings], bool]
    """Whether a store with these capabilities, under these settings, gets the tool."""
    describe: Callable[[StoreLike, RagSettings], str]
    """The tool description the model reads."""
    build: Callable[[ToolEnv], ToolFunction]
    """The typed tool function, each call going through ``env.run`` (the one call path) to the tool's body."""
    strings: Callable[[RagSettings], Mapping[str, StringArgument]] = _no_strings
    """The cap and check of each string parameter (for a list of strings, of each item), by parameter name."""
    bounds: Callable[[RagSettings], Mapping[str, Bounds]] = _no_bounds
    """The lowest and highest value of each integer parameter, by name: the schema states them, the body checks."""
    optional: frozenset[str] = field(default_factory=frozenset)
    """Parameters left out of the checked arguments (and of the listener's event) when not sent."""

    @property
    def takes_filter(self) -> bool:
        """Whether the tool takes the model's ``filter`` (the instructions then describe the filterable keys)."""
        return 'filter' in self.optional
