"""Navigation answers under a scope: the values shown, a grouped result's other chunks, the next-page hint.

* list_documents and list_values show only values an in-scope chunk carries (a chunk may override its
  document's metadata), with counts of the in-scope chunks;
* a grouped result names a bounded number of its document's other matching chunks;
* the next-page hint of list_documents repeats the call's other arguments.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.hardening.stores import STORE_BUILDERS, STORE_NAMES
from toolish_rag import DocumentBuilder, PropertyFilter as F, ToolishRag
from toolish_rag.content import Document
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.stores import InMemoryStore
from toolish_rag.toolset._render_navigation import MAX_ALSO_MATCHING

ACME = F.eq('tenant', 'acme')


def _memo() -> Document:
    """Document metadata of globex; one chunk re-labelled for acme (a per-chunk ACL), with its own project."""
    b = DocumentBuilder(
        'file:///m.md', 'Merger memo', id='memo', metadata={'tenant': 'globex', 'project': 'GLX-secret'}
    )
    b.add_chunk(
        b.section('Public summary'),
        'A public summary everybody may read.',
        metadata={'tenant': 'acme', 'project': 'press'},
    )
    b.add_chunk(b.section('Deal terms'), 'Confidential deal terms.')
    return b.build()


@pytest.mark.parametrize('store_name', STORE_NAMES)
async def test_values_only_out_of_scope_chunks_carry_are_never_shown(store_name: str, tmp_path: Path) -> None:
    store: Any = STORE_BUILDERS[store_name](tmp_path)
    await store.upsert([_memo()])
    rag = ToolishRag(store, filterable={'project': str}).with_metadata_filter(ACME)
    listing = (await rag.run_tool('list_documents', {})).return_value
    values = (await rag.run_tool('list_values', {'key': 'project'})).return_value
    assert 'Merger memo' in listing
    assert 'GLX-secret' not in listing and 'GLX-secret' not in values


@pytest.mark.parametrize('store_name', STORE_NAMES)
async def test_values_in_scope_are_shown_with_scoped_counts(store_name: str, tmp_path: Path) -> None:
    store: Any = STORE_BUILDERS[store_name](tmp_path)
    docs = []
    for i, (tenant, year) in enumerate([('acme', 2023), ('acme', 2024), ('acme', 2024), ('globex', 2025)]):
        b = DocumentBuilder(f'file:///{i}.md', f'Report {i}', metadata={'tenant': tenant, 'year': year})
        b.add_chunk(b.section('Body'), f'report {i} text')
        docs.append(b.build())
    await store.upsert(docs)
    rag = ToolishRag(store, filterable={'year': int}).with_metadata_filter(ACME)
    values = (await rag.run_tool('list_values', {'key': 'year'})).return_value
    assert values == 'Values of year in scope, with how many documents have each: 2024 (2), 2023 (1).'
    listing = (await rag.run_tool('list_documents', {})).return_value
    assert listing.count('year=2024') == 2 and 'year=2023' in listing and '2025' not in listing


async def test_a_grouped_result_names_a_bounded_number_of_other_chunks() -> None:
    store = InMemoryStore(HashingEmbeddingModel(32))
    b = DocumentBuilder('file:///big.md', 'Big', metadata={'tenant': 'acme'})
    body = b.section('Body')
    for i in range(300):
        b.add_chunk(body, f'refund rule number {i}')
    await store.upsert([b.build()])
    rag = ToolishRag(store, allow_grouping=True).with_metadata_filter(ACME)
    text = (await rag.run_tool('text_search', {'query': 'refund', 'group_by': 'document'})).return_value
    named = re.search(r'also matching in this document: (.*)', text)
    assert named is not None
    assert named.group(1).count('chunk ') == MAX_ALSO_MATCHING and named.group(1).endswith(' more')
    assert len(text) < 2000


async def test_the_next_page_hint_repeats_the_other_arguments() -> None:
    store = InMemoryStore(HashingEmbeddingModel(32))
    docs = []
    for i in range(7):
        b = DocumentBuilder(f'file:///{i}.md', f'Handbook {i}' if i % 2 else f'Memo {i}', metadata={'tenant': 'acme'})
        b.add_chunk(b.section('Body'), 'text')
        docs.append(b.build())
    await store.upsert(docs)
    rag = ToolishRag(store).with_metadata_filter(ACME)
    first = (await rag.run_tool('list_documents', {'title_contains': 'handbook', 'limit': 2})).return_value
    assert first.endswith(
        '[More: call docs_list_documents with offset=2, title_contains="handbook", limit=2 for the next page.]'
    )
