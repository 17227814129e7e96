"""Testing kit for store authors: the conformance suite and its corpus.

``from toolish_rag.testing import StoreConformance`` and subclass it (see
`toolish_rag.testing.conformance`); a graph store is checked by the same subclass
(`toolish_rag.testing.graph_contract`, over `graph_corpus`). Requires ``pip install "toolish-rag[testing]"``.
"""

from .conformance import StoreConformance
from .corpus import COMMON_WORD, EDGE_FILTERS, conformance_corpus, conformance_entities, selective_corpus
from .graph_contract import GraphCorpus, GraphReference, graph_corpus

__all__ = [
    'COMMON_WORD',
    'EDGE_FILTERS',
    'GraphCorpus',
    'GraphReference',
    'StoreConformance',
    'conformance_corpus',
    'conformance_entities',
    'graph_corpus',
    'selective_corpus',
]
