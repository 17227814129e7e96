"""Every tool spec has hostile-argument cases: a tool added without them fails here, not silently."""

from __future__ import annotations

from dataclasses import replace
from typing import cast

from toolish_rag._tool_names import ToolName
from toolish_rag.toolset._tools import SPECS

from .registry import REGISTRY, specs_without_cases


def test_every_spec_has_hostile_argument_cases() -> None:
    assert specs_without_cases(SPECS) == []
    assert sorted(REGISTRY) == sorted(spec.name for spec in SPECS), 'the registry is keyed by spec name, no stale keys'


def test_a_spec_without_cases_is_named() -> None:
    """A spec added to the tools with no registry entry (a constructed one here) is what the check above reports."""
    added = replace(SPECS[0], name=cast(ToolName, 'summarise_document'))
    assert specs_without_cases((*SPECS, added)) == ['summarise_document']
