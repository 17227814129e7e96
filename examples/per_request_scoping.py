"""Per-request and per-tenant scoping: one store, many tenants, no leaks.

Run: python examples/per_request_scoping.py

Two ways to scope, both invisible to the model and impossible for it to widen:
1. per request: pass a narrowed copy of the toolset to one run
   (`rag.with_metadata_filter(...)`, with an agent that does not already hold `rag`);
2. per tenant from the run's dependencies: `metadata_filter=lambda ctx: ...`.
A scripted model (pydantic-ai's FunctionModel) plays an adversarial LLM that tries to read
another tenant's chunk by id; it is told the chunk does not exist.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolish_rag import DocumentBuilder, PropertyFilter as F, ToolishRag
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.stores import InMemoryStore


@dataclass
class Request:
    tenant: str


def nosy_model(foreign_chunk_id: str) -> FunctionModel:
    """Searches, then tries to broaden a chunk that belongs to another tenant."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = sum(1 for m in messages if m.kind == 'response')
        if step == 0:
            return ModelResponse(parts=[ToolCallPart('docs_text_search', {'query': 'refund days', 'top_k': 10})])
        if step == 1:
            print('search result the model saw:\n' + str(messages[-1].parts[0].content) + '\n')
            return ModelResponse(parts=[ToolCallPart('docs_broaden_chunk', {'chunk_id': foreign_chunk_id})])
        print('reply to the foreign chunk id:\n' + str(messages[-1].parts[0].content) + '\n')
        return ModelResponse(parts=[TextPart('Refunds take the number of days your policy says.')])

    return FunctionModel(respond)


async def main() -> None:
    store = InMemoryStore(HashingEmbeddingModel())  # InMemoryStore() for real embeddings
    docs = []
    for tenant, days in (('acme', 30), ('globex', 14)):
        b = DocumentBuilder(f'file:///{tenant}/policy.md', f'{tenant} refund policy', metadata={'tenant': tenant})
        b.add_chunk(b.section('Refunds'), f'{tenant} refunds are paid within {days} days.')
        docs.append(b.build())
    await store.upsert(docs)
    globex_chunk = docs[1].chunks[0].id

    # 1. Per request: a narrowed copy for this run only.
    rag = ToolishRag(store, name='docs', description='Refund policies')
    agent = Agent(nosy_model(globex_chunk))
    await agent.run('How long do refunds take?', toolsets=[rag.with_metadata_filter(F.eq('tenant', 'acme'))])

    # 2. Per tenant, resolved from each run's deps.
    tenant_rag = ToolishRag(store, name='docs', metadata_filter=lambda ctx: F.eq('tenant', ctx.deps.tenant))
    tenant_agent = Agent(nosy_model(globex_chunk), deps_type=Request, toolsets=[tenant_rag])
    result = await tenant_agent.run('How long do refunds take?', deps=Request(tenant='acme'))
    print('answer:', result.output)


if __name__ == '__main__':
    asyncio.run(main())
