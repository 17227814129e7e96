"""What `toolish_rag.grounded` needs of a collection: a small protocol, not `ToolishRag` itself.

`Grounding` and `ask` work on anything with these members (a `ToolishRag` has them), so the
grounded package has no type-level dependency on the toolset that builds it. See docs/grounded.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from pydantic_ai import RunContext
from pydantic_ai.messages import ToolReturn

from ..protocols import StoreFeatures
from ..retriever import Retriever

__all__ = ['GroundingSource']


class GroundingSource(Protocol):
    """A collection whose retrievals an answer may cite: its name, tools, scoped retriever and direct tool calls."""

    @property
    def name(self) -> str: ...

    @property
    def store_features(self) -> StoreFeatures: ...

    @property
    def tool_names(self) -> list[str]: ...

    @property
    def offered_tools(self) -> Sequence[str]: ...

    def retriever(self, ctx: RunContext[Any] | None = None) -> Retriever: ...

    async def run_tool(self, tool: str, arguments: Mapping[str, Any], *, deps: Any = None) -> ToolReturn: ...
