"""Checks of the optional attribute protocols: a store that states an attribute behaves as it says.

`HasEmbedder` (its vectors are its embedder's), `HasTextAnalyzer` (its text hits hold an analysed
query token), `HasEmbeddingWindows`, `HasRegexScanLimit`, `Upgradable` and `Reembeddable`. The library
reads these to choose behaviour (docs/custom-store.md#optional-attributes), so a wrong one misleads it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, TypeVar

import pytest
from pydantic_ai.embeddings import Embedder

from ..analysis import TextAnalyzer
from ..content import Chunk
from ..embedding import HashingEmbeddingModel
from ..errors import InvalidRequestError
from ..protocols import (
    HasEmbedder,
    HasEmbeddingWindows,
    HasRegexScanLimit,
    HasTextAnalyzer,
    Reembeddable,
    RegexSearch,
    TextSearch,
    Upgradable,
    VectorSearch,
)
from ..retriever import Retriever
from ..search import RegexRequest, SearchHit, SearchRequest
from ._corpus import COMMON_WORD
from ._kit import KitBase, check, report

_QUERIES = ('refunds policies', 'shipped time', 'claimed warranties', COMMON_WORD)
"""Inflected words: an analyzer that stems otherwise than the store's finds other tokens in its hits."""
_TOLERANCE = 1e-3
_T = TypeVar('_T')


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    norms = math.hypot(*a) * math.hypot(*b)
    return sum(x * y for x, y in zip(a, b, strict=True)) / norms if norms else 0.0


async def _score_problems(store: Any, embedder: Embedder, who: str) -> list[str]:
    """Each vector hit whose score is not the cosine of ``embedder``'s query and document vectors."""
    from ..windows import EmbeddingWindows, window_texts  # here: the kit loads no numpy until a vector check runs

    windows = store.windows if isinstance(store, HasEmbeddingWindows) else None
    problems: list[str] = []
    compared = 0
    for query in _QUERIES:
        hits: Sequence[SearchHit] = await store.vector_search(SearchRequest(query, 5))
        texts = [h.record.text for h in hits]
        if isinstance(windows, EmbeddingWindows):  # a text embedded as several windows scores by them all
            rows = await window_texts(embedder, texts, windows)
            hits, texts = (
                [h for h, r in zip(hits, rows, strict=True) if len(r) == 1],
                [t for t, r in zip(texts, rows, strict=True) if len(r) == 1],
            )
        if not hits:
            continue
        q = (await embedder.embed_query([query])).embeddings[0]
        docs = (await embedder.embed_documents(texts)).embeddings
        for hit, cosine in zip(hits, (_cosine(d, q) for d in docs), strict=True):
            compared += 1
            if abs(hit.score - float(cosine)) > _TOLERANCE:
                problems.append(
                    f'{who}: vector_search({query!r}) scored {hit.id} {hit.score:.4f}, but its embedder gives '
                    f'cosine {cosine:.4f}: embed records with embed_documents(record.text) and queries with '
                    'embed_query, using the embedder the store exposes'
                )
    if not compared:
        problems.append(f'{who}: vector_search returned no hit to compare with its embedder')
    return problems


def _stated(store: object, value: object, attribute: str, kind: type[_T]) -> _T | None:
    """``value`` (the store's ``attribute``), checked to be a ``kind`` or ``None``."""
    assert value is None or isinstance(value, kind), (
        f'{type(store).__name__}.{attribute} is a {type(value).__name__}: state a toolish_rag.{kind.__name__} or None'
    )
    return value


class AttributeChecks(KitBase):
    """The optional attributes a store states: each one true of the store (see the module)."""

    @check(HasEmbedder, aspect='search')
    async def test_embedder_gives_the_stored_vectors(self, loaded: Any) -> None:
        name = type(loaded).__name__
        embedder = loaded.embedder
        assert isinstance(embedder, Embedder), (
            f'{name}.embedder is a {type(embedder).__name__}, not a pydantic-ai Embedder: the library embeds with it'
        )
        if VectorSearch not in self.searched(loaded):
            pytest.skip(f'{name} has no vector search to compare its embedder with')
        problems = await _score_problems(loaded, embedder, name)
        assert not problems, report(problems)

    @check(HasTextAnalyzer, aspect='search')
    async def test_text_analyzer_cuts_the_searched_text(self, loaded: Any) -> None:
        name = type(loaded).__name__
        analyzer = _stated(loaded, loaded.text_analyzer, 'text_analyzer', TextAnalyzer)
        if analyzer is None:
            pytest.skip(f'{name} analyses its text its own way (text_analyzer is None)')
        assert isinstance(analyzer.language, str)
        if TextSearch not in self.searched(loaded):
            pytest.skip(f'{name} has no text search to compare its analyzer with')
        records = self.all_records()
        analysis = analyzer.analyse(
            [r.text for r in records], [r.document_id if isinstance(r, Chunk) else r.id for r in records]
        )
        tokens = {r.id: set(t) for r, t in zip(records, analysis.tokens, strict=True)}
        problems = []
        for query in _QUERIES:
            wanted = set(analyzer.query_tokens(query, sorted(set(analysis.languages))))
            for hit in await loaded.text_search(SearchRequest(query, 10)):
                if not wanted & tokens.get(hit.id, wanted):
                    problems.append(
                        f'{name}: text_search({query!r}) found {hit.id}, which holds none of the query tokens '
                        f'{sorted(wanted)} under its text_analyzer ({analyzer.identity}): state the analyzer '
                        'the store indexes and queries with'
                    )
        assert not problems, report(problems)

    @check(HasEmbeddingWindows, aspect='search')
    async def test_embedding_windows_are_stated_with_their_embedder(self, loaded: Any) -> None:
        from ..windows import EmbeddingWindows, window_texts

        name = type(loaded).__name__
        windows = _stated(loaded, loaded.windows, 'windows', EmbeddingWindows)
        assert isinstance(loaded.embedder, Embedder), f'{name} states windows but its embedder is no Embedder'
        if windows is not None:
            rows = await window_texts(loaded.embedder, [r.text for r in self.all_records()[:5]], windows)
            assert all(r and r[0] for r in rows), f'{name}: window_texts of its records with its windows is empty'

    @check(HasRegexScanLimit, aspect='search')
    async def test_regex_scan_limit_is_the_one_applied(self, loaded: Any) -> None:
        name = type(loaded).__name__
        limit = loaded.regex_scan_limit
        assert limit is None or (isinstance(limit, int) and not isinstance(limit, bool) and limit > 0), (
            f'{name}.regex_scan_limit is {limit!r}: state a positive int, or None for no limit'
        )
        if RegexSearch not in self.searched(loaded):
            pytest.skip(f'{name} has no regex search')
        total = len(self.all_records())
        request = RegexRequest(COMMON_WORD, total)  # selects every record
        try:
            hits = await loaded.regex_search(request)
        except InvalidRequestError:
            assert limit is not None and limit < total, (
                f'{name} refused a pattern its {total} records match, under its regex_scan_limit {limit!r}'
            )
        else:
            assert limit is None or limit >= total, (
                f'{name} scanned all {total} records for a pattern, over its regex_scan_limit {limit}: refuse it '
                '(toolish_rag.regex.scan_limit_error), or state the limit it applies'
            )
            assert len(hits) == total, (
                f'{name}: a pattern every one of its {total} records matches found {len(hits)}, under its '
                f'regex_scan_limit {limit!r}: refuse only what the stated limit refuses'
            )

    @check(Upgradable, aspect='persistence')
    async def test_upgrade_of_a_current_store_keeps_every_record(self, loaded: Any, store_path: Any) -> None:
        name = type(loaded).__name__
        await loaded.upgrade()  # may write what a new store lacks (a manifest); then it is current
        again = await loaded.upgrade()
        assert isinstance(again, list) and not again, (
            f'{name}.upgrade() of a store it just upgraded returned {again!r}: return [] when already current'
        )
        found = await self.everything(Retriever(loaded), loaded, len(self.all_records()))
        lost = {mode: sorted(self.expected(None) - ids) for mode, ids in found.items() if ids != self.expected(None)}
        assert not lost, f'{name}.upgrade() changed what its searches find: {lost}'

    @check(Reembeddable, aspect='writes')
    async def test_reembed_embeds_every_record_with_the_new_embedder(self, loaded: Any) -> None:
        name = type(loaded).__name__
        new = Embedder(HashingEmbeddingModel(self.embedding_dimensions // 2))
        count = await loaded.reembed(new)
        assert count == len(self.all_records()), (
            f'{name}.reembed returned {count}: the number of records it embedded again ({len(self.all_records())})'
        )
        if isinstance(loaded, HasEmbedder) and VectorSearch in self.searched(loaded):
            problems = await _score_problems(loaded, loaded.embedder, f'{name} after reembed')
            assert not problems, report(problems)
