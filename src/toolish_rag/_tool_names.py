"""Tool names: the short names of the tools and the ``<rag name>_<tool>`` names a model calls.

Every place that shows or parses a tool name (the toolset, its instructions, the CLI, and
`toolish_rag.grounded`, which reads tool returns by name) goes through `tool_name`, so the
naming rule lives here once, below the toolset and grounded. `toolish_rag.toolset` exports
`TOOL_NAMES`, `ToolName` and `tool_name`.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Literal, TypeAlias, get_args

__all__ = ['TOOL_NAMES', 'ToolName', 'check_tool_names', 'tool_name']

ToolName: TypeAlias = Literal[
    'vector_search',
    'text_search',
    'hybrid_search',
    'regex_search',
    'broaden_chunk',
    'zoom_out',
    'list_documents',
    'outline',
    'read_section',
    'verify_citations',
    'list_values',
    'graph_context',
    'multihop_search',
]
TOOL_NAMES: tuple[ToolName, ...] = get_args(ToolName)
"""Every short tool name, in the order the tools are offered."""


def tool_name(rag_name: str, tool: str) -> str:
    """The name a model calls ``tool`` by on the RAG named ``rag_name`` (``docs_vector_search``).

    The RAG's name is a prefix so that several RAGs can serve one agent without their tools clashing.
    """
    return f'{rag_name}_{tool}'


def check_tool_names(names: Collection[str]) -> None:
    """Raise a `ValueError` naming any of ``names`` that is not a short tool name."""
    unknown = set(names) - set(TOOL_NAMES)
    if unknown:
        raise ValueError(f'unknown tool names {sorted(unknown)}; tools are {list(TOOL_NAMES)}')
