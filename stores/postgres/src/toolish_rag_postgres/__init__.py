"""toolish-rag store on PostgreSQL with pgvector: `PostgresStore`, and `open_store` for ``--store postgres:...``.

See docs/stores/postgres.md.
"""

from __future__ import annotations

from ._spec import open_store
from ._store import PostgresStore

__all__ = ['PostgresStore', 'open_store']
