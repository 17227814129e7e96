"""Tool names: the short names of the tools and the ``<rag name>_<tool>`` names a model calls.

Defined in `toolish_rag._tool_names` (below both the toolset and `toolish_rag.grounded`, which
reads tool returns by name); this is their public home. See docs/toolset.md.
"""

from .._tool_names import TOOL_NAMES, ToolName, check_tool_names, tool_name

__all__ = ['TOOL_NAMES', 'ToolName', 'check_tool_names', 'tool_name']
