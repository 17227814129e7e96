"""The kit's `TermStatisticsSource` check: a store's own BM25 counts equal the reference's, in every scope.

See docs/custom-store.md (optional protocols) and docs/federation.md#fusion.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from .._store_attributes import text_analyzer_of
from ..analysis import analyzer_for
from ..content import Chunk
from ..filters import Filter, matches
from ..protocols import TermStatisticsRequest, TermStatisticsSource
from ._corpus import COMMON_WORD, EDGE_FILTERS
from ._kit import KitBase, check
from ._search import FILTER_IDS

_QUERY = f'{COMMON_WORD} refund policy shipping the'
"""Query words: one every record holds, some a few hold, a stop word (analysed away)."""


class TermStatisticsChecks(KitBase):
    """`TermStatisticsSource`: records, total length, document and term frequencies, lengths, in scope."""

    @check(TermStatisticsSource, aspect='scope')
    @pytest.mark.parametrize('f', [None, *(f for _, f in EDGE_FILTERS)], ids=['no filter', *FILTER_IDS])
    async def test_term_statistics_count_the_records_in_scope(self, loaded: Any, f: Filter | None) -> None:
        analyzer = text_analyzer_of(loaded) or analyzer_for(None)  # its own, else English
        records = self.all_records()
        tokens = tuple(dict.fromkeys(analyzer.query_tokens(_QUERY)))
        asked = (*(r.id for r in records), 'missing-id')
        answer = await loaded.term_statistics(TermStatisticsRequest(analyzer.identity, tokens, asked, f))
        if answer is None:
            pytest.skip(f'{type(loaded).__name__} answers no statistics under {analyzer.identity!r}')
        kept = [r for r in records if matches(f, r)]
        analysis = analyzer.analyse(
            [r.text for r in kept], [r.document_id if isinstance(r, Chunk) else r.id for r in kept]
        )
        counted = {r.id: Counter(t) for r, t in zip(kept, analysis.tokens, strict=True)}
        expected = (
            len(kept),
            sum(len(t) for t in analysis.tokens),
            {t: sum(1 for c in counted.values() if c[t]) for t in tokens},
            {rid: sum(c.values()) for rid, c in counted.items()},
            {rid: {t: c[t] for t in tokens if c[t]} for rid, c in counted.items()},
        )
        got = (
            answer.records,
            answer.length,
            dict(answer.document_frequencies),
            dict(answer.lengths),
            {rid: dict(held) for rid, held in answer.term_frequencies.items()},
        )
        names = ['records', 'length', 'document_frequencies', 'lengths', 'term_frequencies']
        problems = [
            f'term_statistics(filter={f!r}).{name} is {g!r}, expected {e!r}: counts over the in-scope records only, '
            'under the requested analyzer (requested ids outside the scope or unknown are left out)'
            for name, g, e in zip(names, got, expected, strict=True)
            if g != e
        ]
        assert not problems, '\n'.join(problems)
