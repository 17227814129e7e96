"""`TantivyStore(language='auto')`: each chunk analysed in its detected language, a query in the store's
languages (issue 30 item 1). The languages a write found are kept in the store's manifest, so another
process's store object analyses its queries in them too.
"""

from __future__ import annotations

from pathlib import Path

from toolish_rag.analysis import AUTO
from toolish_rag.builder import DocumentBuilder
from toolish_rag.content import Chunk, Document
from toolish_rag.manifest import read_manifest
from toolish_rag.search import SearchRequest
from toolish_rag_tantivy import TantivyStore

GERMAN = (
    'Die Verteidigung der Panthers gab in der gesamten Saison nur 308 Punkte ab und stand damit '
    'auf dem sechsten Platz der Liga. Kawann Short führte das Team bei den Sacks an.'
)
ENGLISH = (
    'The Broncos defeated the Carolina Panthers in Super Bowl 50 at the stadium; Peyton '
    'Manning became the oldest quarterback ever to win a championship game.'
)
FILLER_DE = 'Das Wetter in Hamburg war im Herbst sehr regnerisch und die Straßen blieben oft nass.'
FILLER_EN = 'The weather in Leeds was rainy during the autumn and the streets often stayed wet.'


def _document(key: str, text: str) -> Document:
    b = DocumentBuilder(f'file:///{key}.md', key)
    b.add_chunk(b.section('Body'), text)
    return b.build()


async def _top(store: TantivyStore, query: str) -> str | None:
    hits = await store.text_search(SearchRequest(query, 1))
    record = hits[0].record if hits else None
    return record.document_id if isinstance(record, Chunk) else None


async def test_a_german_question_finds_an_english_passage_and_the_reverse(tmp_path: Path) -> None:
    store = TantivyStore(tmp_path / 'kb', language=AUTO)
    docs = [_document(k, t) for k, t in [('de', GERMAN), ('en', ENGLISH), ('fd', FILLER_DE), ('fe', FILLER_EN)]]
    await store.upsert(docs)
    ids = {d.title: d.id for d in docs}
    assert await _top(store, 'Welche Verteidigungen hatten die Panthers?') == ids['de']
    assert await _top(store, 'Wann gewannen die Broncos gegen die Panthers im Super Bowl?') == ids['en']
    assert await _top(store, 'Which quarterbacks won championships?') == ids['en']
    assert await _top(store, 'How many Sacks did Kawann Short have?') == ids['de']
    assert await _top(store, '"sechsten Platz"') == ids['de']  # a phrase, analysed in German
    manifest = read_manifest(tmp_path / 'kb')
    assert manifest is not None and manifest.language == AUTO and set(manifest.languages) == {'de', 'en'}
    # Another store object (another process, say) reads the analyzer from the table, the languages from the manifest.
    reader = TantivyStore(tmp_path / 'kb')
    assert reader.text_analyzer is not None and reader.text_analyzer.auto
    assert await _top(reader, 'Welche Verteidigungen hatten die Panthers?') == ids['de']
    assert await _top(reader, 'Which quarterbacks won championships?') == ids['en']
