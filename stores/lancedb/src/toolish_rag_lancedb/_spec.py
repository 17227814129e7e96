"""`open_store`: the ``toolish_rag.stores`` registry's entry point for ``lancedb:<location>`` specs.

See docs/stores/lancedb.md (Object storage).
"""

from __future__ import annotations

import math
import os
from datetime import timedelta
from typing import Any

from ._store import EmbedderLike, LanceDBStore

__all__ = ['READ_CONSISTENCY_ENV', 'open_store']

READ_CONSISTENCY_ENV = 'TOOLISH_RAG_LANCEDB_READ_CONSISTENCY'
"""Seconds between a spec-opened store's checks for other processes' writes (unset: never)."""


def open_store(
    location: str, *, embedder: EmbedderLike = None, language: str | None = None, **options: Any
) -> LanceDBStore:
    """Entry point for the ``toolish_rag.stores`` registry: ``lancedb`` → `LanceDBStore`.

    ``language``: as `LanceDBStore` (``None``: the saved analyzer, or LanceDB's English one).

    A spec (``toolish-rag mcp --store lancedb:s3://bucket/kb``) has no room for options, so a store
    opened by spec takes ``read_consistency_interval`` from ``$TOOLISH_RAG_LANCEDB_READ_CONSISTENCY``
    (seconds; ``0``: check on every read), as it takes object-store credentials from the environment.
    Without it a server on a location another process writes never sees a new document.
    """
    raw = os.environ.get(READ_CONSISTENCY_ENV, '').strip()
    if raw and 'read_consistency_interval' not in options:
        try:
            seconds = float(raw)
        except ValueError:
            seconds = math.nan
        if not 0 <= seconds <= 86_400:
            raise ValueError(f'${READ_CONSISTENCY_ENV} must be a number of seconds from 0 to 86400, got {raw!r}')
        options['read_consistency_interval'] = timedelta(seconds=seconds)
    return LanceDBStore(location, embedder=embedder, language=language, **options)
