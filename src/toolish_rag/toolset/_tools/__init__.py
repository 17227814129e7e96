"""The tools, one `ToolSpec` each, by family: search, reading, navigation, citations, graph, multi-hop.

`SPECS` is every spec in `TOOL_NAMES` order; the toolset, its instructions, the argument caps,
``toolish-rag tools``, MCP and the hardening tests all derive from it. See docs/toolset.md.
"""

from __future__ import annotations

from ..._tool_names import TOOL_NAMES
from .._arguments import StringArguments
from .._settings import RagSettings
from .._spec import ToolSpec
from . import citations, graph, multihop, navigation, reading, search

__all__ = ['SPECS', 'ToolSpec', 'string_arguments']

SPECS: tuple[ToolSpec, ...] = tuple(
    sorted(
        (*search.SPECS, *reading.SPECS, *navigation.SPECS, *citations.SPECS, *graph.SPECS, *multihop.SPECS),
        key=lambda spec: TOOL_NAMES.index(spec.name),
    )
)
"""Every tool's spec, in the order tools are offered (`TOOL_NAMES`)."""


def string_arguments(settings: RagSettings) -> StringArguments:
    """The caps and checks of every tool's string parameters, and their integer bounds, from the specs
    (`ToolSpec.strings`, `ToolSpec.bounds`)."""
    return StringArguments.merged((spec.strings(settings) for spec in SPECS), (spec.bounds(settings) for spec in SPECS))
