"""Ingestion beyond one machine: `RayExecutor` parses and embeds on a Ray cluster (``toolish-rag[ray]``).

Nothing here imports Ray until a `RayExecutor` runs. The store's embedding it ships (`StoreEmbedding`)
and the vectors it hands back (`VectorCache`) live beside the executor protocol in `toolish_rag.ingest`.
See docs/ingestion.md#how-the-pipeline-is-built.
"""

from ._ray_executor import RayExecutor

__all__ = ['RayExecutor']
