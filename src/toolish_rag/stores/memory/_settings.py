"""The settings file of a saved `InMemoryStore`: choices that change no stored data.

BM25's corpus statistics and the text analyzer, kept in ``path/settings.json`` beside the versions.
See docs/stores/memory.md.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from ...analysis import TextAnalyzer

__all__ = ['STATISTICS', 'Statistics', 'save_setting', 'saved_analyzer', 'saved_statistics']

Statistics = Literal['scope', 'store']
"""Whose corpus statistics BM25 uses: the search's scope (the default) or the whole store."""
STATISTICS: tuple[Statistics, ...] = ('scope', 'store')

_SETTINGS = 'settings.json'


def _saved_settings(path: Path | None) -> dict[str, Any]:
    settings = path / _SETTINGS if path is not None else None
    if settings is None or not settings.exists():
        return {}
    saved: dict[str, Any] = json.loads(settings.read_text(encoding='utf-8'))
    return saved


def saved_statistics(path: Path | None) -> Statistics | None:
    """The BM25 statistics saved at ``path``; ``None`` when none are."""
    saved = _saved_settings(path).get('statistics')
    if saved is None:
        return None
    if saved not in STATISTICS:
        raise ValueError(f'{path} names unknown BM25 statistics {saved!r} in {_SETTINGS}')
    chosen: Statistics = saved
    return chosen


def saved_analyzer(path: Path | None) -> TextAnalyzer | None:
    """The text analyzer saved at ``path``; ``None`` when none is (a store from before analyzers: English)."""
    saved = _saved_settings(path).get('analyzer')
    return None if saved is None else TextAnalyzer.from_identity(saved)


def save_setting(path: Path, key: str, value: str) -> None:
    """Record one choice in the settings file, keeping the others (atomically: write, then rename)."""
    path.mkdir(parents=True, exist_ok=True)
    settings = {**_saved_settings(path), key: value}
    tmp = path / f'{_SETTINGS}.tmp'
    tmp.write_text(json.dumps(settings), encoding='utf-8')
    os.replace(tmp, path / _SETTINGS)
