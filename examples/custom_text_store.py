"""A custom store that implements only TextSearch, and so gets only the text tool.

Run: python examples/custom_text_store.py

A store is any object with the protocol methods it serves; toolish-rag detects them. This
one searches a list of FAQ entries by counting shared words: no embeddings, no index.
It does not implement FilterPushdown, so the facade filters its results for it (with a
growing window, so a filtered search still returns exactly top_k when enough match).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolish_rag import DocumentBuilder, PropertyFilter, SearchHit, SearchRequest, ToolishRag
from toolish_rag.content import Chunk

WORD = re.compile(r'\w+')


class FaqStore:
    """Word-overlap search over FAQ entries: implements TextSearch and nothing else."""

    text_query_syntax = 'Plain words; results rank by how many query words an entry shares. Case is ignored.'

    def __init__(self, entries: dict[str, str], *, product: str) -> None:
        builder = DocumentBuilder(f'faq://{product}', f'{product} FAQ', metadata={'product': product})
        for question, answer in entries.items():
            builder.add_chunk(builder.section(question), answer)
        self.chunks: list[Chunk] = list(builder.build().chunks)

    async def text_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        words = {w.lower() for w in WORD.findall(request.query)}
        scored = []
        for chunk in self.chunks:
            overlap = len(words & {w.lower() for w in WORD.findall(chunk.text)})
            if overlap:
                scored.append(SearchHit(chunk, float(overlap)))
        scored.sort(key=lambda h: (-h.score, h.id))
        return scored[: request.top_k]


def scripted_model() -> FunctionModel:
    """Stands in for an LLM: searches once, then answers from the result."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            print('tools offered:', [t.name for t in info.function_tools])
            return ModelResponse(parts=[ToolCallPart('faq_text_search', {'query': 'how long does shipping take'})])
        result = messages[-1].parts[0].content  # the tool's text, as the model sees it
        print(result)
        return ModelResponse(parts=[TextPart('Shipping takes 3-5 business days.')])

    return FunctionModel(respond)


async def main() -> None:
    store = FaqStore(
        {
            'Shipping': 'Shipping takes 3-5 business days within the EU.',
            'Returns': 'Return any unused item within 30 days for a full refund.',
        },
        product='widget',
    )
    rag = ToolishRag(store, name='faq', description='Widget FAQ').with_metadata_filter(
        PropertyFilter.eq('product', 'widget')
    )
    assert rag.tool_names == ['faq_text_search']
    result = await Agent(scripted_model()).run('How long does shipping take?', toolsets=[rag])
    print('answer:', result.output)


if __name__ == '__main__':
    asyncio.run(main())
