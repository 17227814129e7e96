"""A hung federation member (issue 41.7): every wait on it is bounded by the member timeout.

The member answers nothing at all once hung: not its search, not its statistics
(`term_statistics`), not the reads of its census (`document_page`, `expand`). Text, hybrid and
multihop searches come back within a few timeouts with the other members' hits, the hung member
reported unavailable. See docs/federation.md#sources-and-failures.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic_ai import ModelRetry

from toolish_rag import DocumentBuilder, ToolishRag
from toolish_rag.content import Document
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.filters import PropertyFilter as F
from toolish_rag.stores import InMemoryStore
from toolish_rag.stores.federated import Federated, MemberUnavailable

EMBEDDER = HashingEmbeddingModel(32)
TIMEOUT = 1.0
_READS = (
    'vector_search',
    'text_search',
    'regex_search',
    'term_statistics',
    'get_records',
    'expand',
    'document_page',
    'chunk_outlines',
    'read_section',
    'graph_nodes',
    'neighbours',
)


class _Hung(InMemoryStore):
    """A memory store whose every read waits forever once ``hang`` is set (a stuck connection)."""

    hang = False

    def __getattribute__(self, name: str) -> Any:
        found = super().__getattribute__(name)
        if name in _READS and super().__getattribute__('hang'):

            async def stuck(*args: Any, **kwargs: Any) -> Any:
                await asyncio.Event().wait()

            return stuck
        return found


def _doc(i: int, tenant: str) -> Document:
    b = DocumentBuilder(f'file:///{tenant}/{i}.md', f'{tenant} {i}', metadata={'tenant': tenant})
    b.add_chunk(b.section('Body'), f'refund policy note {i} for {tenant}')
    return b.build()


@pytest.mark.parametrize('statistics', ['scope', 'store'])
async def test_a_hung_member_bounds_every_search_by_its_timeout(statistics: str) -> None:
    """``'store'``: the hung member ranks index-wide, so its candidates come from a census it cannot read."""
    hung = _Hung(EMBEDDER, statistics=statistics)  # type: ignore[arg-type]
    docs, other = InMemoryStore(EMBEDDER), InMemoryStore(EMBEDDER)
    await docs.upsert([_doc(i, 'acme') for i in range(4)])
    await hung.upsert([_doc(i, 'acme') for i in range(4, 8)])
    await other.upsert([_doc(i, 'globex') for i in range(8, 10)])
    events: list[MemberUnavailable] = []
    fed = Federated({'docs': docs, 'hung': hung, 'other': other}, timeout=TIMEOUT, on_unavailable=events.append)
    rag = ToolishRag(fed, name='kb').with_metadata_filter(F.eq('tenant', 'acme'))
    searches = [t for t in rag.offered_tools if t in ('text_search', 'hybrid_search', 'multihop_search')]
    assert {'text_search', 'hybrid_search'} <= set(searches)
    for tool in searches:  # warm: analyzers loaded, indexes built (a cold first search is slow, not hung)
        await rag.run_tool(tool, {'query': 'refund policy note'})
    hung.hang = True
    for tool in searches:
        events.clear()
        result = await asyncio.wait_for(rag.run_tool(tool, {'query': 'refund policy note'}), 30 * TIMEOUT)
        shown = str(result.return_value)
        assert {e.member for e in events} == {'hung'}, (tool, events)
        assert 'acme 0' in shown and 'acme 5' not in shown, tool
        assert "source 'hung' unavailable" in shown, (tool, shown[-200:])


class _Broken(InMemoryStore):
    """A memory store whose reads by id fail (a dropped connection)."""

    async def get_records(self, *args: Any, **kwargs: Any) -> Any:
        raise ConnectionError('connection to tenant globex shard reset')

    async def expand(self, *args: Any, **kwargs: Any) -> Any:
        raise ConnectionError('connection to tenant globex shard reset')


async def test_an_id_of_an_unavailable_member_is_not_found_naming_the_member_not_the_scope() -> None:
    held, elsewhere = _doc(1, 'acme'), _doc(2, 'globex')
    docs, broken = InMemoryStore(EMBEDDER), _Broken(EMBEDDER)
    await docs.upsert([elsewhere])
    await broken.upsert([held])
    rag = ToolishRag(Federated({'docs': docs, 'broken': broken}), name='kb').with_metadata_filter(
        F.eq('tenant', 'acme')
    )
    messages = {}
    for name, chunk_id in (('held', held.chunks[0].id), ('foreign', elsewhere.chunks[0].id), ('missing', 'nope-0')):
        with pytest.raises(ModelRetry) as caught:
            await rag.run_tool('broaden_chunk', {'chunk_id': chunk_id})
        messages[name] = caught.value.message.replace(chunk_id, '<id>')
    assert "source 'broken' unavailable" in messages['held'] and 'was not found' in messages['held']
    assert messages['held'] == messages['foreign'] == messages['missing']  # a foreign id reads like a missing one
    assert 'globex' not in messages['held'] and 'ConnectionError' not in messages['held']
