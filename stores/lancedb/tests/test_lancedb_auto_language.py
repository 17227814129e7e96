"""`LanceDBStore`'s ``language='auto'``, the default of a new store (issue 30 item 1): what is LanceDB's own.

Finding passages across languages is the conformance kit's check (`toolish_rag.testing`, run by
test_lancedb_conformance.py); here: the default and what is saved (the analyzer in the table's schema,
the languages in the manifest, read by another store object), and that a saved store keeps its analyzer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from toolish_rag.analysis import AUTO, TextAnalyzer
from toolish_rag.builder import DocumentBuilder
from toolish_rag.content import Chunk, Document
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.manifest import read_manifest
from toolish_rag.search import SearchRequest
from toolish_rag.stores.registry import open_store
from toolish_rag_lancedb import LanceDBStore

GERMAN = 'Die Verteidigung der Panthers gab in der gesamten Saison nur 308 Punkte ab und stand auf dem sechsten Platz.'
ENGLISH = 'The Broncos defeated the Carolina Panthers in Super Bowl 50; Peyton Manning won a championship game.'


def _document(key: str, text: str) -> Document:
    b = DocumentBuilder(f'file:///{key}.md', key)
    b.add_chunk(b.section('Body'), text)
    return b.build()


async def _top(store: LanceDBStore, query: str) -> str | None:
    hits = await store.text_search(SearchRequest(query, 1))
    record = hits[0].record if hits else None
    return record.document_title if isinstance(record, Chunk) else None


async def test_a_new_store_is_auto_and_another_store_object_reads_what_it_saved(tmp_path: Path) -> None:
    store = open_store(f'lancedb:{tmp_path / "kb"}', embedder=HashingEmbeddingModel(32))  # the CLI's spec
    assert isinstance(store, LanceDBStore) and store.text_analyzer == TextAnalyzer(AUTO)  # before any write
    await store.upsert([_document('de', GERMAN), _document('en', ENGLISH)])
    assert await _top(store, 'Wann gewannen die Broncos den Super Bowl?') == 'en'
    manifest = read_manifest(tmp_path / 'kb')
    assert manifest is not None and manifest.language == AUTO and set(manifest.languages) == {'de', 'en'}
    schema = await (await store.records_table()).schema()
    assert (schema.metadata or {})[b'toolish_rag.text_analyzer'] == b'toolish-v2:auto'
    reader = LanceDBStore(tmp_path / 'kb', embedder=HashingEmbeddingModel(32))
    assert reader.text_analyzer == TextAnalyzer(AUTO)  # read from the table before connecting
    assert await _top(reader, 'Welche Verteidigungen hatten die Panthers?') == 'de'
    with pytest.raises(ValueError, match=r"indexed with language='auto'.*language='lancedb'"):
        await LanceDBStore(tmp_path / 'kb', embedder=HashingEmbeddingModel(32), language='lancedb').count()


async def test_a_store_saved_with_lancedbs_analyzer_keeps_it(tmp_path: Path) -> None:
    old = LanceDBStore(tmp_path / 'kb', embedder=HashingEmbeddingModel(32), language='lancedb')
    await old.upsert([_document('en', 'Naïve café owners met at the Straße.')])
    reopened = LanceDBStore(tmp_path / 'kb', embedder=HashingEmbeddingModel(32))  # language=None: the saved one
    assert reopened.text_analyzer is None
    assert await _top(reopened, 'naive cafe') == 'en'  # LanceDB's ASCII folding, as before
    await reopened.upsert([_document('more', 'Another café.')])
    assert 'words' not in (await (await reopened.records_table()).schema()).names
