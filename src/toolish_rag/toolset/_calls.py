"""The one path every tool call takes: scope, the model's filter, tracing, events, retries.

`ToolCalls` is a pydantic-ai `WrapperToolset` around the tools' declarations (a `FunctionToolset`, whose
validators have checked the arguments): its `call_tool` resolves the run's scope, narrows it by the
model's ``filter`` and ``sources``, runs the tool's body in it inside the call's span, turns a refusal
(`InvalidRequestError`) into a bounded ``ModelRetry`` and tells the listeners. Every way a tool is called
(an agent run with ``toolsets=[rag]`` or the capability, `ToolishRag.run_tool`, MCP, the CLI) goes
through it; no capability hook is involved. See docs/toolset.md.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel
from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.messages import ToolReturn
from pydantic_ai.tools import AgentDepsT
from pydantic_ai.toolsets import WrapperToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from .._tool_names import ToolName
from ..errors import InvalidRequestError
from ..filters import Filter, combine_all
from ..protocols import StoreLike
from ..retriever import Retriever
from ..stores.federated import Federated
from ..stores.federated._events import MemberUnavailable, noting_unavailable
from ..tracing import HITS, RETRY, CallTrace, Tracing
from ._events import RagEvent, RagListener
from ._render import render_unavailable, render_unavailable_retry
from ._retries import retry_message
from ._settings import FilterSource, RagSettings
from ._spec import Bound, Found

__all__ = ['ToolCalls']


@dataclass
class ToolCalls(WrapperToolset[AgentDepsT]):
    """A toolset's call path around its tool declarations: its store, settings, scope filters and listeners."""

    store: StoreLike = field(kw_only=True)
    settings: RagSettings = field(kw_only=True)
    filters: tuple[FilterSource, ...] = field(kw_only=True)
    """The scope: ANDed into every call (static filters, or functions of the run context)."""
    listeners: tuple[RagListener, ...] = field(kw_only=True)
    short_names: Mapping[str, ToolName] = field(kw_only=True)
    """The short name of each tool, by the name the model calls it."""

    def retriever(self, ctx: RunContext[Any] | None = None) -> Retriever:
        """The scoped `Retriever` for a run (static filters, plus per-run ones when ``ctx`` is given)."""
        resolved: list[Filter | None] = []
        for source in self.filters:
            if not isinstance(source, BaseModel):
                if ctx is None:
                    raise ValueError('this toolset has a per-run filter: pass the RunContext')
                resolved.append(source(ctx))
            else:
                resolved.append(source)  # type: ignore[arg-type]
        return Retriever(self.store, combine_all(resolved), self.settings.fusion)

    async def emit(self, event: RagEvent) -> None:
        for listener in self.listeners:
            outcome = listener(event)
            if inspect.isawaitable(outcome):
                await outcome

    def tracing(self, ctx: RunContext[Any]) -> Tracing:
        """Where this run's spans go, with content only if both the developer and the run's instrumentation allow."""
        return Tracing.of_run(ctx, opted_in=self.settings.trace_content)

    def call_trace(self, tool: str, arguments: Mapping[str, Any], retriever: Retriever) -> CallTrace:
        store = type(self.store).__name__
        return CallTrace(self.settings.name, store, tool, retriever.filter is not None, arguments)

    def event(self, tool: str, arguments: Mapping[str, Any], start: float, filtered: bool, **what: Any) -> RagEvent:
        """The listener's event for one call (or eager search), timed from ``start``."""
        return RagEvent(
            rag=self.settings.name,
            tool=tool,
            arguments=dict(arguments),
            duration_s=time.perf_counter() - start,
            filtered=filtered,
            **what,
        )

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[AgentDepsT], tool: ToolsetTool[AgentDepsT]
    ) -> ToolReturn:
        """Run one tool call in the run's scope: timing, the span, retry translation and the listener event.

        The declaration (`Declared.function`) binds the validated arguments to the tool's body; it runs
        here with the scoped retriever. A refusal becomes a ``ModelRetry`` whose message is bounded
        (`retry_message`). The call is one OpenTelemetry span, current while the body runs (a graph walk's
        span nests in it) and around the listener events.
        """
        short, start = self.short_names[name], time.perf_counter()
        retriever = self.retriever(ctx)
        arguments = _as_sent(tool_args)
        noted: list[MemberUnavailable] = []
        with self.call_trace(short, arguments, retriever).span(self.tracing(ctx)) as span:
            try:
                retriever = self._narrowed(retriever, tool_args)
                bound: Bound = await self.wrapped.call_tool(name, tool_args, ctx, tool)
                with noting_unavailable() as noted:
                    found: Found = await bound(retriever)
            except InvalidRequestError as e:
                message = retry_message(str(e), echoed=_strings(arguments))
                down = _members_down(noted)
                if down:  # a member that did not answer may hold what was asked for
                    message = f'{message}\n\n{render_unavailable_retry(down)}'
                span.set_attribute(RETRY, True)
                what = {'result_text': message, 'error': message, 'unavailable': down}
                await self.emit(self.event(short, arguments, start, retriever.filter is not None, **what))
                raise ModelRetry(message) from e
            span.set_attribute(HITS, len(found.hits))
            span.set_attributes(dict(found.attributes))
            text, hits = found.text, tuple(found.hits)
            down = _members_down(noted)
            if down:
                text = f'{text}\n\n{render_unavailable(down)}'
            filtered = retriever.filter is not None
            await self.emit(
                self.event(short, arguments, start, filtered, result_text=text, hits=hits, unavailable=down)
            )
        metadata = {'hits': list(hits), 'rag': self.settings.name, 'tool': short}
        return ToolReturn(return_value=text, metadata=metadata)

    def _narrowed(self, retriever: Retriever, arguments: Mapping[str, Any]) -> Retriever:
        """The run's retriever narrowed by the model's ``filter`` (parsed from the declaration) and, over a
        federation, its ``sources``, if sent (a tool takes them only when the settings and store allow)."""
        retriever = _sources_narrowed(retriever, arguments.get('sources'))
        sent, filters = arguments.get('filter'), self.settings.model_filters
        if sent is None or filters is None:
            return retriever
        return retriever.with_filter(filters.parse(sent))


def _members_down(noted: list[MemberUnavailable]) -> tuple[str, ...]:
    """The federation members that did not answer during a call, each once, in the order they were noted."""
    return tuple(dict.fromkeys(u.member for u in noted))


def _as_sent(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The validated arguments as plain data, those left out (``None``) left out: what a listener and a span see."""
    return {name: _plain(value) for name, value in arguments.items() if value is not None}


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(exclude_unset=True)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _strings(arguments: Mapping[str, Any]) -> list[str]:
    """The string arguments (and strings in list arguments), to shorten wherever a refusal quotes them."""
    sent = [s for v in arguments.values() for s in (v if isinstance(v, list) else [v]) if isinstance(s, str)]
    return [*sent, *(v.strip() for v in sent)]


def _sources_narrowed(r: Retriever, sources: list[str] | None) -> Retriever:
    """``r`` over only the federation members ``sources`` names (narrowing only: never a member ``r`` cannot see)."""
    if sources is None:
        return r
    store = r.store
    if not isinstance(store, Federated):
        raise InvalidRequestError('this tool takes no sources argument: call it without one')
    names = list(store.members)
    unknown = [s for s in dict.fromkeys(sources) if s not in names]
    if not sources or unknown:
        told = f'{unknown[0]!r} is not a source here' if unknown else 'sources is empty'
        raise InvalidRequestError(f'{told}: choose among {", ".join(names)}, or leave sources out to search all')
    return replace(r, store=store.narrowed(set(sources)))
