"""The projection oracle (issue 41 acceptance): a tenant's toolset over a two-tenant store answers
exactly as the same toolset over that tenant's records alone.

For each store kind (memory, LanceDB, a federation of memory and a plain `TantivyStore`) two stores
are built: ``shared`` holds acme's and globex's records, interleaved (acme's in the same relative
order), ``alone`` acme's only. Both are scoped to acme. Every tool the shared toolset offers
(`ToolishRag.offered_tools`) is called with the same generated arguments (`registry.REGISTRY`:
queries in both tenants' words, rare globex words among them, ids of both tenants and missing
ones) on both, and the two outcomes must agree: the text byte for byte, the hits' ids in order,
their scores exactly (within 1e-6 on LanceDB, whose vector scores come from its own kernels), the
same retry message. Globex's row count is not a multiple of 4 (BLAS sums tail rows in another order).

LanceDB's text search computes BM25 over every row it holds and has no isolated mode
(docs/filters.md#corpus-statistics): its text, hybrid and multihop searches are left out here,
as that page states. The default run makes a few hundred calls; ``slow`` makes thousands.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from toolish_rag import DocumentBuilder, SearchHit, ToolishRag
from toolish_rag.content import Document
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.protocols import DocumentStore, StoreLike
from toolish_rag.stores import Federated, InMemoryStore
from toolish_rag.stores.federated import MemberFusion

from .corpus import FOREIGN_TENANT, SCOPE, SCOPE_TENANT, Corpus, TenantIds, describe, two_tenant_corpus
from .registry import tool_rounds
from .stores import STORE_BUILDERS, Outcome, call, scoped_rag

KINDS = ('memory', 'lancedb', 'federation')
FAST_CALLS = 90
SLOW_CALLS = 3_000
BATCH = 30
RARE_WORDS = ('zebulon', 'quillwort', 'marrowfat')
"""Words only globex writes, repeated: index-wide statistics would move every acme score for them."""
_STATISTICS_TOOLS = frozenset({'text_search', 'hybrid_search', 'multihop_search'})
_EXCLUDED = {'lancedb': _STATISTICS_TOOLS}
"""Tools whose answers a store documents as depending on out-of-scope records (docs/filters.md#corpus-statistics)."""
_TOLERANCE = {'lancedb': 1e-6}
FEDERATION_CANDIDATES = 8
"""Each federation member contributes about this many text candidates (the default is 100): fewer than acme's
records, so which of them a member returns decides the answer, as on a real corpus."""


def _rare_documents(tenant: str, count: int) -> list[Document]:
    """One-chunk documents in the shared words; a rare word two to five times in each of globex's, once in
    every eighth of acme's.

    In acme's scope a rare word is rare (a high weight); over both tenants it is common, so an
    index-wide ranking of a query with it and a shared word prefers other acme records.
    """
    rng = random.Random(f'{tenant}-{count}')
    shared = ('refund', 'policy', 'parcel', 'warranty', 'password', 'shipping', 'damage', 'claim')
    foreign = tenant == FOREIGN_TENANT
    docs = []
    for i in range(count):
        b = DocumentBuilder(
            f'file:///{tenant}/rare-{i}.md',
            f'{tenant.title()} rare note {i}',
            metadata={'tenant': tenant, 'year': 2024, 'region': 'Globex South' if foreign else 'Northwind'},
        )
        rare = rng.randrange(2, 6) if foreign else int(i % 8 == 0)
        words = [rng.choice(shared) for _ in range(6)] + [RARE_WORDS[i % 3]] * rare
        rng.shuffle(words)
        b.add_chunk(b.section('Notes'), f'{" ".join(words)} Reference {"GLX" if foreign else "ACM"}-{9000 + i:04d}.')
        docs.append(b.build())
    return docs


def _with(ids: TenantIds, docs: list[Document]) -> TenantIds:
    return TenantIds(
        documents=(*ids.documents, *(d.id for d in docs)),
        sections=(*ids.sections, *(s.id for d in docs for s in d.sections)),
        chunks=(*ids.chunks, *(c.id for d in docs for c in d.chunks)),
        entities=ids.entities,
    )


def projection_corpus(extra: int) -> Corpus:
    """The hardening corpus (graph aside) with 24 short acme documents (3 with a rare word) and ``extra`` globex ones."""
    base = two_tenant_corpus()
    acme, globex = _rare_documents(SCOPE_TENANT, 24), _rare_documents(FOREIGN_TENANT, extra)
    return replace(
        base,
        documents=(*base.documents, *acme, *globex),
        relations=(),
        scope=_with(base.scope, acme),
        foreign=_with(base.foreign, globex),
        foreign_markers=(*base.foreign_markers, *(d.title for d in globex)),
        words=tuple(sorted({*base.words, *RARE_WORDS})),
    )


def _federation(path: Path) -> StoreLike:
    tantivy = pytest.importorskip('toolish_rag_tantivy', reason='needs the Tantivy adapter (stores/tantivy)')
    members = {'a': InMemoryStore(HashingEmbeddingModel(64)), 'b': tantivy.TantivyStore()}
    return Federated(members, fusion=MemberFusion(candidates=FEDERATION_CANDIDATES))


_BUILDERS: dict[str, Callable[[Path], StoreLike]] = {**STORE_BUILDERS, 'federation': _federation}


@dataclass(frozen=True)
class Projection:
    """One store kind built twice: with both tenants (``shared``) and with acme's records alone."""

    kind: str
    corpus: Corpus
    runner: asyncio.Runner
    shared: ToolishRag[None]
    alone: ToolishRag[None]
    stores: tuple[StoreLike, StoreLike]

    def __repr__(self) -> str:
        return f'Projection({self.kind!r})'


def _interleaved(corpus: Corpus) -> tuple[list[Any], list[Any]]:
    """Both tenants' documents and entities, globex's spread between acme's (acme's order kept), and acme's alone."""
    acme_ids = set(corpus.scope.all)
    items: list[Any] = [*corpus.documents, *corpus.entities]
    acme = [i for i in items if i.id in acme_ids]
    globex = [i for i in items if i.id not in acme_ids]
    mixed: list[Any] = []
    step = max(1, len(globex) // (len(acme) + 1))
    for n, item in enumerate(acme):
        mixed += globex[n * step : (n + 1) * step]
        mixed.append(item)
    mixed += globex[len(acme) * step :]
    return mixed, acme


def open_projection(kind: str, corpus: Corpus, runner: asyncio.Runner, path: Path) -> Projection:
    mixed, acme = _interleaved(corpus)
    stores = (_BUILDERS[kind](path / 'shared'), _BUILDERS[kind](path / 'alone'))
    for store, items in zip(stores, (mixed, acme), strict=True):
        assert isinstance(store, DocumentStore)
        for start in range(0, len(items), 7):  # several writes: segments, versions, merges
            runner.run(store.upsert(items[start : start + 7]))
    shared, alone = (scoped_rag(s, SCOPE) for s in stores)
    return Projection(kind, corpus, runner, shared, alone, stores)


@pytest.fixture(scope='module', params=KINDS)
def projection(
    request: pytest.FixtureRequest, runner: asyncio.Runner, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Projection]:
    corpus = projection_corpus(6)
    foreign_rows = len(corpus.foreign.chunks) + len(corpus.foreign.entities)
    assert foreign_rows % 4, foreign_rows
    opened = open_projection(request.param, corpus, runner, tmp_path_factory.mktemp(f'projection-{request.param}'))
    yield opened
    for store in opened.stores:
        aclose = getattr(store, 'aclose', None)
        if aclose is not None:
            runner.run(aclose())


def compared_tools(p: Projection) -> list[str]:
    """The tools the shared toolset offers (the alone one must offer the same), less those the store documents as leaking."""
    offered = list(p.shared.offered_tools)
    assert offered == list(p.alone.offered_tools)
    return [t for t in offered if t not in _EXCLUDED.get(p.kind, ())]


def _hits(outcome: Outcome) -> list[SearchHit]:
    assert outcome.result is not None
    hits = outcome.result.metadata.get('hits', []) if isinstance(outcome.result.metadata, dict) else []
    return list(hits)


def differences(kind: str, shared: Outcome, alone: Outcome) -> list[str]:
    """How two outcomes of one call differ (empty: they agree as the oracle requires)."""
    if shared.error is not None or alone.error is not None:
        return [f'exception: {describe(repr(shared.error or alone.error), 200)}']
    if shared.retry is not None or alone.retry is not None:
        return [] if shared.retry == alone.retry else [f'retry: {describe(shared.retry)} != {describe(alone.retry)}']
    assert shared.result is not None and alone.result is not None
    found: list[str] = []
    a, b = _hits(shared), _hits(alone)
    if [h.id for h in a] != [h.id for h in b]:
        found.append(f'ids: {[h.id for h in a][:6]} != {[h.id for h in b][:6]}')
    else:
        tolerance = _TOLERANCE.get(kind, 0.0)
        for x, y in zip(a, b, strict=True):
            if not (x.score == y.score or math.isclose(x.score, y.score, rel_tol=0.0, abs_tol=tolerance)):
                found.append(f'score of {x.id}: {x.score!r} != {y.score!r}')
                break
    if str(shared.result.return_value) != str(alone.result.return_value):
        found.append(f'text: {describe(str(shared.result.return_value), 300)}')
    return found


PINNED_QUERIES = tuple(f'{w} {r}' for w in ('refund', 'parcel', 'warranty') for r in RARE_WORDS)
"""A shared word and a rare one: the queries whose ranking index-wide statistics would change most."""
_SEARCHES = ('vector_search', 'text_search', 'hybrid_search', 'multihop_search')


def _run_oracle(p: Projection, total: int) -> tuple[list[str], Counter[str]]:
    tools = compared_tools(p)
    failures: list[str] = []
    stats: Counter[str] = Counter()

    def check(tool: str, arguments: dict[str, Any]) -> None:
        shared, alone = p.runner.run(call_both(p, tool, arguments))
        stats['calls'] += 1
        stats[f'tool {tool}'] += 1
        stats['hits'] += len(_hits(shared)) if shared.result is not None else 0
        for problem in differences(p.kind, shared, alone):
            failures.append(f'{tool}({describe(arguments, 160)}): {problem}')

    for tool in (t for t in _SEARCHES if t in tools):
        for query in PINNED_QUERIES:
            check(tool, {'query': query, 'top_k': 4})

    @settings(
        max_examples=max(1, total // BATCH),
        derandomize=True,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(batch=tool_rounds(p.corpus, tools, max(1, -(-BATCH // len(tools)))))
    def run(batch: list[tuple[str, dict[str, Any]]]) -> None:
        for tool, arguments in batch:
            check(tool, arguments)

    run()
    return failures, stats


async def call_both(p: Projection, tool: str, arguments: dict[str, Any]) -> tuple[Outcome, Outcome]:
    return await call(None, tool, arguments, p.shared), await call(None, tool, arguments, p.alone)


def _check(p: Projection, total: int) -> None:
    failures, stats = _run_oracle(p, total)
    assert not failures, f'{p.kind}: {len(failures)} of {stats["calls"]} calls differ:\n' + '\n'.join(failures[:20])
    assert stats['calls'] >= total and stats['hits'] > stats['calls'] // 2, stats
    assert all(stats[f'tool {t}'] for t in compared_tools(p)), stats


def test_a_scoped_toolset_answers_as_over_its_records_alone(projection: Projection) -> None:
    _check(projection, FAST_CALLS)


@pytest.mark.slow
def test_a_scoped_toolset_answers_as_over_its_records_alone_at_scale(projection: Projection) -> None:
    _check(projection, SLOW_CALLS)


def test_the_oracle_sees_a_row_count_leak(runner: asyncio.Runner, tmp_path: Path) -> None:
    """The comparison is not vacuous: scores off by one ulp (what the row-count leak gave) are a difference."""
    p = open_projection('memory', projection_corpus(6), runner, tmp_path)
    outcome = runner.run(call(None, 'vector_search', {'query': 'refund policy'}, p.shared))
    assert outcome.result is not None and _hits(outcome)
    hits = _hits(outcome)
    nudged = [replace(hits[0], score=math.nextafter(hits[0].score, 2.0)), *hits[1:]]
    moved = replace(outcome, result=replace(outcome.result, metadata={**outcome.result.metadata, 'hits': nudged}))
    assert differences('memory', moved, outcome) == [f'score of {hits[0].id}: {nudged[0].score!r} != {hits[0].score!r}']
