"""``toolish-rag tools``: the tools, descriptions and schemas exactly as the model sees them."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ._common import open_rag


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
        print(json.dumps(payload, indent=2))
        return 0
    print(f'{len(definitions)} tools for {type(rag.store).__name__}:\n')
    for d in definitions:
        print(f'## {d.name}\n{d.description}\nparameters: {json.dumps(d.parameters_json_schema)}\n')
    print('## instructions the toolset adds\n' + ((await rag.instructions()) or '(none)'))
    return 0
