"""``toolish-rag ingest --reembed``: open the store with the embedder it records, re-embed it with ``--embedder``.

See docs/stores/manifest.md (Re-embedding).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ._common import open_store_for

__all__ = ['add_reembed_flag', 'reembedded_store']


def add_reembed_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        '--reembed',
        action='store_true',
        help="first embed every stored chunk again with --embedder (a store holding another embedder's vectors "
        'is refused without it); a store without vectors (tantivy) has nothing to re-embed',
    )


async def reembedded_store(args: argparse.Namespace) -> Any:
    """The command's store (under its writer lock), re-embedded with ``--embedder`` before anything else."""
    from ..protocols import Reembeddable  # here: the CLI starts without pydantic (docs/mcp.md#start-up-time)

    if not args.embedder:
        raise SystemExit('toolish-rag: --reembed needs --embedder MODEL: the model to embed the store with')
    store = open_store_for(argparse.Namespace(**{**vars(args), 'embedder': None}), write=True)
    if not isinstance(store, Reembeddable):
        print(f'{type(store).__name__} keeps no vectors: nothing to re-embed', file=sys.stderr)
        return store
    count = await store.reembed(args.embedder)
    print(f're-embedded {count} records with {args.embedder}', file=sys.stderr)
    return store
