"""toolish-rag: retrieval as tools for pydantic-ai agents.

This module re-exports the names most programs need; the other public modules (no ``_`` in
their path: ``toolish_rag.filters``, ``.citations``, ``.grounded``, ``.stores``, ``.testing``...)
and what each exports are listed in docs/api.md. Submodules import from the module that defines a
name, never from this one.
"""

from .builder import DocumentBuilder
from .content import Chunk, Document, Entity, Metadata, MetadataValue, Record, Relation, Section
from .errors import InvalidRequestError, QuerySyntaxError, ToolishRagError
from .filters import EntityFilter, Filter, PropertyFilter, and_, matches, not_, or_, parse_filter
from .protocols import (
    DocumentInfo,
    DocumentStore,
    FilterPushdown,
    GraphSearch,
    GraphStore,
    HybridSearch,
    RegexSearch,
    ResultExpander,
    SectionReader,
    StoreCapabilities,
    StoreLike,
    TextSearch,
    VectorSearch,
)
from .search import ExpansionRequest, RegexRequest, SearchHit, SearchRequest

__all__ = [
    'Chunk',
    'Document',
    'DocumentBuilder',
    'DocumentInfo',
    'DocumentStore',
    'Entity',
    'EntityFilter',
    'ExpansionRequest',
    'Filter',
    'FilterPushdown',
    'GraphSearch',
    'GraphStore',
    'HybridSearch',
    'InvalidRequestError',
    'Metadata',
    'MetadataValue',
    'PropertyFilter',
    'QuerySyntaxError',
    'Record',
    'RegexRequest',
    'RegexSearch',
    'Relation',
    'ResultExpander',
    'SearchHit',
    'SearchRequest',
    'Section',
    'SectionReader',
    'StoreCapabilities',
    'StoreLike',
    'TextSearch',
    'ToolishRagError',
    'VectorSearch',
    'and_',
    'matches',
    'not_',
    'or_',
    'parse_filter',
]

from .analysis import LANGUAGES, TextAnalyzer, analyzer_for
from .capability import RagCapability
from .citations import GroundedAnswer, UngroundedAnswerError
from .fusion import FusionConfig
from .rerank import CrossEncoderReranker, ModelReranker, Reranker
from .retriever import Retriever, SectionView
from .toolset import EagerSearch, FilterableKey, ModelFilters, RagEvent, RagListener, RagSettings, ToolishRag
from .windows import EmbeddingWindows, embed_windows, window_texts

__all__ += [
    'LANGUAGES',
    'CrossEncoderReranker',
    'EagerSearch',
    'FilterableKey',
    'FusionConfig',
    'GroundedAnswer',
    'ModelFilters',
    'ModelReranker',
    'RagCapability',
    'RagEvent',
    'RagListener',
    'RagSettings',
    'Reranker',
    'Retriever',
    'SectionView',
    'TextAnalyzer',
    'ToolishRag',
    'UngroundedAnswerError',
    'analyzer_for',
    'EmbeddingWindows',
    'embed_windows',
    'window_texts',
]
