"""Ingestion beyond one machine: `RayExecutor` parses and embeds on a Ray cluster (``toolish-rag[ray]``).

Nothing here imports Ray until a `RayExecutor` runs. See docs/ingestion.md#how-the-pipeline-is-built.
"""

from ._embedding import StoreEmbedding
from ._ray_executor import RayExecutor
from ._vectors import PrecomputedEmbeddingModel, VectorCache

__all__ = ['PrecomputedEmbeddingModel', 'RayExecutor', 'StoreEmbedding', 'VectorCache']
