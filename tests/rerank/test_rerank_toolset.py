"""Reranking in `ToolishRag`: scoped candidates, exact ``top_k``, thresholds, grouping, fail-open, descriptions.

The reranker here is a real `Reranker` implementation that records every hit it is handed and
scores by a fixed rule (hits whose text holds a marker word first), so what it saw and what it
did are both assertable. It runs over a real `InMemoryStore` and a real `LanceDBStore` (which
pushes the scope down) under a tenant scope: it must never see another tenant's hit.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util._once import Once
from pydantic_ai import ModelRetry

from toolish_rag import DocumentBuilder, PropertyFilter as F, Reranker, SearchHit, ToolishRag
from toolish_rag.content import Chunk, Document
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.stores import InMemoryStore

TENANTS = ('acme', 'globex')
SCOPE = F.eq('tenant', 'acme')
RANKED = ('vector_search', 'text_search', 'hybrid_search')


def corpus() -> list[Document]:
    """Per tenant: three documents of refund passages (eight chunks in all), some holding the word "express"."""
    docs = []
    for t in TENANTS:
        for d, passages in enumerate(
            [
                ['refunds are paid within 30 days', 'express refunds are paid in 2 days', 'refund forms'],
                ['refunds need a receipt', 'refunds by bank transfer'],
                ['express shipping refunds', 'refund of shipping costs', 'refunds for damaged parcels'],
            ]
        ):
            b = DocumentBuilder(f'file:///{t}/doc{d}.md', f'{t} doc {d}', metadata={'tenant': t, 'doc': d})
            for p in passages:
                b.add_chunk(None, f'{t} {p}')
            docs.append(b.build())
    return docs


@dataclass
class Recording:
    """A reranker that records what it was given: "express" hits first, each scored 0.9 or 0.2 minus a little."""

    score_meaning: str = 'a test relevance score'
    seen: list[list[SearchHit]] = field(default_factory=list)
    fail: bool = False

    async def rerank(self, query: str, hits: Sequence[SearchHit]) -> list[SearchHit]:
        self.seen.append(list(hits))
        if self.fail:
            raise RuntimeError('reranker down')
        scored = [replace(h, score=(0.9 if 'express' in h.record.text else 0.2) - i / 1000) for i, h in enumerate(hits)]
        return sorted(scored, key=lambda h: -h.score)

    def tenants_seen(self) -> set[Any]:
        return {h.record.metadata['tenant'] for call in self.seen for h in call}


@pytest.fixture(params=['memory', 'lancedb'])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    if request.param == 'memory':
        s: Any = InMemoryStore(HashingEmbeddingModel(64))
    else:
        from toolish_rag_lancedb import LanceDBStore

        s = LanceDBStore(tmp_path / 'kb', embedder=HashingEmbeddingModel(64))
    await s.upsert(corpus())
    yield s


def title(hit: SearchHit) -> str:
    assert isinstance(hit.record, Chunk)
    return hit.record.document_title


def test_recording_is_a_reranker() -> None:
    assert isinstance(Recording(), Reranker)


@pytest.mark.parametrize('tool', RANKED)
async def test_the_reranker_sees_only_in_scope_hits_and_top_k_comes_back(store: Any, tool: str) -> None:
    reranker = Recording()
    rag: ToolishRag[Any] = ToolishRag(store, metadata_filter=SCOPE, reranker=reranker, rerank_candidates=30)
    result = await rag.run_tool(tool, {'query': 'refunds express', 'top_k': 3})
    got = result.metadata['hits']
    assert len(got) == 3
    assert reranker.tenants_seen() == {'acme'}
    assert len(reranker.seen[0]) == 8  # every in-scope chunk that matches (fewer than 30): none of globex's
    assert all(h.record.metadata['tenant'] == 'acme' for h in got)
    assert ['express' in h.record.text for h in got] == [True, True, False]  # the reranker's order
    assert [h.score for h in got] == sorted((h.score for h in got), reverse=True)
    assert 'reranked:' in str(result.return_value).splitlines()[0]


async def test_a_model_filter_narrows_what_the_reranker_sees(store: Any) -> None:
    reranker = Recording()
    rag: ToolishRag[Any] = ToolishRag(store, metadata_filter=SCOPE, reranker=reranker, filterable={'doc': int})
    result = await rag.run_tool('hybrid_search', {'query': 'refunds', 'top_k': 5, 'filter': {'doc': 2}})
    assert {(h.record.metadata['tenant'], h.record.metadata['doc']) for h in reranker.seen[0]} == {('acme', 2)}
    assert len(result.metadata['hits']) == 3


async def test_candidates_are_max_of_top_k_and_rerank_candidates(store: Any) -> None:
    reranker = Recording()
    rag: ToolishRag[Any] = ToolishRag(store, metadata_filter=SCOPE, reranker=reranker, rerank_candidates=4)
    await rag.run_tool('vector_search', {'query': 'refunds', 'top_k': 2})
    await rag.run_tool('vector_search', {'query': 'refunds', 'top_k': 6})
    assert [len(call) for call in reranker.seen] == [4, 6]


@pytest.mark.parametrize('tool', RANKED)
async def test_a_failing_reranker_leaves_exactly_the_unreranked_results(store: Any, tool: str) -> None:
    reranker = Recording(fail=True)
    rag: ToolishRag[Any] = ToolishRag(store, metadata_filter=SCOPE, reranker=reranker)
    plain: ToolishRag[Any] = ToolishRag(store, metadata_filter=SCOPE)
    for arguments in ({'query': 'refunds express', 'top_k': 3}, {'query': 'refunds', 'top_k': 4, 'threshold': 0.5}):
        failed = await rag.run_tool(tool, arguments)
        expected = await plain.run_tool(tool, arguments)
        assert failed.return_value == expected.return_value  # same hits, scores, heading: the search's own
        assert failed.metadata['hits'] == expected.metadata['hits']
    assert reranker.seen  # it was asked


async def test_threshold_applies_to_the_reranked_score(store: Any) -> None:
    rag: ToolishRag[Any] = ToolishRag(store, metadata_filter=SCOPE, reranker=Recording())
    for tool in RANKED:  # text search's threshold is relative without a reranker; reranked, it is absolute
        result = await rag.run_tool(tool, {'query': 'refunds', 'top_k': 8, 'threshold': 0.5})
        assert [h.score >= 0.5 for h in result.metadata['hits']] == [True, True]
    with pytest.raises(ModelRetry, match=r'threshold must be between 0.0 and 1.0 \(a test relevance score\)'):
        await rag.run_tool('vector_search', {'query': 'refunds', 'threshold': -0.5})


async def test_grouping_ranks_documents_by_their_best_reranked_chunk(store: Any) -> None:
    reranker = Recording()
    rag: ToolishRag[Any] = ToolishRag(store, metadata_filter=SCOPE, reranker=reranker, allow_grouping=True)
    result = await rag.run_tool('hybrid_search', {'query': 'refunds', 'top_k': 3, 'group_by': 'document'})
    got = result.metadata['hits']
    assert [h.record.metadata['doc'] for h in got][2] == 1  # the document without "express" comes last
    assert ['express' in h.record.text for h in got] == [True, True, False]
    assert reranker.tenants_seen() == {'acme'}


async def test_grouping_still_gives_top_k_documents_when_the_candidates_span_fewer() -> None:
    # One document holds every strong match: the 3 candidates are all its chunks, one document, so the
    # best hit of the next document (from the grouped search, in scope) joins them before reranking.
    store = InMemoryStore(HashingEmbeddingModel(64))
    docs = []
    for t in TENANTS:
        strong = DocumentBuilder(f'file:///{t}/strong.md', 'strong', metadata={'tenant': t}, indexed_text=None)
        for i in range(5):
            strong.add_chunk(None, f'refunds refunds refunds {i}')
        weak = DocumentBuilder(f'file:///{t}/weak.md', 'weak', metadata={'tenant': t}, indexed_text=None)
        weak.add_chunk(None, f'{t} parcels, shipping and one refund')
        docs += [strong.build(), weak.build()]
    await store.upsert(docs)
    reranker = Recording()
    rag: ToolishRag[Any] = ToolishRag(
        store, metadata_filter=SCOPE, reranker=reranker, allow_grouping=True, rerank_candidates=3
    )
    result = await rag.run_tool('text_search', {'query': 'refunds', 'top_k': 2, 'group_by': 'document'})
    assert [title(h) for h in result.metadata['hits']] == ['strong', 'weak']
    (seen,) = reranker.seen
    assert [title(h) for h in seen] == ['strong', 'strong', 'strong', 'weak']
    assert reranker.tenants_seen() == {'acme'}


async def test_the_eager_search_is_reranked_in_scope(store: Any) -> None:
    reranker = Recording()
    rag: ToolishRag[Any] = ToolishRag(store, metadata_filter=SCOPE, reranker=reranker)
    text = (await rag.with_eager_search_about('refunds', top_k=2).eager_results())[0].text
    assert "Preloaded search results for 'refunds', reranked:" in text
    assert reranker.tenants_seen() == {'acme'}
    assert text.count('acme express') == 2


async def test_descriptions_say_results_are_reranked_only_with_a_reranker(store: Any) -> None:
    plain = {d.name: d.description for d in await ToolishRag(store).tool_definitions()}
    reranked = {d.name: d.description for d in await ToolishRag(store, reranker=Recording()).tool_definitions()}
    for name, description in plain.items():
        tool = name.removeprefix('docs_')
        if tool in RANKED:
            assert 'reranked' not in (description or '')
            assert (reranked[name] or '').startswith(description or '')
            assert 'the score is a test relevance score, from 0 to 1' in (reranked[name] or '')
            assert 'best 30 matches' in (reranked[name] or '')
        else:
            assert reranked[name] == description


async def test_with_reranker_is_a_copy_and_other_copies_keep_it(store: Any) -> None:
    reranker = Recording()
    plain: ToolishRag[Any] = ToolishRag(store)
    reranked = plain.with_reranker(reranker, candidates=5).with_metadata_filter(SCOPE)
    await reranked.run_tool('text_search', {'query': 'refunds', 'top_k': 2})
    await plain.run_tool('text_search', {'query': 'refunds', 'top_k': 2})
    assert [len(call) for call in reranker.seen] == [5]
    assert reranker.tenants_seen() == {'acme'}
    off = reranked.with_reranker(None)
    assert 'reranked' not in str((await off.run_tool('text_search', {'query': 'refunds'})).return_value)


def test_bad_reranker_options_are_refused() -> None:
    store = InMemoryStore(HashingEmbeddingModel(64))
    with pytest.raises(ValueError, match='rerank_candidates'):
        ToolishRag(store, reranker=Recording(), rerank_candidates=0)
    with pytest.raises(TypeError, match='Reranker'):
        ToolishRag(store, reranker=object())  # type: ignore[arg-type]


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """An SDK provider installed as the global one for this test only (as tests/test_tracing.py does)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, '_TRACER_PROVIDER_SET_ONCE', Once())
    monkeypatch.setattr(trace, '_TRACER_PROVIDER', None)
    trace.set_tracer_provider(provider)
    yield exporter
    provider.shutdown()


async def test_the_span_says_whether_the_call_was_reranked(spans: InMemorySpanExporter) -> None:
    store = InMemoryStore(HashingEmbeddingModel(64))
    await store.upsert(corpus())
    for rag in (ToolishRag(store, reranker=Recording()), ToolishRag(store, reranker=Recording(fail=True))):
        await rag.run_tool('vector_search', {'query': 'refunds'})
    await ToolishRag(store).run_tool('vector_search', {'query': 'refunds'})
    flags = [(s.attributes or {}).get('toolish_rag.reranked') for s in spans.get_finished_spans()]
    assert flags == [True, False, None]
