"""Ingestion beyond one machine: executors that parse and embed elsewhere, and how their vectors reach a store.

* `RayExecutor` — read, chunk and embed on Ray (Ray Data; ``toolish-rag[ray]``), written by
  the driver through the store's ``upsert`` (`ray_executor`; what runs on the workers:
  `ray_stages`);
* `StoreEmbedding` — a store's embedding model and settings as plain data a worker rebuilds
  (`embedding`);
* `VectorCache` / `PrecomputedEmbeddingModel` — the workers' vectors handed to a store that
  embeds inside ``upsert``, through its public pydantic-ai ``Embedder`` (`vectors`).

Nothing here imports Ray until a `RayExecutor` runs.
"""

from ._embedding import StoreEmbedding
from ._ray_executor import RayExecutor
from ._vectors import PrecomputedEmbeddingModel, VectorCache

__all__ = ['PrecomputedEmbeddingModel', 'RayExecutor', 'StoreEmbedding', 'VectorCache']
