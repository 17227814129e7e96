"""The tool specs are the one source: names, order, string caps, and the settings they read."""

from __future__ import annotations

import types
import typing
from dataclasses import fields
from typing import Any

import pytest

from toolish_rag import RagSettings, ToolishRag
from toolish_rag._tool_names import TOOL_NAMES
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.protocols import StoreFeatures
from toolish_rag.stores import Federated, InMemoryStore
from toolish_rag.toolset._arguments import StringArgument
from toolish_rag.toolset._spec import ToolEnv
from toolish_rag.toolset._tools import SPECS


def test_tool_names_are_the_specs_in_order() -> None:
    assert tuple(spec.name for spec in SPECS) == TOOL_NAMES


def _unconstrained_strings(hint: Any, constrained: bool = False) -> list[Any]:
    """The string types in ``hint`` (``str``, a ``Literal`` of strings, inside lists and optionals) that carry
    no `StringArgument` (a dict's keys and values do not count: the model filter has its own parser)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        inner, *metadata = args
        return _unconstrained_strings(inner, constrained or any(isinstance(m, StringArgument) for m in metadata))
    if hint is str or (origin is typing.Literal and all(isinstance(a, str) for a in args)):
        return [] if constrained else [hint]
    if origin is list:
        return _unconstrained_strings(args[0])
    if origin in (typing.Union, types.UnionType):
        return [s for a in args if a is not type(None) for s in _unconstrained_strings(a, constrained)]
    return []


_ALL = StoreFeatures(vector=True, text=True, regex=True, expand=True, native_hybrid=True, sections=True, graph=True)


def _env(**options: Any) -> ToolEnv:
    """Every optional parameter on: a federation (``sources``), ``filterable`` (``filter``), ``allow_grouping``."""
    settings = RagSettings(filterable={'year': int}, allow_grouping=True, **options)
    store = Federated({'a': InMemoryStore(HashingEmbeddingModel(8))})
    assert settings.model_filters is not None
    return ToolEnv(settings, store, _ALL, settings.model_filters.json_schema())


@pytest.mark.parametrize('spec', SPECS, ids=lambda s: s.name)
def test_every_string_parameter_carries_its_constraint(spec: Any) -> None:
    """A string parameter without a `StringArgument` would reach the body unchecked: none may be declared so."""
    parameters = spec.build(_env()).parameters
    assert parameters
    for parameter in parameters:
        assert _unconstrained_strings(parameter.annotation) == [], (spec.name, parameter.name)
    assert _unconstrained_strings(list[str] | None) == [str]  # the check itself can fail


def test_optional_parameters_are_in_the_signature_only_when_on() -> None:
    on = {spec.name: spec.build(_env()).names for spec in SPECS}
    settings = RagSettings()
    off = {
        spec.name: spec.build(ToolEnv(settings, InMemoryStore(HashingEmbeddingModel(8)), _ALL)).names for spec in SPECS
    }
    assert {'filter', 'group_by', 'sources'} <= on['vector_search']
    assert {'filter', 'sources'} <= on['regex_search'] and 'filter' in on['list_documents']
    assert all(not {'filter', 'group_by', 'sources'} & names for names in off.values())


def test_string_caps_come_from_the_settings() -> None:
    by_name = {p.name: p for spec in SPECS for p in spec.build(_env(max_query_chars=321)).parameters}
    query = typing.get_args(by_name['query'].annotation)[1]
    assert isinstance(query, StringArgument) and query.max_chars == 321


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
