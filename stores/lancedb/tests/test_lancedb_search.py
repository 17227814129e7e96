"""Text, regex and vector search through LanceDBStore: hostile queries, the regexp trap, scores."""

from __future__ import annotations

import warnings

import lancedb
import numpy as np
import pytest

from toolish_rag.builder import DocumentBuilder
from toolish_rag.content import Document, Entity
from toolish_rag.errors import QuerySyntaxError
from toolish_rag.filters import PropertyFilter as F
from toolish_rag.protocols import (
    DocumentStore,
    FilterPushdown,
    HybridSearch,
    RegexSearch,
    ResultExpander,
    TextSearch,
    VectorSearch,
)
from toolish_rag.search import RegexRequest, SearchRequest
from toolish_rag_lancedb import LanceDBStore

TEXTS = [
    'Calling foo.bar() raised ERR-1234 in the payment worker.',
    "Don't panic: it's (probably) fine; retry after 30s.",
    'To be or not to be, that is the question.',
    'C++ and C# both compile; see std::vector<int>.',
    'The price is $5.00 (or 50% off) until 2024-12-31.',
    'Supercalifragilisticexpialidociousnessextraordinarilylongword appears once.',
    'Emoji test 🚀 launch, naïve café, Ünïcode.',
    'Config key user.email=alice@example.com under [section].',
]


def _doc() -> Document:
    b = DocumentBuilder('file:///t.md', 'Tests', metadata={'tenant': 'acme'})
    s = b.section('All')
    for t in TEXTS:
        b.add_chunk(s, t)
    return b.build()


@pytest.fixture
async def loaded(store: LanceDBStore) -> LanceDBStore:
    await store.upsert([_doc()])
    return store


def test_capabilities(store: LanceDBStore) -> None:
    for proto in (VectorSearch, TextSearch, RegexSearch, ResultExpander, FilterPushdown, DocumentStore):
        assert isinstance(store, proto)
    assert not isinstance(store, HybridSearch)  # fusion is left to the core
    assert 'double quotes' in store.text_query_syntax


@pytest.mark.parametrize(
    ('query', 'expected'),
    [
        ('foo.bar()', 0),
        ('ERR-1234', 0),
        ('err 1234', 0),
        ('"foo.bar()" raised', 0),
        ("don't panic:", 1),
        ('(probably) fine;', 1),
        ('"to be or not to be"', 2),
        ('C++', 3),
        ('std::vector<int>', 3),
        ('$5.00 (or 50%', 4),
        ('2024-12-31', 4),
        ('supercalifragilisticexpialidociousnessextraordinarilylongword', 5),
        ('🚀', 6),
        ('naive cafe', 6),
        ('user.email=alice@example.com', 7),
        ('[section]', 7),
        ('title:foo.bar() AND (ERR-1234 OR', 0),
    ],
)
async def test_punctuation_heavy_queries_find_the_chunk(loaded: LanceDBStore, query: str, expected: int) -> None:
    hits = await loaded.text_search(SearchRequest(query, 3))
    assert hits, f'{query!r} found nothing'
    assert hits[0].record.urtext == TEXTS[expected]
    assert all(h.score > 0 for h in hits)


@pytest.mark.parametrize('query', ['', '   ', '"', '"""', ':::', '*', '?', '()', '\\', '\x00', 'AND OR NOT', '-', '~^'])
async def test_degenerate_queries_never_raise(loaded: LanceDBStore, query: str) -> None:
    hits = await loaded.text_search(SearchRequest(query, 3))
    assert isinstance(hits, list)


async def test_text_search_respects_filter_in_fallback(loaded: LanceDBStore) -> None:
    assert await loaded.text_search(SearchRequest('🚀', 3, F.eq('tenant', 'other'))) == []
    assert len(await loaded.text_search(SearchRequest('🚀', 3, F.eq('tenant', 'acme')))) == 1


async def test_regexp_match_trap(loaded: LanceDBStore, tmp_path: object) -> None:
    # In LanceDB 0.40 `regexp_match(...) IS NOT NULL` is true for every row (regexp_match is
    # coerced to a boolean): a store built on it would return everything. Ours must not.
    table = await (await lancedb.connect_async(loaded.uri)).open_table('records')
    everything = await table.query().where("regexp_match(urtext, 'no-such-thing') IS NOT NULL").to_arrow()
    nothing = await table.query().where("regexp_like(urtext, 'no-such-thing')").to_arrow()
    assert (everything.num_rows, nothing.num_rows) == (len(TEXTS), 0)  # documents the trap
    assert await loaded.regex_search(RegexRequest('no-such-thing', 10)) == []
    hits = await loaded.regex_search(RegexRequest('ERR-[0-9]+', 10))
    assert [h.record.urtext for h in hits] == [TEXTS[0]]
    assert hits[0].matches == ('ERR-1234',) and hits[0].score == 1.0


@pytest.mark.parametrize(
    ('pattern', 'expected'),
    [
        (r"Don't", [1]),
        (r'foo\.bar\(\)', [0]),
        (r'\$[0-9]+\.[0-9]{2}', [4]),
        (r'\\', []),
        (r"'; DROP TABLE records; --", []),
        (r'[0-9]{4}-[0-9]{2}-[0-9]{2}', [4]),
        (r'🚀', [6]),
        (r'std::vector<int>', [3]),
    ],
)
async def test_regex_patterns_are_sql_escaped(loaded: LanceDBStore, pattern: str, expected: list[int]) -> None:
    hits = await loaded.regex_search(RegexRequest(pattern, 10))
    assert [h.record.urtext for h in hits] == [TEXTS[i] for i in expected]
    assert await loaded.count() == len(TEXTS)  # and nothing was dropped


async def test_regex_counts_orders_and_folds_case(loaded: LanceDBStore) -> None:
    hits = await loaded.regex_search(RegexRequest('(?:be|to)', 10))
    assert hits[0].record.urtext == TEXTS[2] and hits[0].score == 3.0
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert await loaded.regex_search(RegexRequest('CALLING', 10)) == []
    insensitive = await loaded.regex_search(RegexRequest('CALLING', 10, case_sensitive=False))
    assert [h.record.urtext for h in insensitive] == [TEXTS[0]]
    for bad in ('(unclosed', '(a)\\1', '', '(?<=x)y'):
        with pytest.raises(QuerySyntaxError):
            await loaded.regex_search(RegexRequest(bad, 5))


async def test_vector_scores_are_cosine_similarities(store: LanceDBStore) -> None:
    await store.upsert([_doc()])
    hits = await store.vector_search(SearchRequest(TEXTS[3], 8))
    assert len(hits) == 8
    emb = await store.embedder.embed_documents([h.record.text for h in hits])
    q = np.asarray((await store.embedder.embed_query(TEXTS[3])).embeddings[0])
    for hit, vec in zip(hits, emb.embeddings, strict=True):
        v = np.asarray(vec)
        cosine = float(v @ q / (np.linalg.norm(v) * np.linalg.norm(q)))
        assert hit.score == pytest.approx(cosine, abs=1e-5)


async def test_entities_are_records_and_expansion_ignores_them(store: LanceDBStore) -> None:
    doc = _doc()
    ent = Entity(id='ent-1', name='foo.bar', description='the payment worker entry point', metadata={'tenant': 'acme'})
    await store.upsert([doc, ent])
    hits = await store.text_search(SearchRequest('payment worker entry point', 3))
    assert hits[0].id == 'ent-1' and isinstance(hits[0].record, Entity)
    assert (await store.get_records(['ent-1']))[0] == ent
    chunks = await store.expand(ExpansionRequestFor(doc.id))
    assert [c.sequence_number for c in chunks] == list(range(len(TEXTS)))
    with pytest.raises(ValueError, match='already belongs'):
        await store.upsert([Entity(id=doc.chunks[0].id, name='clash')])
    assert await store.delete_entities(['ent-1', 'nope']) == 1
    assert await store.get_records(['ent-1']) == []


def ExpansionRequestFor(document_id: str) -> object:
    from toolish_rag.search import ExpansionRequest

    return ExpansionRequest(document_id=document_id)


@pytest.mark.parametrize('query', ['', '   ', '!!!'])
async def test_a_query_without_direction_scores_zero_like_the_reference_store(loaded: LanceDBStore, query: str) -> None:
    # The toolset refuses empty queries before any store sees them, but a lexical embedder
    # also maps '!!!' to the zero vector: every record is then equally (un)similar.
    from toolish_rag.stores import InMemoryStore

    reference = InMemoryStore(embedder=loaded.embedder)
    await reference.upsert([_doc()])
    for request in (SearchRequest(query, 3), SearchRequest(query, 20, F.eq('tenant', 'acme'))):
        ours = await loaded.vector_search(request)
        theirs = await reference.vector_search(request)
        assert [(h.id, h.score) for h in ours] == [(h.id, h.score) for h in theirs]
        assert len(ours) == min(request.top_k, len(TEXTS))
    assert await loaded.vector_search(SearchRequest(query, 5, F.eq('tenant', 'globex'))) == []


async def test_searches_print_no_deprecation_warning(loaded: LanceDBStore, capfd: pytest.CaptureFixture[str]) -> None:
    # LanceDB logs a deprecation warning (from Rust, straight to stderr) on every search that
    # selects columns without its score column; a user saw it under every tool call.
    capfd.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        assert await loaded.vector_search(SearchRequest('payment worker', 3))
        assert await loaded.text_search(SearchRequest('payment worker', 3))
        assert await loaded.text_search(SearchRequest('🚀', 3))  # the substring fallback
        assert await loaded.regex_search(RegexRequest('ERR-[0-9]+', 3))
    assert [str(w.message) for w in caught] == []
    err = capfd.readouterr().err
    assert 'deprecat' not in err.lower() and 'WARN' not in err, err
