"""`IngestOptions` (the options of an `ingest` run) and `IngestKeywords` (the same, as `ingest`'s typed keywords)."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import get_type_hints

import pytest

from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.ingest import Chunker, IngestKeywords, IngestOptions, OcrOptions, ingest
from toolish_rag.stores import InMemoryStore


def test_the_keywords_are_the_options_fields_with_their_types() -> None:
    fields = {f.name for f in dataclasses.fields(IngestOptions)}
    assert set(IngestKeywords.__annotations__) == fields
    assert get_type_hints(IngestKeywords) == {k: v for k, v in get_type_hints(IngestOptions).items() if k in fields}
    assert not IngestKeywords.__required_keys__  # every keyword may be left out
    for function in (ingest, IngestOptions.changed):
        kwargs = [p for p in inspect.signature(function).parameters.values() if p.kind is p.VAR_KEYWORD]
        assert len(kwargs) == 1 and 'IngestKeywords' in str(kwargs[0].annotation)


def test_values_are_checked_and_kept_immutable_where_given_mutable() -> None:
    labels, metadata = ['a'], {'team': 'docs'}
    options = IngestOptions(labels=labels, metadata=metadata, exclude=['*.png'], ocr_languages=['de'], chunker=None)  # type: ignore[arg-type]
    labels.append('b')
    metadata['team'] = 'ops'
    assert (options.labels, options.metadata, options.exclude) == (('a',), {'team': 'docs'}, ('*.png',))
    assert options.ocr_languages == ('de',) and options.chunker == Chunker()
    with pytest.raises(ValueError, match=r"'path'.*recorded by ingestion"):
        IngestOptions(metadata={'path': 'x'})
    with pytest.raises(ValueError, match="reader must be one of 'default', 'unstructured', not 'docling'"):
        IngestOptions(reader='docling')  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ocr must be 'never', 'auto' or 'always', not 'sometimes'"):
        IngestOptions(ocr='sometimes')  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"unknown ingest options \['synk'\]"):
        options.changed(synk=True)  # type: ignore[call-arg]
    assert options.changed(sync=True) == dataclasses.replace(options, sync=True) != options


def test_ocr_languages_default_to_the_store_language() -> None:
    assert IngestOptions(ocr='never').ocr_options('de') == OcrOptions('never', ('de',))
    assert IngestOptions().ocr_options('auto') == IngestOptions().ocr_options(None) == OcrOptions('auto', ())
    assert IngestOptions(ocr_languages='fra').ocr_options('de') == OcrOptions('auto', ('fra',))


async def test_options_and_keywords_are_one_run(tmp_path: Path) -> None:
    """``ingest(store, paths, options, **keywords)``: the keywords change a copy of the options; bad ones raise first."""
    for n in range(3):
        (tmp_path / f'page{n}.md').write_text(f'# Page {n}\n\nShipping to zone {n} takes a week.\n')
    (tmp_path / 'skip.md').write_text('# Skipped\n\nnever read\n')
    options = IngestOptions(progress=False, labels=('handbook',), exclude=('skip.md',), executor='thread')
    by_options = InMemoryStore(HashingEmbeddingModel(32))
    by_keywords = InMemoryStore(HashingEmbeddingModel(32))

    first = await ingest(by_options, tmp_path, options, metadata={'team': 'docs'})
    second = await ingest(
        by_keywords, tmp_path, progress=False, labels=['handbook'], exclude=['skip.md'], metadata={'team': 'docs'}
    )

    assert len(first.added) == len(second.added) == 3
    listed = [sorted(await store.list_documents(), key=lambda i: i.id) for store in (by_options, by_keywords)]
    assert listed[0] == listed[1]
    assert all(i.metadata['team'] == 'docs' for i in await by_options.list_documents())
    with pytest.raises(TypeError, match=r"unknown ingest options \['chunk_size'\]"):
        await ingest(by_options, tmp_path, chunk_size=10)  # type: ignore[call-arg]
    assert options.metadata == {}  # the keywords changed a copy
