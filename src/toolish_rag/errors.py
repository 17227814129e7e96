"""Exceptions a store or the facade raises on purpose.

The toolset turns `QuerySyntaxError` and `InvalidRequestError` into pydantic-ai
``ModelRetry`` messages, so a model that sent a bad call is told how to fix it and the
run goes on. Anything else a store raises is a bug or an outage and propagates.
"""

from __future__ import annotations

__all__ = ['InvalidRequestError', 'QuerySyntaxError', 'ToolishRagError']


class ToolishRagError(Exception):
    """Base class for toolish-rag's own errors."""


class InvalidRequestError(ToolishRagError, ValueError):
    """A request a caller (often a model) can correct: the message says how."""


class QuerySyntaxError(InvalidRequestError):
    """A text query or regex pattern the store cannot run as written."""
