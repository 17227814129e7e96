"""The one path every tool call takes: scope, argument checks, the model's filter, tracing, events, retries.

`ToolCalls.run` wraps each tool's body (`ToolSpec.build` binds it per tool); a refusal
(`InvalidRequestError`) becomes a bounded ``ModelRetry``. See docs/toolset.md.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from pydantic import BaseModel
from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.messages import ToolReturn

from ..errors import InvalidRequestError
from ..filters import Filter, combine_all
from ..protocols import StoreLike
from ..retriever import Retriever
from ..stores.federated import Federated
from ..stores.federated._events import MemberUnavailable, noting_unavailable
from ..tracing import HITS, RETRY, CallTrace, Tracing
from ._arguments import StringArguments
from ._events import RagEvent, RagListener
from ._render import render_unavailable, render_unavailable_retry
from ._retries import retry_message
from ._settings import FilterSource, RagSettings
from ._spec import Body, RunTool, ToolSpec

__all__ = ['ToolCalls']


@dataclass(frozen=True)
class ToolCalls:
    """A toolset's call path: its store, settings, scope filters, listeners and string argument checks."""

    store: StoreLike
    settings: RagSettings
    filters: tuple[FilterSource, ...]
    """The scope: ANDed into every call (static filters, or functions of the run context)."""
    listeners: tuple[RagListener, ...]
    arguments: StringArguments

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

    def bound(self, spec: ToolSpec) -> RunTool:
        """`run` for the tool of ``spec`` (what its `ToolEnv` carries)."""
        return partial(self.run, spec)

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

    async def run(
        self,
        spec: ToolSpec,
        ctx: RunContext[Any],
        arguments: Mapping[str, Any],
        body: Body,
        notes: Mapping[str, bool] | None = None,
    ) -> ToolReturn:
        """Run one tool call: argument checks, scope, timing, retry translation and the listener event.

        ``body`` gets the string arguments checked and normalised (`StringArguments.check`). A refusal
        becomes a ``ModelRetry`` whose message is bounded (`retry_message`). The call is one
        OpenTelemetry span, current while ``body`` runs (a graph walk's span nests in it) and around the
        listener events. ``notes`` are span attributes ``body`` fills in (whether it reranked).
        """
        start = time.perf_counter()
        retriever = self.retriever(ctx)
        arguments = {k: v for k, v in arguments.items() if not (k in spec.optional and v is None)}
        noted: list[MemberUnavailable] = []
        with self.call_trace(spec.name, arguments, retriever).span(self.tracing(ctx)) as span:
            try:
                retriever = self._narrowed(retriever, arguments)
                with noting_unavailable() as noted:
                    text, hits = await body(retriever, self.arguments.check(arguments))
            except InvalidRequestError as e:
                sent = [
                    s for v in arguments.values() for s in (v if isinstance(v, list) else [v]) if isinstance(s, str)
                ]
                message = retry_message(str(e), echoed=[*sent, *(v.strip() for v in sent)])
                down = tuple(dict.fromkeys(u.member for u in noted))
                if down:  # a member that did not answer may hold what was asked for
                    message = f'{message}\n\n{render_unavailable_retry(down)}'
                span.set_attribute(RETRY, True)
                filtered = retriever.filter is not None
                await self.emit(
                    self.event(
                        spec.name, arguments, start, filtered, result_text=message, error=message, unavailable=down
                    )
                )
                raise ModelRetry(message) from e
            span.set_attribute(HITS, len(hits))
            if notes:
                span.set_attributes(notes)
            filtered = retriever.filter is not None
            down = tuple(dict.fromkeys(e.member for e in noted))
            if down:
                text = f'{text}\n\n{render_unavailable(down)}'
            await self.emit(
                self.event(spec.name, arguments, start, filtered, result_text=text, hits=tuple(hits), unavailable=down)
            )
        metadata = {'hits': list(hits), 'rag': self.settings.name, 'tool': spec.name}
        return ToolReturn(return_value=text, metadata=metadata)

    def _narrowed(self, retriever: Retriever, arguments: Mapping[str, Any]) -> Retriever:
        """The run's retriever narrowed by the model's ``filter`` (parsed from the declaration) and, over a
        federation, its ``sources``, if sent."""
        settings = self.settings
        if arguments.get('group_by') is not None and not settings.allow_grouping:
            raise InvalidRequestError('this tool takes no group_by argument: call it without one')
        retriever = _sources_narrowed(retriever, arguments.get('sources'))
        sent = arguments.get('filter')
        if sent is None:
            return retriever
        if settings.model_filters is None:
            raise InvalidRequestError('this tool takes no filter argument: call it without one')
        return retriever.with_filter(settings.model_filters.parse(sent))


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
