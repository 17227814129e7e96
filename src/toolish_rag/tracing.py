"""OpenTelemetry spans for tool calls, eager searches, graph walks and ingested files.

See docs/tracing.md#how-tracing-is-built for where spans go and what they may say.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeAlias

from opentelemetry import trace
from opentelemetry.trace import Span, StatusCode, Tracer
from opentelemetry.util.types import AttributeValue
from pydantic_ai import RunContext

__all__ = [
    'RERANKED',
    'ARGUMENTS',
    'CHUNKS',
    'DOCUMENTS',
    'DOCUMENT_ID',
    'EDGES',
    'ERROR',
    'HITS',
    'HOPS',
    'MODEL_FILTER',
    'NODES',
    'OUTCOME',
    'QUERY',
    'RAG',
    'RETRY',
    'SCOPED',
    'SEEDS',
    'STORE',
    'TOOL',
    'TOP_K',
    'TRACER_NAME',
    'TRUNCATED',
    'Attributes',
    'CallTrace',
    'Tracing',
    'current',
    'ended_span',
    'fail',
    'span',
]

TRACER_NAME = 'toolish-rag'
"""The instrumentation scope of every span opened outside an agent run."""

Attributes: TypeAlias = dict[str, AttributeValue]
"""A span's attributes, as the API types them."""

# Attribute names. Every one is under ``toolish_rag.``; those marked content need the double opt-in.
STORE = 'toolish_rag.store'
"""The store's class name (``InMemoryStore``, ``LanceDBStore``...)."""
RAG = 'toolish_rag.rag'
"""The `ToolishRag` name (the prefix of its tool names)."""
TOOL = 'toolish_rag.tool'
"""The tool's short name (``vector_search``...) or ``eager_search``."""
HITS = 'toolish_rag.hits'
"""How many hits (records the model now sees) the call returned."""
SCOPED = 'toolish_rag.scoped'
"""Whether a scope filter applied (never its values)."""
MODEL_FILTER = 'toolish_rag.model_filter'
"""Whether the model sent a ``filter`` argument (never its values)."""
TOP_K = 'toolish_rag.top_k'
RERANKED = 'toolish_rag.reranked'
"""Whether a ranked search's hits carry a reranker's scores (set only when a reranker is configured)."""
RETRY = 'toolish_rag.retry'
"""Set (True) when the call was refused and sent back to the model as a retry."""
ERROR = 'toolish_rag.error'
"""The type of the exception that ended the span (its message only with content)."""
QUERY = 'toolish_rag.query'
"""Content: the query text or the regex pattern."""
ARGUMENTS = 'toolish_rag.arguments'
"""Content: the call's arguments as JSON, without ``filter``."""
SEEDS = 'toolish_rag.seeds'
"""How many seed ids a graph walk started from."""
HOPS = 'toolish_rag.hops'
NODES = 'toolish_rag.nodes'
EDGES = 'toolish_rag.edges'
TRUNCATED = 'toolish_rag.truncated'
"""Whether a budget cut the graph walk."""
DOCUMENT_ID = 'toolish_rag.document_id'
"""An ingested document's id (by default a digest of its uri: never its path, title or metadata)."""
OUTCOME = 'toolish_rag.outcome'
"""An ingested document's outcome: ``added``, ``updated`` or ``failed``."""
CHUNKS = 'toolish_rag.chunks'
DOCUMENTS = 'toolish_rag.documents'

_QUERY_ARGUMENTS = ('query', 'pattern')
_NEVER_TRACED = frozenset({'filter'})


@dataclass(frozen=True, slots=True)
class Tracing:
    """Where spans go and whether they may hold content: one run's policy, or the global one."""

    tracer: Tracer
    include_content: bool = False

    @classmethod
    def of_run(cls, ctx: RunContext[Any], *, opted_in: bool) -> Tracing:
        """The run's tracer; content only when the developer opted in and the run's instrumentation includes it."""
        return cls(ctx.tracer, include_content=opted_in and ctx.trace_include_content)

    @classmethod
    def outside_runs(cls) -> Tracing:
        """The global tracer provider's tracer, without content (nothing outside a run has opted in)."""
        return cls(trace.get_tracer(TRACER_NAME))


_current: ContextVar[Tracing | None] = ContextVar('toolish_rag_tracing', default=None)


def current() -> Tracing:
    """The tracing of the span in progress (a tool call's), else `Tracing.outside_runs`.

    What a span opened deeper down uses (a graph walk inside ``graph_context``), so it goes to the
    same tracer as the call around it and keeps its content policy, without being passed down.
    """
    return _current.get() or Tracing.outside_runs()


@contextmanager
def span(
    tracing: Tracing,
    name: str,
    attributes: Mapping[str, AttributeValue],
    content: Callable[[], Attributes] | None = None,
) -> Iterator[Span]:
    """Open ``name`` as the current span; an exception ends it as an error naming only its type.

    ``content`` (attributes that take work, or are content) is called only for a span that
    records; a span that does not (tracing off) is not made current either (docs/tracing.md has
    the cost). Either way `current` gives ``tracing`` inside, so a span opened deeper down follows it.

    The SDK's own exception recording is off: it would store the message, which can quote the
    query or a filter value. With content included the exception is recorded whole, as
    pydantic-ai does (``record_exception``).
    """
    opened = tracing.tracer.start_span(name, attributes=attributes)
    token = _current.set(tracing)
    try:
        if not opened.is_recording():
            yield opened
            return
        if content is not None:
            opened.set_attributes(content())
        with trace.use_span(opened, record_exception=False, set_status_on_exception=False):
            try:
                yield opened
            except Exception as exc:
                fail(opened, exc, tracing)
                raise
    finally:
        _current.reset(token)
        opened.end()


def fail(opened: Span, exc: BaseException, tracing: Tracing) -> None:
    """Mark ``opened`` as failed by ``exc``: its type always, its message and trace only with content."""
    if not opened.is_recording():
        return
    opened.set_attribute(ERROR, type(exc).__name__)
    opened.set_status(StatusCode.ERROR)
    if tracing.include_content:
        opened.record_exception(exc)


def ended_span(
    tracing: Tracing,
    name: str,
    start_ns: int,
    attributes: Mapping[str, AttributeValue],
    *,
    failed: BaseException | None = None,
) -> None:
    """Record a span that began at ``start_ns`` (``time.time_ns()``) and ends now, failed by ``failed`` if given.

    For work whose start and end are seen at different places, such as an ingested file (taken
    by the writer, done when the batch holding it is written). It is never made current.
    """
    done = tracing.tracer.start_span(name, start_time=start_ns, attributes=attributes)
    if failed is not None:
        fail(done, failed, tracing)
    done.end(end_time=max(start_ns, time.time_ns()))


@dataclass(frozen=True, slots=True)
class CallTrace:
    """What a tool call's (or an eager search's) span says when it opens."""

    rag: str
    store: str
    tool: str
    scoped: bool
    arguments: Mapping[str, Any]
    """As sent (optional ones left out when not sent); read for content only, ``filter`` never."""

    def attributes(self) -> dict[str, AttributeValue]:
        """What every span of the call says: no content."""
        attributes: dict[str, AttributeValue] = {
            STORE: self.store,
            RAG: self.rag,
            TOOL: self.tool,
            SCOPED: self.scoped,
            MODEL_FILTER: self.arguments.get('filter') is not None,
        }
        top_k = self.arguments.get('top_k')
        if isinstance(top_k, int):
            attributes[TOP_K] = top_k
        return attributes

    def content(self) -> dict[str, AttributeValue]:
        """What the span adds when content is included: the query (or pattern) and the arguments but ``filter``."""
        content: dict[str, AttributeValue] = {}
        query = next((self.arguments[k] for k in _QUERY_ARGUMENTS if isinstance(self.arguments.get(k), str)), None)
        if query is not None:
            content[QUERY] = query
        shown = {k: v for k, v in self.arguments.items() if k not in _NEVER_TRACED}
        content[ARGUMENTS] = json.dumps(shown, ensure_ascii=False, default=str)
        return content

    def span(self, tracing: Tracing) -> AbstractContextManager[Span]:
        """The call's span, named ``toolish_rag.<tool>``; its content only when ``tracing`` includes it."""
        return span(
            tracing, f'toolish_rag.{self.tool}', self.attributes(), self.content if tracing.include_content else None
        )
