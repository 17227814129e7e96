"""BM25 in SQL over the statistics of the records in scope, from the core analyzer's tokens.

PostgreSQL's ``ts_rank`` has no inverse document frequency, so the store keeps each record's
analyzer tokens (``tokens``, GIN-indexed for lookup), their counts (``counts``) and its length (with its
language in the ``records_census`` index, which an unscoped search's statistics are read from), and one
statement computes bm25s's formula (k1 = 1.5, b = 0.75) with the record count, mean length and
document frequencies of the records the filter admits: the scores of a scope depend on that scope's
records only, as the memory store's do. `term_statistics` answers the same counts exactly.
See docs/stores/postgres.md (Text search) and docs/filters.md.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolish_rag.analysis import TextAnalyzer
from toolish_rag.protocols import TermStatistics, TermStatisticsRequest

from ._database import Database, Tx
from ._filters import Compiled

__all__ = ['K1', 'B', 'TextSearch', 'bm25_rows', 'bm25_statement', 'scope_languages', 'term_statistics_in']

K1 = 1.5
B = 0.75

_BM25 = """
WITH q AS MATERIALIZED (SELECT t, count(*)::float8 AS reps FROM unnest(%(tokens)s::text[]) AS t GROUP BY t),
census AS MATERIALIZED (SELECT language, count(*) AS n, sum(length) AS total FROM records WHERE {f} GROUP BY language),
stats AS MATERIALIZED (
    SELECT COALESCE(sum(n), 0)::float8 AS n, COALESCE(sum(total)::numeric / NULLIF(sum(n), 0), 0)::float8 AS mean
    FROM census
),
hits AS MATERIALIZED (
    SELECT h.id, h.length, x.t, x.c FROM records AS h
    CROSS JOIN LATERAL (SELECT q.t, h.counts[array_position(h.tokens, q.t)]::float8 AS c FROM q) AS x
    WHERE h.tokens && %(tokens)s::text[] AND {f} AND x.c IS NOT NULL
),
idf AS MATERIALIZED (
    SELECT q.t, q.reps * ln(1 + (stats.n - d.df + 0.5) / (d.df + 0.5)) AS w
    FROM (SELECT t, count(*)::float8 AS df FROM hits GROUP BY t) AS d JOIN q ON q.t = d.t CROSS JOIN stats
),
best AS (
    SELECT s.id, s.score FROM (
        SELECT hits.id,
            sum(idf.w * hits.c / (hits.c + %(k1)s * (1 - %(b)s + %(b)s * hits.length / NULLIF(stats.mean, 0)))) AS score
        FROM hits JOIN idf ON idf.t = hits.t CROSS JOIN stats GROUP BY hits.id
    ) AS s WHERE s.score > 0 ORDER BY s.score DESC, s.id LIMIT %(top_k)s
)
SELECT NULL::text AS body, NULL::float8 AS score, (SELECT json_object_agg(language, n) FROM census)::text
UNION ALL
(SELECT r.body, best.score, NULL FROM best JOIN records AS r ON r.id = best.id ORDER BY best.score DESC, best.id)
"""
"""BM25 in one statement, with the census of the scope's languages (its first row) read in the same scan as
the record count and mean length: what the query's tokens were chosen by is checked against it. The in-scope
records holding a query token are read once (``hits``: each one's count of each query token it holds), which
gives the document frequencies too (a record holding a token holds one of the query's); only the best
``top_k`` bodies are read. At a million chunks, reading each token's frequency by its own index scan and every
hit's body before the sort took twice as long (docs/stores/postgres.md, Benchmarks)."""

_CENSUS = 'SELECT language, count(*) FROM records WHERE {f} GROUP BY language'

Rows = list[tuple[str, float]]


def _census(counts: Mapping[str, int]) -> dict[str, int]:
    return {str(language): int(count) for language, count in counts.items() if language}


def scope_languages(tx: Tx, scope: Compiled) -> dict[str, int]:
    """How many in-scope records were analysed in each language (what an ``'auto'`` query is read in)."""
    return _census(dict(tx.execute(_CENSUS.format(f=scope.sql), scope.params).fetchall()))


def bm25_statement(scope: Compiled, tokens: Sequence[str], top_k: int) -> tuple[str, dict[str, Any]]:
    """`_BM25` and its parameters: the census row, then the best ``top_k`` records' bodies and scores."""
    params: dict[str, Any] = {**scope.params, 'tokens': list(tokens), 'top_k': top_k, 'k1': K1, 'b': B}
    return _BM25.format(f=scope.sql), params


def bm25_rows(tx: Tx, scope: Compiled, tokens: Sequence[str], top_k: int) -> Rows:
    """The best ``top_k`` records' bodies and BM25 scores for ``tokens`` (a repeated token counts twice)."""
    return _split(tx.execute(*bm25_statement(scope, tokens, top_k)).fetchall())[1]


def _split(rows: Sequence[tuple[Any, ...]]) -> tuple[dict[str, int], Rows]:
    census = _census(json.loads(rows[0][2] or '{}'))
    return census, [(str(body), float(score)) for body, score, _ in rows[1:]]


@dataclass
class TextSearch:
    """BM25 searches of one store, one statement each: the census of each scope's languages (which an
    ``'auto'`` analyzer reads a query in) is remembered from the last search of that scope and checked
    by the statement itself, which counts it again in the same scan: a query whose languages the
    fresh census would choose differently runs again with it (after writes that change a scope's
    languages, once). The answer is always the one a fresh census gives."""

    analyzer: TextAnalyzer
    censuses: dict[str, dict[str, int]] = field(default_factory=dict)
    remembered: int = 256

    async def rows(
        self, db: Database, scope: Compiled, query: str, top_k: int, rls: Mapping[str, Sequence[Any]] | None
    ) -> Rows:
        key = f'{scope.sql}\x00{json.dumps(scope.params, sort_keys=True, default=repr)}'
        census = self.censuses.get(key) if self.analyzer.auto else {}
        checked = census is None or not self.analyzer.auto  # the census is fresh, or no query depends on it
        if census is None:
            census = await self._count(db, scope, rls)
        for _ in range(3):  # a census that changes twice more during one search is not chased further
            tokens = self.analyzer.query_tokens(query, census)
            if not tokens and not checked:  # no statement checks this census: count it afresh
                census, checked = await self._count(db, scope, rls), True
                tokens = self.analyzer.query_tokens(query, census)
            if not tokens:
                return []
            fresh, rows = _split(await db.query(*bm25_statement(scope, tokens, top_k), scope=rls))
            if len(self.censuses) >= self.remembered:
                self.censuses.clear()
            self.censuses[key] = fresh
            if not self.analyzer.auto or self._languages(query, fresh) == self._languages(query, census):
                break
            census = fresh
        return rows

    async def _count(self, db: Database, scope: Compiled, rls: Mapping[str, Sequence[Any]] | None) -> dict[str, int]:
        return _census(dict(await db.query(_CENSUS.format(f=scope.sql), scope.params, scope=rls)))

    def _languages(self, query: str, census: Mapping[str, int]) -> list[str]:
        return self.analyzer.query_languages(query, census)


def term_statistics_in(tx: Tx, scope: Compiled, request: TermStatisticsRequest, languages: bool) -> TermStatistics:
    """The counts a federation asks (`toolish_rag.protocols.TermStatisticsSource`), exact, in one snapshot."""
    row = tx.execute(
        f'SELECT count(*), COALESCE(sum(length), 0) FROM records WHERE {scope.sql}', scope.params
    ).fetchone()
    assert row is not None
    tokens = list(dict.fromkeys(request.tokens))
    frequencies = {t: 0 for t in tokens}
    if tokens:
        found = tx.execute(
            f'SELECT t, (SELECT count(*) FROM records WHERE tokens @> ARRAY[t] AND {scope.sql}) '
            'FROM unnest(%(tokens)s::text[]) AS t',
            {**scope.params, 'tokens': tokens},
        )
        frequencies.update({str(t): int(n) for t, n in found})
    lengths: dict[str, int] = {}
    held: dict[str, dict[str, int]] = {}
    if request.record_ids:
        rows = tx.execute(
            f'SELECT id, length, tokens, counts FROM records WHERE id = ANY(%(ids)s::text[]) AND {scope.sql}',
            {**scope.params, 'ids': list(dict.fromkeys(request.record_ids))},
        )
        for record_id, length, held_tokens, counts in rows:
            lengths[record_id] = int(length)
            tf = dict(zip(held_tokens, counts, strict=True))
            held[record_id] = {t: int(tf[t]) for t in tokens if t in tf}
    return TermStatistics(
        records=int(row[0]),
        length=int(row[1]),
        document_frequencies=frequencies,
        lengths=lengths,
        term_frequencies=held,
        languages=scope_languages(tx, scope) if languages else {},
    )
