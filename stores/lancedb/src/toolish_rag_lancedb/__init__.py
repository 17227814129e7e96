"""toolish-rag-lancedb: a LanceDB store for toolish-rag.

>>> from toolish_rag_lancedb import LanceDBStore
>>> store = LanceDBStore('./kb')  # doctest: +SKIP
"""

from ._filters import filter_to_where
from ._spec import open_store
from ._store import LanceDBStore
from ._text_query import TEXT_QUERY_SYNTAX

__all__ = ['TEXT_QUERY_SYNTAX', 'LanceDBStore', 'filter_to_where', 'open_store']
__version__ = '0.1.0'
