"""Graph builders on a real `InMemoryStore`: what each writes, and that a second run writes nothing.

The corpora are hand-built so every expected edge can be read off the test: ``(source, TYPE, target)``
triples, compared as sets. Idempotency is checked twice over: the report says ``writes == 0`` and
the store's relations and ledger marks are equal before and after.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from pydantic_ai.embeddings import Embedder, EmbeddingModel, EmbeddingResult, EmbeddingSettings
from pydantic_ai.embeddings.result import EmbedInputType

from toolish_rag import DocumentBuilder, Entity, EntityFilter, Filter, PropertyFilter as F, ToolishRag, matches
from toolish_rag._uris import local_path
from toolish_rag.content import Chunk, Document, Relation
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.graph.model import NodeRequest
from toolish_rag.graph.walk import WalkRequest, walk
from toolish_rag.graph_builders import BuildReport, ExactNameLinker, StructureBuilder, VectorLinker, build_graph
from toolish_rag.graph_builders.base import (
    CACHE_KEY_PREFIX,
    DocumentGraph,
    DocumentInput,
    GraphBuildStore,
    build_documents,
    chunks_digest,
    fingerprint,
    iter_documents,
    read_chunks,
)
from toolish_rag.stores import InMemoryStore

pytestmark = pytest.mark.asyncio

Triple = tuple[str, str, str]


def _store() -> InMemoryStore:
    return InMemoryStore(HashingEmbeddingModel(64))


def _triples(relations: Sequence[Relation], type: str | None = None) -> set[Triple]:
    return {(r.source, r.type, r.target) for r in relations if type is None or r.type == type}


async def _state(store: InMemoryStore, builder: str) -> tuple[list[str], dict[str, str]]:
    relations = await store.list_relations(origin=builder)
    return sorted(r.model_dump_json() for r in relations), await store.graph_marks(builder)


async def _assert_idempotent(store: InMemoryStore, builder: ExactNameLinker | StructureBuilder | VectorLinker) -> None:
    before = await _state(store, builder.name)
    report = await builder.build(store)
    assert (report.writes, report.documents_built, report.failures) == (0, 0, ())
    assert await _state(store, builder.name) == before


def _doc(doc_id: str, title: str, texts: Sequence[str], *, uri: str | None = None, **metadata: str) -> Document:
    builder = DocumentBuilder(uri or f'file:///docs/{doc_id}.md', title, id=doc_id, metadata=metadata)
    for text in texts:
        builder.add_chunk(None, text)
    return builder.build()


# -- the driver ------------------------------------------------------------------------------


async def test_read_chunks_pages_through_a_long_document_in_order() -> None:
    store = _store()
    await store.upsert([_doc('long', 'Long', [f'part {i}' for i in range(1203)])])
    chunks = await read_chunks(store, 'long')
    assert [c.sequence_number for c in chunks] == list(range(1203))


class _Failing:
    """A document-wise builder (through the shared driver) whose build of one document raises.

    ``in_mark``: the document's mark raises (an error reading what the mark covers), not its graph.
    """

    name = 'failing'

    def __init__(self, bad: str, *, in_mark: bool = False) -> None:
        self.bad = bad
        self.in_mark = in_mark

    async def build(self, store: GraphBuildStore) -> BuildReport:
        async def graph_of(document: DocumentInput) -> DocumentGraph:
            if document.id == self.bad and not self.in_mark:
                raise RuntimeError('cannot read this one')
            chunk = document.chunks[0]
            return DocumentGraph(
                (
                    Relation(
                        source=chunk.id,
                        source_kind='chunk',
                        target=document.id,
                        target_kind='document',
                        type='PART_OF',
                        document_id=document.id,
                        origin=self.name,
                    ),
                )
            )

        def mark_of(document: DocumentInput) -> str:
            if document.id == self.bad and self.in_mark:
                raise RecursionError('maximum recursion depth exceeded\nwhile reading it')
            return fingerprint(chunks_digest(document.chunks))

        return await build_documents(store, self.name, iter_documents(store), mark_of, graph_of)


async def test_a_document_whose_mark_fails_is_reported_in_one_line_and_the_others_are_built() -> None:
    """The driver once guarded ``graph_of`` only, so an error computing a mark stopped the build."""
    store = _store()
    await store.upsert([_doc('a', 'A', ['one']), _doc('b', 'B', ['two']), _doc('c', 'C', ['three'])])
    report = (await build_graph(store, _Failing('b', in_mark=True)))[0]
    assert report.failures == ('b: RecursionError: maximum recursion depth exceeded while reading it',)
    assert (report.documents_seen, report.documents_built) == (3, 2)
    assert set(await store.graph_marks('failing')) == {'a', 'c'}


async def test_a_failing_document_is_reported_and_the_others_are_built() -> None:
    store = _store()
    await store.upsert([_doc('a', 'A', ['one']), _doc('b', 'B', ['two']), _doc('c', 'C', ['three'])])
    report = (await build_graph(store, _Failing('b')))[0]
    assert report.failures == ('b: RuntimeError: cannot read this one',)
    assert (report.documents_seen, report.documents_built, report.relations_written) == (3, 2, 2)
    assert {r.document_id for r in await store.list_relations(origin='failing')} == {'a', 'c'}
    assert set(await store.graph_marks('failing')) == {'a', 'c'}
    # Retried next run (no mark), still failing; the built ones are skipped.
    again = await _Failing('b').build(store)
    assert (again.documents_built, again.writes, again.failures) == (0, 0, report.failures)


async def test_marks_of_documents_no_longer_stored_are_cleared_and_cache_keys_kept() -> None:
    store = _store()
    await store.upsert([_doc('a', 'A', ['one'])])
    await store.set_graph_marks('structure', {'ghost': 'x', f'{CACHE_KEY_PREFIX}answer': 'y'})
    await StructureBuilder().build(store)
    assert set(await store.graph_marks('structure')) == {'a', f'{CACHE_KEY_PREFIX}answer'}


# -- structure -------------------------------------------------------------------------------


def _handbook() -> list[Document]:
    guide = DocumentBuilder('file:///site/docs/guide.md', 'Guide', id='guide', metadata={'path': 'docs/guide.md'})
    intro = guide.section('Intro')
    setup = guide.section('Setup', parent=intro)
    guide.add_chunk(None, 'Preface without a heading.')
    guide.add_chunk(intro, 'Read [the API](../api/auth.md#tokens) and [setup](setup) first.')
    guide.add_chunk(setup, 'See ../api/auth.md, e.g. twice; also ./guide.md and https://example.org/x.md.')
    guide.add_chunk(setup, '[faq]: faq.md "Questions"')
    auth = _doc('auth', 'Auth', ['Tokens expire.'], uri='file:///site/api/auth.md')
    setup_doc = _doc('setup', 'Setup', ['Install it.'], uri='file:///site/docs/setup.md')
    faq = _doc('faq', 'FAQ', ['Ask.'], uri='file:///site/elsewhere/faq.md', path='docs/faq.md')
    return [guide.build(), auth, setup_doc, faq]


async def test_structure_part_of_the_section_tree_and_links_between_stored_documents() -> None:
    store = _store()
    await store.upsert(_handbook())
    report = await StructureBuilder().build(store)
    relations = await store.list_relations(origin='structure')
    assert _triples(relations, 'PART_OF') == {
        ('guide-0', 'PART_OF', 'guide'),
        ('guide-1', 'PART_OF', 'guide-s0'),
        ('guide-2', 'PART_OF', 'guide-s1'),
        ('guide-3', 'PART_OF', 'guide-s1'),
        ('guide-s0', 'PART_OF', 'guide'),
        ('guide-s1', 'PART_OF', 'guide-s0'),
        ('auth-0', 'PART_OF', 'auth'),
        ('setup-0', 'PART_OF', 'setup'),
        ('faq-0', 'PART_OF', 'faq'),
    }
    # Markdown link with a fragment; suffixless link; a bare relative path resolved against the uri;
    # a reference definition resolved against the `path` metadata; no self link, no unknown target.
    assert _triples(relations, 'LINKS_TO') == {
        ('guide-1', 'LINKS_TO', 'auth'),
        ('guide-1', 'LINKS_TO', 'setup'),
        ('guide-2', 'LINKS_TO', 'auth'),
        ('guide-3', 'LINKS_TO', 'faq'),
    }
    by_triple = {(r.source, r.type, r.target): r for r in relations}
    assert by_triple[('guide-s1', 'PART_OF', 'guide-s0')].provenance is None
    assert by_triple[('guide-s1', 'PART_OF', 'guide-s0')].document_id == 'guide'
    assert by_triple[('guide-2', 'LINKS_TO', 'auth')].provenance == 'guide-2'
    assert {(r.document_id, r.origin) for r in relations if r.source.startswith('guide')} == {('guide', 'structure')}
    assert (report.documents_seen, report.documents_built, report.relations_written) == (4, 4, 13)
    await _assert_idempotent(store, StructureBuilder())


async def test_structure_reads_the_links_of_a_local_html_file(tmp_path: Path) -> None:
    page = tmp_path / 'index.html'
    page.write_text(
        '<html><body><p>Welcome.</p><p>Read <a href="notes/setup.html">the   setup notes</a>.</p>'
        '<a href="#top">top</a><a href="missing.html">gone</a></body></html>',
        encoding='utf-8',
    )
    index = DocumentBuilder(page.as_uri(), 'Index', id='index', metadata={'source_format': 'html'})
    index.add_chunk(None, 'Welcome.')
    index.add_chunk(None, 'Read the setup\nnotes.')
    notes = _doc('notes', 'Setup notes', ['Steps.'], uri=(tmp_path / 'notes' / 'setup.html').as_uri())
    store = _store()
    await store.upsert([index.build(), notes])
    await StructureBuilder().build(store)
    links = [r for r in await store.list_relations(origin='structure') if r.type == 'LINKS_TO']
    assert [(r.source, r.target, r.provenance) for r in links] == [('index-1', 'notes', 'index-1')]
    # The file's links are part of the mark: a new link in the file rebuilds the page.
    page.write_text('<a href="notes/setup.html">Welcome</a>', encoding='utf-8')
    report = await StructureBuilder().build(store)
    assert report.documents_built == 1
    links = [r for r in await store.list_relations(origin='structure') if r.type == 'LINKS_TO']
    assert [(r.source, r.target) for r in links] == [('index-0', 'notes')]


async def test_a_percent_sign_in_a_file_name_is_read_as_itself(tmp_path: Path) -> None:
    """``a%20b.html`` and ``a b.html`` are two files: each page's uri (``as_uri`` quotes ``%`` as ``%25``)
    names its own file, decoded once. (Decoding twice read ``a b.html``'s links for ``a%20b.html``.)"""
    pages = {'a%20b.html': 'x.html', 'a b.html': 'y.html'}
    docs = [_doc(t, t.upper(), ['Steps.'], uri=(tmp_path / f'{t}.html').as_uri()) for t in ('x', 'y')]
    for i, (name, target) in enumerate(pages.items()):
        page = tmp_path / name
        page.write_text(f'<p>Read <a href="{target}">the guide</a>.</p>', encoding='utf-8')
        assert local_path(page.as_uri()) == page
        b = DocumentBuilder(page.as_uri(), name, id=f'page{i}', metadata={'source_format': 'html'})
        b.add_chunk(None, 'Read the guide.')
        docs.append(b.build())
    store = _store()
    await store.upsert(docs)
    await StructureBuilder().build(store)
    links = {(r.source, r.target) for r in await store.list_relations(origin='structure') if r.type == 'LINKS_TO'}
    assert links == {('page0-0', 'x'), ('page1-0', 'y')}


async def test_a_new_link_target_rebuilds_only_the_linking_document() -> None:
    store = _store()
    docs = _handbook()
    await store.upsert([d for d in docs if d.id != 'auth'])
    await StructureBuilder().build(store)
    assert not any(r.target == 'auth' for r in await store.list_relations(origin='structure'))
    await store.upsert([d for d in docs if d.id == 'auth'])
    report = await StructureBuilder().build(store)
    assert report.documents_built == 2  # auth itself, and the guide that links to it
    assert {('guide-1', 'LINKS_TO', 'auth'), ('guide-2', 'LINKS_TO', 'auth')} <= _triples(
        await store.list_relations(origin='structure')
    )


async def test_structure_links_only_within_a_scope() -> None:
    store = _store()
    await store.upsert(
        [
            _doc('a1', 'A1', ['See [b](b.md).'], uri='file:///a/a1.md', tenant='a'),
            _doc('b', 'B', ['Mine.'], uri='file:///a/b.md', tenant='b'),
        ]
    )
    await StructureBuilder(scope_keys=('tenant',)).build(store)
    relations = await store.list_relations(origin='structure')
    assert not _triples(relations, 'LINKS_TO')
    assert {r.metadata['tenant'] for r in relations if r.document_id == 'a1'} == {'a'}
    await StructureBuilder().build(store)  # without scope keys the link counts (same builder name: rebuilt)
    assert _triples(await store.list_relations(origin='structure'), 'LINKS_TO') == {('a1-0', 'LINKS_TO', 'b')}


# -- exact names -----------------------------------------------------------------------------


def _encyclopedia() -> list[Document | Entity]:
    mercury = _doc('mercury', 'Mercury (planet)', ['Mercury is the smallest planet.'])
    band = _doc('band', 'The Beatles', ['The Beatles played in Hamburg; Mercuryville is a town.'])
    nyc = _doc('nyc', 'New York City', ['A city.'])
    ny = _doc('ny', 'New York', ['A state.'])
    trip = _doc(
        'trip',
        'Trip',
        [
            'We flew over mercury, then Mercury, to New York City and saw the beatles.',
            'Zürich, not Zürichsee; ACME Corp. and Acmes; an Acme Rocketship.',
        ],
    )
    return [
        mercury,
        band,
        nyc,
        ny,
        trip,
        Entity(id='zurich', name=unicodedata.normalize('NFD', 'Zürich')),
        Entity(id='acme', name='Acme', aliases=('ACME Corp.',)),
        Entity(id='ab', name='AB'),
        Entity(id='yc', name='York City'),
        Entity(id='rockets', name='Acme Rockets'),
    ]


async def test_exact_links_whole_names_titles_aliases_and_qualifier_free_titles() -> None:
    store = _store()
    await store.upsert(_encyclopedia())
    report = await ExactNameLinker().build(store)
    assert _triples(await store.list_relations(origin='exact')) == {
        # "Mercury" matches "Mercury (planet)" without its qualifier; "mercury" does not (case);
        # every name written links, overlapping ones too ("New York City", "New York" and "York
        # City": no name competes with another); "Zürich" (NFD name, NFC text) as a whole word only;
        # an alias ending in punctuation; "Acmes" is not "Acme", "Acme Rocketship" is not "Acme Rockets".
        ('trip-0', 'MENTIONS', 'mercury'),
        ('trip-0', 'MENTIONS', 'nyc'),
        ('trip-0', 'MENTIONS', 'ny'),
        ('trip-0', 'MENTIONS', 'yc'),
        ('trip-1', 'MENTIONS', 'zurich'),
        ('trip-1', 'MENTIONS', 'acme'),
    }
    # A chunk never links to its own document ("Mercury is ..." inside Mercury (planet)).
    assert report.relations_written == 6
    relation = next(iter(await store.list_relations(origin='exact')))
    assert (relation.weight, relation.provenance, relation.document_id) == (1.0, relation.source, 'trip')
    await _assert_idempotent(store, ExactNameLinker())


async def test_exact_case_insensitive_and_without_titles() -> None:
    store = _store()
    await store.upsert(_encyclopedia())
    await ExactNameLinker(case_sensitive=False).build(store)
    assert ('trip-0', 'MENTIONS', 'band') in _triples(await store.list_relations(origin='exact'))
    # min_name_length: "AB" (2) never matches even as a word; a 2-letter minimum lets it.
    await store.upsert([_doc('ab-doc', 'Letters', ['AB and ab.'])])
    await ExactNameLinker(include_titles=False, min_name_length=2, name='entities-only').build(store)
    assert _triples(await store.list_relations(origin='entities-only')) == {
        ('trip-0', 'MENTIONS', 'yc'),
        ('trip-1', 'MENTIONS', 'zurich'),
        ('trip-1', 'MENTIONS', 'acme'),
        ('ab-doc-0', 'MENTIONS', 'ab'),
    }


async def test_exact_comma_titles_and_html_references() -> None:
    """A title with one comma also matches as the part before it ("Waterford, New York" as "Waterford");
    HTML character references read as the characters ("Army &amp; Navy" is "Army & Navy"), in titles and text."""
    store = _store()
    await store.upsert(
        [
            _doc('town', 'Waterford, New York', ['Waterford is a town.']),
            _doc('lord', 'Frederick Lindemann, 1st Viscount Cherwell', ['A physicist.']),
            _doc('shop', 'Army &amp; Navy Stores (United Kingdom)', ['A department store.']),
            _doc('suite', 'Docs, Sheets, and Slides', ['Two commas: no short form.']),
            _doc(
                'tug',
                'Catawissa',
                [
                    'A tugboat at Waterford; Professor Frederick Lindemann, Baron Cherwell, wrote to it.',
                    'Bought at Army &amp; Navy Stores; Army & Navy Stores again; Docs was a word.',
                    'Waterfordshire and Lindemann alone are not names.',
                ],
            ),
        ]
    )
    await ExactNameLinker().build(store)
    assert _triples(await store.list_relations(origin='exact')) == {
        ('tug-0', 'MENTIONS', 'town'),
        ('tug-0', 'MENTIONS', 'lord'),
        ('tug-1', 'MENTIONS', 'shop'),
    }
    await _assert_idempotent(store, ExactNameLinker())
    report = await ExactNameLinker(comma_titles=False).build(store)  # another configuration: rebuilt
    assert report.documents_built == 5
    assert _triples(await store.list_relations(origin='exact')) == {('tug-1', 'MENTIONS', 'shop')}


async def test_exact_section_titles_are_names_but_never_the_chunks_own_sections() -> None:
    builder = DocumentBuilder('file:///h.md', 'Handbook', id='h')
    refunds = builder.section('Refunds')
    builder.add_chunk(refunds, 'Refunds take a week.')
    shipping = builder.section('Shipping')
    builder.add_chunk(shipping, 'Shipping is free; for returns see Refunds in the Handbook.')
    store = _store()
    await store.upsert([builder.build()])
    await ExactNameLinker().build(store)
    assert _triples(await store.list_relations(origin='exact')) == {('h-1', 'MENTIONS', 'h-s0')}


async def test_two_tenants_naming_acme_get_two_nodes_and_edges_never_cross() -> None:
    store = _store()
    await store.upsert(
        [
            _doc('a', 'Notes A', ['Acme ships on Fridays.'], tenant='a'),
            _doc('b', 'Notes B', ['Acme ships on Mondays.'], tenant='b'),
            _doc('c', 'Notes C', ['Acme, untenanted.']),
            Entity(id='acme-a', name='Acme', metadata={'tenant': 'a'}),
            Entity(id='acme-b', name='Acme', metadata={'tenant': 'b'}),
        ]
    )
    await ExactNameLinker(scope_keys=('tenant',)).build(store)
    relations = await store.list_relations(origin='exact')
    assert _triples(relations) == {('a-0', 'MENTIONS', 'acme-a'), ('b-0', 'MENTIONS', 'acme-b')}
    assert {r.target: r.metadata for r in relations} == {'acme-a': {'tenant': 'a'}, 'acme-b': {'tenant': 'b'}}


async def test_exact_rebuilds_only_a_reupserted_document_and_forgets_a_deleted_one() -> None:
    store = _store()
    await store.upsert(_encyclopedia())
    await ExactNameLinker().build(store)
    others = [r for r in await store.list_relations(origin='exact') if r.document_id != 'trip']
    # Re-upserting `trip` with the same text: only it is rebuilt (its relations went with its old version).
    trip = next(d for d in _encyclopedia() if isinstance(d, Document) and d.id == 'trip')
    await store.upsert([trip])
    report = await ExactNameLinker().build(store)
    assert (report.documents_built, report.relations_written, report.relations_deleted) == (1, 6, 0)
    assert [r for r in await store.list_relations(origin='exact') if r.document_id != 'trip'] == others
    # A deleted document's mark and relations are gone; it is no longer a name either.
    await store.delete_documents(['nyc'])
    report = await ExactNameLinker().build(store)
    assert 'nyc' not in await store.graph_marks('exact')
    assert not any(r.target == 'nyc' for r in await store.list_relations(origin='exact'))
    assert (report.relations_deleted, report.relations_written) == (1, 0)  # trip-0 still names "New York"


async def test_a_new_entity_rebuilds_its_scope_and_writes_only_new_edges() -> None:
    store = _store()
    await store.upsert(_encyclopedia())
    await ExactNameLinker().build(store)
    await store.upsert([Entity(id='hamburg', name='Hamburg')])
    report = await ExactNameLinker().build(store)
    assert (report.relations_written, report.relations_deleted, report.entities_written) == (1, 0, 0)
    assert ('band-0', 'MENTIONS', 'hamburg') in _triples(await store.list_relations(origin='exact'))


async def test_thousands_of_names_over_thousands_of_chunks() -> None:
    """~5k names over ~5k chunks: the dictionary scan must not be quadratic (a few seconds at most)."""
    linker = ExactNameLinker()
    names = [f'Place{i} Town' for i in range(5000)]
    entities = [Entity(id=f'e{i}', name=name) for i, name in enumerate(names)]
    dictionary = linker.dictionaries(entities, [])['{}']
    texts = [f'From Place{i} Town to Place{(i * 7) % 5000} Town, past Place{i}Town. ' * 5 for i in range(5000)]
    found = [{t.id for t in dictionary.matches(text)} for text in texts]
    assert found[3] == {'e3', 'e21'}
    assert all(len(ids) in (1, 2) for ids in found)


# -- vectors ---------------------------------------------------------------------------------


async def _cosine(embedder: Embedder, a: str, b: str) -> float:
    vectors = (await embedder.embed_documents([a, b])).embeddings
    x, y = np.asarray(vectors[0]), np.asarray(vectors[1])
    return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


async def test_vector_links_the_top_k_entities_above_the_threshold_weighted_by_cosine() -> None:
    store = _store()
    await store.upsert(
        [
            _doc('k8s', 'Ops', ['kubernetes cluster autoscaler scales nodes', 'lunch menu soup']),
            Entity(id='auto', name='kubernetes cluster autoscaler'),
            Entity(id='nodes', name='cluster nodes scales'),
            Entity(id='soup', name='tomato soup recipe'),
        ]
    )
    chunks = await read_chunks(store, 'k8s')
    embedder = store.embedder
    expected = {
        (chunk.id, entity_id): await _cosine(embedder, chunk.text, name)
        for chunk in chunks
        for entity_id, name in (
            ('auto', 'kubernetes cluster autoscaler'),
            ('nodes', 'cluster nodes scales'),
            ('soup', 'tomato soup recipe'),
        )
    }
    threshold = 0.3
    report = await VectorLinker(top_k=1, threshold=threshold, scope_keys=('tenant',)).build(store)
    relations = await store.list_relations(origin='vector')
    wanted = {}
    for chunk in chunks:
        best = max((c, e) for (ch, e), c in expected.items() if ch == chunk.id)
        if best[0] >= threshold:
            wanted[(chunk.id, best[1])] = best[0]
    assert wanted  # the corpus is built so at least one chunk links
    assert {(r.source, r.target): r.weight for r in relations} == pytest.approx(wanted, abs=1e-5)
    assert all(r.type == 'MENTIONS' and r.target_kind == 'entity' for r in relations)
    assert report.relations_written == len(wanted)
    await _assert_idempotent(store, VectorLinker(top_k=1, threshold=threshold, scope_keys=('tenant',)))


async def test_vector_links_every_entity_above_the_threshold_by_default() -> None:
    """No ``top_k`` by default: an entity's edge never depends on how many others are more similar."""
    store = _store()
    await store.upsert(
        [_doc('k8s', 'Ops', ['cluster nodes'])] + [Entity(id=f'e{i}', name='cluster nodes') for i in range(5)]
    )
    await VectorLinker(threshold=0.5).build(store)
    assert {r.target for r in await store.list_relations(origin='vector')} == {f'e{i}' for i in range(5)}
    with pytest.raises(ValueError, match='top_k ranks entities within a scope group'):
        VectorLinker(top_k=3)


async def test_vector_links_only_within_a_scope() -> None:
    store = _store()
    await store.upsert(
        [
            _doc('a', 'A', ['acme rockets'], tenant='a'),
            _doc('b', 'B', ['acme rockets'], tenant='b'),
            Entity(id='acme-a', name='acme rockets', metadata={'tenant': 'a'}),
            Entity(id='acme-b', name='acme rockets', metadata={'tenant': 'b'}),
        ]
    )
    await VectorLinker(top_k=5, threshold=0.0, scope_keys=('tenant',)).build(store)
    assert _triples(await store.list_relations(origin='vector')) == {
        ('a-0', 'MENTIONS', 'acme-a'),
        ('b-0', 'MENTIONS', 'acme-b'),
    }


class _TwoSizes(EmbeddingModel):
    """A real embedding model whose vectors for texts naming ``alpha`` are shorter than the rest."""

    def __init__(self) -> None:
        super().__init__()
        self._short, self._long = HashingEmbeddingModel(8), HashingEmbeddingModel(16)

    @property
    def model_name(self) -> str:
        return 'two-sizes'

    @property
    def system(self) -> str:
        return 'test'

    async def embed(
        self, inputs: str | Sequence[str], *, input_type: EmbedInputType, settings: EmbeddingSettings | None = None
    ) -> EmbeddingResult:
        inputs, settings = self.prepare_embed(inputs, settings)
        vectors = []
        for text in inputs:
            model = self._short if 'alpha' in text else self._long
            vectors.extend((await model.embed([text], input_type=input_type)).embeddings)
        return EmbeddingResult(
            embeddings=vectors, inputs=inputs, input_type=input_type, model_name='two-sizes', provider_name='test'
        )

    async def max_input_tokens(self) -> int | None:
        return None

    async def count_tokens(self, text: str) -> int:
        return len(text.split())


async def test_vector_skips_a_dimension_mismatch_and_reports_it() -> None:
    store = _store()
    await store.upsert([_doc('d', 'D', ['entity alpha', 'other text']), Entity(id='x', name='entity alpha')])
    report = await VectorLinker(threshold=0.0, embedder=Embedder(_TwoSizes())).build(store)
    # 'entity alpha' embeds at 8 like the entity and links; 'other text' (16) is skipped and named.
    assert _triples(await store.list_relations(origin='vector')) == {('d-0', 'MENTIONS', 'x')}
    assert report.failures == ("d-1: dimension 16 != the entities' 8",)


async def test_build_graph_runs_every_builder_in_order() -> None:
    store = _store()
    await store.upsert(_encyclopedia())
    reports = await build_graph(store, StructureBuilder(), ExactNameLinker(), VectorLinker(threshold=0.9))
    assert [r.builder for r in reports] == ['structure', 'exact', 'vector']
    assert all(r.documents_seen == 5 and not r.failures for r in reports)
    second = await build_graph(store, StructureBuilder(), ExactNameLinker(), VectorLinker(threshold=0.9))
    assert [r.writes for r in second] == [0, 0, 0]


# -- scope: an edge never outlives its chunk's scope -----------------------------------------


def _board_and_news() -> list[Document | Entity]:
    """A secret board minute (sections, a link, names) next to a public newsletter, in one tenant."""
    board = DocumentBuilder(
        'file:///a/board.md',
        'Board minutes',
        id='board',
        metadata={'tenant': 'a', 'classification': 'secret'},
        labels={'Restricted'},
    )
    falcon = board.section('Project Falcon')
    board.add_chunk(falcon, 'Acme will buy Globex in Q3; keep it out of the [Newsletter](news.md).')
    board.add_chunk(board.section('Terms', parent=falcon), 'Globex shareholders get Acme stock.')
    news = _doc(
        'news',
        'Newsletter',
        ['Acme sells widgets to everyone.'],
        uri='file:///a/news.md',
        tenant='a',
        classification='public',
    )
    return [
        board.build(),
        news,
        Entity(
            id='acme', name='Acme', description='Sells widgets.', metadata={'tenant': 'a', 'classification': 'public'}
        ),
    ]


async def _seen(store: InMemoryStore, scope: Filter) -> str:
    """What a reader scoped by ``scope`` sees: every node resolved, a walk from every node, the graph tool."""
    documents = await store.list_documents()
    chunks = [c for d in documents for c in await read_chunks(store, d.id)]
    ids = tuple(
        sorted({*(c.id for c in chunks), *(d.id for d in documents), *(e.id for e in await store.list_entities())})
    )
    nodes = await store.graph_nodes(NodeRequest(ids, scope))
    walked = await walk(store, WalkRequest(seeds=ids, hops=2, max_nodes=200, filter=scope))
    rag = ToolishRag(store, name='kb').with_metadata_filter(scope)
    context = (await rag.run_tool('graph_context', {'ids': ['news', 'news-0', 'acme'], 'hops': 2})).return_value
    return '\n'.join(
        [
            *(f'{n.id} {n.title} {n.text}' for n in nodes),
            *(f'{w.node.id} {w.node.title} {w.node.text}' for w in walked.nodes),
            *(f'{e.source} {e.type} {e.target}' for e in walked.edges),
            str(context),
        ]
    )


def _scoped_like(relation: Relation, chunks: Sequence[Chunk]) -> Chunk:
    """The chunk whose scope an edge must carry: its provenance, else (a section's PART_OF) the section's first chunk."""
    if relation.provenance is not None:
        return next(c for c in chunks if c.id == relation.provenance)
    return next(c for c in chunks if relation.source in c.section_ids)


async def test_an_edge_never_outlives_the_scope_of_its_chunk() -> None:
    """Linker edges read from a secret chunk once carried only ``scope_keys``, so
    ``classification != 'secret'`` (or any filter on another key or a label) matched them."""
    store = _store()
    await store.upsert(_board_and_news())
    builders = (
        StructureBuilder(scope_keys=('tenant',)),
        ExactNameLinker(scope_keys=('tenant',)),
        VectorLinker(top_k=3, threshold=0.0, scope_keys=('tenant',)),
    )
    await build_graph(store, *builders)
    chunks = [c for d in ('board', 'news') for c in await read_chunks(store, d)]
    relations = [r for b in builders for r in await store.list_relations(origin=b.name)]
    assert {r.origin for r in relations if r.document_id == 'board'} == {'structure', 'exact', 'vector'}
    assert ('board-0', 'LINKS_TO', 'news') in _triples(relations)
    for relation in relations:
        chunk = _scoped_like(relation, chunks)
        assert (relation.metadata, relation.labels) == (chunk.metadata, chunk.labels), relation
    scopes = [
        F.eq('tenant', 'a') & F.ne('classification', 'secret'),
        F.nin('classification', ['secret', 'confidential']),
        ~EntityFilter.has_any_label('Restricted'),
    ]
    for scope in scopes:
        for relation in relations:
            if not matches(scope, _scoped_like(relation, chunks)):
                assert not matches(scope, relation), (scope, relation)
    assert 'Globex' in await _seen(store, F.eq('tenant', 'a'))  # the secret is there to leak
    public = await _seen(store, scopes[0])
    assert 'Acme sells widgets' in public and 'Globex' not in public and 'board' not in public
    assert [(await b.build(store)).writes for b in builders] == [0, 0, 0]  # idempotent
