"""Deprecated: import `TantivyStore` and `CONFIG_FILE` from `toolish_rag_tantivy` (this module goes in the next release).

The store lives in the private ``_store`` module, as every adapter's does (docs/stores/tantivy.md).
"""

import warnings

from ._store import CONFIG_FILE, TantivyStore

__all__ = ['CONFIG_FILE', 'TantivyStore']

warnings.warn(
    'toolish_rag_tantivy.store is deprecated: import from toolish_rag_tantivy', DeprecationWarning, stacklevel=2
)
