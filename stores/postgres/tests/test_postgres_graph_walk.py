"""The graph walk read in one statement (a bounded recursive CTE) is taken, and equals the hop-by-hop walk.

The conformance kit's graph checks (`toolish_rag.testing.graph_contract`) compare every walk with the
reference; walks on `PostgresStore` go through `PostgresStore.walk_neighbourhood`, which reads all a
walk can reach at once. These tests add that the one-statement read is the one taken for the kit's
walks (every hop count, budget cut, direction, edge type and scope), that the walk forced hop by hop
(a row cap of 1) is the same walk, and that the read is scoped in SQL: it holds no out-of-scope record
or relation.
"""

from __future__ import annotations

import uuid

from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.filters import matches
from toolish_rag.graph import walk
from toolish_rag.testing.graph_contract import GRAPH_SCOPES, GraphReference, graph_corpus, walk_calls
from toolish_rag_postgres import PostgresStore


async def test_walks_read_in_one_statement_equal_the_reference(postgres_uri: str) -> None:
    corpus = graph_corpus()
    reference = GraphReference.of(corpus)
    store = PostgresStore(postgres_uri, schema=f'g_{uuid.uuid4().hex[:12]}', embedder=HashingEmbeddingModel(32))
    await store.upsert([*corpus.documents, *corpus.entities, *corpus.relations])
    try:
        for _, f in GRAPH_SCOPES[:3]:
            for request in walk_calls(corpus, reference, f).walks:
                want = await walk(reference, request)
                read = await store.walk_neighbourhood(request)
                if request.hops == 0:
                    assert read is None  # nothing to read beyond the seeds: graph_nodes answers
                else:
                    assert read is not None, request
                    assert all(matches(f, r) for r in (*read.records, *read.relations)), request
                assert await walk(store, request) == want, request
                store.walk_read_limit = 1  # past the cap the walk reads hop by hop: the same walk
                assert await walk(store, request) == want, request
                store.walk_read_limit = 10_000
    finally:
        store.close()
