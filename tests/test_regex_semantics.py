"""One regex means RE2 on every store: the same hits, scores and samples as the reference store.

LanceDB has a regex engine of its own (Rust's, Unicode-aware) and once used it to decide
matches, so ``\\bve`` missed "naïve" there only: RE2's ``\\b`` is ASCII, and ``ï`` is not a
word character to it. The corpus is built for such differences: accents, Greek, the Kelvin
sign and long s (case fold partners of ``k`` and ``s``), underscores, digits, newlines. Each
store is searched in one tenant's scope, with the other tenant's copies of the same words
left outside it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from toolish_rag.builder import DocumentBuilder
from toolish_rag.content import Document, Entity
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.filters import PropertyFilter as F
from toolish_rag.regex import compile_pattern
from toolish_rag.search import RegexRequest
from toolish_rag.stores import InMemoryStore

_ACME = [
    'A naïve approach: the naïve model overfits.',
    'Café au lait, ÜBER alles; résumé_v2 ships at 12:30.',
    'Kelvin: 300 \u212a, and the long \u017f of \u017fummer.',
    'ERR-4012 in module x_y; see v2.1 and eve.',
    'Greek \u03a3\u03af\u03c3\u03c5\u03c6\u03bf\u03c2 and \u03a3\u0399\u03a3\u03a5\u03a6\u039f\u03a3 beside vee.',
    'evening veils\nover the valley',
]
_GLOBEX = ['globex naïve vendetta \u212a', 'Globex ERR-9999 \u017f']
_SCOPE = F.eq('tenant', 'acme')


def _corpus() -> list[Document | Entity]:
    items: list[Document | Entity] = []
    for tenant, texts in (('acme', _ACME), ('globex', _GLOBEX)):
        b = DocumentBuilder(f'file:///{tenant}/notes.md', f'{tenant} notes', metadata={'tenant': tenant})
        section = b.section('Notes')
        for text in texts:
            b.add_chunk(section, text)
        items.append(b.build())
    items.append(Entity(id='ent-vera', name='Vera', description='a naïve vendor', metadata={'tenant': 'acme'}))
    return items


def _lancedb(path: Path) -> Any:
    lancedb = pytest.importorskip('toolish_rag_lancedb', reason='needs the LanceDB adapter (stores/lancedb)')
    return lancedb.LanceDBStore(path / 'kb', embedder=HashingEmbeddingModel(64))


def _tantivy(path: Path) -> Any:
    tantivy = pytest.importorskip('toolish_rag_tantivy', reason='needs the Tantivy adapter (stores/tantivy)')
    return tantivy.TantivyStore()


_OTHERS: dict[str, Callable[[Path], Any]] = {'lancedb': _lancedb, 'tantivy': _tantivy}

Hit = tuple[str, float, tuple[str, ...]]


class _Stores:
    """The reference store and the adapters, loaded alike, all driven on one event loop."""

    def __init__(self, runner: asyncio.Runner, path: Path) -> None:
        self.runner = runner
        self.reference = InMemoryStore(HashingEmbeddingModel(64))
        self.others = {name: build(path) for name, build in _OTHERS.items()}
        for store in (self.reference, *self.others.values()):
            runner.run(store.upsert(_corpus()))

    def hits(self, store: Any, pattern: str, case_sensitive: bool = True) -> list[Hit]:
        request = RegexRequest(pattern, 50, _SCOPE, case_sensitive=case_sensitive)
        return [(h.id, h.score, h.matches) for h in self.runner.run(store.regex_search(request))]

    def close(self) -> None:
        for store in self.others.values():
            aclose = getattr(store, 'aclose', None)
            if aclose is not None:
                self.runner.run(aclose())


@pytest.fixture(scope='module')
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Stores]:
    with asyncio.Runner() as runner:
        opened = _Stores(runner, tmp_path_factory.mktemp('regex-semantics'))
        yield opened
        opened.close()


def test_word_boundary_before_ve_finds_naive_on_every_store(stores: _Stores) -> None:
    expected = stores.hits(stores.reference, r'\bve')
    naive = [hit for hit in expected if 'naïve' in hit[2][0] or hit[0] == 'ent-vera']
    assert expected[0][2] == ('ve', 've') and len(naive) >= 1  # "naïve" twice: ï is no word character to RE2
    for name, store in stores.others.items():
        assert stores.hits(store, r'\bve') == expected, name


@pytest.mark.parametrize(
    'pattern', [r'(?i)\bK', r'(?i)[a-z]ummer', r'\w+ve\b', r'[^\x00-\x7F]', '(?i)\u03c3', r'\S+\n\S+', r'\d+\b']
)
def test_unicode_sensitive_patterns_agree(stores: _Stores, pattern: str) -> None:
    expected = stores.hits(stores.reference, pattern)
    assert expected, pattern  # each pattern finds something in scope
    for name, store in stores.others.items():
        assert stores.hits(store, pattern) == expected, (name, pattern)


_ATOMS = [
    'a', 'e', 've', 'v', 'ï', 'é', 'k', 'K', 's', '\u017f', '\u212a', '\u03c3', '\u03a3', '_', ' ', '-', r'\.',
    r'\b', r'\B', r'\w', r'\W', r'\d', r'\s', r'\S', '.', '[a-z]', '[^a-z ]', '[éï]', '[[:upper:]]', r'\pL',
    r'\p{Greek}', '^', '$', r'\C',
]  # fmt: skip
_QUANTIFIERS = ['', '', '', '*', '+', '?', '{1,2}']
_PIECE = st.builds(lambda a, q: a + q, st.sampled_from(_ATOMS), st.sampled_from(_QUANTIFIERS))
_BRANCH = st.lists(_PIECE, min_size=1, max_size=4).map(''.join)
_PATTERN = st.builds(
    lambda flag, branches, group: flag + (f'({branches})' if group else branches),
    st.sampled_from(['', '', '(?i)']),
    st.lists(_BRANCH, min_size=1, max_size=2).map('|'.join),
    st.booleans(),
)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(pattern=_PATTERN, case_sensitive=st.booleans())
def test_random_patterns_hit_the_same_records_everywhere(stores: _Stores, pattern: str, case_sensitive: bool) -> None:
    try:
        compile_pattern(pattern, case_sensitive=case_sensitive)
    except ValueError:
        return  # every store refuses it alike (compile_request)
    expected = stores.hits(stores.reference, pattern, case_sensitive)
    for name, store in stores.others.items():
        assert stores.hits(store, pattern, case_sensitive) == expected, (name, pattern, case_sensitive)
