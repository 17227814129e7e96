"""What every subcommand shares: opening the store and building the toolset."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..filters import parse_filter
from ..stores import available_stores, open_store
from ..stores.registry import default_store_name
from ..toolset import FilterableKey, ToolishRag

__all__ = [
    'MODEL_ENV',
    'add_model_arguments',
    'add_store_arguments',
    'default_store_spec',
    'filterable_keys',
    'model_and_scoped_rag',
    'open_rag',
]

MODEL_ENV = 'TOOLISH_RAG_MODEL'
"""The environment variable a model-using command (chat, ask) reads when ``--model`` is not given."""

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
    group.add_argument(
        '--filterable',
        action='append',
        default=[],
        metavar='KEY=TYPE',
        help='a metadata key the model may filter on (repeatable): TYPE is int, float, str or bool, or '
        'allowed text values separated by "|" (product=basic|pro); e.g. --filterable year=int --filterable path=str',
    )
    group.add_argument(
        '--group-by-document',
        action='store_true',
        help='offer group_by="document" on the ranked search tools (one hit per document)',
    )


_TYPES: dict[str, type[str] | type[int] | type[float] | type[bool]] = {
    'int': int,
    'float': float,
    'str': str,
    'bool': bool,
}


def filterable_keys(specs: list[str]) -> dict[str, FilterableKey] | None:
    """``--filterable KEY=TYPE`` options as a ``filterable=`` declaration (``None`` when there are none)."""
    if not specs:
        return None
    keys: dict[str, FilterableKey] = {}
    for spec in specs:
        key, sep, kind = spec.partition('=')
        if not sep or not key or not kind:
            raise SystemExit(f'--filterable takes KEY=TYPE (TYPE: int, float, str, bool or a|b|c), got {spec!r}')
        try:
            if kind in _TYPES:
                keys[key] = FilterableKey(_TYPES[kind])
            else:
                keys[key] = FilterableKey(str, values=tuple(kind.split('|')))
        except (TypeError, ValueError) as e:
            raise SystemExit(f'--filterable {spec!r}: {e}') from None
    return keys


def open_rag(args: argparse.Namespace) -> tuple[Any, ToolishRag[Any]]:
    spec = args.store or default_store_spec()
    store = open_store(spec, embedder=args.embedder)
    try:
        rag: ToolishRag[Any] = ToolishRag(
            store,
            name=args.name,
            filterable=filterable_keys(getattr(args, 'filterable', [])),
            allow_grouping=getattr(args, 'group_by_document', False),
        )
    except (TypeError, ValueError) as e:
        raise SystemExit(f'--filterable: {e}') from None
    return store, rag


def add_model_arguments(parser: argparse.ArgumentParser, *, scope_help: str) -> None:
    """``--model`` and ``--filter``: what every command that runs a model over a scope takes."""
    parser.add_argument(
        '--model', '-m', default=None, help=f'pydantic-ai model string, e.g. openai:gpt-5-mini (default: ${MODEL_ENV})'
    )
    parser.add_argument('--filter', default=None, help=scope_help)


def model_and_scoped_rag(args: argparse.Namespace, no_model: str) -> tuple[str, ToolishRag[Any]] | None:
    """The model string and the toolset narrowed by ``--filter``; ``None`` (after printing ``no_model``) without a model."""
    model = args.model or os.environ.get(MODEL_ENV)
    if not model:
        print(no_model, file=sys.stderr)
        return None
    _, rag = open_rag(args)
    if args.filter:
        rag = rag.with_metadata_filter(parse_filter(args.filter))
    return model, rag
