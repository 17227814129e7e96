"""What the library reads from a store's optional attributes, each through its protocol (`toolish_rag.protocols`).

The OCR language default is the text analyzer's language, on every store that states one; a value
of another type reads as not stated. See docs/custom-store.md#optional-attributes.
"""

from __future__ import annotations

from pathlib import Path

from toolish_rag._store_attributes import embedder_of, regex_scan_limit_of, text_analyzer_of, windows_of
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.ingest import IngestOptions
from toolish_rag.ingest._pipeline import _ocr_options
from toolish_rag.stores import InMemoryStore
from toolish_rag.windows import DEFAULT_WINDOWS
from toolish_rag_lancedb import LanceDBStore
from toolish_rag_tantivy import TantivyStore


def test_the_ocr_language_default_is_the_text_analyzers(tmp_path: Path) -> None:
    hashing = HashingEmbeddingModel(16)
    assert _ocr_language_list(InMemoryStore(hashing, language='de'), None) == ('de',)
    assert _ocr_language_list(LanceDBStore(tmp_path / 'lance', embedder=hashing, language='de'), None) == ('de',)
    assert _ocr_language_list(TantivyStore(language='fr'), None) == ('fr',)
    assert _ocr_language_list(InMemoryStore(hashing), None) == ()  # 'auto' names no language
    assert _ocr_language_list(TantivyStore(), None) == ()  # tantivy's own analyzer: none stated
    assert _ocr_language_list(InMemoryStore(hashing, language='de'), ['fra', 'eng']) == ('fra', 'eng')


def _ocr_language_list(store: object, languages: list[str] | None) -> tuple[str, ...]:
    return _ocr_options(store, IngestOptions(ocr_languages=languages)).languages


class Misstated:
    """Every attribute present, none of the type its protocol names."""

    embedder = 'hashing-16'
    text_analyzer = 'de'
    windows = 'none'
    regex_scan_limit = True


def test_a_value_of_another_type_reads_as_not_stated() -> None:
    store = Misstated()
    assert embedder_of(store) is None and text_analyzer_of(store) is None
    assert windows_of(store) is None and regex_scan_limit_of(store) is None
    assert _ocr_language_list(store, None) == ()  # type: ignore[arg-type]


def test_a_memory_store_states_its_windows_with_its_embedder() -> None:
    store = InMemoryStore(HashingEmbeddingModel(16))
    stated = windows_of(store)
    assert stated is not None and stated == (store.embedder, DEFAULT_WINDOWS)
    assert windows_of(InMemoryStore(HashingEmbeddingModel(16), windows=None)) is None
