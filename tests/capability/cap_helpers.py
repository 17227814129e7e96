"""Shared pieces of the capability tests: a scripted conversation over the two-tenant grounded corpus.

Nothing here is a mock: the store is a real `InMemoryStore` with the hashing embedder, the model
pydantic-ai's `FunctionModel`, replaying one step per model request.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart

from tests.grounded.grounded_helpers import Scripted
from toolish_rag import GroundedAnswer, PropertyFilter as F, ToolishRag
from toolish_rag.capability import EagerResultsPart
from toolish_rag.stores import InMemoryStore

__all__ = ['acme', 'evidence_parts', 'evidence_texts', 'grounded_agent', 'request_texts']


def acme(store: InMemoryStore) -> ToolishRag[Any]:
    return ToolishRag(store, name='docs').with_metadata_filter(F.eq('tenant', 'acme'))


def grounded_agent(script: Scripted, *capabilities: Any) -> Agent[Any, GroundedAnswer]:
    return Agent(script.model, output_type=GroundedAnswer, capabilities=list(capabilities), retries={'output': 1})


def evidence_texts(messages: Sequence[ModelMessage]) -> list[str]:
    """The text of every evidence part (a collection's tool return or eager results), in order."""
    return [str(p.content) for p in evidence_parts(messages)]


def evidence_parts(messages: Sequence[ModelMessage]) -> list[ToolReturnPart | EagerResultsPart]:
    """Every tool return or eager-results part carrying a collection's hits, in order."""
    return [
        p
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart | EagerResultsPart) and isinstance(p.metadata, dict) and 'rag' in p.metadata
    ]


def request_texts(messages: Sequence[ModelMessage]) -> str:
    """Everything a request's messages say, as one text."""
    return '\n'.join(evidence_texts(messages))
