"""BM25 in SQL over the statistics of the records in scope, from the core analyzer's tokens.

PostgreSQL's ``ts_rank`` has no inverse document frequency, so the store keeps each record's
analyzer tokens (``tokens``, GIN-indexed for lookup), their counts (``tf``) and its length, and one
statement computes bm25s's formula (k1 = 1.5, b = 0.75) with the record count, mean length and
document frequencies of the records the filter admits: the scores of a scope depend on that scope's
records only, as the memory store's do. `term_statistics` answers the same counts exactly.
See docs/stores/postgres.md (Text search) and docs/filters.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolish_rag.protocols import TermStatistics, TermStatisticsRequest

from ._database import Tx
from ._filters import Compiled

__all__ = ['K1', 'B', 'bm25_rows', 'scope_languages', 'term_statistics_in']

K1 = 1.5
B = 0.75

_BM25 = """
WITH q AS MATERIALIZED (SELECT t, count(*)::float8 AS reps FROM unnest(%(tokens)s::text[]) AS t GROUP BY t),
stats AS MATERIALIZED (SELECT count(*)::float8 AS n, COALESCE(avg(length), 0)::float8 AS mean FROM records WHERE {f}),
df AS MATERIALIZED (
    SELECT q.t, q.reps, (SELECT count(*) FROM records WHERE tokens @> ARRAY[q.t] AND {f})::float8 AS df FROM q
),
idf AS MATERIALIZED (
    SELECT df.t, df.reps * ln(1 + (stats.n - df.df + 0.5) / (df.df + 0.5)) AS w FROM df, stats WHERE df.df > 0
),
scored AS (
    SELECT h.id, sum(idf.w * u.c / (u.c + %(k1)s * (1 - %(b)s + %(b)s * h.length / NULLIF(stats.mean, 0)))) AS score
    FROM records AS h CROSS JOIN LATERAL unnest(h.tokens, h.counts) AS u(t, c)
    JOIN idf ON idf.t = u.t CROSS JOIN stats
    WHERE h.tokens && %(tokens)s::text[] AND {f}
    GROUP BY h.id
)
SELECT r.body, s.score FROM scored AS s JOIN records AS r ON r.id = s.id
WHERE s.score > 0 ORDER BY s.score DESC, s.id LIMIT %(top_k)s
"""


def scope_languages(tx: Tx, scope: Compiled) -> dict[str, int]:
    """How many in-scope records were analysed in each language (what an ``'auto'`` query is read in)."""
    rows = tx.execute(f'SELECT language, count(*) FROM records WHERE {scope.sql} GROUP BY language', scope.params)
    return {str(language): int(count) for language, count in rows if language}


def bm25_rows(tx: Tx, scope: Compiled, tokens: Sequence[str], top_k: int) -> list[tuple[str, float]]:
    """The best ``top_k`` records' bodies and BM25 scores for ``tokens`` (a repeated token counts twice)."""
    params: dict[str, Any] = {**scope.params, 'tokens': list(tokens), 'top_k': top_k, 'k1': K1, 'b': B}
    return [(str(body), float(score)) for body, score in tx.execute(_BM25.format(f=scope.sql), params)]


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
