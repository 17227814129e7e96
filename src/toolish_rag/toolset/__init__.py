"""The pydantic-ai face of toolish-rag: the `ToolishRag` toolset, its events and rendering."""

from .events import RagEvent, RagListener
from .rag import TOOL_NAMES, EagerSearch, FilterSource, ToolishRag, ToolName

__all__ = ['TOOL_NAMES', 'EagerSearch', 'FilterSource', 'RagEvent', 'RagListener', 'ToolName', 'ToolishRag']
