"""``toolish-rag upgrade``: bring a store saved by an older toolish-rag to the current format, in place.

See docs/stores/manifest.md (Upgrades).
"""

from __future__ import annotations

import argparse
from typing import Any

from ..stores._location import missing_store
from ._common import open_store_for, store_spec


def register(sub: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        'upgrade',
        help='bring a store saved by an older toolish-rag to the current format, in place (records and vectors kept)',
    )
    parser.set_defaults(run=run)
    return parser


async def run(args: argparse.Namespace) -> int:
    from ..protocols import Upgradable  # here: the CLI starts without pydantic (docs/mcp.md#start-up-time)

    spec = store_spec(args)
    missing = missing_store(spec)
    if missing is not None:
        raise SystemExit(f'toolish-rag: {missing}')
    store = open_store_for(args, write=True, spec=spec)
    shown = store.location if isinstance(getattr(store, 'location', None), str) else spec  # a server's: no password
    if not isinstance(store, Upgradable):
        print(f'{shown}: this kind of store ({type(store).__name__}) has nothing to upgrade')
        return 0
    done = await store.upgrade()
    print(f'{shown}: ' + ('; '.join(done) if done else 'already current, nothing to do'))
    return 0
