"""`TantivyStore`'s ``language='auto'``, the default of a new index (issue 30 item 1): what is Tantivy's own.

Finding passages across languages is the conformance kit's check (`toolish_rag.testing`, run by
test_conformance.py); here: the default and what is saved beside the index (the analyzer identity,
the languages in the manifest), and that an index saved before keeps its analysis.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolish_rag.analysis import AUTO, TextAnalyzer
from toolish_rag.builder import DocumentBuilder
from toolish_rag.content import Chunk, Document
from toolish_rag.errors import QuerySyntaxError
from toolish_rag.manifest import read_manifest
from toolish_rag.search import SearchRequest
from toolish_rag.stores.registry import open_store
from toolish_rag_tantivy import TantivyStore

CONFIG = 'toolish_rag_tantivy.json'


def _document(key: str, text: str) -> Document:
    b = DocumentBuilder(f'file:///{key}.md', key)
    b.add_chunk(b.section('Body'), text)
    return b.build()


async def _top(store: TantivyStore, query: str) -> str | None:
    hits = await store.text_search(SearchRequest(query, 1))
    record = hits[0].record if hits else None
    return record.document_title if isinstance(record, Chunk) else None


async def test_a_new_index_is_auto_and_saves_it(tmp_path: Path) -> None:
    store = open_store(f'tantivy:{tmp_path / "ix"}')  # the CLI's spec
    assert isinstance(store, TantivyStore) and store.text_analyzer == TextAnalyzer(AUTO)
    assert json.loads((tmp_path / 'ix' / CONFIG).read_text())['analyzer'] == 'toolish-v2:auto'
    await store.upsert([_document('de', 'Die Verteidigung der Panthers stand auf dem sechsten Platz der Liga.')])
    await store.upsert([_document('en', 'The Broncos defeated the Carolina Panthers in the final game.')])
    manifest = read_manifest(tmp_path / 'ix')
    assert manifest is not None and manifest.language == AUTO and set(manifest.languages) == {'de', 'en'}
    store.close()
    reader = TantivyStore(tmp_path / 'ix')
    assert reader.text_analyzer == TextAnalyzer(AUTO)
    assert await _top(reader, 'Wann gewannen die Broncos?') == 'en'


async def test_an_index_saved_before_keeps_its_analysis(tmp_path: Path) -> None:
    # An 'auto' index written before accent folding (toolish-v1:auto) reads back as it was built.
    store = TantivyStore(tmp_path / 'ix', language=AUTO)
    store.close()
    config = json.loads((tmp_path / 'ix' / CONFIG).read_text())
    (tmp_path / 'ix' / CONFIG).write_text(json.dumps({**config, 'analyzer': 'toolish-v1:auto'}))
    old = TantivyStore(tmp_path / 'ix')
    assert old.text_analyzer == TextAnalyzer(AUTO, revision=1) != TextAnalyzer(AUTO)
    await old.upsert([_document('fr', 'Le café du village ouvre tôt le matin pour les ouvriers du port.')])
    assert await _top(old, 'tôt') == 'fr' and await _top(old, 'tot') is None  # not folded, as built
    old.close()
    # The default before 'auto' (a tantivy analyzer) too.
    legacy = TantivyStore(tmp_path / 'legacy', analyzer='subword_stem')
    legacy.close()
    assert TantivyStore(tmp_path / 'legacy').analyzer_name == 'subword_stem'


async def test_what_the_old_default_found_auto_finds_too() -> None:
    texts = [
        'To be or not to be, that is the question.',
        'C++ and C# both compile; see std::vector<int>.',
        'Emoji test, naïve café owners and the Straße.',
        'Refunds are paid within thirty days.',
    ]
    store = TantivyStore()
    await store.upsert([_document(str(i), t) for i, t in enumerate(texts)])
    assert await _top(store, '"to be or not to be"') == '0'  # stop words only: scanned for as a substring
    assert await _top(store, 'C++') == '1'  # one letter and symbols: the same
    assert await _top(store, 'naive cafe strasse') == '2'  # accents folded
    assert await _top(store, 'refunds') == '3'  # words BM25 finds: no scan
    with pytest.raises(QuerySyntaxError, match='no searchable words'):
        await store.text_search(SearchRequest('()', 1))  # punctuation alone: still a retry for the model
