"""A store opened by spec takes ``read_consistency_interval`` from ``$TOOLISH_RAG_LANCEDB_READ_CONSISTENCY``.

A spec (``lancedb:s3://bucket/kb``) has no room for options; without the variable a server reading a
location another process writes would never see a new document (stores/lancedb/tests/
test_lancedb_shared_serving.py proves the serving side end to end).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from toolish_rag.stores import open_store
from toolish_rag_lancedb import LanceDBStore
from toolish_rag_lancedb._spec import READ_CONSISTENCY_ENV


def _interval(store: LanceDBStore) -> timedelta | None:
    return store.read_consistency_interval


@pytest.mark.parametrize(('raw', 'seconds'), [('0', 0.0), ('2.5', 2.5), (' 10 ', 10.0)])
def test_the_variable_sets_the_interval(
    raw: str, seconds: float, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(READ_CONSISTENCY_ENV, raw)
    store = open_store(f'lancedb:{tmp_path / "kb"}', embedder='hashing')
    assert _interval(store) == timedelta(seconds=seconds)


def test_unset_means_never(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(READ_CONSISTENCY_ENV, raising=False)
    assert _interval(open_store(f'lancedb:{tmp_path / "kb"}', embedder='hashing')) is None


@pytest.mark.parametrize('raw', ['soon', '-1', 'nan', '1e9'])
def test_a_bad_value_is_refused_naming_the_variable(raw: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(READ_CONSISTENCY_ENV, raw)
    with pytest.raises(ValueError, match=READ_CONSISTENCY_ENV):
        open_store(f'lancedb:{tmp_path / "kb"}', embedder='hashing')
