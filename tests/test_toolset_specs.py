"""The tool specs are the one source: names, order, string caps, and the settings they read."""

from __future__ import annotations

import inspect
import types
import typing
from dataclasses import fields
from typing import Any

import pytest

from toolish_rag import RagSettings, ToolishRag
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.protocols import StoreFeatures
from toolish_rag.stores import InMemoryStore
from toolish_rag.toolset._names import TOOL_NAMES
from toolish_rag.toolset._spec import ToolEnv
from toolish_rag.toolset._tools import SPECS, string_arguments


def test_tool_names_are_the_specs_in_order() -> None:
    assert tuple(spec.name for spec in SPECS) == TOOL_NAMES


def _string_parameters(spec: Any) -> set[str]:
    function = spec.build(_env())
    hints = typing.get_type_hints(function, include_extras=True)
    names = set()
    for name in inspect.signature(function).parameters:
        if name == 'ctx':
            continue
        if _holds_strings(hints[name]):
            names.add(name)
    return names


def _holds_strings(hint: Any) -> bool:
    """``str``, ``list[str]``, a ``Literal`` of strings, optional or ``Annotated`` (a dict's keys do not count)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is str:
        return True
    if origin is typing.Annotated:
        return _holds_strings(args[0])
    if origin is typing.Literal:
        return all(isinstance(a, str) for a in args)
    if origin is list:
        return _holds_strings(args[0])
    if origin in (typing.Union, types.UnionType):
        return any(_holds_strings(a) for a in args if a is not type(None))
    return False


_ALL = StoreFeatures(vector=True, text=True, regex=True, expand=True, native_hybrid=True, sections=True, graph=True)


@pytest.mark.parametrize('spec', SPECS, ids=lambda s: s.name)
def test_every_string_parameter_is_declared_by_its_spec(spec: Any) -> None:
    declared = set(spec.strings(RagSettings()))
    assert _string_parameters(spec) <= declared
    assert spec.optional <= set(inspect.signature(spec.build(_env())).parameters)


def _env() -> ToolEnv:
    async def run(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError('not called')

    return ToolEnv(RagSettings(), InMemoryStore(HashingEmbeddingModel(8)), _ALL, run)


def test_string_caps_come_from_the_specs() -> None:
    caps = string_arguments(RagSettings(max_query_chars=321)).by_name
    assert caps['query'].max_chars == 321
    assert {'query', 'pattern', 'chunk_id', 'id', 'document', 'section', 'key', 'order', 'ids'} <= set(caps)


def test_settings_are_the_constructor_keywords() -> None:
    store = InMemoryStore(HashingEmbeddingModel(8))
    rag: ToolishRag[Any] = ToolishRag(store, name='kb', max_top_k=20, filterable={'year': int})
    assert rag.settings.name == 'kb' and rag.settings.max_top_k == 20
    assert rag.settings.model_filters is not None and list(rag.settings.model_filters.keys) == ['year']
    same: ToolishRag[Any] = ToolishRag(store, rag.settings)
    assert same.settings == rag.settings
    assert len(fields(RagSettings)) == 21
    narrower = rag.with_settings(max_top_k=10, exclude_tools={'regex_search'})
    assert narrower.settings.max_top_k == 10 and rag.settings.max_top_k == 20
    assert 'regex_search' not in narrower.offered_tools and 'regex_search' in rag.offered_tools


def test_an_unknown_option_is_a_type_error_naming_it() -> None:
    with pytest.raises(TypeError, match="'max_topk'"):
        ToolishRag(InMemoryStore(HashingEmbeddingModel(8)), max_topk=3)
    with pytest.raises(ValueError, match='default_top_k'):
        RagSettings(default_top_k=60)
