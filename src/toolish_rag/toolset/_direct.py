"""The run context for calling tools outside an agent run (``run_tool``, the CLI, the MCP server).

Its model (`_NoModel`) fails loudly if asked to respond, and it carries the global tracer
provider's tracer, looked up per call. See docs/toolset.md.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RunUsage

from ..tracing import Tracing

__all__ = ['direct_context']

_NO_MODEL = (
    'toolish-rag called a tool outside an agent run, with no model: nothing should ask this context '
    'for a model response. Run the toolset in an Agent to talk to a model.'
)


class _NoModel(Model):
    """The model of a direct tool call: it has a name, and refuses to respond."""

    @property
    def model_name(self) -> str:
        return 'direct-tool-call'

    @property
    def system(self) -> str:
        return 'toolish-rag'

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        raise RuntimeError(_NO_MODEL)

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncIterator[StreamedResponse]:
        raise RuntimeError(_NO_MODEL)
        yield  # pragma: no cover - makes this a generator, as the base class's is


def direct_context(deps: Any) -> RunContext[Any]:
    """A `RunContext` with ``deps`` for a tool call made outside an agent run."""
    return RunContext(
        deps=deps, model=_NoModel(), usage=RunUsage(), tracer=Tracing.outside_runs().tracer, trace_include_content=True
    )
