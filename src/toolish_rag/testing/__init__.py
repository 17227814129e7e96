"""Testing kit for store authors: the conformance suite and its corpus.

``from toolish_rag.testing import StoreConformance`` and subclass it (see
`toolish_rag.testing.conformance`). Requires ``pip install "toolish-rag[testing]"``.
"""

from .conformance import StoreConformance
from .corpus import COMMON_WORD, EDGE_FILTERS, conformance_corpus, conformance_entities, selective_corpus

__all__ = [
    'COMMON_WORD',
    'EDGE_FILTERS',
    'StoreConformance',
    'conformance_corpus',
    'conformance_entities',
    'selective_corpus',
]
