"""Testing kit for store authors: the conformance suite, a runner for it, and its corpus.

Subclass `StoreConformance` in your tests, or ``await check_store(make_store)`` anywhere; both
check the protocols your store implements (graph stores over `graph_corpus`). Needs
``pip install "toolish-rag[testing]"``. See docs/custom-store.md and docs/testing.md.
"""

from ._conformance import ASPECTS, PROTOCOLS, Aspect, StoreConformance
from ._corpus import COMMON_WORD, EDGE_FILTERS, conformance_corpus, conformance_entities, selective_corpus
from ._runner import ConformanceFailure, ConformanceReport, StoreFactory, check_store
from .graph_contract import GraphCorpus, GraphReference, graph_corpus

__all__ = [
    'ASPECTS',
    'COMMON_WORD',
    'EDGE_FILTERS',
    'PROTOCOLS',
    'Aspect',
    'ConformanceFailure',
    'ConformanceReport',
    'GraphCorpus',
    'GraphReference',
    'StoreConformance',
    'StoreFactory',
    'check_store',
    'conformance_corpus',
    'conformance_entities',
    'graph_corpus',
    'selective_corpus',
]
