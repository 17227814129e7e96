"""Shared pieces of the grounded-answer tests: a two-tenant corpus and scripted models.

Nothing here is a mock: the store is a real `InMemoryStore` with the hashing embedder, and the
models are pydantic-ai's own `FunctionModel` driven by a list of steps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolish_rag import DocumentBuilder
from toolish_rag.content import document_id_for
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.stores import InMemoryStore

__all__ = [
    'ACME_0',
    'ACME_0_ID',
    'ACME_1_ID',
    'ACME_2_ID',
    'GLOBEX_0_ID',
    'chunk_id',
    'ACME_1',
    'ACME_2',
    'GLOBEX_0',
    'Scripted',
    'answer',
    'build_store',
    'cite',
    'retry_texts',
    'search',
]

ACME_0 = 'Refunds are paid within 30 days of the request. Customers must keep the original receipt.'
ACME_1 = 'Refunds for digital goods are not available after download. Contact support for exceptions.'
ACME_2 = 'Store credit never expires and can be used in any branch of the shop.'
GLOBEX_0 = 'Globex refunds are paid within 14 days of the request, without a receipt.'
UNRELATED = 'The cafeteria serves lunch between noon and two o clock on weekdays.'


def chunk_id(uri: str, sequence: int) -> str:
    """The id `DocumentBuilder` gives the ``sequence``-th chunk of the document at ``uri``."""
    return f'{document_id_for(uri)}-{sequence}'


ACME_URI = 'file:///acme/refunds.md'
GLOBEX_URI = 'file:///globex/refunds.md'
ACME_0_ID, ACME_1_ID, ACME_2_ID = (chunk_id(ACME_URI, i) for i in range(3))
GLOBEX_0_ID = chunk_id(GLOBEX_URI, 0)


async def build_store(path: Path | None = None, *, with_unrelated: bool = True) -> InMemoryStore:
    """Acme's refund policy (three consecutive chunks, one section), Globex's (one chunk), and a canteen note."""
    store = InMemoryStore(HashingEmbeddingModel(), path=path)
    acme = DocumentBuilder(ACME_URI, 'Acme refund policy', metadata={'tenant': 'acme'})
    section = acme.section('Refunds')
    acme.add_chunk(section, ACME_0, start_char=0, end_char=len(ACME_0), page=2)
    acme.add_chunk(section, ACME_1)
    acme.add_chunk(acme.section('Store credit'), ACME_2)
    globex = DocumentBuilder(GLOBEX_URI, 'Globex refunds', metadata={'tenant': 'globex'})
    globex.add_chunk(globex.section('Refunds'), GLOBEX_0)
    docs = [acme.build(), globex.build()]
    if with_unrelated:
        canteen = DocumentBuilder('file:///acme/canteen.md', 'Canteen', metadata={'tenant': 'acme'})
        canteen.add_chunk(None, UNRELATED)
        docs.append(canteen.build())
    await store.upsert(docs)
    return store


def cite(chunk: str, quote: str) -> dict[str, str]:
    return {'chunk_id': chunk, 'quote': quote}


def answer(status: str = 'answered', *claims: tuple[str, list[dict[str, str]]], **extra: Any) -> dict[str, Any]:
    """A GroundedAnswer as the arguments of the output tool."""
    return {'status': status, 'claims': [{'text': t, 'citations': c} for t, c in claims], **extra}


Step = Callable[[list[ModelMessage], AgentInfo], ModelResponse] | dict[str, Any] | tuple[str, dict[str, Any]]


def search(query: str, tool: str = 'docs_vector_search', top_k: int = 5) -> tuple[str, dict[str, Any]]:
    return tool, {'query': query, 'top_k': top_k}


@dataclass
class Scripted:
    """A `FunctionModel` that plays ``steps`` in order, one per model request.

    A step is a tool call ``(name, args)``, an answer (a dict: the output tool's arguments), a
    plain string (a text response), or a function of the messages. ``requests`` keeps what each
    request was sent, so a test can read the retry text the model received.
    """

    steps: Sequence[Step | str]
    requests: list[list[ModelMessage]] = field(default_factory=list)

    @property
    def calls(self) -> int:
        return len(self.requests)

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests.append(list(messages))
        if len(self.requests) > len(self.steps):
            raise AssertionError(f'the script has {len(self.steps)} steps; request {len(self.requests)} was made')
        step = self.steps[len(self.requests) - 1]
        if callable(step):
            return step(messages, info)
        if isinstance(step, str):
            return ModelResponse(parts=[TextPart(step)])
        if isinstance(step, tuple):
            return ModelResponse(parts=[ToolCallPart(step[0], step[1])])
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, step)])

    @property
    def model(self) -> FunctionModel:
        return FunctionModel(self.respond)


def retry_texts(messages: Sequence[ModelMessage]) -> list[str]:
    """The retry texts the model received for its output (retried output-tool returns and retry feedback)."""
    texts = []
    for message in messages:
        if not isinstance(message, ModelRequest):
            continue
        for part in message.parts:
            if isinstance(part, ToolReturnPart) and part.outcome == 'retried':
                texts.append(part.model_response_str(wrap_if_error=False))
            elif isinstance(part, RetryFeedbackPart) and isinstance(part.content, str):
                texts.append(part.content)
    return texts
