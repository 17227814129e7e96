"""Shared pieces of the agent-level tests: composed stores, scripted models, small corpora.

Nothing here is a mock. `compose_store` builds real store classes (with ``type()``) that
hold an `InMemoryStore` and expose only a chosen set of store protocols, so the
toolset sees exactly that set; `Script` drives a real pydantic-ai `Agent` through
pydantic-ai's own `FunctionModel` with a fixed sequence of tool calls.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolish_rag import DocumentBuilder, DocumentInfo, Entity, SearchHit, SearchRequest
from toolish_rag.content import Document
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.fusion import fuse
from toolish_rag.stores import InMemoryStore

__all__ = [
    'CAPABILITY_METHODS',
    'FINAL',
    'Call',
    'InnerWrites',
    'Returned',
    'Script',
    'block_ids',
    'compose_store',
    'expanded_ids',
    'handbook_corpus',
    'handbook_entities',
    'memory_store',
    'returns',
]

FINAL = 'final answer'
"""The text every script ends with, so a test can check the run finished."""

CAPABILITY_METHODS: dict[str, tuple[str, ...]] = {
    'vector': ('vector_search',),
    'text': ('text_search', 'text_query_syntax'),
    'regex': ('regex_search',),
    'expand': ('get_records', 'expand'),
    'sections': ('document_page', 'chunk_outlines', 'read_section'),
    'hybrid': ('hybrid_search',),
    'pushdown': ('supports_filter',),
}
"""The members each store protocol needs; `compose_store` exposes the chosen ones."""


# -- composed stores ---------------------------------------------------------------------------


def _delegate(name: str) -> Callable[..., Any]:
    async def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        self.calls.append(name)
        return await getattr(self.inner, name)(*args, **kwargs)

    method.__name__ = name
    return method


async def _native_hybrid(self: Any, request: SearchRequest) -> list[SearchHit]:
    """A store-side hybrid search (the in-memory store has none): fuse the inner store's two legs."""
    self.calls.append('hybrid_search')
    vector = await self.inner.vector_search(request)
    text = await self.inner.text_search(request)
    return fuse(vector, text, request.top_k)


def _supports_filter(self: Any, filter: Any) -> bool:
    return True


def _init(self: Any, inner: InMemoryStore) -> None:
    self.inner = inner
    self.calls = []


@cache
def compose_store(capabilities: frozenset[str]) -> type:
    """A store class holding an `InMemoryStore` that offers only ``capabilities``.

    ``capabilities`` are keys of `CAPABILITY_METHODS`. Without ``'pushdown'`` the class
    does not implement `FilterPushdown`, so the facade post-filters with a growing window.
    Every protocol call is recorded in ``instance.calls``.
    """
    unknown = capabilities - set(CAPABILITY_METHODS)
    if unknown:
        raise ValueError(f'unknown capabilities {sorted(unknown)}')
    namespace: dict[str, Any] = {
        '__init__': _init,
        'upsert': _delegate('upsert'),
        'delete_documents': _delegate('delete_documents'),
        'delete_entities': _delegate('delete_entities'),
        'list_documents': _delegate('list_documents'),
        '__repr__': lambda self: f'{type(self).__name__}()',
    }
    for capability in sorted(capabilities):
        for name in CAPABILITY_METHODS[capability]:
            if name == 'text_query_syntax':
                namespace[name] = property(lambda self: self.inner.text_query_syntax)
            elif name == 'hybrid_search':
                namespace[name] = _native_hybrid
            elif name == 'supports_filter':
                namespace[name] = _supports_filter
            else:
                namespace[name] = _delegate(name)
    suffix = '_'.join(sorted(capabilities)) or 'nothing'
    return type(f'Store_{suffix}', (), namespace)


def memory_store() -> InMemoryStore:
    return InMemoryStore(HashingEmbeddingModel(64))


class InnerWrites:
    """The write side and listing of a wrapper store, delegated unchanged to ``self.inner``.

    For test stores that wrap an `InMemoryStore` to change one behaviour (a leak, a crash, a
    refusal): they subclass this and write only the methods they change.
    """

    inner: Any

    async def delete_documents(self, document_ids: Iterable[str]) -> int:
        return int(await self.inner.delete_documents(document_ids))

    async def delete_entities(self, entity_ids: Iterable[str]) -> int:
        return int(await self.inner.delete_entities(entity_ids))

    async def list_documents(self) -> Sequence[DocumentInfo]:
        return list(await self.inner.list_documents())


# -- corpora -------------------------------------------------------------------------------------


def handbook_corpus(tenants: Sequence[str] = ('acme', 'globex')) -> list[Document]:
    """One small handbook per tenant: Refunds (with an Eligibility subsection) and Shipping."""
    docs = []
    for t in tenants:
        b = DocumentBuilder(
            f'file:///{t}/handbook.md', f'{t} handbook', metadata={'tenant': t, 'year': 2024}, labels={'Manual'}
        )
        refunds = b.section('Refunds')
        b.add_chunk(refunds, f'{t} refunds are paid within 30 days of the return.')
        b.add_chunk(refunds, 'Keep the receipt for every refund claim.')
        eligibility = b.section('Eligibility', parent=refunds)
        b.add_chunk(eligibility, 'Items must be unused. ERR-4012 means the refund window expired.')
        shipping = b.section('Shipping')
        b.add_chunk(shipping, f'{t} ships parcels within two working days.')
        docs.append(b.build())
    return docs


def handbook_entities() -> list[Entity]:
    return [
        Entity(
            id='ent-alice',
            name='Alice Example',
            description='support lead for refunds',
            labels=frozenset({'Person'}),
            metadata={'tenant': 'acme'},
        ),
        Entity(
            id='ent-bob',
            name='Bob Example',
            description='refunds clerk',
            labels=frozenset({'Person'}),
            metadata={'tenant': 'globex'},
        ),
    ]


# -- scripted models -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    tool: str
    args: dict[str, Any] | str


Step = Call | list[Call] | str


@dataclass
class Script:
    """A `FunctionModel` that makes the given tool calls, one response per step, then answers.

    A step is a `Call`, a list of calls (sent in one response) or a final text. ``infos``
    collects the `AgentInfo` of every model request (tools and instructions it saw).
    """

    steps: list[Step]
    final: str = FINAL
    infos: list[AgentInfo] = field(default_factory=list)

    def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.infos.append(info)
        step = sum(1 for m in messages if isinstance(m, ModelResponse))
        if step >= len(self.steps):
            return ModelResponse(parts=[TextPart(self.final)])
        current = self.steps[step]
        if isinstance(current, str):
            return ModelResponse(parts=[TextPart(current)])
        calls = current if isinstance(current, list) else [current]
        return ModelResponse(parts=[ToolCallPart(c.tool, c.args) for c in calls])

    @property
    def model(self) -> FunctionModel:
        return FunctionModel(self._respond)

    @property
    def tool_names(self) -> list[str]:
        """The tool names the model was offered on its first request."""
        return [t.name for t in self.infos[0].function_tools]

    @property
    def instructions(self) -> str | None:
        return self.infos[0].instructions


@dataclass(frozen=True)
class Returned:
    """What one tool call gave back to the model."""

    tool: str
    text: str
    retried: bool
    metadata: Any
    part: ToolReturnPart | RetryPromptPart


def returns(messages: Iterable[ModelMessage]) -> list[Returned]:
    """Every tool result the model received, in order (retries included)."""
    out: list[Returned] = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolReturnPart):
                out.append(
                    Returned(
                        part.tool_name,
                        part.model_response_str(wrap_if_error=False),
                        part.outcome == 'retried',
                        part.metadata,
                        part,
                    )
                )
            elif isinstance(part, RetryPromptPart):  # older pydantic-ai spelling of a retry
                text = part.content if isinstance(part.content, str) else str(part.content)
                out.append(Returned(part.tool_name or '', text, True, None, part))
    return out


_BLOCK = re.compile(r'^\[(\d+)\] (?:chunk|entity) (\S+)', re.MULTILINE)
_EXPANDED = re.compile(r'^chunk (\S+) \(section:', re.MULTILINE)


def block_ids(text: str) -> list[str]:
    """The record ids of the numbered result blocks in a search tool's output, in order."""
    blocks = _BLOCK.findall(text)
    assert [int(n) for n, _ in blocks] == list(range(1, len(blocks) + 1)), text
    return [rid for _, rid in blocks]


def expanded_ids(text: str) -> list[str]:
    """The chunk ids shown by ``broaden_chunk`` / ``zoom_out``, in order."""
    return _EXPANDED.findall(text)


def bm25s_english(texts: list[str]) -> list[list[str]]:
    """bm25s's own English tokenisation (stop words, Snowball stemmer): the reference the English analyzer equals."""
    import bm25s
    import Stemmer

    tokens: list[list[str]] = bm25s.tokenize(
        texts, stopwords='en', stemmer=Stemmer.Stemmer('english'), return_ids=False, show_progress=False
    )
    return tokens
