"""One store shared by several threads, each running its own event loop (a threaded server, or
``Agent.run_sync`` called from worker threads).

The query builder is built once per store and called on the caller's thread. It used to count a
query's clauses in an attribute of its own, so a search running in another thread reset or
added to that count mid-translation: a query well under the clause limit was refused with
"more than 256 terms" at random. The count is per translation now.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable, Iterator

import pytest

from toolish_rag.search import SearchRequest
from toolish_rag_tantivy import PartitionedTantivyStore, TantivyStore

QUERY = ' '.join(f'word{i}' for i in range(200))
"""200 clauses: under the limit (256) alone, over it when two translations share one count."""


@pytest.fixture
def fast_switching() -> Iterator[None]:
    """Switch threads as often as the interpreter can, so interleavings that are rare are common."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


@pytest.mark.usefixtures('fast_switching')
@pytest.mark.parametrize(
    'make', [TantivyStore, lambda: PartitionedTantivyStore(partition_key='tenant')], ids=['single', 'partitioned']
)
def test_concurrent_searches_from_threads_translate_independently(make: Callable[[], object]) -> None:
    store = make()
    assert isinstance(store, TantivyStore | PartitionedTantivyStore)
    failures: list[BaseException] = []

    def searches() -> None:
        async def run() -> None:
            for _ in range(50):
                await store.text_search(SearchRequest(QUERY, 5))

        try:
            asyncio.run(run())
        except BaseException as e:  # collected: an exception in a thread would not fail the test
            failures.append(e)

    threads = [threading.Thread(target=searches) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
