"""``tool_search=True``: the search tools stay on view, every other tool waits behind pydantic-ai's `ToolSearch`.

The wrapper marks the other tools ``defer_loading`` (pydantic-ai's `ToolSearch`, on every agent,
hides them until a tool search finds them) and gives instructions naming only the tools shown.
See docs/capabilities.md#deferral.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.tools import AgentDepsT
from pydantic_ai.toolsets import WrapperToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from ..toolset import ToolishRag

__all__ = ['SearchFirst', 'is_search']


def is_search(short_name: str) -> bool:
    """Whether a tool (short name) is a search: it finds chunks from a query rather than reading given ids."""
    return short_name.endswith('_search')


@dataclass
class SearchFirst(WrapperToolset[AgentDepsT]):
    """``rag``'s tools with all but the searches deferred behind tool search."""

    rag: ToolishRag[Any]

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        tools = await self.wrapped.get_tools(ctx)
        shown = set(self._shown_names())
        return {
            name: tool if name in shown else replace(tool, tool_def=replace(tool.tool_def, defer_loading=True))
            for name, tool in tools.items()
        }

    def _shown_names(self) -> list[str]:
        return [
            full for short, full in zip(self.rag.offered_tools, self.rag.tool_names, strict=True) if is_search(short)
        ]

    async def get_instructions(self, ctx: RunContext[AgentDepsT]) -> str | None:
        return self.rag.instructions_naming([t for t in self.rag.offered_tools if is_search(t)])
