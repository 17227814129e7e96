"""toolish-rag: retrieval as tools for pydantic-ai agents.

This module re-exports the names most programs need; the other public modules (no ``_`` in
their path: ``toolish_rag.filters``, ``.citations``, ``.grounded``, ``.stores``, ``.testing``...)
and what each exports are listed in docs/api.md. Submodules import from the module that defines a
name, never from this one.
"""

from typing import TYPE_CHECKING

from ._lazy import lazy_exports

if TYPE_CHECKING:  # imported when first used (toolish_rag._lazy): `import toolish_rag` stays light
    from .analysis import LANGUAGES, TextAnalyzer, analyzer_for
    from .builder import DocumentBuilder
    from .capability import RagCapability
    from .citations import GroundedAnswer, UngroundedAnswerError
    from .content import Chunk, Document, Entity, Metadata, MetadataValue, Record, Relation, Section
    from .errors import InvalidRequestError, QuerySyntaxError, ToolishRagError
    from .filters import EntityFilter, Filter, PropertyFilter, and_, matches, not_, or_, parse_filter
    from .fusion import FusionConfig
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
        StoreFeatures,
        StoreLike,
        TextSearch,
        VectorSearch,
    )
    from .rerank import CrossEncoderReranker, ModelReranker, Reranker
    from .retriever import Retriever, SectionView
    from .search import ExpansionRequest, RegexRequest, SearchHit, SearchRequest
    from .toolset import EagerSearch, FilterableKey, ModelFilters, RagEvent, RagListener, RagSettings, ToolishRag
    from .windows import EmbeddingWindows, embed_windows, window_texts

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
    'StoreFeatures',
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

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        '._lazy': ('lazy_exports',),
        '.builder': ('DocumentBuilder',),
        '.capability': ('RagCapability',),
        '.content': ('Chunk', 'Document', 'Entity', 'Metadata', 'MetadataValue', 'Record', 'Relation', 'Section'),
        '.errors': ('InvalidRequestError', 'QuerySyntaxError', 'ToolishRagError'),
        '.filters': ('EntityFilter', 'Filter', 'PropertyFilter', 'and_', 'matches', 'not_', 'or_', 'parse_filter'),
        '.protocols': (
            'DocumentInfo',
            'DocumentStore',
            'FilterPushdown',
            'GraphSearch',
            'GraphStore',
            'HybridSearch',
            'RegexSearch',
            'ResultExpander',
            'SectionReader',
            'StoreCapabilities',  # deprecated alias of StoreFeatures (warns), not in __all__
            'StoreFeatures',
            'StoreLike',
            'TextSearch',
            'VectorSearch',
        ),
        '.search': ('ExpansionRequest', 'RegexRequest', 'SearchHit', 'SearchRequest'),
        '.analysis': ('LANGUAGES', 'TextAnalyzer', 'analyzer_for'),
        '.citations': ('GroundedAnswer', 'UngroundedAnswerError'),
        '.fusion': ('FusionConfig',),
        '.rerank': ('CrossEncoderReranker', 'ModelReranker', 'Reranker'),
        '.retriever': ('Retriever', 'SectionView'),
        '.toolset': (
            'EagerSearch',
            'FilterableKey',
            'ModelFilters',
            'RagEvent',
            'RagListener',
            'RagSettings',
            'ToolishRag',
        ),
        '.windows': ('EmbeddingWindows', 'embed_windows', 'window_texts'),
    },
)
