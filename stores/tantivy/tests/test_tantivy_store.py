"""Tantivy-specific behaviour: query confinement, malformed input, filters vs the reference,
concurrency, persistence across processes and crash safety."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from toolish_rag import ToolishRag
from toolish_rag.builder import DocumentBuilder
from toolish_rag.content import Document, Entity, MetadataValue
from toolish_rag.errors import InvalidRequestError, QuerySyntaxError
from toolish_rag.filters import EntityFilter, Filter, PropertyFilter as F, matches
from toolish_rag.protocols import VectorSearch
from toolish_rag.search import ExpansionRequest, RegexRequest, SearchRequest
from toolish_rag_tantivy import TantivyStore
from toolish_rag_tantivy._schema import canonical_number

PY = sys.executable


def _doc(uri: str, texts: list[str], metadata: dict[str, MetadataValue] | None = None, **kw: Any) -> Document:
    b = DocumentBuilder(uri, uri.rsplit('/', 1)[-1], metadata=metadata or {}, **kw)
    section = b.section('Body')
    for t in texts:
        b.add_chunk(section, t)
    return b.build()


# -- capabilities ---------------------------------------------------------------------------


def test_offers_lexical_tools_and_no_vector_tool() -> None:
    store = TantivyStore()
    assert not isinstance(store, VectorSearch)
    names = ToolishRag(store, name='code').tool_names
    assert set(names) == {
        'code_text_search',
        'code_regex_search',
        'code_broaden_chunk',
        'code_zoom_out',
        'code_list_documents',
        'code_outline',
        'code_read_section',
        'code_verify_citations',
    }


def test_entry_point_opens_the_store(tmp_path: Path) -> None:
    from toolish_rag.stores.registry import available_stores, open_store

    assert 'tantivy' in available_stores()
    store = open_store(f'tantivy:{tmp_path / "ix"}')
    assert isinstance(store, TantivyStore) and store.path == tmp_path / 'ix'
    assert isinstance(open_store('tantivy'), TantivyStore)


def test_analyzer_is_saved_with_the_index(tmp_path: Path) -> None:
    TantivyStore(tmp_path / 'ix', analyzer='en_stem')
    assert TantivyStore(tmp_path / 'ix').analyzer_name == 'en_stem'
    with pytest.raises(ValueError, match='en_stem'):
        TantivyStore(tmp_path / 'ix', analyzer='subword_stem')
    (tmp_path / 'other').mkdir()
    (tmp_path / 'other' / 'precious.txt').write_text('x')
    with pytest.raises(ValueError, match='not empty'):
        TantivyStore(tmp_path / 'other')


async def test_subword_analyzer_finds_identifiers_from_words() -> None:
    store = TantivyStore(analyzer='subword_stem')  # not the default: language='auto' keeps identifiers whole
    await store.upsert([_doc('file:///a.py', ['def parseHttpRequest(raw): ...', 'class run_target_loop: pass'])])
    hits = await store.text_search(SearchRequest('parse http requests', 5))
    assert hits and 'parseHttpRequest' in hits[0].record.urtext
    hits = await store.text_search(SearchRequest('RunTarget', 5))
    assert hits and 'run_target_loop' in hits[0].record.urtext


# -- query text cannot reach other fields ------------------------------------------------------


@pytest.fixture
async def tenants() -> TantivyStore:
    store = TantivyStore()
    await store.upsert(
        [
            _doc('file:///d1', ['refund policy for customers'], {'tenant': 'acme', 'secret': 'zz'}, labels={'L'}),
            _doc('file:///d2', ['shipping times and carriers'], {'tenant': 'other', 'secret': 'zz'}),
            _doc('file:///d3', ['the tenant other word appear here'], {'tenant': 'acme'}),
        ]
    )
    return store


@pytest.mark.parametrize(
    'query',
    [
        'tenant:other',
        'm_str:other',
        'kind:chunk',
        'id:x',
        'document_id:x',
        'labels:L',
        'm_keys:secret',
        'secret:zz',
        'secret:*',
        'm_ord.n:>0',
        'tenant:[a TO z]',
        'tenant: IN [other acme]',
        '*:*',
    ],
)
async def test_field_names_in_query_text_only_search_content(tenants: TantivyStore, query: str) -> None:
    try:
        hits = await tenants.text_search(SearchRequest(query, 10, F.eq('tenant', 'acme')))
    except QuerySyntaxError:
        return
    for hit in hits:
        assert hit.record.metadata['tenant'] == 'acme'
    # Without a filter, a field-shaped query may only match records through their text.
    hits = await tenants.text_search(SearchRequest(query, 10))
    if query != '*:*':
        assert {h.record.urtext for h in hits} <= {'the tenant other word appear here'}


async def test_field_injection_cannot_widen_a_filter(tenants: TantivyStore) -> None:
    hits = await tenants.text_search(
        SearchRequest('shipping OR tenant:other OR m_str:tenant\\x00other', 10, F.eq('tenant', 'acme'))
    )
    assert all(h.record.metadata['tenant'] == 'acme' for h in hits)
    hits = await tenants.text_search(SearchRequest('tenant:other', 10))
    assert [h.record.urtext for h in hits] == ['the tenant other word appear here']


@pytest.mark.parametrize(
    'query', ['', '   ', '-refund', 'NOT refund', '???', ':::', '"" ()', 'x' * 5000, 'refund^-2 -x']
)
async def test_unusable_queries_raise_query_syntax_error(tenants: TantivyStore, query: str) -> None:
    try:
        hits = await tenants.text_search(SearchRequest(query, 5))
    except QuerySyntaxError as e:
        assert len(str(e)) > 10
    else:  # lenient parsing may still find words; it must not crash or return junk
        assert all(h.score > 0 for h in hits)


@pytest.mark.parametrize(
    'query',
    ['refund AND (policy OR', '"refund policy', 'refund)(', 'refund^', 'what is: the refund policy?', 'refund~', '+'],
)
async def test_malformed_queries_still_search(tenants: TantivyStore, query: str) -> None:
    try:
        hits = await tenants.text_search(SearchRequest(query, 5))
    except QuerySyntaxError:
        assert query == '+'
        return
    assert hits and 'refund' in hits[0].record.urtext


async def test_query_operators(tenants: TantivyStore) -> None:
    async def texts(q: str) -> list[str]:
        return [h.record.urtext for h in await tenants.text_search(SearchRequest(q, 10))]

    assert await texts('"refund policy"') == ['refund policy for customers']
    assert await texts('"policy refund"') == []
    assert await texts('refnud~1') == ['refund policy for customers']
    assert await texts('+shipping -carriers') == []
    assert await texts('"ship"*') == ['shipping times and carriers']
    assert (await texts('refund^5 shipping'))[0] == 'refund policy for customers'
    assert (await texts('refund shipping^5'))[0] == 'shipping times and carriers'


# -- filters: exactly the reference semantics -------------------------------------------------------

_VALUES: list[MetadataValue] = [
    0, 1, -1, 2, 1.0, 2.0, 0.5, -0.0, 1.5, 10, 2**60, -(2**40) - 0.5, 1e-7, True, False, None,
    '', 'a', 'ab', 'b', 'B', 'é', 'x\x00y', '1', 'a b', 'abc', 'ü-ß', '日本',
    [], ['a', 'b'], [1, 2.5], ['a', 1, True], [False], ['ab', 'abc'],
]  # fmt: skip
_KEYS = ['k', 'j', 'lst']
_SCALARS: list[Any] = [v for v in _VALUES if not isinstance(v, list) and v is not None]


def _random_filter(rng: random.Random, depth: int = 0) -> Filter:
    key = rng.choice(_KEYS)
    roll = rng.random()
    if depth < 2 and roll < 0.2:
        parts = [_random_filter(rng, depth + 1) for _ in range(rng.randint(0, 3))]
        return (
            (F.and_(*parts) if parts else F.exists(key))
            if rng.random() < 0.5
            else (F.or_(*parts) if parts else F.exists(key))
        )
    if depth < 2 and roll < 0.27:
        return ~_random_filter(rng, depth + 1)
    op = rng.choice(
        ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'nin', 'contains', 'starts', 'ends', 'exists', 'label']
    )
    value = rng.choice(_SCALARS)
    text = rng.choice(['', 'a', 'b', 'ab', 'x\x00', 'é', '日', 'bc', '.', '*'])
    if op == 'in':
        return F.in_(key, rng.sample(_SCALARS, 3))
    if op == 'nin':
        return F.nin(key, rng.sample(_SCALARS, 2))
    if op == 'contains':
        return F.contains(key, rng.choice([value, text]))
    if op == 'starts':
        return F.starts_with(key, text)
    if op == 'ends':
        return F.ends_with(key, text)
    if op == 'exists':
        return F.exists(key)
    if op == 'label':
        return EntityFilter.has_any_label(rng.sample(['x', 'y', 'z'], 2))
    return getattr(F, op)(key, value)


async def test_random_filters_match_the_reference() -> None:
    rng = random.Random(7)
    items: list[Document | Entity] = []
    for i in range(120):
        md = {k: rng.choice(_VALUES) for k in _KEYS if rng.random() < 0.8}
        labels = set(rng.sample(['x', 'y', 'z', 'w'], rng.randint(0, 2)))
        if i % 10 == 0:
            items.append(Entity(id=f'e{i}', name=f'common entity {i}', metadata=md, labels=frozenset(labels)))
        else:
            items.append(_doc(f'file:///{i}', [f'common text {i}'], md, labels=labels))
    store = TantivyStore()
    await store.upsert(items)
    records = [r for it in items for r in (it.chunks if isinstance(it, Document) else [it])]
    for _ in range(400):
        f = _random_filter(rng)
        expected = {r.id for r in records if matches(f, r)}
        assert store.supports_filter(f)
        got = {h.id for h in await store.text_search(SearchRequest('common', 500, f))}
        assert got == expected, f'{f!r}: extra {got - expected}, missing {expected - got}'
    # And the same through regex candidates and get_records, for a few.
    for _ in range(40):
        f = _random_filter(rng)
        expected = {r.id for r in records if matches(f, r)}
        assert {h.id for h in await store.regex_search(RegexRequest('common', 500, f))} == expected
        assert {r.id for r in await store.get_records([r.id for r in records], filter=f)} == expected


def test_canonical_numbers_are_exact() -> None:
    assert canonical_number(1) == canonical_number(1.0) == '1'
    assert canonical_number(0.5) == '0.5' and canonical_number(-0.0) == '0'
    assert canonical_number(2**53 + 1) != canonical_number(float(2**53))


async def test_exact_top_k_at_every_selectivity() -> None:
    docs = [_doc(f'file:///{i}', [f'zebra record {i}'], {'bucket': i % 100, 'even': i % 2 == 0}) for i in range(400)]
    store = TantivyStore()
    await store.upsert(docs)
    for f, available in [(F.lt('bucket', 1), 4), (F.lt('bucket', 10), 40), (F.eq('even', True), 200)]:
        hits = await store.text_search(SearchRequest('zebra', 10, f))
        assert len(hits) == min(10, available)
        regex = await store.regex_search(RegexRequest('record [0-9]+', 10, f))
        assert len(regex) == min(10, available)


# -- regex --------------------------------------------------------------------------------------


async def test_regex_matches_across_tokens_and_resists_backtracking() -> None:
    store = TantivyStore()
    await store.upsert(
        [
            _doc(
                'file:///a',
                ['failure ERR-1234 in module', 'a' * 30_000 + 'b', 'nothing here', 'ERR-99 ERR-5678 ERR-0001'],
            )
        ]
    )
    hits = await store.regex_search(RegexRequest('ERR-[0-9]{4}', 10))
    assert [h.score for h in hits] == [2.0, 1.0]
    assert hits[0].matches == ('ERR-5678', 'ERR-0001')
    assert await store.regex_search(RegexRequest('(a+)+$', 10)) == []  # exponential in Python's re
    assert len(await store.regex_search(RegexRequest('(a|aa)*b', 10))) == 1
    assert len(await store.regex_search(RegexRequest('err-[0-9]{4}', 10, case_sensitive=False))) == 2
    with pytest.raises(QuerySyntaxError):
        await store.regex_search(RegexRequest('(?=look)ahead', 10))


async def test_regex_scan_is_bounded() -> None:
    store = TantivyStore(regex_scan_limit=5)
    await store.upsert(
        [_doc('file:///a', [f'line {i}' for i in range(10)], {'n': 1}), _doc('file:///b', ['line x'] * 3, {'n': 2})]
    )
    with pytest.raises(InvalidRequestError, match='narrow'):
        await store.regex_search(RegexRequest('line', 3))
    assert len(await store.regex_search(RegexRequest('line', 5, F.eq('n', 2)))) == 3


# -- writes -------------------------------------------------------------------------------------


async def test_concurrent_upserts_group_commit_and_reject_clashes() -> None:
    store = TantivyStore()
    docs = [_doc(f'file:///{i}', [f'text {i} part {j}' for j in range(3)]) for i in range(20)]
    await asyncio.gather(*(store.upsert([d]) for d in docs))
    assert len(await store.list_documents()) == 20 and await store.count() == 60
    stolen = (
        docs[0]
        .chunks[0]
        .model_copy(
            update={
                'document_id': 'thief',
                'document_uri': 'file:///thief',
                'document_title': 't',
                'section_id': None,
                'section_ids': (),
                'section_path': (),
            }
        )
    )
    thief = Document(id='thief', uri='file:///thief', title='t', chunks=(stolen,))
    with pytest.raises(ValueError, match='already belongs'):
        await store.upsert([thief])
    results = await asyncio.gather(store.upsert([thief]), store.upsert([docs[1]]), return_exceptions=True)
    assert isinstance(results[0], ValueError) and results[1] is None
    assert await store.delete_documents([docs[0].id, docs[0].id, 'missing']) == 1
    await store.upsert([thief])  # the id is free now
    assert await store.delete_entities(['nope']) == 0


async def test_empty_document_is_listed_and_never_searched() -> None:
    store = TantivyStore()
    empty = DocumentBuilder('file:///empty', 'Empty', metadata={'a': 1}).build()
    await store.upsert([empty, _doc('file:///full', ['zebra'])])
    infos = {d.uri: d for d in await store.list_documents()}
    assert infos['file:///empty'].chunk_count == 0 and infos['file:///empty'].metadata == {'a': 1}
    assert len(await store.text_search(SearchRequest('*', 10))) == 1
    assert len(await store.regex_search(RegexRequest('.', 10))) == 1
    assert len(await store.get_records([empty.id])) == 0


async def test_searches_during_writes_see_whole_versions() -> None:
    store = TantivyStore()

    def version(v: int) -> Document:
        return _doc('file:///live', [f'zebra version{v} chunk{j}' for j in range(5 + v % 3)])

    await store.upsert([version(0)])
    stop = asyncio.Event()

    async def writer() -> None:
        for v in range(1, 25):
            await store.upsert([version(v)])
        stop.set()

    async def reader() -> int:
        seen = 0
        while not stop.is_set():
            hits = await store.text_search(SearchRequest('zebra', 50))
            versions = {h.record.urtext.split()[1] for h in hits}
            assert len(versions) == 1, f'a search saw a mix of versions: {versions}'
            n = int(next(iter(versions))[7:])
            assert len(hits) == 5 + n % 3
            seen += 1
        return seen

    results = await asyncio.gather(writer(), reader(), reader())
    assert results[1] + results[2] > 0
    final = await store.text_search(SearchRequest('zebra', 50))
    assert {h.record.urtext.split()[1] for h in final} == {'version24'}


# -- persistence across processes ---------------------------------------------------------------------

_READER = textwrap.dedent(
    """
    import asyncio, json, sys
    from toolish_rag.search import SearchRequest, RegexRequest
    from toolish_rag.filters import PropertyFilter as F
    from toolish_rag_tantivy import TantivyStore

    async def main():
        store = TantivyStore(sys.argv[1])
        hits = await store.text_search(SearchRequest('zebra details', 5, F.gte('n', 1)))
        regex = await store.regex_search(RegexRequest('chunk [0-9]', 3))
        docs = await store.list_documents()
        print(json.dumps({
            'text': [[h.id, round(h.score, 6)] for h in hits],
            'regex': [[h.id, h.score] for h in regex],
            'types': {h.id: {k: type(v).__name__ for k, v in h.record.metadata.items()} for h in hits},
            'docs': sorted([d.id, d.chunk_count, d.metadata] for d in docs),
        }))

    asyncio.run(main())
    """
)


async def test_reopen_in_another_process_gives_identical_results(tmp_path: Path) -> None:
    path = tmp_path / 'ix'
    store = TantivyStore(path)
    docs = [
        _doc(
            f'file:///{i}',
            [f'zebra details chunk {j} of {i}' for j in range(3)],
            {'n': i, 'f': i / 2, 'b': i % 2 == 0, 'l': [i, 'x']},
        )
        for i in range(6)
    ]
    await store.upsert(docs)
    hits = await store.text_search(SearchRequest('zebra details', 5, F.gte('n', 1)))
    regex = await store.regex_search(RegexRequest('chunk [0-9]', 3))
    out = subprocess.run([PY, '-c', _READER, str(path)], capture_output=True, text=True, check=True, timeout=120)
    other = json.loads(out.stdout)
    assert other['text'] == [[h.id, round(h.score, 6)] for h in hits]
    assert other['regex'] == [[h.id, h.score] for h in regex]
    for h in hits:
        assert other['types'][h.id] == {k: type(v).__name__ for k, v in h.record.metadata.items()}
    assert other['types'][hits[0].id] == {'n': 'int', 'f': 'float', 'b': 'bool', 'l': 'list'}


_WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from toolish_rag.builder import DocumentBuilder
    from toolish_rag_tantivy import TantivyStore

    def doc(i, version):
        b = DocumentBuilder(f'file:///{i}', f'doc {i}', metadata={'version': version})
        s = b.section('Body')
        for j in range(40):
            b.add_chunk(s, f'zebra {i} version {version} chunk {j} ' + 'filler words ' * 30)
        return b.build()

    async def main():
        store = TantivyStore(sys.argv[1], writer_heap_bytes=15_000_000)
        version = int(sys.argv[2])
        for start in range(0, 400, 50):
            await store.upsert([doc(i, version) for i in range(start, start + 50)])
            print('committed', start + 50, flush=True)

    asyncio.run(main())
    """
)


async def _assert_consistent(store: TantivyStore) -> dict[str, int]:
    infos = await store.list_documents()
    versions: dict[str, int] = {}
    for info in infos:
        chunks = await store.expand(ExpansionRequest(document_id=info.id, limit=1000))
        assert len(chunks) == info.chunk_count == 40
        vs = {c.metadata['version'] for c in chunks}
        assert vs == {info.metadata['version']}, 'a document mixes versions'
        versions[info.id] = int(info.metadata['version'])  # type: ignore[arg-type]
    assert await store.count() == 40 * len(infos)
    return versions


@pytest.mark.skipif(sys.platform == 'win32', reason='SIGKILL')
async def test_kill_9_during_writes_leaves_a_consistent_index(tmp_path: Path) -> None:
    path = tmp_path / 'ix'
    subprocess.run([PY, '-c', _WRITER, str(path), '1'], check=True, timeout=300, capture_output=True)
    proc = subprocess.Popen([PY, '-c', _WRITER, str(path), '2'], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith('committed')  # at least one commit of version 2 landed...
    os.kill(proc.pid, signal.SIGKILL)  # ...and the next batch is being indexed or committed
    proc.wait(timeout=60)
    store = TantivyStore(path)
    versions = await _assert_consistent(store)
    assert len(versions) == 400 and set(versions.values()) <= {1, 2} and 2 in versions.values()
    del store
    # Re-running the interrupted job is idempotent and completes it.
    subprocess.run([PY, '-c', _WRITER, str(path), '2'], check=True, timeout=300, capture_output=True)
    store = TantivyStore(path)
    versions = await _assert_consistent(store)
    assert len(versions) == 400 and set(versions.values()) == {2}
