"""Expansion reads its anchor and the chunks around it from one version of the store.

``broaden_chunk`` and ``zoom_out`` used to read the anchor (``get_records``) and then its
neighbours or section (``expand``) in two store calls; an upsert landing in between showed
the model version 3's chunks around version 2's anchor ("Versioned v2 > Part one v2" over
"v3 chunk 4"). Now one anchored ``expand`` call answers both, read from one snapshot (the
in-memory store), one searcher (Tantivy, per partition) or one pinned table version (LanceDB).

The regression test below runs a writer rewriting one document (versions 1, 2, ...: same chunk
ids and count, every text tagged with its version) against readers calling the tools through
``ToolishRag.run_tool``, and requires one version per answer. Run against the code before the
fix (two calls), it failed on every store: LanceDB mixed 16 of 183 answers, Tantivy 33 of 575,
the partitioned Tantivy store 42 of 724 (their calls suspend the event loop, so the writer gets
in between on its own). The in-memory store never suspends inside a call, so in one event loop
nothing could run between its two calls: there the test widens the gap with `YieldingStore`, a
store that hands the in-memory store's answers on and yields to the event loop after each call
(as a store doing I/O does); all 25 of 25 answers mixed. No sleep with a duration anywhere: each
run is bounded by a number of writes and a deadline.

Then the conformance kit's consistency check (`mixed_version_problems`) must fail a store that
answers an anchored request with two reads, and the `Retriever`'s handling of anchored answers:
an anchor past ``limit`` (a chunk deep in a long section), a store without pushdown, and a
store that ignores the anchor.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest
from helpers import compose_store
from pydantic_ai import ModelRetry

from tests.helpers import InnerWrites
from toolish_rag import Chunk, Document, DocumentBuilder, Entity, ToolishRag
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.errors import ToolishRagError
from toolish_rag.filters import Filter, PropertyFilter as F
from toolish_rag.retriever import Retriever
from toolish_rag.search import ExpansionRequest, SearchHit, SearchRequest
from toolish_rag.stores import InMemoryStore
from toolish_rag.testing.contract import mixed_version_problems

URI = 'file:///acme/versioned.md'
CHUNKS = 12
WRITES = 40
SECONDS = 3.0
_VERSION = re.compile(r'\bv(\d+)\b')
_T = TypeVar('_T')


def version(k: int) -> Document:
    """Version ``k``: same document id, chunk ids and chunk count; title, sections and texts tagged ``v{k}``."""
    b = DocumentBuilder(URI, f'Handbook v{k}', metadata={'tenant': 'acme'})
    one = b.section(f'Part one v{k}')
    two = b.section(f'Part two v{k}', parent=one)
    for i in range(CHUNKS):
        b.add_chunk(one if i < 6 else two, f'v{k} chunk {i}')
    return b.build()


class YieldingStore:
    """An in-memory store whose calls suspend the event loop once, as a store doing I/O does.

    Each protocol call hands the inner store's answer on after one ``asyncio.sleep(0)`` (a
    yield, no delay), so a writer task can run between two calls of one tool.
    """

    text_query_syntax = InMemoryStore.text_query_syntax

    def __init__(self, inner: InMemoryStore) -> None:
        self.inner = inner

    def supports_filter(self, filter: Filter) -> bool:
        return True

    async def text_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        return await _yielding(self.inner.text_search(request))

    async def get_records(self, ids: Sequence[str], *, filter: Filter | None = None) -> Sequence[Chunk | Entity]:
        return await _yielding(self.inner.get_records(ids, filter=filter))

    async def expand(self, request: ExpansionRequest) -> Sequence[Chunk]:
        return await _yielding(self.inner.expand(request))


async def _yielding(call: Awaitable[_T]) -> _T:
    answer = await call
    await asyncio.sleep(0)
    return answer


def _memory(path: Path) -> tuple[Any, Any]:
    store = InMemoryStore(HashingEmbeddingModel(64))
    return store, YieldingStore(store)


def _lancedb(path: Path) -> tuple[Any, Any]:
    lancedb = pytest.importorskip('toolish_rag_lancedb', reason='needs the LanceDB adapter (stores/lancedb)')
    store = lancedb.LanceDBStore(path / 'kb', embedder=HashingEmbeddingModel(64))
    return store, store


def _tantivy(path: Path) -> tuple[Any, Any]:
    tantivy = pytest.importorskip('toolish_rag_tantivy', reason='needs the Tantivy adapter (stores/tantivy)')
    store = tantivy.TantivyStore()
    return store, store


def _partitioned(path: Path) -> tuple[Any, Any]:
    tantivy = pytest.importorskip('toolish_rag_tantivy', reason='needs the Tantivy adapter (stores/tantivy)')
    store = tantivy.PartitionedTantivyStore(partition_key='tenant')
    return store, store


STORES: dict[str, Callable[[Path], tuple[Any, Any]]] = {
    'memory': _memory,
    'lancedb': _lancedb,
    'tantivy': _tantivy,
    'partitioned': _partitioned,
}
"""Each store: what the writer writes to, and what the tools read from."""


@pytest.mark.parametrize('name', list(STORES))
async def test_broaden_and_zoom_show_one_version_while_a_writer_rewrites(name: str, tmp_path: Path) -> None:
    writes_to, reads_from = STORES[name](tmp_path)
    first = version(0)
    await writes_to.upsert([first])
    rag = ToolishRag(reads_from, metadata_filter=F.eq('tenant', 'acme'))
    calls: list[tuple[str, dict[str, Any]]] = [
        *(('broaden_chunk', {'chunk_id': first.chunks[i].id, 'chunks_to_add': 3}) for i in (2, 6, 10)),
        *(('zoom_out', {'id': first.chunks[i].id}) for i in (1, 5, 9)),
        *(('zoom_out', {'id': s.id}) for s in first.sections),
    ]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SECONDS
    answers: list[tuple[str, set[int]]] = []

    async def write() -> None:
        for k in range(1, WRITES + 1):
            if k > 3 and loop.time() > deadline:  # at least three versions, however slow the machine
                break
            await writes_to.upsert([version(k)])
            await asyncio.sleep(0)  # a yield, no delay: readers get in between two writes

    async def read(turn: int) -> None:
        while not writer.done():
            tool, arguments = calls[turn % len(calls)]
            try:
                text = str((await rag.run_tool(tool, arguments)).return_value)
            except ModelRetry as e:  # every anchor exists in every version: "not found" is a bug too
                text = f'{tool} failed: {e}'
            answers.append((f'{tool}({arguments})', {int(v) for v in _VERSION.findall(text)}))
            turn += 1
            await asyncio.sleep(0)  # a yield, no delay: the writer gets in between two reads

    writer = asyncio.create_task(write())
    await asyncio.gather(writer, read(0), read(4))
    mixed = [(call, sorted(versions)) for call, versions in answers if len(versions) != 1]
    assert not mixed, f'{len(mixed)} of {len(answers)} answers mixed versions, e.g. {mixed[:3]}'
    assert len(set().union(*(v for _, v in answers))) >= 3, 'the reads did not overlap the writes'


# -- the kit's consistency check fails a store that reads twice ------------------------------------


class TwoReadStore(InnerWrites):
    """Answers an anchored request as the Retriever once did: the anchor, a yield, then the window.

    Every other call goes to an `InMemoryStore` unchanged, so only the two reads are wrong.
    """

    text_query_syntax = InMemoryStore.text_query_syntax

    def __init__(self, inner: InMemoryStore) -> None:
        self.inner = inner

    async def upsert(self, items: Iterable[Document | Entity]) -> None:
        await self.inner.upsert(items)

    async def text_search(self, request: SearchRequest) -> Sequence[SearchHit]:
        return await self.inner.text_search(request)

    async def get_records(self, ids: Sequence[str], *, filter: Filter | None = None) -> Sequence[Chunk | Entity]:
        return await self.inner.get_records(ids, filter=filter)

    async def expand(self, request: ExpansionRequest) -> Sequence[Chunk]:
        if request.around is None:
            return await self.inner.expand(request)
        anchor = next((r for r in await self.inner.get_records([request.around]) if isinstance(r, Chunk)), None)
        probe = request.section_probe()
        if anchor is None and probe is not None:
            inside = await self.inner.expand(probe)
            anchor = inside[0] if inside else None
        await asyncio.sleep(0)  # the gap between the two reads, where a write lands
        return [] if anchor is None else await self.inner.expand(request.window(anchor))


async def test_the_kit_fails_a_store_that_reads_the_anchor_and_the_window_apart() -> None:
    problems = await mixed_version_problems(TwoReadStore(InMemoryStore(HashingEmbeddingModel(64))))
    assert problems
    # Caught either way, by which read a write lands between: a window that does not match the version its
    # texts carry, or the Retriever refusing an anchored answer that is not the window around its anchor.
    caught = ('(a window computed from an anchor of another version)', 'it must read the window around the anchor')
    assert any(c in p for p in problems for c in caught), problems
    assert not any('no read overlapped' in p for p in problems)


async def test_the_kit_passes_the_reference_store() -> None:
    assert await mixed_version_problems(InMemoryStore(HashingEmbeddingModel(64))) == []


# -- the Retriever over anchored answers ----------------------------------------------------------


def long_section(size: int, *, every: int = 1) -> Document:
    """One section of ``size`` chunks; chunks whose number is a multiple of ``every`` are acme's."""
    b = DocumentBuilder('file:///acme/long.md', 'Long', metadata={'tenant': 'acme'})
    top = b.section('Top')
    inner = b.section('Inner', parent=top)
    for i in range(size):
        tenant = 'acme' if i % every == 0 else 'globex'
        b.add_chunk(inner if i >= size // 2 else top, f'chunk {i}', metadata={'tenant': tenant})
    return b.build()


async def test_zoom_out_on_a_chunk_deep_in_a_long_section() -> None:
    """The anchor lies past ``limit``: the Retriever reads on until it has it, and shows the section's start."""
    store = InMemoryStore(HashingEmbeddingModel(64))
    doc = long_section(400)
    await store.upsert([doc])
    view = await Retriever(store).section(doc.chunks[390].id, 50)
    assert view is not None and view.section_id == doc.sections[1].id
    assert [c.id for c in view.chunks] == [c.id for c in doc.chunks[200:250]] and view.truncated
    assert view.section_path == ('Top', 'Inner') and view.zoom_id == doc.sections[1].id


@pytest.mark.parametrize('pushdown', [True, False], ids=['pushdown', 'core-filters'])
async def test_scoped_expansion_with_and_without_pushdown(pushdown: bool) -> None:
    inner = InMemoryStore(HashingEmbeddingModel(64))
    doc = long_section(40, every=3)
    await inner.upsert([doc])
    store = compose_store(frozenset({'text', 'expand', *(['pushdown'] if pushdown else [])}))(inner)
    acme = Retriever(store, F.eq('tenant', 'acme'))
    in_scope = [c for c in doc.chunks if c.metadata['tenant'] == 'acme']
    found = await acme.neighbours(doc.chunks[21].id, 3)
    assert found is not None and [c.sequence_number for c in found[1]] == [18, 21, 24]
    assert await acme.neighbours(doc.chunks[22].id, 3) is None  # globex's: not found
    # Inner starts at chunk 20 (globex's); its first in-scope chunk is 21: found, and the view is Top.
    view = await acme.section(doc.sections[1].id, 5)
    assert view is not None and view.section_id == doc.sections[0].id
    assert [c.id for c in view.chunks] == [c.id for c in in_scope[:5]] and view.truncated
    deep = await acme.section(doc.chunks[39].id, 2)
    assert deep is not None and [c.sequence_number for c in deep.chunks] == [21, 24]
    assert await acme.section(doc.chunks[38].id, 2) is None


class PlainOnlyStore(TwoReadStore):
    """A store written before anchored requests: it reads only a request's plain fields."""

    async def expand(self, request: ExpansionRequest) -> Sequence[Chunk]:
        # An anchored request sets none of them, so it gets every chunk of every document.
        documents = [d.id for d in await self.inner.list_documents()]
        chunks = [c for d in documents for c in await self.inner.expand(ExpansionRequest(document_id=d))]
        return [c for c in chunks if request.document_id in (None, c.document_id)][: request.limit]


async def test_a_store_that_ignores_the_anchor_is_an_error_not_a_wrong_answer() -> None:
    inner = InMemoryStore(HashingEmbeddingModel(64))
    first = version(1)
    await inner.upsert([first])
    with pytest.raises(ToolishRagError, match='outside the window of its anchor'):
        await Retriever(PlainOnlyStore(inner)).neighbours(first.chunks[3].id, 1)
