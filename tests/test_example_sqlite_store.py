"""examples/sqlite_store.py, a store written from docs/custom-store.md alone, passes the whole kit."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from toolish_rag.protocols import (
    DocumentStore,
    FilterPushdown,
    GraphSearch,
    RegexSearch,
    ResultExpander,
    SectionReader,
    TextSearch,
    VectorSearch,
)
from toolish_rag.testing import StoreConformance

_PATH = Path(__file__).resolve().parents[1] / 'examples' / 'sqlite_store.py'
_spec = importlib.util.spec_from_file_location('sqlite_store_example', _PATH)
assert _spec is not None and _spec.loader is not None
example = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = example
_spec.loader.exec_module(example)


class TestSQLiteStore(StoreConformance):
    async def make_store(self, path: Path, embedder: Any) -> Any:
        return example.SQLiteStore(path / 'store.sqlite')

    async def reopen_store(self, path: Path, embedder: Any) -> Any:
        return example.SQLiteStore(path / 'store.sqlite')


def test_it_implements_what_the_docs_say(tmp_path: Path) -> None:
    store = example.SQLiteStore(tmp_path / 'store.sqlite')
    for protocol in (TextSearch, FilterPushdown, ResultExpander, SectionReader, DocumentStore):
        assert isinstance(store, protocol), f'SQLiteStore is no longer a {protocol.__name__}'
    for protocol in (VectorSearch, RegexSearch, GraphSearch):
        assert not isinstance(store, protocol), f'SQLiteStore now implements {protocol.__name__}: update the docs'


async def test_the_example_runs(tmp_path: Path, capsys: Any) -> None:
    await example.main(tmp_path)
    out = capsys.readouterr().out
    assert "'notes_text_search'" in out and "'notes_read_section'" in out, out
    first = out.index('[1]')
    assert 'never on Fridays' in out[first : out.index('[2]')], f'the Friday chunk does not rank first:\n{out}'
