"""`RagOptions` (the typed keywords of `ToolishRag` and `with_settings`) says exactly what `RagSettings` is."""

from __future__ import annotations

import dataclasses
import inspect
from typing import get_type_hints

import pytest

from toolish_rag import ToolishRag
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.stores import InMemoryStore
from toolish_rag.toolset import RagOptions, RagSettings


def test_the_keywords_are_the_settings_fields_with_their_types() -> None:
    fields = {f.name for f in dataclasses.fields(RagSettings)}
    assert set(RagOptions.__annotations__) == fields
    assert get_type_hints(RagOptions) == {k: v for k, v in get_type_hints(RagSettings).items() if k in fields}
    assert not RagOptions.__required_keys__  # every keyword may be left out


def test_the_constructor_and_with_settings_take_them() -> None:
    for function in (ToolishRag.__init__, ToolishRag.with_settings, RagSettings.changed):
        kwargs = [p for p in inspect.signature(function).parameters.values() if p.kind is p.VAR_KEYWORD]
        assert len(kwargs) == 1 and 'RagOptions' in str(kwargs[0].annotation)
    rag = ToolishRag(InMemoryStore(HashingEmbeddingModel(8)), max_top_k=20).with_settings(default_top_k=7)
    assert (rag.settings.max_top_k, rag.settings.default_top_k) == (20, 7)
    with pytest.raises(TypeError, match=r"unknown ToolishRag options \['max_topk'\]"):
        ToolishRag(InMemoryStore(HashingEmbeddingModel(8)), max_topk=20)  # type: ignore[call-arg]
