"""Partition values a `PartitionedTantivyStore` refuses: the item fails alone, and the store is unchanged.

The attack: front matter decides a file's partition, so one file with ``tenant: [acme, globex]``,
a 200-character tenant, or a tenant edited since the last run made the store raise a plain
``ValueError``, which stops an ingest run (only `UnsupportedValueError` is set aside per file).
Now each such item is refused with `UnsupportedValueError` naming it and the partition key: the
file is reported failed with the reason and the rest of its batch is stored.

And all or nothing: an upsert spanning partitions commits one partition at a time, so every
refusal (a record id clash in a later partition included) must come before the first commit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolish_rag import Retriever
from toolish_rag.builder import DocumentBuilder
from toolish_rag.content import Chunk, Document, Entity, MetadataValue
from toolish_rag.errors import UnsupportedValueError
from toolish_rag.filters import PropertyFilter as F
from toolish_rag.ingest import IngestReport, ingest
from toolish_rag_tantivy import PartitionedTantivyStore
from toolish_rag_tantivy._partitions import PartitionId

WORD = 'ordinary'
"""In every file's text: a search for it finds every stored chunk."""

GOOD = {'acme1': 'tenant: acme', 'acme2': 'tenant: acme', 'globex': 'tenant: globex', 'seven': 'tenant: 7'}
GOOD_PARTITIONS = [PartitionId.of(v, key='tenant') for v in (7, 'acme', 'globex')]

BAD = {
    'listed': ('tenant: [acme, globex]', "metadata 'tenant' of document", 'not a list (of 2)'),
    'long': (
        'tenant: ' + 'x' * 200,
        "metadata 'tenant' of document",
        'at most 120 bytes (it names a directory), got 200',
    ),
}


def _markdown(folder: Path, name: str, front_matter: str) -> None:
    text = f'---\n{front_matter}\n---\n# {name}\n\nAn {WORD} paragraph about {name}.\n'
    (folder / f'{name}.md').write_text(text, encoding='utf-8')


def _folder(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(exist_ok=True)
    for name, front_matter in files.items():
        _markdown(path, name, front_matter)
    return path


def _names(uris: list[str]) -> set[str]:
    return {Path(u).stem for u in uris}


async def _searchable(store: PartitionedTantivyStore, tenant: str | int | None = None) -> set[str]:
    """The files whose chunks a search for `WORD` finds (in ``tenant`` only, if given)."""
    retriever = Retriever(store, F.eq('tenant', tenant) if tenant is not None else None)
    hits = await retriever.text_search(WORD, 100)
    return {Path(h.record.document_uri).stem for h in hits if isinstance(h.record, Chunk)}


def _failed(report: IngestReport) -> dict[str, str]:
    return {Path(issue.path).stem: issue.reason for issue in report.failed}


async def _assert_good_stored(store: PartitionedTantivyStore) -> None:
    assert {Path(i.uri).stem for i in await store.list_documents()} == set(GOOD)
    assert await _searchable(store) == set(GOOD)
    assert await _searchable(store, 'acme') == {'acme1', 'acme2'}
    assert await _searchable(store, 7) == {'seven'}
    assert store.partitions == GOOD_PARTITIONS  # no partition for a refused value


# -- through ingestion ---------------------------------------------------------------------------


@pytest.mark.parametrize('bad', sorted(BAD))
async def test_a_file_with_a_partition_value_no_partition_holds_fails_alone(bad: str, tmp_path: Path) -> None:
    front_matter, *reason = BAD[bad]
    folder = _folder(tmp_path / 'docs', {**GOOD, bad: front_matter})
    store = PartitionedTantivyStore(tmp_path / 'ix', partition_key='tenant')

    report = await ingest(store, folder, progress=False, executor='thread')

    assert set(_failed(report)) == {bad}, report.failed
    assert all(part in _failed(report)[bad] for part in ['cannot be stored: ', *reason]), report.failed
    assert _names(report.added) == set(GOOD)
    await _assert_good_stored(store)


async def test_a_document_whose_chunk_has_another_partition_value_fails_alone(tmp_path: Path) -> None:
    """Files give every chunk the document's metadata; a ready-made `Document` can disagree."""
    b = DocumentBuilder('mem://odd', 'Odd', metadata={'tenant': 'acme'})
    b.add_chunk(b.section('S'), f'an {WORD} chunk', metadata={'tenant': 'globex'})
    folder = _folder(tmp_path / 'docs', GOOD)
    store = PartitionedTantivyStore(tmp_path / 'ix', partition_key='tenant')

    report = await ingest(store, [folder, b.build()], progress=False, executor='thread')

    assert [i.path for i in report.failed] == ['mem://odd']
    reason = report.failed[0].reason
    assert "has tenant='globex' but its document" in reason and 'every chunk of a document' in reason
    assert _names(report.added) == set(GOOD)
    await _assert_good_stored(store)


async def test_a_file_whose_partition_value_changed_fails_alone_and_keeps_its_stored_version(tmp_path: Path) -> None:
    folder = _folder(tmp_path / 'docs', GOOD)
    store = PartitionedTantivyStore(tmp_path / 'ix', partition_key='tenant')
    first = await ingest(store, folder, progress=False, executor='thread')
    assert not first.failed and _names(first.added) == set(GOOD)

    _markdown(folder, 'acme1', 'tenant: globex')  # moves it, by an edit of its front matter
    _markdown(folder, 'acme2', 'tenant: acme\nedited: true')  # an ordinary update, same batch
    _markdown(folder, 'late', 'tenant: acme')
    again = await ingest(store, folder, progress=False, executor='thread')

    assert set(_failed(again)) == {'acme1'}, again.failed
    reason = _failed(again)['acme1']
    assert "is stored under tenant='acme', not tenant='globex'" in reason and 'delete the document' in reason
    assert _names(again.updated) == {'acme2'} and _names(again.added) == {'late'}
    assert await _searchable(store, 'acme') == {'acme1', 'acme2', 'late'}  # acme1: its stored version
    assert await _searchable(store, 'globex') == {'globex'}
    stored = {Path(i.uri).stem: i.metadata for i in await store.list_documents()}
    assert stored['acme1']['tenant'] == 'acme' and stored['acme2'].get('edited') is True


# -- directly: a refused upsert leaves the store unchanged -----------------------------------------


def _doc(uri: str, tenant: MetadataValue, *, chunk_tenant: MetadataValue = None) -> Document:
    b = DocumentBuilder(uri, uri, metadata={'tenant': tenant} if tenant is not None else {})
    b.add_chunk(b.section('S'), f'{WORD} text of {uri}', metadata={'tenant': chunk_tenant} if chunk_tenant else None)
    return b.build()


ACME = _doc('file:///acme.md', 'acme')
GLOBEX = _doc('file:///globex.md', 'globex')
ENTITY = Entity(id='e1', name='E', description=f'{WORD} entity', metadata={'tenant': 'acme'})
FRESH = [_doc('file:///aaa.md', 'aaa'), _doc('file:///acme-new.md', 'acme')]
"""Good items sent with each refused one: partition 'aaa' (new) and 'acme' sort before 'globex',
so an upsert committing partition by partition would write them before reaching a refusal there."""


def _refused() -> dict[str, tuple[list[Document | Entity], type[Exception], str, dict[str, str | None]]]:
    """Refused batches: (items, error, message part, the error's document_id / entity_id / key)."""
    globex_chunk = GLOBEX.chunks[0].id
    new_globex = _doc('file:///globex-new.md', 'globex')
    return {
        'list value': ([_doc('file:///l.md', ['acme', 'globex'])], UnsupportedValueError, 'not a list', {}),
        'long value': ([_doc('file:///x.md', 'x' * 121)], UnsupportedValueError, 'at most 120 bytes', {}),
        'chunk value': (
            [_doc('file:///c.md', 'globex', chunk_tenant='zeta')],
            UnsupportedValueError,
            'every chunk of a document',
            {},
        ),
        'document moves': ([_doc(ACME.uri, 'globex')], UnsupportedValueError, "stored under tenant='acme'", {}),
        'entity moves': (
            [ENTITY.model_copy(update={'metadata': {'tenant': 'globex'}})],
            UnsupportedValueError,
            "entity 'e1' is stored under tenant='acme'",
            {'entity_id': 'e1', 'document_id': None, 'key': 'tenant'},
        ),
        'id held in its own partition': (
            [Entity(id=globex_chunk, name='G', description='x', metadata={'tenant': 'globex'})],
            ValueError,
            f'record id {globex_chunk!r} already belongs to another document or entity',
            {},
        ),
        'id held in another partition': (
            [Entity(id=globex_chunk, name='G', description='x', metadata={'tenant': 'acme'})],
            ValueError,
            f'record id {globex_chunk!r} already belongs to another document or entity',
            {},
        ),
        'id written twice in one partition': (
            [new_globex, Entity(id=new_globex.chunks[0].id, name='N', description='x', metadata={'tenant': 'globex'})],
            ValueError,
            'is used by two items of one upsert',
            {},
        ),
    }


async def _state(store: PartitionedTantivyStore, path: Path | None) -> Any:
    hits = await Retriever(store).text_search(WORD, 100)
    on_disk = sorted(p.name for p in (path / 'partitions').iterdir()) if path is not None else None
    return (await store.list_documents(), await store.count(), store.partitions, [h.id for h in hits], on_disk)


@pytest.mark.parametrize('on_disk', [True, False], ids=['disk', 'ram'])
@pytest.mark.parametrize('case', list(_refused()))
async def test_a_refused_upsert_leaves_the_store_unchanged(case: str, on_disk: bool, tmp_path: Path) -> None:
    items, error, message, attributes = _refused()[case]
    path = tmp_path / 'ix' if on_disk else None
    store = PartitionedTantivyStore(path, partition_key='tenant')
    await store.upsert([ACME, GLOBEX, ENTITY])
    before = await _state(store, path)

    with pytest.raises(error, match=message) as raised:
        await store.upsert([*FRESH, *items])

    if error is UnsupportedValueError:
        refused = raised.value
        assert isinstance(refused, UnsupportedValueError)
        expected = attributes or {'document_id': items[0].id, 'entity_id': None, 'key': 'tenant'}
        assert {k: getattr(refused, k) for k in expected} == expected
    else:  # a clash is not an item ingestion could set aside: it stays a plain ValueError
        assert not isinstance(raised.value, UnsupportedValueError)
    assert await _state(store, path) == before
    # The store still takes the good items afterwards (nothing half-written blocks them).
    await store.upsert(FRESH)
    assert {Path(u.uri).stem for u in await store.list_documents()} == {'acme', 'globex', 'aaa', 'acme-new'}
