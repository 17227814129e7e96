"""The kit's `SectionReader` checks: listings, outlines and section pages equal to the reference.

Direct calls only (`toolish_rag.testing.sections_contract`): every listing, outline and section
page must equal the reference answer, under every edge filter, at every offset and limit, after
replacements, deletes and a reopen. See docs/navigation.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..builder import DocumentBuilder
from ..content import Document
from ..filters import EntityFilter, Filter, PropertyFilter as F
from ..protocols import DocumentStore, SectionReader
from ..sections import DocumentPageRequest
from ._corpus import COMMON_WORD, EDGE_FILTERS, conformance_corpus, conformance_entities, navigation_corpus
from ._kit import KitBase, check, report
from .sections_contract import (
    UNKNOWN_ID,
    SectionReference,
    document_metadata_problems,
    document_reads,
    empty_answer_problems,
    nested_section,
    outline_calls,
    pagination_calls,
    scope_calls,
    title_calls,
)

PARTIAL = (F.ne('n', 2) & F.ne('tenant', 'initech')) | F.eq('n', 20)
"""A scope that cuts through every document of the conformance corpus: acme without its chunk 2,
globex whole, initech by one chunk (of a nested section)."""
_TITLE_PROBES = ['STRASSE', 'straße', 'ß', 'NOTES', 'ZeTa', 'e', '', ' ', 'no such title']
"""``title_contains`` values for `navigation_corpus`: ``'STRASSE'`` and ``'straße'`` find ``'Straße
zone'`` only when both sides are case-folded (``str.lower`` keeps the ``ß``)."""


def second_version(old: Document) -> Document:
    """``old`` replaced: same id, a new title, fewer chunks, other sections (a chunk with none)."""
    b = DocumentBuilder(old.uri, 'Acme manual, second edition', metadata={'tenant': 'acme', 'year': 2030, 'v': 2.5})
    b.add_chunk(None, f'{COMMON_WORD} preamble of the second edition', metadata={'n': 2})
    summary = b.section('Summary')
    b.add_chunk(summary, f'{COMMON_WORD} summary acme', metadata={'n': 40})
    b.add_chunk(b.section('Contacts', parent=summary), f'{COMMON_WORD} contacts acme', metadata={'n': 41})
    new = b.build()
    assert new.id == old.id and len(new.chunks) < len(old.chunks) and len(new.sections) < len(old.sections), (
        'the kit corpus changed: its second version must keep the id and have fewer chunks and sections'
    )
    return new


class NavigationChecks(KitBase):
    """`SectionReader`: every answer equal to the reference's (see the module docstring)."""

    @check(SectionReader, aspect='scope')
    async def test_section_reader_honours_every_filter(self, loaded: Any) -> None:
        """Every edge filter in turn, on one store: listing, outlines and reads equal the reference.

        One store for all of them, so a cache keyed by something coarser than the filter (where
        ``True == 1``) serves one scope another's answer and fails here too."""
        store = loaded
        reference = SectionReference.of(conformance_corpus(), conformance_entities())
        problems: list[str] = []
        for f in [None, *(f for _, f in EDGE_FILTERS)]:
            problems += await scope_calls(reference.documents, f).problems(store, reference)
        assert not problems, report(problems)

    @check(SectionReader, aspect='search')
    async def test_section_reader_pages(self, loaded: Any) -> None:
        """Every offset (to past the end) and limit (0 to more than all), and page-by-page walks."""
        store = loaded
        reference = SectionReference.of(conformance_corpus(), conformance_entities())
        problems: list[str] = []
        for f in (None, PARTIAL):
            problems += await pagination_calls(reference.documents, f).problems(store, reference)
        assert not problems, report(problems)

    @check(SectionReader, aspect='search')
    async def test_section_reader_outlines(self, loaded: Any) -> None:
        """By document, section id and section title, alone and combined (also into nothing), and cut at ``limit``."""
        store = loaded
        reference = SectionReference.of(conformance_corpus(), conformance_entities())
        problems = await outline_calls(reference.documents, PARTIAL).problems(store, reference)
        assert not problems, report(problems)

    @check(SectionReader, aspect='search')
    async def test_section_reader_titles_order_and_metadata(self, empty: Any) -> None:
        """Case-folded ``title_contains`` and order (ties broken by id), document metadata with its types.

        Starts on the empty store: every listing is empty."""
        made = store = empty
        documents = navigation_corpus()
        empty = SectionReference.of([])
        problems = await title_calls(documents, None, _TITLE_PROBES).problems(store, empty)
        await made.upsert(documents)
        reference = SectionReference.of(documents)
        assert [d.title for d in reference.page(DocumentPageRequest(title_contains='STRASSE')).documents] == [
            'Straße zone',
            'Strassenbahn',
        ], 'the navigation corpus no longer probes case folding'
        for f in (None, F.eq('part', 2)):
            problems += await (title_calls(documents, f, _TITLE_PROBES) + scope_calls(documents, f)).problems(
                store, reference
            )
        problems += await document_metadata_problems(store, documents)
        assert not problems, report(problems)

    @check(SectionReader, aspect='scope')
    async def test_section_reader_scopes_in_turn_and_foreign_ids(self, loaded: Any) -> None:
        """Two tenants in turn on one store; an id outside the scope answers like one that exists nowhere.

        Ids of the other tenant's document and sections, an entity id, an unknown id: each must get
        the empty answer (total 0), never an error or a count. A scope holding only entities lists
        nothing: entities never appear."""
        store = loaded
        reference = SectionReference.of(conformance_corpus(), conformance_entities())
        acme, globex = F.eq('tenant', 'acme'), F.eq('tenant', 'globex')
        problems: list[str] = []
        for f in (acme, globex, acme, PARTIAL & F.ne('tenant', 'globex')):
            foreign = reference.documents_out_of_scope(f)[0]
            ids = [foreign.id, nested_section(foreign), 'ent-alice', UNKNOWN_ID]
            problems += await scope_calls(reference.documents, f).problems(store, reference)
            problems += await empty_answer_problems(store, ids, f)
        people = EntityFilter.has_any_label('Person')
        assert reference.page(DocumentPageRequest(filter=people)).total == 0, (
            'the kit corpus changed: no chunk is a Person'
        )
        problems += await scope_calls(reference.documents, people).problems(store, reference)
        assert not problems, report(problems)

    @check(SectionReader, DocumentStore, aspect='writes', every=True)
    async def test_section_reader_after_replace_and_delete(self, loaded: Any) -> None:
        """A replaced document shows only its new version (title, chunks, sections, metadata); a deleted one is gone."""
        store = loaded
        corpus, entities = conformance_corpus(), conformance_entities()
        old = corpus[0]
        new = second_version(old)
        await loaded.upsert([new])
        reference = SectionReference.of([new, *corpus[1:]], entities)
        stale_sections = [s.id for s in old.sections if new.section_by_id(s.id) is None]
        problems: list[str] = []
        scopes: list[Filter | None] = [F.eq('tenant', 'acme'), F.lte('n', 2)]
        for f in scopes:
            calls = scope_calls(reference.documents, f) + document_reads([new], f) + outline_calls([new], f)
            problems += await (calls + title_calls([new], f, ['handbook'])).problems(store, reference)
            problems += await empty_answer_problems(store, stale_sections, f)
        await loaded.delete_documents([corpus[1].id])
        reference = SectionReference.of([new, corpus[2]], entities)
        gone = [corpus[1].id, nested_section(corpus[1])]
        for f in (None, F.eq('tenant', 'globex')):
            problems += await scope_calls(reference.documents, f).problems(store, reference)
            problems += await empty_answer_problems(store, gone, f)
        assert not problems, report(problems)

    @check(SectionReader, aspect='persistence')
    async def test_section_reader_after_reopen(self, empty: Any, store_path: Path, embedder: Any) -> None:
        """Reopened, a store lists the same documents with the same metadata types (``2.0`` stays a float)."""
        made = empty
        documents = navigation_corpus()
        await made.upsert(documents)
        del made
        reopened = await self.reopen_store(store_path, embedder)
        reference = SectionReference.of(documents)
        problems = await document_metadata_problems(reopened, documents)
        problems += await scope_calls(documents, F.eq('region', 'south')).problems(reopened, reference)
        assert not problems, report(problems)
