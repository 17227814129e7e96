"""Values the Tantivy store cannot hold: refused by upsert (typed, atomic), never compiled into a query.

It holds integers in the signed 64-bit range (``i64`` fields), strings UTF-8 can encode and
metadata strings short enough for one term. A value beyond that is refused whole, never
clamped or stringified: `UnsupportedValueError` names the document (or entity) and the key
before anything is written. A filter holding such a value is one `supports_filter` declines,
so the core evaluates it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolish_rag.builder import DocumentBuilder
from toolish_rag.content import Document, Entity, MetadataValue
from toolish_rag.errors import UnsupportedValueError
from toolish_rag.filters import EntityFilter, Filter, PropertyFilter as F, matches
from toolish_rag.search import SearchRequest
from toolish_rag_tantivy import TantivyStore
from toolish_rag_tantivy._schema import MAX_TERM_BYTES

HUGE = 10**400


def _doc(
    uri: str, metadata: dict[str, MetadataValue], *, title: str = 'a title', text: str = 'common words'
) -> Document:
    b = DocumentBuilder(uri, title, metadata=metadata)
    b.add_chunk(b.section('Body'), text)
    return b.build()


SURROGATE_REASON = 'a string with a lone UTF-16 surrogate (U+D800), which UTF-8 cannot encode'

REFUSED: list[tuple[str, Any, str]] = [
    ('huge', HUGE, 'an integer of 401 digits is outside the signed 64-bit range this store holds'),
    ('huge negative', -HUGE, 'a negative integer of 401 digits is outside the signed 64-bit range'),
    ('one past int64', 2**63, 'an integer of 19 digits is outside the signed 64-bit range'),
    ('one below int64', -(2**63) - 1, 'a negative integer of 19 digits'),
    ('in a list', [1, HUGE], 'an integer of 401 digits'),
    ('beyond str()', 10**5000, 'an integer of 16610 bits'),
    ('too long a term', 'x' * MAX_TERM_BYTES, f'a string too long to index ({MAX_TERM_BYTES + 7} bytes with its key'),
]


@pytest.mark.parametrize(('value', 'reason'), [(v, r) for _, v, r in REFUSED], ids=[n for n, _, _ in REFUSED])
async def test_a_value_beyond_the_store_is_refused_by_name(value: Any, reason: str) -> None:
    store = TantivyStore()
    bad = _doc('file:///bad', {'serial': value})
    with pytest.raises(UnsupportedValueError) as caught:
        await store.upsert([_doc('file:///good', {'serial': 1}), bad])
    error = caught.value
    assert (error.document_id, error.entity_id, error.key) == (bad.id, None, 'serial')
    assert str(error).startswith(f"metadata 'serial' of document {bad.id!r}: ") and reason in str(error)
    assert await store.count() == 0 and await store.list_documents() == []


async def test_titles_chunks_entities_and_sequence_numbers_are_checked() -> None:
    store = TantivyStore()
    # The content model refuses lone surrogates (a validated Document cannot hold one); the store's
    # own check is defence in depth for models built without validation (model_copy).
    titled = _doc('file:///t', {}).model_copy(update={'title': 'bad \ud800 title'})
    b = DocumentBuilder('file:///c', 'a title', metadata={'ok': 1})
    b.add_chunk(b.section('Body'), 'common words', metadata={'serial': HUGE})
    chunked = b.build()
    good = _doc('file:///g', {})
    sequenced = good.model_copy(update={'chunks': (good.chunks[0].model_copy(update={'sequence_number': 2**63}),)})
    entity = Entity(id='e1', name='Widget', metadata={'code': -HUGE})
    cases: list[tuple[Document | Entity, str | None, str | None, str]] = [
        (titled, titled.id, None, 'title'),
        (chunked, chunked.id, None, 'serial'),
        (sequenced, sequenced.id, None, 'sequence_number'),
        (entity, None, 'e1', 'code'),
    ]
    messages = []
    for item, document_id, entity_id, key in cases:
        with pytest.raises(UnsupportedValueError) as caught:
            await store.upsert([item])
        assert (caught.value.document_id, caught.value.entity_id, caught.value.key) == (document_id, entity_id, key)
        messages.append(str(caught.value))
    assert messages[0] == f'title of document {titled.id!r}: ' + SURROGATE_REASON
    assert messages[1].startswith(f"metadata 'serial' of chunk {chunked.chunks[0].id!r} of document {chunked.id!r}: ")
    assert messages[2].startswith(f'sequence_number of chunk {sequenced.chunks[0].id!r} of document {good.id!r}: ')
    assert messages[3] == "metadata 'code' of entity 'e1': " + REFUSED[1][2] + ' this store holds'
    assert await store.count() == 0


async def test_a_refused_upsert_changes_nothing(tmp_path: Path) -> None:
    store = TantivyStore(tmp_path / 'ix')
    first = _doc('file:///a', {'serial': 1}, text='first version')
    await store.upsert([first, Entity(id='e1', name='Widget', metadata={'n': 1})])
    hits = await store.text_search(SearchRequest('version widget', 10))
    before = (await store.list_documents(), await store.count(), [h.record for h in hits])
    replacement = _doc('file:///a', {'serial': 2}, text='second version')
    with pytest.raises(UnsupportedValueError):
        await store.upsert([replacement, _doc('file:///b', {'serial': HUGE}), Entity(id='e1', name='Gadget')])
    hits = await store.text_search(SearchRequest('version widget', 10))
    assert (await store.list_documents(), await store.count(), [h.record for h in hits]) == before
    store.close()
    reopened = TantivyStore(tmp_path / 'ix')
    assert await reopened.list_documents() == before[0]
    await reopened.upsert([replacement])  # and the store goes on
    assert [h.record.urtext for h in await reopened.text_search(SearchRequest('version', 10))] == ['second version']


async def test_the_64_bit_bounds_are_held_and_filtered_exactly() -> None:
    store = TantivyStore()
    # Integers only: a key holding floats too is ranged with float precision (tantivy coerces the
    # fast-field column to f64), a separate limit.
    docs = [_doc(f'file:///{i}', {'serial': v}) for i, v in enumerate([-(2**63), -1, 0, 2**63 - 1])]
    await store.upsert(docs)
    stored = {i.id: i.metadata['serial'] for i in await store.list_documents()}
    assert sorted(stored.values()) == [-(2**63), -1, 0, 2**63 - 1]
    for f in [
        F.eq('serial', 2**63 - 1),
        F.gt('serial', 2**63 - 2),
        F.lt('serial', -(2**63) + 1),
        F.gte('serial', 2**62),
        F.in_('serial', [-(2**63), 0]),
    ]:
        assert store.supports_filter(f), f
        expected = {c.id for d in docs for c in d.chunks if matches(f, c)}
        assert expected
        assert {h.id for h in await store.text_search(SearchRequest('common', 10, f))} == expected, f


DECLINED: list[Filter] = [
    F.eq('serial', HUGE),
    F.gt('serial', HUGE),
    F.lte('serial', -HUGE),
    F.gte('serial', 2**63),
    F.in_('serial', [1, HUGE]),
    F.nin('serial', [2**63]),
    F.contains('serial', -(2**63) - 1),
    F.eq('serial', 1) & ~F.gt('serial', 2**64),
    F.eq('serial', 1) | F.eq('name', 'x\ud800'),
    F.starts_with('name', '\udc80'),
    EntityFilter.has_any_label(['\ud800']),
]


@pytest.mark.parametrize('f', DECLINED, ids=range(len(DECLINED)))
async def test_a_filter_with_a_value_beyond_the_store_is_left_to_the_core(f: Filter) -> None:
    store = TantivyStore()
    await store.upsert([_doc('file:///a', {'serial': 1, 'name': 'x'})])
    assert not store.supports_filter(f)
    with pytest.raises(ValueError, match='a value this store cannot hold'):
        await store.text_search(SearchRequest('common', 5, f))  # a direct caller is told why


def test_filters_within_the_bounds_are_still_pushed_down() -> None:
    store = TantivyStore()
    long_value = 'x' * (MAX_TERM_BYTES + 1)  # no term holds it, and none needs to: it matches nothing
    for f in [
        F.eq('serial', 2**63 - 1),
        F.gt('serial', -(2**63)),
        F.in_('serial', [1, 'x', True]),
        F.eq('s', long_value),
    ]:
        assert store.supports_filter(f), f
