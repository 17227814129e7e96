"""Filter nesting is bounded where a filter is built, and a store pushes down only what it can parse.

Hostile scopes nested hundreds deep raised `RecursionError` in every evaluator and translator,
and LanceDB's SQL parser failed on clauses nested a few dozen levels deep (its error text
quoting the scope). Now `and`/`or`/`not` nest at most `MAX_FILTER_DEPTH` levels (a ``ValueError``
when built, however it is built), and a LanceDB store declines to push down a clause deeper than
its parser takes, so the core evaluates it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import handbook_corpus
from toolish_rag import PropertyFilter as F, Retriever, ToolishRag
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.filters import MAX_FILTER_DEPTH, Filter, Not, filter_depth, matches, parse_filter
from toolish_rag.stores import InMemoryStore


def _nots(n: int) -> Filter:
    f: Filter = F.eq('tenant', 'acme')
    for _ in range(n):
        f = Not(filter=f)
    return f


def _alternating(n: int) -> Filter:
    f: Filter = F.eq('tenant', 'acme')
    for i in range(n):
        f = (f | F.eq('tenant', 'none')) if i % 2 else ~~(f & F.exists('tenant'))
    return f


def test_the_deepest_allowed_filter_builds_and_one_level_more_does_not() -> None:
    assert filter_depth(_nots(MAX_FILTER_DEPTH - 1)) == MAX_FILTER_DEPTH
    with pytest.raises(ValueError, match=f'at most {MAX_FILTER_DEPTH} levels'):
        _nots(MAX_FILTER_DEPTH)


@pytest.mark.parametrize('depth', [MAX_FILTER_DEPTH + 1, 300, 5000])
def test_deep_json_is_refused_when_parsed_not_with_a_recursion_error(depth: int) -> None:
    text = '{"op": "not", "filter": ' * depth + '{"op": "eq", "key": "tenant", "value": "acme"}' + '}' * depth
    with pytest.raises(ValueError):
        parse_filter(text)
    if depth < 900:  # the dict form too (deeper dicts exhaust json.loads' own recursion first)
        with pytest.raises(ValueError):
            parse_filter(json.loads(text))


def _stores(tmp_path: Path) -> dict[str, Any]:
    stores: dict[str, Any] = {'memory': InMemoryStore(HashingEmbeddingModel(64))}
    try:
        from toolish_rag_lancedb import LanceDBStore

        stores['lancedb'] = LanceDBStore(tmp_path / 'kb', embedder=HashingEmbeddingModel(64))
    except ImportError:  # pragma: no cover - the adapter is installed with the dev extras
        pass
    try:
        from toolish_rag_tantivy import TantivyStore

        stores['tantivy'] = TantivyStore()
    except ImportError:  # pragma: no cover
        pass
    return stores


@pytest.mark.parametrize('scope', [_nots(MAX_FILTER_DEPTH - 1), _alternating(10)], ids=['not-chain', 'and-or'])
async def test_deep_scopes_are_exact_on_every_store(tmp_path: Path, scope: Filter) -> None:
    corpus = handbook_corpus()
    expected = sorted(c.id for d in corpus for c in d.chunks if matches(scope, c))
    assert expected  # both scopes select acme's chunks
    for name, store in _stores(tmp_path).items():
        await store.upsert(corpus)
        hits = await Retriever(store, scope).text_search('refunds ships receipt unused', 50)
        assert sorted(h.record.id for h in hits) == expected, name


def test_lancedb_declines_clauses_deeper_than_its_parser_takes(tmp_path: Path) -> None:
    lancedb = pytest.importorskip('toolish_rag_lancedb')
    from toolish_rag_lancedb._filters import MAX_SQL_NESTING, sql_nesting

    store = lancedb.LanceDBStore(tmp_path / 'kb', embedder=HashingEmbeddingModel(64))
    assert store.supports_filter(_nots(6))
    assert not store.supports_filter(_nots(MAX_SQL_NESTING + 4))
    assert sql_nesting("a = '((((' AND (b = ')')") == 1  # parentheses inside literals do not count


async def test_lancedb_decides_pushdown_from_the_filter_not_from_the_columns_known_now(tmp_path: Path) -> None:
    """Before any column exists a leaf renders as FALSE (no nesting): the decision must not depend on it."""
    lancedb = pytest.importorskip('toolish_rag_lancedb')
    store = lancedb.LanceDBStore(tmp_path / 'kb', embedder=HashingEmbeddingModel(64))
    deep = _nots(16)
    assert not store.supports_filter(deep)  # an empty store: no columns yet
    await store.upsert(handbook_corpus())
    assert not store.supports_filter(deep)  # the same answer once the tenant column exists
    expected = sorted(c.id for d in handbook_corpus() for c in d.chunks if matches(deep, c))
    rag = ToolishRag(store, name='kb').with_metadata_filter(deep)
    for tool, arguments in (('text_search', {'query': 'refunds'}), ('regex_search', {'pattern': 'refund'})):
        hits = (await rag.run_tool(tool, {**arguments, 'top_k': 50})).metadata['hits']
        assert hits and {h.record.id for h in hits} <= set(expected), tool
