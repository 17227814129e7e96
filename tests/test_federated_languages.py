"""Federated hybrid search applies one store's per-query language rule (docs/federation.md#fusion).

A query written in a language the members' embedders do not read gets the lowered vector weight,
confirmed by the merged text leg's best passages, exactly as `Retriever.hybrid_search` does for
one store holding every member's records.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from toolish_rag.analysis import analyzer_for
from toolish_rag.builder import DocumentBuilder
from toolish_rag.content import Document
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.fusion import FusionConfig
from toolish_rag.retriever import Retriever
from toolish_rag.search import SearchRequest
from toolish_rag.stores import InMemoryStore
from toolish_rag.stores.federated import Federated, MemberFusion

EMBEDDER = HashingEmbeddingModel(64)
ENGLISH_ONLY = FusionConfig(vector_languages=frozenset({'en'}))
"""The members' embedder reads English only (stated, as one store's `FusionConfig` can)."""

GREEK = [
    'Η Αθήνα είναι η πρωτεύουσα της Ελλάδας και η μεγαλύτερη πόλη της χώρας.',  # noqa: RUF001
    'Ο Παρθενώνας χτίστηκε στην Ακρόπολη της Αθήνας τον πέμπτο αιώνα π.Χ.',  # noqa: RUF001
    'Η Θεσσαλονίκη είναι η δεύτερη μεγαλύτερη πόλη της Ελλάδας, στη Μακεδονία.',  # noqa: RUF001
    'Οι Ολυμπιακοί Αγώνες του 2004 έγιναν στην Αθήνα, με νέα γήπεδα και δρόμους.',  # noqa: RUF001
    'Η Κρήτη είναι το μεγαλύτερο νησί της Ελλάδας, με το ανάκτορο της Κνωσού.',  # noqa: RUF001
    'Το ελαιόλαδο και το κρασί είναι τα παλαιότερα προϊόντα της ελληνικής γεωργίας.',  # noqa: RUF001
    'Η ελληνική γλώσσα γράφεται με το ελληνικό αλφάβητο εδώ και τρεις χιλιάδες χρόνια.',  # noqa: RUF001
    'Ο Όλυμπος είναι το ψηλότερο βουνό της Ελλάδας, η κατοικία των θεών στους μύθους.',  # noqa: RUF001
]
QUERIES = [
    'Ποια είναι η μεγαλύτερη πόλη της Ελλάδας;',
    'Πότε χτίστηκε ο Παρθενώνας στην Ακρόπολη;',  # noqa: RUF001
    'Ποιο είναι το ψηλότερο βουνό της χώρας;',
]


def _doc(i: int, text: str) -> Document:
    b = DocumentBuilder(f'file:///el/{i}.md', f'el-{i}')
    b.add_chunk(b.section('Κείμενο'), text)
    return b.build()


async def test_a_query_the_embedders_cannot_read_is_fused_as_in_one_store() -> None:
    docs = [_doc(i, text) for i, text in enumerate(GREEK)]
    single = InMemoryStore(EMBEDDER, language='el')
    members = {'a': InMemoryStore(EMBEDDER, language='el'), 'b': InMemoryStore(EMBEDDER, language='el')}
    fusion = MemberFusion(legs=ENGLISH_ONLY, analyzer=analyzer_for('el'))
    fed = Federated(members, fusion=fusion)
    for store in (single, fed):
        await store.upsert(docs)
    assert all([len(await s.list_documents()) for s in members.values()])  # both members hold some
    one_store = Retriever(single, fusion=ENGLISH_ONLY)
    never_lowered = Federated(members, fusion=replace(fusion, legs=replace(ENGLISH_ONLY, uncovered_vector_weight=None)))
    changed = 0
    for query in QUERIES:
        expected = await one_store.hybrid_search(query, 5)
        found = await fed.hybrid_search(SearchRequest(query, 5))
        assert [h.id for h in found] == [h.id for h in expected], query
        assert [h.score for h in found] == pytest.approx([h.score for h in expected], rel=1e-6), query
        unruled = await never_lowered.hybrid_search(SearchRequest(query, 5))
        changed += [h.score for h in unruled] != pytest.approx([h.score for h in found], rel=1e-6)
    assert changed == len(QUERIES)  # the rule applied: the vector weight was lowered for every Greek query
