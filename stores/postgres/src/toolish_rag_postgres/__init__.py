"""toolish-rag store on PostgreSQL with pgvector: `PostgresStore`, and `open_store` for ``--store postgres:...``.

Importing the package is light (the store loads on first use of `PostgresStore` or `open_store`), so
`toolish-rag mcp` reads `handshake_key` without loading the store. See docs/stores/postgres.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._handshake import handshake_key
from ._spec import open_store

if TYPE_CHECKING:
    from ._store import PostgresStore

__all__ = ['PostgresStore', 'handshake_key', 'open_store']


def __getattr__(name: str) -> Any:
    if name == 'PostgresStore':
        from ._store import PostgresStore

        return PostgresStore
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
