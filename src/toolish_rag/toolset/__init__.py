"""The pydantic-ai face of toolish-rag: the `ToolishRag` toolset, its events and rendering."""

from .events import RagEvent, RagListener
from .filterable import FilterableKey, ModelFilters
from .names import TOOL_NAMES, ToolName, tool_name
from .rag import EagerSearch, FilterSource, ToolishRag

__all__ = [
    'TOOL_NAMES',
    'EagerSearch',
    'FilterSource',
    'FilterableKey',
    'ModelFilters',
    'RagEvent',
    'RagListener',
    'ToolName',
    'ToolishRag',
    'tool_name',
]
