"""The ``multihop_search`` tool: search seeds and the graph ranked together, each passage saying why, scoped.

Real stores (InMemoryStore, LanceDB), real graph builders (`StructureBuilder`, `ExactNameLinker`),
calls through `ToolishRag.run_tool` as an agent makes them. PageRank is checked against networkx's.
The scope property is the strong one: under acme's scope, the answer is the same text whether or not
globex's records and graph exist, so nothing of globex's (a node, an edge, a degree) can move a
ranking (docs/graph.md#multi-hop-search).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from pydantic_ai import ModelRetry

from toolish_rag import DocumentBuilder, PropertyFilter as F, ToolishRag
from toolish_rag.content import Document
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.graph._ppr import personalised_pagerank
from toolish_rag.graph_builders import ExactNameLinker, StructureBuilder, build_graph
from toolish_rag.protocols import StoreFeatures, StoreLike
from toolish_rag.stores import InMemoryStore
from toolish_rag.toolset._tools import multihop

ACME = F.eq('tenant', 'acme')
QUESTION = 'Kieran Crichlow is a footballer from what island?'


def _doc(title: str, text: str, tenant: str = 'acme', year: int = 2024) -> Document:
    uri = f'file:///{tenant}/{title.replace(" ", "-").lower()}.md'
    b = DocumentBuilder(uri, title, metadata={'tenant': tenant, 'year': year})
    b.add_chunk(b.section(title), text)
    return b.build()


def _bridge() -> list[Document]:
    """A bridge question: Crichlow's paragraph names Barbados, whose paragraph shares no word with the question."""
    return [
        _doc('Kieran Crichlow', 'Kieran Crichlow is a footballer who plays for the national team of Barbados.'),
        _doc('Barbados', 'Barbados lies in the Lesser Antilles; its capital is Bridgetown.'),
        _doc('Island football', 'Island football: a footballer from an island plays on a small island team.'),
        _doc('Footballer awards', 'Footballer of the year: which footballer won, island by island.'),
        _doc('Crichlow family', 'The Crichlow family name is common; what island is it from?'),
        _doc('Island hopping', 'From island to island: what a footballer packs.'),
        _doc('Kieran Trippier', 'Kieran Trippier is a footballer from England, not from an island.'),
        _doc('Island names', 'What island is which? A footballer quiz.'),
        _doc('Footballer transfers', 'A footballer moved from the island club.'),
    ]


async def _graph_store(documents: Sequence[Document]) -> InMemoryStore:
    store = InMemoryStore(HashingEmbeddingModel(64))
    await store.upsert(documents)
    await build_graph(store, StructureBuilder(), ExactNameLinker())
    return store


def _titles(result: Any) -> list[str]:
    return [h.record.document_title for h in result.metadata['hits']]


# -- ranking and why ---------------------------------------------------------------------------------------


async def test_the_bridge_paragraph_comes_with_its_seed_and_says_why() -> None:
    rag: ToolishRag[None] = ToolishRag(await _graph_store(_bridge()), name='kb')
    plain = await rag.run_tool('hybrid_search', {'query': QUESTION, 'top_k': 3})
    assert 'Barbados' not in _titles(plain)  # search alone misses it: it reads nothing like the question
    found = await rag.run_tool('multihop_search', {'query': QUESTION, 'top_k': 3})
    titles = _titles(found)
    assert titles[0] == 'Kieran Crichlow' and 'Barbados' in titles
    text = str(found.return_value)
    lines = {line.split(' | ')[0]: line for line in text.splitlines() if line.startswith('[')}
    assert lines['[1] chunk ' + found.metadata['hits'][0].id].endswith('| seed')
    barbados = titles.index('Barbados') + 1
    assert lines[f'[{barbados}] chunk ' + found.metadata['hits'][barbados - 1].id].endswith('| via MENTIONS from [1]')


@contextmanager
def _candidates(n: int) -> Iterator[None]:
    """Tools built inside read ``n`` search candidates (50 by default): with a few, the walk reaches pages the
    search did not return, whose first chunks the tool then reads (a small store never gets there otherwise)."""
    kept = multihop.CANDIDATES
    multihop.CANDIDATES = n
    try:
        yield
    finally:
        multihop.CANDIDATES = kept


async def test_a_page_the_seed_names_is_read_when_the_search_missed_it() -> None:
    store = await _graph_store(_bridge())
    with _candidates(1):
        rag: ToolishRag[None] = ToolishRag(store, name='kb')
    found = await rag.run_tool('multihop_search', {'query': QUESTION, 'top_k': 3})
    assert _titles(found)[:2] == ['Kieran Crichlow', 'Barbados']  # Barbados: its first chunk, read for it
    barbados = next(d for d in _bridge() if d.title == 'Barbados').chunks[0].id
    assert found.metadata['hits'][1].id == barbados
    assert f'[2] chunk {barbados} | score ' in str(found.return_value)
    assert any(
        line.startswith(f'[2] chunk {barbados}') and line.endswith('| via MENTIONS from [1]')
        for line in str(found.return_value).splitlines()
    )


async def test_a_page_the_seed_names_outranks_a_page_naming_the_seed() -> None:
    """``incoming``: an edge pointing at the seed weighs 0.3 of one leaving it, so Barbados (named by the seed)
    comes before a fan page that names the seed, though the search ranks the fan page higher; with equal
    weights they tie and the search order decides."""
    fans = _doc('Supporters club', 'Supporters of Kieran Crichlow: the footballer from what island, they ask.')
    rag: ToolishRag[None] = ToolishRag(await _graph_store([*_bridge(), fans]), name='kb')
    found = await rag.run_tool('multihop_search', {'query': QUESTION, 'top_k': 4})
    titles = _titles(found)
    assert titles[0] == 'Kieran Crichlow' and titles.index('Barbados') < titles.index('Supporters club')
    kept = multihop.RANKING
    multihop.RANKING = dataclasses.replace(kept, incoming=1.0)
    try:
        equal: ToolishRag[None] = ToolishRag(rag.store, name='kb')
    finally:
        multihop.RANKING = kept
    titles = _titles(await equal.run_tool('multihop_search', {'query': QUESTION, 'top_k': 4}))
    assert titles.index('Supporters club') < titles.index('Barbados')


async def test_without_a_graph_it_ranks_like_the_search() -> None:
    """No edges (a graph built, but empty): every passage is a seed or a candidate, in the search's order."""
    store = InMemoryStore(HashingEmbeddingModel(64))
    await store.upsert(_bridge())
    await store.record_graph_built(['none'])
    rag: ToolishRag[None] = ToolishRag(store, name='kb')
    plain = await rag.run_tool('hybrid_search', {'query': QUESTION, 'top_k': 5})
    found = await rag.run_tool('multihop_search', {'query': QUESTION, 'top_k': 5})
    assert [h.id for h in found.metadata['hits']] == [h.id for h in plain.metadata['hits']]
    assert 'via ' not in str(found.return_value)


@settings(max_examples=40, deadline=None)
@given(
    edges=st.lists(
        st.tuples(st.sampled_from('abcdefg'), st.sampled_from('abcdefg'), st.sampled_from([0.5, 1.0, 2.0])),
        min_size=1,
        max_size=14,
    ),
    seeds=st.dictionaries(st.sampled_from('abcdefg'), st.floats(0.05, 1.0), min_size=1, max_size=3),
    damping=st.sampled_from([0.3, 0.5, 0.85]),
)
def test_pagerank_equals_networkx(edges: list[tuple[str, str, float]], seeds: dict[str, float], damping: float) -> None:
    """Undirected, weighted, repeated pairs adding up, self-loops ignored, dangling mass restarting: as networkx."""
    graph = nx.Graph()
    graph.add_nodes_from(seeds)
    for a, b, w in edges:
        if a != b:
            graph.add_edge(a, b, weight=graph.get_edge_data(a, b, {'weight': 0.0})['weight'] + w)
    expected = nx.pagerank(graph, alpha=damping, personalization=seeds, weight='weight', tol=1e-13, max_iter=1000)
    got = personalised_pagerank(edges, seeds, damping=damping, iterations=1000, tolerance=1e-15)
    assert set(got) == {n for n in graph.nodes if graph.degree(n) or n in seeds}
    for node, score in got.items():
        assert score == pytest.approx(expected[node], abs=1e-9)


# -- scope: nothing of globex's can move acme's answer -----------------------------------------------------

_TITLES = ('Alpha Port', 'Beta Hill', 'Gamma Bay', 'Delta Works', 'Echo Lake')
_WORDS = ('harbour', 'ferry', 'cargo', 'tide', 'mill', 'grain', 'bridge', 'storm')


@st.composite
def _tenants(draw: st.DrawFn) -> tuple[list[Document], list[Document]]:
    """Two tenants' paragraphs: titles from one pool (so names cross tenants), texts naming titles of both."""

    def paragraphs(tenant: str) -> list[Document]:
        titles = draw(st.lists(st.sampled_from(_TITLES), min_size=1, max_size=4, unique=True))
        out = []
        for title in titles:
            words = draw(st.lists(st.sampled_from((*_WORDS, *_TITLES)), min_size=2, max_size=7))
            out.append(_doc(title, f'{title}: {" ".join(words)}.', tenant, draw(st.sampled_from([2023, 2024]))))
        return out

    return paragraphs('acme'), paragraphs('globex')


_QUERIES = st.one_of(st.sampled_from(_WORDS), st.sampled_from(_TITLES), st.just('harbour ferry of Gamma Bay'))


def _calls(candidates: Sequence[int], most: int) -> st.SearchStrategy[tuple[int, list[tuple[str, int]]]]:
    """A candidate count and up to ``most`` (query, top_k) calls; with few candidates top_k is small too, so the
    hits leave pages out and the walk reaches some of them (the tool reads their first chunks)."""
    return st.sampled_from(candidates).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(
                st.tuples(_QUERIES, st.integers(1, 8 if n == multihop.CANDIDATES else 2)), min_size=1, max_size=most
            ),
        )
    )


async def _answers(
    store: StoreLike, queries: Sequence[tuple[str, int]], candidates: int = multihop.CANDIDATES
) -> list[tuple[str, list[str]]]:
    with _candidates(candidates):
        rag: ToolishRag[None] = ToolishRag(store, name='kb').with_metadata_filter(ACME)
    out = []
    for query, top_k in queries:
        found = await rag.run_tool('multihop_search', {'query': query, 'top_k': top_k})
        out.append((str(found.return_value), [h.id for h in found.metadata['hits']]))
    return out


_SCOPE_SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@settings(_SCOPE_SETTINGS, max_examples=30)
@given(tenants=_tenants(), calls=_calls([1, 2, multihop.CANDIDATES], 3))
def test_memory_acme_reads_the_same_whether_or_not_globex_exists(
    tenants: tuple[list[Document], list[Document]], calls: tuple[int, list[tuple[str, int]]]
) -> None:
    """With 1 or 2 candidates the tool also reads pages the walk reaches (their first chunks): scoped too."""
    candidates, queries = calls
    asyncio.run(_memory_case(*tenants, queries, candidates))


async def _memory_case(
    acme: list[Document], globex: list[Document], queries: list[tuple[str, int]], candidates: int
) -> None:
    shared = await _graph_store([*acme, *globex])  # names cross tenants: edges into globex's paragraphs exist
    alone = await _graph_store(acme)
    answers = await _answers(shared, queries, candidates)
    assert answers == await _answers(alone, queries, candidates)
    for _, ids in answers:
        assert set(ids) <= {c.id for d in acme for c in d.chunks}


async def _lancedb(path: Path) -> Any:
    lancedb = pytest.importorskip('toolish_rag_lancedb', reason='needs the LanceDB adapter (stores/lancedb)')
    return lancedb.LanceDBStore(path, embedder=HashingEmbeddingModel(64))


@settings(_SCOPE_SETTINGS, max_examples=4)
@given(tenants=_tenants(), calls=_calls([1, multihop.CANDIDATES], 2))
def test_lancedb_globex_graph_cannot_move_acme_answer(
    tmp_path_factory: pytest.TempPathFactory,
    tenants: tuple[list[Document], list[Document]],
    calls: tuple[int, list[tuple[str, int]]],
) -> None:
    """LanceDB: with the same records written the same way, globex's graph (its edges, the edges from acme's
    paragraphs to globex's) changes nothing under acme's scope. (LanceDB's BM25 statistics are table-wide,
    so its *records* do move text scores: docs/filters.md#corpus-statistics; the memory test covers records.)"""
    pytest.importorskip('toolish_rag_lancedb', reason='needs the LanceDB adapter (stores/lancedb)')
    candidates, queries = calls
    asyncio.run(_lancedb_case(*tenants, queries, tmp_path_factory.mktemp('multihop'), candidates))


async def _lancedb_case(
    acme: list[Document], globex: list[Document], queries: list[tuple[str, int]], root: Path, candidates: int
) -> None:
    stores = []
    for name in ('shared', 'alone'):
        store = await _lancedb(root / name)
        await store.upsert(acme)
        await store.upsert(globex)
        stores.append(store)
    shared, alone = stores
    await build_graph(shared, StructureBuilder(), ExactNameLinker())
    acme_nodes = (
        {d.id for d in acme} | {c.id for d in acme for c in d.chunks} | {s.id for d in acme for s in d.sections}
    )
    own = [r for r in await shared.list_relations() if r.source in acme_nodes and r.target in acme_nodes]
    await alone.upsert(own)
    await alone.record_graph_built(['copied'])  # acme's own relations, copied: a graph all the same
    try:
        answers = await _answers(shared, queries, candidates)
        assert answers == await _answers(alone, queries, candidates)
    finally:
        for store in stores:
            await store.aclose()


# -- foreign ids, bad arguments, where it is offered ------------------------------------------------------


async def test_a_foreign_id_or_title_answers_like_a_missing_one() -> None:
    """A query naming globex's chunk id or title reads, under acme's scope, as over a store where it never existed."""
    globex = [_doc('Globex Barbados plan', 'Globex ships to Barbados from Kieran Crichlow harbour.', 'globex')]
    shared = ToolishRag(await _graph_store([*_bridge(), *globex]), name='kb').with_metadata_filter(ACME)
    alone = ToolishRag(await _graph_store(_bridge()), name='kb').with_metadata_filter(ACME)
    for query in (globex[0].chunks[0].id, globex[0].id, 'Globex Barbados plan'):
        a = await shared.run_tool('multihop_search', {'query': query, 'top_k': 5})
        b = await alone.run_tool('multihop_search', {'query': query, 'top_k': 5})
        assert str(a.return_value) == str(b.return_value)
        assert 'Globex ships' not in str(a.return_value)


async def test_a_foreign_page_the_seed_names_is_never_read() -> None:
    """Acme's seed names Barbados; only globex has a Barbados page: under acme's scope it is neither read nor
    listed, and the answer is the one over a store without globex (with 1 candidate, so pages are read)."""
    acme = [d for d in _bridge() if d.title != 'Barbados']
    globex = [_doc('Barbados', 'Barbados lies in the Lesser Antilles.', 'globex')]
    with _candidates(1):
        shared = ToolishRag(await _graph_store([*acme, *globex]), name='kb').with_metadata_filter(ACME)
        alone = ToolishRag(await _graph_store(acme), name='kb').with_metadata_filter(ACME)
    a = await shared.run_tool('multihop_search', {'query': QUESTION, 'top_k': 3})
    b = await alone.run_tool('multihop_search', {'query': QUESTION, 'top_k': 3})
    assert str(a.return_value) == str(b.return_value)
    assert 'Lesser Antilles' not in str(a.return_value)


@pytest.mark.parametrize(
    ('arguments', 'says'),
    [
        ({'query': QUESTION, 'top_k': 0}, 'top_k must be between 1 and 50'),
        ({'query': QUESTION, 'top_k': 51}, 'top_k must be between 1 and 50'),
        ({'query': '   '}, 'the query is empty'),
        ({'query': 'x' * 5000}, 'the query is over'),
        ({'query': QUESTION, 'filter': {'year': 2024}}, 'takes no filter'),
    ],
)
async def test_bad_arguments_are_retries(arguments: dict[str, Any], says: str) -> None:
    rag: ToolishRag[None] = ToolishRag(await _graph_store(_bridge()), name='kb')
    with pytest.raises(ModelRetry, match=says):
        await rag.run_tool('multihop_search', arguments)


async def test_the_model_filter_narrows_every_passage() -> None:
    documents = [*_bridge(), _doc('Barbados 2023', 'Kieran Crichlow island footballer archive.', year=2023)]
    store = await _graph_store(documents)
    rag: ToolishRag[None] = ToolishRag(store, name='kb', filterable={'year': int})
    found = await rag.run_tool('multihop_search', {'query': QUESTION, 'top_k': 10, 'filter': {'year': 2023}})
    assert _titles(found) == ['Barbados 2023']


async def test_offered_with_search_graph_and_lookup_only() -> None:
    store = InMemoryStore(HashingEmbeddingModel(64))
    assert 'kb_multihop_search' not in ToolishRag(store, name='kb').tool_names  # no graph built yet
    await build_graph(store, StructureBuilder())
    memory: ToolishRag[None] = ToolishRag(store, name='kb')
    assert 'kb_multihop_search' in memory.tool_names
    assert StoreFeatures.of(memory.store).graph
    tantivy = pytest.importorskip('toolish_rag_tantivy', reason='needs the Tantivy adapter (stores/tantivy)')
    no_graph: ToolishRag[None] = ToolishRag(tantivy.TantivyStore(), name='kb')
    assert 'kb_multihop_search' not in no_graph.tool_names
