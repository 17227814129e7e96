"""Vector and regex search inside one transaction.

**Vector**: pgvector's HNSW index applies a ``WHERE`` clause after its graph search, so a selective
filter would leave fewer than ``top_k`` hits. Each query first counts the in-scope rows, up to
``exact_below``: at most that many are ranked exactly (every in-scope vector, no index: results
that depend on the scope's rows only); more use the index with pgvector's iterative scans
(``hnsw.iterative_scan = strict_order``), which keep reading the graph until ``top_k`` rows pass
the filter. **Regex**: the pattern is compiled by RE2 in Python and never reaches the server; the
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

__all__ = ['VectorPlan', 'regex_rows', 'scoped_count', 'vector_rows']


def scoped_count(tx: Tx, scope: Compiled, cap: int) -> int:
    """How many records the scope holds, counting no further than ``cap + 1``.

    Unscoped, a table the planner's statistics put well past ``cap`` is not counted at all.
    """
    count = f'(SELECT count(*) FROM (SELECT 1 FROM records WHERE {scope.sql} LIMIT %(cap)s) AS s)'
    if scope.sql == 'TRUE':
        count = (
            "CASE WHEN (SELECT reltuples FROM pg_class WHERE oid = 'records'::regclass) > 2 * %(cap)s "
            f'THEN %(cap)s ELSE {count} END'
        )
    row = tx.execute(f'SELECT {count}', {**scope.params, 'cap': cap + 1}).fetchone()
    return int(row[0]) if row else 0


class VectorPlan:
    """How a vector query runs: ``exact`` (every in-scope vector ranked) or ``hnsw`` (the index, iterated)."""

    EXACT = 'exact'
    HNSW = 'hnsw'


def vector_rows(
    tx: Tx, scope: Compiled, vector: str, top_k: int, *, exact_below: int, ef_search: int | None
) -> tuple[str, list[tuple[str, float]]]:
    """The plan used and the best ``top_k`` in-scope records' bodies with their cosine similarities."""
    params: dict[str, Any] = {**scope.params, 'q': vector, 'top_k': top_k}
    if scoped_count(tx, scope, exact_below) <= exact_below:
        plan = VectorPlan.EXACT
        sql = (  # the fence (OFFSET 0) keeps the index out; bodies are read for the top_k only
            'SELECT r.body, s.d FROM (SELECT id, embedding <=> %(q)s::vector AS d FROM '
            f'(SELECT id, embedding FROM records WHERE embedding IS NOT NULL AND {scope.sql} OFFSET 0) AS e '
            'ORDER BY d, id LIMIT %(top_k)s) AS s JOIN records AS r ON r.id = s.id ORDER BY s.d, s.id'
        )
    else:
        plan = VectorPlan.HNSW
        ef = ef_search if ef_search is not None else max(100, 4 * top_k)
        tx.execute(
            "SELECT set_config('hnsw.ef_search', %s, true), set_config('hnsw.iterative_scan', 'strict_order', true)",
            (str(min(ef, 1000)),),
        )
        sql = (
            f'SELECT body, embedding <=> %(q)s::vector AS d FROM records WHERE embedding IS NOT NULL AND {scope.sql} '
            'ORDER BY embedding <=> %(q)s::vector LIMIT %(top_k)s'
        )
    rows = [(str(body), _similarity(d)) for body, d in tx.execute(sql, params)]
    return plan, rows


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
