"""The kit's write-side checks: capabilities, listing, replacement, deletes, entities, persistence.

See docs/custom-store.md ("Prove it with the conformance kit").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic_ai.embeddings import Embedder

from ..builder import DocumentBuilder
from ..content import Chunk, Document, Entity
from ..filters import EntityFilter, PropertyFilter as F
from ..protocols import (
    DocumentStore,
    PrecomputedVectorsWriter,
    ResultExpander,
    StoreFeatures,
    TextSearch,
    VectorSearch,
)
from ..retriever import Retriever
from ..search import SearchRequest
from ._corpus import COMMON_WORD, conformance_corpus, conformance_entities
from ._kit import PROTOCOLS, SEARCHES, KitBase, check, differences

_SEARCH_AND_WRITE = (*SEARCHES, DocumentStore)


class WriteChecks(KitBase):
    """`DocumentStore`: what ``upsert``, the deletes and ``list_documents`` keep, and what a reopen keeps."""

    @check(*PROTOCOLS, aspect='search')
    async def test_declares_its_protocols(self, loaded: Any) -> None:
        caps = StoreFeatures.of(loaded)
        name = type(loaded).__name__
        assert caps.any_search or caps.regex, (
            f'{name} implements no search protocol: a store must implement at least one of '
            'VectorSearch, TextSearch, RegexSearch, HybridSearch'
        )
        assert isinstance(loaded, DocumentStore), (
            f'{name} is not a DocumentStore: a store must have upsert, delete_documents, delete_entities '
            'and list_documents (the kit loads its corpus through them)'
        )
        if isinstance(loaded, TextSearch):
            syntax = loaded.text_query_syntax
            assert isinstance(syntax, str) and syntax.strip(), (
                f'{name}.text_query_syntax is {syntax!r}: a TextSearch store must describe its query syntax '
                'in a non-empty string (it goes into the text tool description)'
            )

    @check(DocumentStore, aspect='writes')
    async def test_list_documents(self, loaded: Any) -> None:
        infos = {d.id: d for d in await loaded.list_documents()}
        corpus = {d.id: d for d in conformance_corpus()}
        assert set(infos) == set(corpus), (
            f'list_documents() listed {sorted(infos)} after the corpus was upserted: it must list '
            f'every stored document once, {sorted(corpus)}'
        )
        for doc_id, info in infos.items():
            doc = corpus[doc_id]
            got = (info.uri, info.title, info.fingerprint, info.chunk_count)
            want = (doc.uri, doc.title, doc.fingerprint, len(doc.chunks))
            assert got == want, (
                f'list_documents() shows {doc_id} as (uri, title, fingerprint, chunk_count) {got}, stored {want}'
            )
            assert info.metadata == doc.metadata, (
                f'list_documents() shows {doc_id} with metadata {info.metadata}: it must be the document metadata '
                f'as upserted, {doc.metadata}'
            )
            changed = {k: v for k, v in info.metadata.items() if type(v) is not type(doc.metadata.get(k))}
            assert not changed, (
                f'list_documents() changed the type of {doc_id} metadata {changed}: stored {doc.metadata} '
                '(2 must stay an int, 2.0 a float, True a bool)'
            )

    @check(DocumentStore, aspect='writes')
    async def test_upsert_is_idempotent(self, loaded: Any) -> None:
        await loaded.upsert([*conformance_corpus(), *conformance_entities()])
        listed = await loaded.list_documents()
        assert len(listed) == 3, (
            f'after upserting the same 3 documents twice, list_documents() lists {len(listed)}: '
            'an upsert replaces a document by id, it never adds a second copy'
        )
        found = await self.everything(Retriever(loaded), loaded, len(self.all_records()))
        problems = differences('after upserting the corpus twice', found, self.expected(None), 'each record once')
        assert not problems, '\n'.join(problems)

    @check(DocumentStore, aspect='writes')
    async def test_replacing_a_document_leaves_no_stale_chunk(self, loaded: Any) -> None:
        old = conformance_corpus()[0]
        b = DocumentBuilder(old.uri, old.title + ' v2', metadata={'tenant': 'acme', 'year': 2030}, fingerprint='fp-2')
        b.add_chunk(b.section('Only'), f'{COMMON_WORD} rewritten acme text')
        new = b.build()
        assert new.id == old.id, 'the kit corpus changed: the rewritten document must keep its id'
        await loaded.upsert([new])
        found = await self.everything(Retriever(loaded, F.eq('tenant', 'acme')), loaded, 100)
        problems = differences(
            f'under tenant == acme, after {old.id} was replaced by a version with one chunk,',
            found,
            {new.chunks[0].id, 'ent-alice', 'ent-acme'},
            'an upsert replaces a document whole: only the new chunk, none of the old ones',
        )
        assert not problems, '\n'.join(problems)
        info = {d.id: d for d in await loaded.list_documents()}[old.id]
        got = (info.title, info.fingerprint, info.chunk_count)
        assert got == (new.title, 'fp-2', 1), (
            f'after replacing {old.id}, list_documents() shows (title, fingerprint, chunk_count) {got}: '
            f'expected the new version, {(new.title, "fp-2", 1)}'
        )
        if isinstance(loaded, ResultExpander):
            stale = [r.id for r in await loaded.get_records([c.id for c in old.chunks[1:]])]
            assert stale == [], f'get_records returned chunks {stale} of the replaced version: they must be gone'

    @check(DocumentStore, aspect='writes')
    async def test_delete_documents_and_entities(self, loaded: Any) -> None:
        corpus = conformance_corpus()
        deleted = await loaded.delete_documents([corpus[1].id, 'no-such-document'])
        assert deleted == 1, (
            f'delete_documents([{corpus[1].id!r}, "no-such-document"]) returned {deleted}: it must count '
            'the documents that existed, 1'
        )
        deleted = await loaded.delete_entities(['ent-alice'])
        assert deleted == 1, f'delete_entities(["ent-alice"]) returned {deleted}: it must count the one that existed'
        listed = {d.id for d in await loaded.list_documents()}
        assert listed == {corpus[0].id, corpus[2].id}, (
            f'after deleting {corpus[1].id}, list_documents() lists {sorted(listed)}: expected the other two'
        )
        expected = {c.id for d in (corpus[0], corpus[2]) for c in d.chunks} | {'ent-acme'}
        found = await self.everything(Retriever(loaded), loaded, 100)
        problems = differences(
            'after the deletes', found, expected, 'a deleted document or entity must never be found again'
        )
        assert not problems, '\n'.join(problems)

    @check(*_SEARCH_AND_WRITE, aspect='writes')
    async def test_chunks_keep_their_pages_and_boxes(self, loaded: Any) -> None:
        """A chunk's ``page``, ``boxes`` (where its lines stand) and ``cells`` (a spreadsheet's range) come back as
        upserted, from every read."""
        placed = {c.id: c for d in conformance_corpus() for c in d.chunks if c.boxes or c.cells}
        assert any(c.boxes for c in placed.values()) and any(c.cells for c in placed.values()), (
            'the kit corpus changed: some chunks must carry boxes, some cells'
        )
        got: dict[str, list[Chunk | Entity]] = {}
        if isinstance(loaded, ResultExpander):
            got['get_records'] = list(await loaded.get_records(list(placed)))
        retriever = Retriever(loaded)
        caps = self.features(loaded)
        total = len(self.all_records())
        if caps.text:
            got['text_search'] = [h.record for h in await retriever.text_search(COMMON_WORD, total)]
        if caps.vector:
            got['vector_search'] = [h.record for h in await retriever.vector_search(COMMON_WORD, total)]
        for how, records in got.items():
            for record in records:
                want = placed.get(record.id)
                if want is None or not isinstance(record, Chunk):
                    continue
                assert (record.page, record.boxes, record.cells) == (want.page, want.boxes, want.cells), (
                    f'{how} returned chunk {record.id} with page {record.page}, boxes {record.boxes} and cells '
                    f'{record.cells!r}: stored with page {want.page}, boxes {want.boxes} and cells {want.cells!r} '
                    '(keep them exactly, as JSON or columns)'
                )

    @check(*SEARCHES, aspect='search')
    async def test_empty_store_searches_return_nothing(self, empty: Any) -> None:
        found = await self.everything(Retriever(empty), empty, 10)
        problems = differences('on an empty store', found, set(), 'an empty store finds nothing (and does not fail)')
        assert not problems, '\n'.join(problems)

    @check(*SEARCHES, aspect='scope')
    async def test_entities_are_searchable_and_labelled(self, loaded: Any) -> None:
        people = Retriever(loaded, F.eq('tenant', 'acme')).with_filter(EntityFilter.has_any_label('Person'))
        found = await self.everything(people, loaded, 50)
        problems = differences(
            "under tenant == acme and the label 'Person'",
            found,
            {'ent-alice'},
            'entities are searched like chunks and carry their labels',
        )
        assert not problems, '\n'.join(problems)

    # -- persistence ------------------------------------------------------------------------------

    @check(*_SEARCH_AND_WRITE, aspect='persistence')
    async def test_reopen_gives_identical_records_and_results(
        self, empty: Any, store_path: Path, embedder: Any
    ) -> None:
        corpus: list[Document | Entity] = [*conformance_corpus(), *conformance_entities()]
        await empty.upsert(corpus)
        before = await self._ranked(empty)
        del empty
        reopened = await self.reopen_store(store_path, embedder)
        after = await self._ranked(reopened)
        assert after == before, (
            f'reopened, the store ranks {after} where it ranked {before}: a reopened store must answer '
            'exactly as before (same hits, same scores to 4 decimals)'
        )
        if isinstance(reopened, ResultExpander):
            originals = {r.id: r for r in self.all_records()}
            for record in await reopened.get_records(list(originals)):
                self.assert_same_record(record, originals[record.id], 'after a reopen')
        listed = {d.id for d in await reopened.list_documents()}
        expected = {d.id for d in conformance_corpus()}
        assert listed == expected, f'reopened, list_documents() lists {sorted(listed)}: expected {sorted(expected)}'

    @check(PrecomputedVectorsWriter, VectorSearch, aspect='writes', every=True)
    async def test_upsert_with_vectors_stores_the_given_vectors(self, empty: Any, embedder: Any) -> None:
        """A chunk given a vector is stored with it (a probe's vector: the probe finds it); the others are embedded."""
        corpus = conformance_corpus()
        given, other = corpus[0].chunks[0], corpus[1].chunks[0]
        probe = 'a probe sentence no chunk of the corpus holds'
        [vector] = (await Embedder(embedder).embed_documents([probe])).embeddings
        await empty.upsert_with_vectors(corpus, {given.text: vector})
        for query, want in ((probe, given), (other.text, other)):
            hits = await empty.vector_search(SearchRequest(query=query, top_k=1))
            assert [h.record.id for h in hits] == [want.id], (
                f'vector_search({query!r}) found {[h.record.id for h in hits]} after upsert_with_vectors: expected '
                f'{want.id}, whose vector was ' + ('given' if want is given else 'not given (the store embeds it)')
            )

    async def _ranked(self, store: Any) -> dict[str, list[tuple[str, float]]]:
        retriever = Retriever(store, F.ne('tenant', 'initech'))
        caps = self.features(store)
        out: dict[str, list[tuple[str, float]]] = {}
        if caps.vector:
            out['vector'] = [(h.id, round(h.score, 4)) for h in await retriever.vector_search('warranty details', 5)]
        if caps.text:
            out['text'] = [(h.id, round(h.score, 4)) for h in await retriever.text_search('warranty details', 5)]
        if caps.regex:
            out['regex'] = [(h.id, h.score) for h in await retriever.regex_search('ERR-[0-9]+', 5)]
        return out

    @staticmethod
    def assert_same_record(got: Chunk | Entity, want: Chunk | Entity, when: str) -> None:
        assert got == want, (
            f'{when}, record {want.id} came back changed: got {got!r}, stored {want!r} '
            '(a store returns records exactly as upserted)'
        )
        for key, value in want.metadata.items():
            stored = got.metadata[key]
            assert type(stored) is type(value), (
                f'{when}, {want.id}.metadata[{key!r}] = {value!r} came back as {stored!r}: '
                'metadata keeps its types (2 stays an int, 2.0 a float, True a bool)'
            )
            if isinstance(value, list):
                kinds = [type(x).__name__ for x in stored]  # type: ignore[union-attr]
                assert kinds == [type(x).__name__ for x in value], (
                    f'{when}, {want.id}.metadata[{key!r}] = {value!r} came back with element types {kinds}'
                )
