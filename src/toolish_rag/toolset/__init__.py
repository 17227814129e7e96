"""The pydantic-ai face of toolish-rag: the `ToolishRag` toolset, its events and rendering."""

from .events import RagEvent, RagListener
from .filterable import FilterableKey, ModelFilters
from .names import TOOL_NAMES, ToolName, tool_name
from .rag import EagerSearch, FilterSource, ToolishRag
from .settings import RagSettings

__all__ = [
    'TOOL_NAMES',
    'EagerSearch',
    'FilterSource',
    'FilterableKey',
    'ModelFilters',
    'RagEvent',
    'RagListener',
    'RagSettings',
    'ToolName',
    'ToolishRag',
    'tool_name',
]
