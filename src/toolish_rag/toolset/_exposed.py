"""The names a model calls a toolset's tools by, as pydantic-ai's wrappers expose them.

`ToolishRag.get_tools` marks each tool definition with the toolset's id and the tool's short name
(`mark`, in ``ToolDefinition.metadata``, which is never sent to a model and survives every wrapper);
the instructions then name each tool as this step's tool definitions hold it (`exposed_names`), so
``rag.prefixed('kb')``, ``rag.renamed({...})`` or ``rag.filtered(...)`` change what they say exactly as
they change the tools, with no special case for any wrapper. See docs/toolset.md#tool-names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.tools import ToolDefinition

from .._tool_names import ToolName

__all__ = ['METADATA_KEY', 'exposed_names', 'mark']

METADATA_KEY = 'toolish_rag'
"""The key of a tool definition's metadata naming the toolset (its id) and the tool (its short name)."""


def mark(definition: ToolDefinition, toolset_id: str, tool: ToolName) -> ToolDefinition:
    """``definition`` marked as the toolset ``toolset_id``'s tool ``tool``."""
    metadata = {**(definition.metadata or {}), METADATA_KEY: {'toolset': toolset_id, 'tool': tool}}
    return replace(definition, metadata=metadata)


def exposed_names(ctx: RunContext[Any], toolset_id: str, own: Mapping[ToolName, str]) -> dict[ToolName, str]:
    """Each of ``own``'s tools (short name -> the toolset's own name for it) by the name the model sees.

    In a run step, read from the step's tool definitions: a tool a wrapper renamed has its new name, one
    a wrapper left out is left out. Without the step's tools (outside a run, or in a durable activity,
    where the run context has no tool manager) the toolset's own names.
    """
    manager = ctx.tool_manager
    if manager is None or manager.tools is None:
        return dict(own)
    seen: dict[str, str] = {}
    for name, definition in ctx.tools.items():
        marked = (definition.metadata or {}).get(METADATA_KEY)
        if isinstance(marked, dict) and marked.get('toolset') == toolset_id and isinstance(marked.get('tool'), str):
            seen[marked['tool']] = name
    return {tool: seen[tool] for tool in own if tool in seen}
