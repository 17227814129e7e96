"""What every subcommand shares: opening the store and building the toolset."""

from __future__ import annotations

import argparse
import os
from typing import Any

from ..stores import available_stores, open_store
from ..stores.registry import default_store_name
from ..toolset import ToolishRag

__all__ = ['add_store_arguments', 'default_store_spec', 'open_rag']

STORE_DIR = '.toolish-rag'


def default_store_spec() -> str:
    """``$TOOLISH_RAG_STORE``, else LanceDB under ``.toolish-rag/`` when installed, else a persisted memory store."""
    env = os.environ.get('TOOLISH_RAG_STORE')
    if env:
        return env
    name = default_store_name()
    return f'{name}:{STORE_DIR}/{name}'


def add_store_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group('store')
    group.add_argument(
        '--store',
        default=None,
        help=f'NAME[:LOCATION], NAME one of {", ".join(available_stores())}, e.g. {default_store_name()}:./kb; '
        'a bare path is refused, as a path does not say which kind of store it holds '
        '(default: $TOOLISH_RAG_STORE, else lancedb:.toolish-rag/lancedb when installed)',
    )
    group.add_argument('--embedder', default=None, help='embedding model string (default: all-MiniLM-L6-v2, offline)')
    group.add_argument('--name', default='docs', help='tool name prefix (default: docs)')


def open_rag(args: argparse.Namespace) -> tuple[Any, ToolishRag[Any]]:
    spec = args.store or default_store_spec()
    store = open_store(spec, embedder=args.embedder)
    return store, ToolishRag(store, name=args.name)
