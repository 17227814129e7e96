"""Vector search in one statement, and regex search inside one transaction.

**Vector**: pgvector's HNSW index applies a ``WHERE`` clause after its graph search, so a selective
filter would leave fewer than ``top_k`` hits. One statement (`vector_statement`) reads the in-scope
vectors up to ``exact_below + 1``: at most ``exact_below`` are ranked exactly (every in-scope vector,
no index: results that depend on the scope's rows only); more use the index with pgvector's iterative
scans (``hnsw.iterative_scan = relaxed_order``, re-sorted), which keep reading the graph until
``top_k`` rows pass the filter. **Regex**: the pattern is compiled by RE2 in Python and never reaches the server; the
in-scope rows are streamed (after a bounded count: `scan_limit_error` past ``scan_limit``) and
matched in linear time. See docs/stores/postgres.md (Vector search, Regex).
"""

from __future__ import annotations

import math
from typing import Any

from toolish_rag import Chunk, RegexRequest, SearchHit
from toolish_rag.regex import count_matches, regex_rank_key, scan_limit_error

from ._database import Tx
from ._filters import Compiled
from ._reads import parse

__all__ = [
    'EF_SEARCH',
    'EF_SEARCH_FILTERED',
    'UNSCOPED_PLAN',
    'StaleEmbedder',
    'VectorPlan',
    'hnsw_settings',
    'regex_rows',
    'scoped_count',
    'vector_hits',
    'vector_statement',
]


_BIG = "(SELECT reltuples FROM pg_class WHERE oid = 'records'::regclass) >= {cap}::bigint"
"""The planner's statistics put the table at ``cap`` rows or more: an unscoped vector query then takes the index
without reading ``cap`` vectors first (an estimate: after large deletes, until the next ``ANALYZE``, a table
just under ``exact_below`` may take the index)."""


def scoped_count(tx: Tx, scope: Compiled, cap: int) -> int:
    """How many records the scope holds, counting no further than ``cap + 1``.

    Unscoped, a table the planner's statistics put well past the cap is not counted at all.
    """
    count = f'(SELECT count(*) FROM (SELECT 1 FROM records WHERE {scope.sql} LIMIT %(cap)s::bigint) AS s)'
    if scope.sql == 'TRUE':
        well_past = "(SELECT reltuples FROM pg_class WHERE oid = 'records'::regclass) > 2 * %(cap)s::bigint"
        count = f'CASE WHEN {well_past} THEN %(cap)s::bigint ELSE {count} END'
    row = tx.execute(f'SELECT {count}', {**scope.params, 'cap': cap + 1}).fetchone()
    return int(row[0]) if row else 0


class VectorPlan:
    """How a vector query runs: ``exact`` (every in-scope vector ranked) or ``hnsw`` (the index, iterated)."""

    EXACT = 'exact'
    HNSW = 'hnsw'


_SMALL = (
    '(SELECT x > 0 AND x < {cap}::bigint FROM (SELECT GREATEST(reltuples, pg_stat_get_live_tuples(oid)) AS x '
    "FROM pg_class WHERE oid = 'records'::regclass) AS t)"
)
"""The planner's statistics and the live-row counter put the whole table under ``cap`` rows: an unscoped vector query
then ranks every vector exactly without counting them first (the count, a second pass over the rows, was a third of the
exact plan's time at 5,000 rows). Estimates (the counter trails a writer by about a second): a table that has just grown
past ``exact_below`` is still ranked exactly, which is slower, never less exact. Unknown statistics (0) count."""

_VECTOR = """
WITH stale AS MATERIALIZED (
    SELECT (value -> 'embedder')::text AS embedder FROM meta
    WHERE key = 'manifest' AND value -> 'embedder' IS DISTINCT FROM %(embedder)s::jsonb
),
small AS MATERIALIZED (
    SELECT id, d FROM (SELECT id, embedding <=> %(q)s::vector AS d FROM records
    WHERE embedding IS NOT NULL AND {small} AND NOT EXISTS (SELECT FROM stale) OFFSET 0) AS e ORDER BY d, id LIMIT {top_k}
),
scoped AS MATERIALIZED (
    SELECT id, embedding <=> %(q)s::vector AS d FROM records
    WHERE embedding IS NOT NULL AND {f} AND NOT {small} AND NOT {big} AND NOT EXISTS (SELECT FROM stale)
    LIMIT {cap}::bigint
),
n AS MATERIALIZED (SELECT count(*) AS n FROM scoped),
approximate AS MATERIALIZED (
    SELECT id, embedding <=> %(q)s::vector AS d FROM records
    WHERE embedding IS NOT NULL AND {f} AND ({big} OR (SELECT n FROM n) >= {cap}::bigint)
    AND NOT EXISTS (SELECT FROM stale) ORDER BY embedding <=> %(q)s::vector LIMIT {top_k}
),
best AS (
    SELECT 'exact' AS plan, id, d FROM small
    UNION ALL
    (SELECT 'exact', id, d FROM scoped WHERE (SELECT n FROM n) < {cap}::bigint ORDER BY d, id LIMIT {top_k})
    UNION ALL SELECT 'hnsw', id, d FROM approximate
)
SELECT plan, body, d FROM (
    SELECT best.plan, (SELECT r.body FROM records AS r WHERE r.id = best.id) AS body, best.d, best.id FROM best
    UNION ALL SELECT 'stale', embedder, NULL, NULL FROM stale
) AS u ORDER BY d, id
"""
"""One statement, one round trip. Unscoped, a table the statistics put under ``exact_below + 1`` rows (``small``) is
ranked exactly in one pass (``OFFSET 0`` keeps the planner off the index). Otherwise ``scoped`` reads at most
``exact_below + 1`` in-scope vectors with their distances: when the scope holds no more than ``exact_below``, they are
ranked exactly (every in-scope vector, no index). Otherwise the HNSW index is walked with iterative scans
(``relaxed_order``: its candidates re-sorted by exact distance). A branch not taken is a one-time filter that is false:
PostgreSQL never runs it. Unscoped, a table the planner's statistics put well past the cap (``big``) goes to the index
without reading the cap's rows first.

``stale``: the manifest names another embedder than the one the query was embedded by (another process re-embedded
the store): no branch runs, and the one row says which (`vector_hits`). ``top_k`` and the cap are integers written
into the text, so the plan of an unscoped query depends on no parameter that changes it: it is planned once per
pooled connection (`UNSCOPED_PLAN`), where a scoped one is planned for its filter's values each time."""

UNSCOPED_PLAN = {'plan_cache_mode': 'force_generic_plan'}
"""The setting of an unscoped vector query: its prepared statement's one plan is reused (planning the statement was
0.3 ms, a tenth of the exact plan's time at 5,000 rows). Its parameters (the vector, the embedder) change no plan."""

EF_SEARCH = 400
"""The default ``hnsw.ef_search`` of an unfiltered query (for ``top_k`` up to 100): recall@10 of 0.97 or more on
real sentences with all-MiniLM-L6-v2 and with hashing vectors, where pgvector's own 40 gave 0.87."""

EF_SEARCH_FILTERED = 1000
"""The default ``hnsw.ef_search`` of a filtered query on the HNSW plan (pgvector's most): a filter admitting a
share of the rows needs about that much longer a candidate list. 100,000 real sentences with hashing vectors:
recall@10 0.97 at 10% and 0.985 at 50% selectivity, where 400 gave 0.93 and 0.97 (docs/stores/postgres.md)."""


def hnsw_settings(top_k: int, ef_search: int | None, *, filtered: bool = False) -> dict[str, str]:
    """The ``hnsw.*`` settings of a query of ``top_k`` (``ef_search`` ``None``: `EF_SEARCH`, or
    `EF_SEARCH_FILTERED` under a filter, and at least ``4 * top_k``; at most 1,000, pgvector's limit)."""
    default = EF_SEARCH_FILTERED if filtered else EF_SEARCH
    ef = ef_search if ef_search is not None else max(default, 4 * top_k)
    return {'hnsw.ef_search': str(min(max(ef, top_k), 1000)), 'hnsw.iterative_scan': 'relaxed_order'}


def vector_statement(
    scope: Compiled, vector: str, top_k: int, *, exact_below: int, embedder: str
) -> tuple[str, dict[str, Any]]:
    """The statement (see `_VECTOR`) and its parameters; its rows are (plan, body, cosine distance).

    ``embedder``: the JSON of the embedder identity ``vector`` was made by, as the manifest records it.
    """
    unscoped = scope.sql == 'TRUE'
    ints = {'top_k': int(top_k), 'cap': int(exact_below) + 1}
    statement = _VECTOR.format(
        f=scope.sql,
        big=_BIG.format(**ints) if unscoped else 'FALSE',
        small=_SMALL.format(**ints) if unscoped else 'FALSE',
        **ints,
    )
    return statement, {**scope.params, 'q': vector, 'embedder': embedder}


class StaleEmbedder(Exception):
    """The manifest records another embedder than the query's (``recorded``: its JSON): see `vector_hits`."""

    def __init__(self, recorded: str) -> None:
        super().__init__(recorded)
        self.recorded = recorded


def vector_hits(rows: list[tuple[Any, ...]]) -> tuple[str | None, list[tuple[str, float]]]:
    """The plan that ran and the (body, cosine similarity) pairs of `vector_statement`'s rows.

    Raises `StaleEmbedder` when the statement found the manifest naming another embedder (no branch ran).
    """
    if rows and rows[-1][0] == 'stale':
        raise StaleEmbedder(str(rows[-1][1]))
    plan = str(rows[0][0]) if rows else None
    return plan, [(str(body), _similarity(d)) for _, body, d in rows]


def _similarity(distance: float | None) -> float:
    """Cosine similarity from pgvector's cosine distance (a zero vector's NaN reads as 0)."""
    if distance is None or math.isnan(distance):
        return 0.0
    return 1.0 - float(distance)


def regex_rows(tx: Tx, scope: Compiled, pattern: Any, request: RegexRequest, scan_limit: int | None) -> list[SearchHit]:
    """The in-scope records ``pattern`` matches, ranked by `toolish_rag.regex.regex_rank_key`."""
    if scan_limit is not None and scoped_count(tx, scope, scan_limit) > scan_limit:
        raise scan_limit_error(scan_limit + 1, scan_limit)
    ranked: list[tuple[tuple[int, str, int], str, int, tuple[str, ...]]] = []
    with tx.cursor(name='toolish_regex') as cursor:
        cursor.itersize = 2000
        cursor.execute(
            f'SELECT id, document_id, sequence_number, regex_text, CASE WHEN regex_text IS NULL THEN body END '
            f'FROM records WHERE {scope.sql}',
            scope.params,
        )
        for record_id, document_id, sequence_number, text, body in cursor:
            if text is None:
                record = parse(body)
                text = record.urtext if isinstance(record, Chunk) else record.text
            count, samples = count_matches(pattern, text)
            if count:
                key = regex_rank_key(count, record_id, document_id, sequence_number)
                ranked.append((key, record_id, count, samples))
    ranked.sort()
    best = ranked[: request.top_k]
    if not best:
        return []
    bodies: dict[str, str] = dict(
        tx.execute('SELECT id, body FROM records WHERE id = ANY(%s::text[])', ([r[1] for r in best],))
    )
    return [SearchHit(parse(bodies[record_id]), float(count), samples) for _, record_id, count, samples in best]
