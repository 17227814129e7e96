"""`InMemoryStore`'s caches under threads. Searches run in `asyncio.to_thread` workers, so the
filter-mask cache and the scope-statistics cache are shared by several threads at once, and the
query-embedding cache by every event loop that uses the store. Their get, ``move_to_end`` and
``popitem`` were not atomic together: with more scopes than the cache holds, one thread evicted
an entry between another's get and ``move_to_end``, and the search raised ``KeyError``.

The races need a thread switch at the wrong bytecode, so the tests lower the switch interval
(restored afterwards) and churn more keys than the caches hold."""

from __future__ import annotations

import asyncio
import random
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from toolish_rag.builder import DocumentBuilder
from toolish_rag.content import Document
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.filters import PropertyFilter as F, matches
from toolish_rag.stores import InMemoryStore

THREADS = 8
ROUNDS = 10_000  # per thread: on the unlocked caches, enough for the race to show in nearly every run
SCOPES = [F.eq('tenant', f't{i}') for i in range(70)]  # more than the 64 masks the store caches


@pytest.fixture
def fast_switching() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def _docs(n: int) -> list[Document]:
    docs = []
    for i in range(n):
        b = DocumentBuilder(f'file:///{i}.md', f'{i}', metadata={'tenant': f't{i % len(SCOPES)}'})
        b.add_chunk(b.section('S'), f'refund policy text {i}')
        docs.append(b.build())
    return docs


def _in_threads(work: Callable[[random.Random], None]) -> list[str]:
    """Run ``work`` in ``THREADS`` threads at once; the errors they raised."""
    errors: list[str] = []

    def run(seed: int) -> None:
        try:
            work(random.Random(seed))
        except Exception as e:  # collected, so the test reports every thread's failure
            errors.append(f'{type(e).__name__}: {e}')

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(run, range(THREADS)))
    return errors


async def test_the_mask_cache_survives_threads_evicting_each_others_entries(fast_switching: None) -> None:
    """Lookups on the snapshot's cache itself: through the searches, the work around each lookup
    makes the race too rare to show in a test run."""
    store = InMemoryStore(HashingEmbeddingModel(16))
    await store.upsert(_docs(50))
    snapshot = store._snapshot  # the cache lives on the snapshot searches read
    expected = {scope: [matches(scope, r) for r in snapshot.records] for scope in SCOPES}

    def work(rng: random.Random) -> None:
        for _ in range(ROUNDS):
            scope = rng.choice(SCOPES)
            mask = snapshot.mask(scope)
            assert mask is not None and mask.tolist() == expected[scope]

    assert _in_threads(work) == []


async def test_the_query_cache_survives_event_loops_in_threads(fast_switching: None) -> None:
    """One store serving event loops in several threads (sync callers each run their own), with
    more distinct queries than the query-embedding cache holds: each thread's lookups race the
    others' evictions. Called below the searches, which would hide the race under their work."""
    store = InMemoryStore(HashingEmbeddingModel(16))
    queries = [f'refund policy {i}' for i in range(300)]  # the cache holds 256

    async def lookups(rng: random.Random) -> None:
        for _ in range(ROUNDS):
            query = rng.choice(queries)
            assert (await store._embed_query(query)).tolist() == expected[query]

    expected = {q: (await store._embed_query(q)).tolist() for q in queries}
    assert _in_threads(lambda rng: asyncio.run(lookups(rng))) == []
