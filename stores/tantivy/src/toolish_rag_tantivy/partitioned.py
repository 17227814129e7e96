"""Deprecated: import `PartitionedTantivyStore` and `PARTITIONS_FILE` from `toolish_rag_tantivy` (this module goes
in the next release).

The store lives in the private ``_partitioned`` module, as every adapter's does (docs/stores/tantivy.md).
"""

import warnings

from ._partitioned import PARTITIONS_FILE, PartitionedTantivyStore

__all__ = ['PARTITIONS_FILE', 'PartitionedTantivyStore']

warnings.warn(
    'toolish_rag_tantivy.partitioned is deprecated: import from toolish_rag_tantivy', DeprecationWarning, stacklevel=2
)
