"""A regex search over the scan limit says so without counting records outside the scope.

A store that cannot push a scope down is called without it (the core post-filters), so a
count it reports covers every tenant's records. The retry therefore names only the limit:
showing the count let a tenant read how many records other tenants hold.
"""

from __future__ import annotations

import pytest
from pydantic_ai import ModelRetry

from toolish_rag import DocumentBuilder, PropertyFilter as F, ToolishRag


async def test_the_scan_limit_retry_shows_no_count() -> None:
    tantivy = pytest.importorskip('toolish_rag_tantivy')
    store = tantivy.TantivyStore(regex_scan_limit=5)
    for tenant, n in (('acme', 2), ('globex', 40)):
        for i in range(n):
            b = DocumentBuilder(f'file:///{tenant}{i}.md', f'{tenant} {i}', metadata={'tenant': tenant})
            b.add_chunk(b.section('Refunds'), f'{tenant} refunds within 30 days.')
            await store.upsert([b.build()])
    # An integer beyond 64 bits cannot be pushed down: the store searches without the scope.
    scope = F.eq('tenant', 'acme') & F.ne('n', 2**70)
    assert not store.supports_filter(scope)
    with pytest.raises(ModelRetry) as caught:
        await ToolishRag(store, name='kb').with_metadata_filter(scope).run_tool('regex_search', {'pattern': 'refunds'})
    message = str(caught.value)
    assert 'more than 5 records' in message
    assert not any(str(n) in message for n in (42, 40, 2)), message
