"""The pydantic-ai face of toolish-rag: the `ToolishRag` toolset, its events and rendering."""

from .._tool_names import TOOL_NAMES, ToolName, tool_name
from ._events import RagEvent, RagListener
from ._filterable import FilterableKey, ModelFilters
from ._rag import EagerResult, EagerSearch, FilterSource, ToolishRag
from ._settings import RagOptions, RagSettings

__all__ = [
    'TOOL_NAMES',
    'EagerResult',
    'EagerSearch',
    'FilterSource',
    'FilterableKey',
    'ModelFilters',
    'RagEvent',
    'RagListener',
    'RagOptions',
    'RagSettings',
    'ToolName',
    'ToolishRag',
    'tool_name',
]
