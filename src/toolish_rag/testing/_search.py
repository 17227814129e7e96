"""The kit's search checks: every edge filter, exact ``top_k``, ranking, hostile queries, regex.

Scope is checked twice: through the `Retriever` (aspect ``'retriever'``, the path the tools take)
and on direct calls (aspect ``'scope'``, `toolish_rag.testing.contract`). See docs/custom-store.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..content import Chunk
from ..errors import QuerySyntaxError
from ..filters import Filter, PropertyFilter as F
from ..protocols import RegexSearch, ResultExpander, TextSearch, VectorSearch
from ..retriever import Retriever
from ..search import RegexRequest, SearchHit
from ._corpus import COMMON_WORD, EDGE_FILTERS, selective_corpus
from ._kit import SEARCHES, KitBase, check, differences
from .contract import SearchProbe, get_records_problems, search_problems

FILTER_IDS = [name for name, _ in EDGE_FILTERS]
EVERY_RECORD = SearchProbe(COMMON_WORD, COMMON_WORD)
"""Every record of the conformance corpus contains `COMMON_WORD`."""
_EVERY_SELECTIVE_RECORD = SearchProbe('record about refund policy', 'record [0-9]+')
"""Every record of `selective_corpus` contains ``record`` and matches ``record [0-9]+``."""
_EXPECTED_ERRORS = ['1002', '1003', '1004', '1010', '1011', '1012']


def _ranking_problems(call: str, hits: list[SearchHit], top_k: int, available: str) -> list[str]:
    problems = []
    if len(hits) != top_k:
        problems.append(f'{call} returned {len(hits)} hits where {available}: it must return top_k={top_k}')
    scores = [h.score for h in hits]
    if scores != sorted(scores, reverse=True):
        problems.append(f'{call} returned scores {scores}: hits come best first (scores never increase)')
    return problems


class SearchChecks(KitBase):
    """Every search protocol the store implements: scope (both ways), ``top_k``, ranking, queries."""

    async def _scope_problems(self, store: Any, f: Filter | None) -> list[str]:
        expected = self.expected(f)
        found = await self.everything(Retriever(store, f), store, len(self.all_records()))
        should = f'through the Retriever, a search under {f!r} finds exactly the {len(expected)} records it admits'
        return differences(f'for {COMMON_WORD!r} under {f!r}', found, expected, should)

    @check(*SEARCHES, aspect='retriever')
    @pytest.mark.parametrize('f', [f for _, f in EDGE_FILTERS], ids=FILTER_IDS)
    async def test_filter_semantics_match_reference(self, loaded: Any, f: Filter) -> None:
        problems = await self._scope_problems(loaded, f)
        assert not problems, '\n'.join(problems)

    @check(*SEARCHES, aspect='retriever')
    async def test_exactly_top_k_under_one_percent_filter(self, empty: Any) -> None:
        await empty.upsert(selective_corpus(500, 100))
        caps = self.features(empty)
        retriever = Retriever(empty, F.eq('rare', True))
        calls = [
            ('vector_search', 'record about refund policy', caps.vector),
            ('text_search', 'record refund policy', caps.text),
            ('hybrid_search', 'record about refund policy', caps.hybrid),
            ('regex_search', 'record [0-9]+', caps.regex),
        ]
        problems: list[str] = []
        for method, query, offered in calls:
            if not offered:
                continue
            hits = list(await getattr(retriever, method)(query, 5))
            call = f'Retriever(filter=rare == True).{method}({query!r}, 5)'
            if len(hits) != 5:
                problems.append(
                    f'{call} returned {len(hits)} hits; 5 of the 500 records match the filter, and every record '
                    "contains the word 'record': a search returns top_k in-scope hits whenever that many match "
                    '(a text search ranks records holding any query word)'
                )
            wrong = [h.id for h in hits if h.record.metadata.get('rare') is not True]
            if wrong:
                problems.append(f'{call} returned {wrong}, outside the filter')
        assert not problems, '\n'.join(problems)

    # -- the scope contract, on direct calls (no Retriever to re-check and re-query) -----------------

    @check(*SEARCHES, aspect='scope')
    @pytest.mark.parametrize('f', [f for _, f in EDGE_FILTERS], ids=FILTER_IDS)
    async def test_searches_honour_the_filter_they_receive(self, loaded: Any, f: Filter) -> None:
        total = len(self.all_records())
        problems = await search_problems(
            loaded, f, self.all_records(), EVERY_RECORD, (1, 3, total), only=self.searched(loaded)
        )
        assert not problems, '\n'.join(problems)

    @check(*SEARCHES, aspect='scope')
    async def test_top_k_under_one_percent_filter_directly(self, empty: Any) -> None:
        corpus = selective_corpus(500, 100)
        await empty.upsert(corpus)
        records = list(corpus[0].chunks)
        problems = await search_problems(
            empty, F.eq('rare', True), records, _EVERY_SELECTIVE_RECORD, (1, 5, 50), only=self.searched(empty)
        )
        assert not problems, '\n'.join(problems)

    @check(*SEARCHES, aspect='scope')
    async def test_scopes_in_sequence_on_one_store(self, loaded: Any, tmp_path: Path, embedder: Any) -> None:
        """Every edge filter on one store, then in reverse order on another: each answer must
        depend on its own scope only. A cache keyed by something coarser than the filter (say
        its ``model_dump()``, where ``True == 1``) serves one scope the records of another.
        Searches and ``get_records`` only: ``expand`` under each filter has its own test, and
        its 18 calls a filter would make this one slow on a real store."""
        other_path = tmp_path / 'store-reversed'
        other_path.mkdir()
        other = await self.loaded_store(other_path, embedder, None)
        filters = [f for _, f in EDGE_FILTERS]
        records = self.all_records()
        problems: list[str] = []
        for store, order in ((loaded, filters), (other, filters[::-1])):
            for f in order:
                problems += await search_problems(
                    store, f, records, EVERY_RECORD, (len(records),), only=self.searched(store)
                )
                if isinstance(store, ResultExpander) and self.features(store).expand:
                    problems += await get_records_problems(store, f, records)
        assert not problems, '\n'.join(problems)

    # -- search behaviour ------------------------------------------------------------------------

    @check(*SEARCHES, aspect='search')
    async def test_top_k_is_respected_and_ranked(self, loaded: Any) -> None:
        caps = self.features(loaded)
        retriever = Retriever(loaded)
        problems: list[str] = []
        if caps.vector:
            hits = await retriever.vector_search('warranty claims details', 3)
            problems += _ranking_problems("vector_search('warranty claims details', 3)", hits, 3, '26 records exist')
        if caps.text:
            hits = await retriever.text_search('warranty claims', 3)
            problems += _ranking_problems("text_search('warranty claims', 3)", hits, 3, '4 chunks contain both words')
        if caps.regex:
            hits = await retriever.regex_search('ERR-10[0-9]{2}', 3)
            problems += _ranking_problems("regex_search('ERR-10[0-9]{2}', 3)", hits, 3, '9 chunks match')
        assert not problems, '\n'.join(problems)

    @check(TextSearch, aspect='search')
    async def test_text_search_finds_the_right_chunk(self, loaded: Any) -> None:
        hits = await Retriever(loaded).text_search('ERR-1012', 3)
        found = [h.record.text for h in hits]
        assert hits and 'ERR-1012' in hits[0].record.text, (
            f"text_search('ERR-1012', 3) returned {found}: the one chunk containing ERR-1012 must come first"
        )

    @check(TextSearch, aspect='search')
    async def test_text_search_survives_hostile_queries(self, loaded: Any) -> None:
        queries = [
            'what is "the refund policy"?',
            'refund AND (policy OR',
            'tenant:globex refund',
            'foo.bar() -> ERR-1012 [x] {y} ~ ^ * ?',
            "it's a 'quoted' \\ back\\slash",
            ':::',
            'NOT',
        ]
        for q in queries:
            try:
                hits = await Retriever(loaded).text_search(q, 5)
            except QuerySyntaxError as e:
                assert str(e).strip(), f'text_search({q!r}) raised a QuerySyntaxError with no message: say what to fix'
                continue
            assert isinstance(hits, list), f'text_search({q!r}) returned {hits!r}: expected a list of hits'
        hits = await Retriever(loaded, F.eq('tenant', 'acme')).text_search('tenant:globex refund policy', 50)
        leaked = [h.id for h in hits if h.record.metadata.get('tenant') != 'acme']
        assert not leaked, (
            f"text_search('tenant:globex refund policy') under tenant == acme returned globex records {leaked}: "
            'field syntax in a query must never widen the scope'
        )

    @check(VectorSearch, aspect='search')
    async def test_vector_search_scores_are_cosine(self, loaded: Any) -> None:
        hits = await Retriever(loaded).vector_search(f'{COMMON_WORD} details warranty claims ERR-1004 acme', 5)
        scores = [h.score for h in hits]
        assert hits and all(-1.0001 <= s <= 1.0001 for s in scores), (
            f'vector_search returned scores {scores}: vector scores are cosine similarities, within [-1, 1], '
            'and a store holding 26 records returns some'
        )

    @check(RegexSearch, aspect='search')
    async def test_regex_is_linear_and_validated(self, loaded: Any) -> None:
        # Exponential for a backtracking engine; must simply complete here.
        hits = await Retriever(loaded).regex_search('(a+)+$', 5)
        assert hits == [], f"regex_search('(a+)+$') returned {[h.id for h in hits]}: no record matches it"
        for bad in ['(unclosed', '(a)\\1', '']:
            try:
                await loaded.regex_search(RegexRequest(bad, 5))
            except QuerySyntaxError as e:
                assert str(e).strip(), f'regex_search({bad!r}) raised a QuerySyntaxError with no message'
            else:
                raise AssertionError(
                    f'regex_search({bad!r}) returned hits: an invalid or empty pattern must raise QuerySyntaxError '
                    '(toolish_rag.regex.compile_request does)'
                )
        hits = await Retriever(loaded).regex_search('ERR-10(0[0-9]|1[0-2])', 50)
        entities = [h.id for h in hits if not isinstance(h.record, Chunk)]
        assert not entities, f'regex_search returned entities {entities}: a regex searches chunks only'
        codes = sorted(h.record.urtext.split('ERR-')[1][:4] for h in hits if isinstance(h.record, Chunk))
        assert codes == _EXPECTED_ERRORS, (
            f"regex_search('ERR-10(0[0-9]|1[0-2])', 50) found the codes {codes}: expected every chunk whose "
            f'text matches, {_EXPECTED_ERRORS}'
        )
        hits = await Retriever(loaded).regex_search('^zebrafish details', 50)
        assert len(hits) == 9, (
            f"regex_search('^zebrafish details', 50) returned {len(hits)} hits: 9 chunks start with these words; "
            'a regex runs on each chunk exactly as written (its urtext), ^ anchoring at its start'
        )
