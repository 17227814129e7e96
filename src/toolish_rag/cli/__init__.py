"""The ``toolish-rag`` command: inspect and use a store the way an agent would.

Every subcommand goes through the same `ToolishRag` code path an agent uses, so what it prints is
what a model sees. The subcommands are the private ``_*_cmd`` modules. See docs/mcp.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from typing import Any

from . import (
    _ask_cmd,
    _chat_cmd,
    _eval_cmd,
    _graph_cmd,
    _ingest_cmd,
    _inspect_cmd,
    _mcp_cmd,
    _search_cmd,
    _show_cmd,
    _tools_cmd,
    _upgrade_cmd,
)
from ._chat_cmd import chat
from ._common import add_store_arguments, release_store_locks
from ._errors import debugging, report
from ._extras import CLI, require
from ._parser import Parser

__all__ = ['build_parser', 'chat', 'main']

_COMMANDS = (
    _ingest_cmd,
    _search_cmd,
    _tools_cmd,
    _eval_cmd,
    _mcp_cmd,
    _chat_cmd,
    _ask_cmd,
    _graph_cmd,
    _upgrade_cmd,
    _inspect_cmd,
    _show_cmd,
)


_STORE_OPTIONS: dict[str, dict[str, Any]] = {
    'ingest': {'toolset': False, 'rerank': False},  # ingest writes documents: no tools, no ranking
    'upgrade': {'toolset': False, 'rerank': False},
    'eval': {'toolset': False, 'store_help': _eval_cmd.STORE_HELP},
}
"""The store options a subcommand does not take (each lists only its own)."""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog='toolish-rag', description='Retrieval as tools for pydantic-ai agents.')
    sub = parser.add_subparsers(dest='command', required=True, metavar='COMMAND')
    for module in _COMMANDS:
        command = module.register(sub)
        name = command.prog.rpartition(' ')[2]
        add_store_arguments(command, **_STORE_OPTIONS.get(name, {}))
        parser.commands[name] = command
    return parser


def _quiet_model_loading() -> None:
    """Keep model-loading progress bars out of what the commands print."""
    os.environ.setdefault('TRANSFORMERS_VERBOSITY', 'error')
    os.environ.setdefault('HF_HUB_DISABLE_PROGRESS_BARS', '1')
    os.environ.setdefault('TOKENIZERS_PARALLELISM', 'false')


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    require(CLI)  # the terminal output's library: a slim install without the `cli` extra is told so
    _quiet_model_loading()
    try:
        return int(asyncio.run(args.run(args)))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `toolish-rag tools | head`
        return 0
    except Exception as e:  # one line; TOOLISH_RAG_DEBUG=1 for the traceback (docs/troubleshooting.md)
        if debugging():
            raise
        return report(e)
    finally:
        release_store_locks()


if __name__ == '__main__':  # pragma: no cover
    sys.exit(main())
