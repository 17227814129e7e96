"""toolish-rag-tantivy: a tantivy store for toolish-rag (BM25, RE2 regex, native filters; no embeddings).

>>> from toolish_rag_tantivy import TantivyStore
>>> store = TantivyStore()            # in RAM; TantivyStore('./index') on disk

`PartitionedTantivyStore` keeps one index per value of a partition key (e.g. ``tenant``), so
a tenant's BM25 statistics never reflect another tenant's documents (docs/filters.md).
"""

from ._analyzers import ANALYZERS, DEFAULT_ANALYZER, AnalyzerName
from ._open import open_store
from ._partitioned import PARTITIONS_FILE, PartitionedTantivyStore
from ._query import TEXT_QUERY_SYNTAX
from ._store import CONFIG_FILE, TantivyStore

__all__ = [
    'ANALYZERS',
    'CONFIG_FILE',
    'DEFAULT_ANALYZER',
    'PARTITIONS_FILE',
    'TEXT_QUERY_SYNTAX',
    'AnalyzerName',
    'PartitionedTantivyStore',
    'TantivyStore',
    'open_store',
]
