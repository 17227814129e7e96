"""``toolish-rag tools``: the tools, descriptions and schemas exactly as the model sees them."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ._common import open_rag
from ._terminal import json_safe, terminal_safe


def register(sub: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser('tools', help='show the tools an agent gets for the store')
    parser.add_argument('--json', action='store_true', help='print the tool definitions as JSON')
    parser.set_defaults(run=run)
    return parser


async def run(args: argparse.Namespace) -> int:
    _, rag = open_rag(args)
    definitions = await rag.tool_definitions()
    if args.json:
        payload = [
            {'name': d.name, 'description': d.description, 'parameters': d.parameters_json_schema} for d in definitions
        ]
        print(json_safe(json.dumps(payload, indent=2)))
        return 0
    lines = [f'{len(definitions)} tools for {type(rag.store).__name__}:\n']
    for d in definitions:
        lines.append(f'## {d.name}\n{d.description}\nparameters: {json.dumps(d.parameters_json_schema)}\n')
    lines.append('## instructions the toolset adds\n' + ((await rag.instructions()) or '(none)'))
    print(terminal_safe('\n'.join(lines)))  # instructions may hold eager search results
    return 0
