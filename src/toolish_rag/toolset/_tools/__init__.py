"""The tools, one `ToolSpec` each, by family: search, reading, navigation, citations, graph, multi-hop.

`SPECS` is every spec in `TOOL_NAMES` order; the toolset, its instructions, its tools' parameters,
``toolish-rag tools``, MCP and the hardening tests all derive from it. See docs/toolset.md.
"""

from __future__ import annotations

from ..._tool_names import TOOL_NAMES
from .._spec import ToolSpec
from . import citations, graph, multihop, navigation, reading, search

__all__ = ['SPECS', 'ToolSpec']

SPECS: tuple[ToolSpec, ...] = tuple(
    sorted(
        (*search.SPECS, *reading.SPECS, *navigation.SPECS, *citations.SPECS, *graph.SPECS, *multihop.SPECS),
        key=lambda spec: TOOL_NAMES.index(spec.name),
    )
)
"""Every tool's spec, in the order tools are offered (`TOOL_NAMES`)."""
