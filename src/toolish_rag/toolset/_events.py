"""Listener events: one per tool call and per eager search, for logging and analytics."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from ..search import SearchHit

__all__ = ['RagEvent', 'RagListener']


@dataclass(frozen=True, slots=True)
class RagEvent:
    """What happened in one tool call (or eager search)."""

    rag: str
    """The `ToolishRag` name."""
    tool: str
    """The tool's short name (``'vector_search'``, ...) or ``'eager_search'``."""
    arguments: Mapping[str, Any]
    result_text: str
    """Exactly what the model saw (for a retry: the retry message)."""
    hits: tuple[SearchHit, ...] = field(default=())
    duration_s: float = 0.0
    filtered: bool = False
    """Whether a scope filter applied to this call."""
    error: str | None = None
    """Set when the call was rejected with a retry message."""
    unavailable: tuple[str, ...] = ()
    """Over a federation: the members (sources) that failed or timed out during the call; the others answered."""


RagListener: TypeAlias = Callable[[RagEvent], None] | Callable[[RagEvent], Awaitable[None]]
