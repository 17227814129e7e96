"""The reads: vector, text and regex search, record lookup and expansion, as LanceDB queries.

See docs/stores/lancedb.md (Design notes).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from lancedb.query import ColumnOrdering

from toolish_rag.content import Chunk, Record
from toolish_rag.filters import Filter
from toolish_rag.regex import count_matches, regex_rank_key, scan_limit_error
from toolish_rag.search import ExpansionRequest, RegexRequest, SearchHit, SearchRequest

from ._filters import filter_to_where, sql_string
from ._regex_prefilter import prefilter_pattern
from ._schema import RECORDS_TABLE, RESULT_COLUMNS, in_lists, record_from_row
from ._tables import Tables
from ._text_query import parse_text_query
from ._windows import WINDOWS_COLUMN

__all__ = [
    'AnnProbe',
    'PinnedRecords',
    'PinnedTable',
    'Pins',
    'ScopeShares',
    'candidate_window',
    'expand',
    'expand_around',
    'fetch',
    'regex_search',
    'settled',
    'text_search',
    'vector_search',
]


@dataclass(frozen=True, slots=True)
class AnnProbe:
    """How an ANN query searches: IVF partitions probed, and candidates re-scored exactly per hit."""

    nprobes: int
    refine_factor: int


def _hits(table: pa.Table, score_column: str, transform: Callable[[float], float] | None = None) -> list[SearchHit]:
    hits: list[SearchHit] = []
    for row in table.to_pylist():
        raw = float(row[score_column])
        hits.append(SearchHit(record=record_from_row(row), score=transform(raw) if transform else raw))
    return hits


async def vector_search(
    tables: Tables,
    table: Any,
    vector: np.ndarray[Any, Any],
    request: SearchRequest,
    probe: AnnProbe,
    scoring: str | None = None,
) -> list[SearchHit]:
    """Top ``top_k`` by cosine similarity (exact below the ANN index, ANN with it).

    On the ``windows`` column LanceDB's distance is MaxP (the best row). With ``scoring``
    ``'mean_whole_best'`` (`toolish_rag.windows.EmbeddingWindows.scoring`) a record scores the
    mean of its ``vector``'s cosine and its best row's, which LanceDB cannot rank by, so
    `_mean_whole_best` ranks candidates fetched by MaxP and widens them until the top ``k`` is
    provably the same as over the whole scope.
    """
    where = tables.where(request.filter)
    if not np.any(vector):
        # No direction to compare with (e.g. a query without words for a lexical embedder):
        # every record is equally (un)similar, as in the reference store: score 0, table order.
        q = table.query().select(RESULT_COLUMNS).limit(request.top_k)
        rows = await (q if where is None else q.where(where)).to_arrow()
        return [SearchHit(record=record_from_row(row), score=0.0) for row in rows.to_pylist()]

    def build(exact: bool, limit: int = request.top_k, columns: Sequence[str] = ()) -> Any:
        q = table.query().nearest_to(vector).column(tables.vector_column).distance_type('cosine').limit(limit)
        q = q.select([*RESULT_COLUMNS, *columns, '_distance'])
        if where is not None:
            q = q.where(where)
        if exact:
            q = q.bypass_vector_index()
        elif tables.has_ann:
            q = q.nprobes(probe.nprobes).refine_factor(probe.refine_factor)
        return q

    if scoring == 'mean_whole_best' and tables.vector_column == WINDOWS_COLUMN:
        return await _mean_whole_best(
            build, vector, request.top_k, count=lambda: table.count_rows(where), ann=tables.has_ann
        )
    result = await build(exact=False).to_arrow()
    # An ANN probe can come back short under a selective filter: then answer exactly.
    if tables.has_ann and result.num_rows < request.top_k and await table.count_rows(where) > result.num_rows:
        result = await build(exact=True).to_arrow()
    return _hits(result, '_distance', lambda d: 1.0 - d)


async def _mean_whole_best(
    build: Callable[..., Any],
    vector: np.ndarray[Any, Any],
    top_k: int,
    count: Callable[[], Awaitable[int]],
    ann: bool,
) -> list[SearchHit]:
    """Top ``top_k`` by the mean of the whole text's cosine and the best row's (threshold algorithm).

    Row 0 of every record's windows is its ``vector``, so its whole-text cosine ``w`` is at most
    its best row's ``b`` and its score ``(w + b) / 2`` at most ``b``. Fetch the ``n`` best records
    by ``b`` (LanceDB's MaxP): a record not among them has ``b`` at most the smallest ``b`` fetched,
    so once the ``k``-th best score among the fetched reaches that bound (or the scope holds fewer
    than ``n`` records) no other record can enter the top ``k``. Otherwise fetch four times as many.
    With an ANN index the MaxP candidates are approximate, as the single-vector search is (and
    exact when the probe comes back short under a selective filter).
    """
    q = np.asarray(vector, dtype=np.float32)
    q = q / (float(np.linalg.norm(q)) or 1.0)
    limit = max(2 * top_k, top_k + 20)
    exact = False
    while True:
        result = await build(exact=exact, limit=limit, columns=('vector',)).to_arrow()
        if ann and not exact and result.num_rows < limit and await count() > result.num_rows:
            exact = True
            continue
        if not result.num_rows:
            return []
        best = 1.0 - np.asarray(result.column('_distance').to_numpy(zero_copy_only=False), dtype=np.float64)
        flat = result.column('vector').combine_chunks().flatten().to_numpy(zero_copy_only=False)
        whole = flat.reshape(result.num_rows, -1).astype(np.float32)
        norms = np.linalg.norm(whole, axis=1)
        cosine = (whole @ q) / np.where(norms > 0, norms, 1.0)
        scores = (np.minimum(cosine, best) + best) / 2
        order = np.argsort(-scores, kind='stable')[:top_k]
        if result.num_rows < limit or len(order) < top_k or scores[order[-1]] >= best.min():
            break
        limit *= 4
    rows = result.select(RESULT_COLUMNS).to_pylist()
    return [SearchHit(record=record_from_row(rows[i]), score=float(scores[i])) for i in order]


CANDIDATE_FACTOR = 3
"""A broad scope's text search reads this many times ``top_k`` / share candidates of the unscoped ranking
(three times the candidates the scope's share leads one to expect it needs: a window short of ``top_k``
in-scope rows costs a second query)."""
MAX_CANDIDATES = 100
"""The most candidates that plan reads. Reading each costs LanceDB a row fetch: at a million rows
(top_k 10), a window of 300 for a 10% scope made the tool call 16.6 ms at p50 where the prefilter,
an index lookup (`toolish_rag_lancedb._metadata_indexes`), took 13.8 ms; for a 50% scope the
prefilter's lookup hands back half a million row ids and a window of 60 is the cheaper. So a scope
needing more than 100 candidates (under 30% at top_k 10) is prefiltered."""


class ScopeShares:
    """The share of the records each scope admits, per table version: what plans a filtered text search.

    Counting a scope is an index lookup (or a scan of its columns), a few milliseconds at a
    million rows and 85 ms for a cold half: too much per search, so it is counted once per table
    version and remembered (the most recent ``capacity`` scopes). A share from a version ago only
    chooses the plan; the answer is the same either way (`text_search`).

    The post-filtered plan is only offered while the text index covers every row (`indexed`):
    LanceDB scores rows its full-text index does not cover yet by a flat search whose BM25
    statistics are those of the rows it is given, so there a prefilter and a post-filter score
    the same row differently (measured: 0.786 and 0.766), and the answer would depend on the plan.
    """

    def __init__(self, capacity: int = 256) -> None:
        self._capacity = capacity
        self._shares: OrderedDict[tuple[int, str], float] = OrderedDict()
        self._indexed: tuple[int, bool] | None = None

    async def indexed(self, table: Any) -> bool:
        """Whether every full-text index of ``table`` covers every row (asked once per table version)."""
        version = int(await table.version())
        if self._indexed is None or self._indexed[0] != version:
            covered = True
            for ix in await table.list_indices():
                if 'fts' in str(ix.index_type).lower():
                    stats = await table.index_stats(ix.name)
                    covered = covered and stats is not None and stats.num_unindexed_rows == 0
            self._indexed = (version, covered)
        return self._indexed[1]

    async def share(self, table: Any, where: str) -> float:
        key = (int(await table.version()), where)
        share = self._shares.get(key)
        if share is None:
            total = int(await table.count_rows())
            share = int(await table.count_rows(where)) / total if total else 0.0
            self._shares[key] = share
            while len(self._shares) > self._capacity:
                self._shares.popitem(last=False)
        else:
            self._shares.move_to_end(key)
        return share


def candidate_window(share: float, top_k: int) -> int | None:
    """How many candidates of the unscoped ranking a scope admitting ``share`` of the records needs
    (`CANDIDATE_FACTOR` times ``top_k / share``), or ``None``: more than `MAX_CANDIDATES`, prefilter."""
    if share <= 0:
        return None
    window = math.ceil(CANDIDATE_FACTOR * top_k / share)
    return window if window <= MAX_CANDIDATES else None


def settled(window: pa.Table, top_k: int) -> bool:
    """Whether the in-scope rows of a candidate window are the scope's own top ``top_k``, provably.

    The window is the unscoped top-``n``, so every record scoring above its lowest score is in it.
    When some in-scope row of it scores strictly below the ``top_k``-th, every in-scope record
    scoring at least the ``top_k``-th is in the window: the first ``top_k`` in-scope rows are the
    records the prefiltered query returns, and no tie at the cut lets a record outside the scope
    decide which of equally scored ones are shown.
    """
    if window.num_rows <= top_k:
        return False
    scores = window.column('_score')
    return float(scores[top_k].as_py()) < float(scores[top_k - 1].as_py())


async def text_search(
    tables: Tables, table: Any, request: SearchRequest, scan_limit: int, shares: ScopeShares | None = None
) -> list[SearchHit]:
    """BM25 over the indexed text (or analysed words), with a substring fallback when no word matches.

    A scope is LanceDB's prefilter: it evaluates the clause into a row mask before BM25 runs,
    which at a million rows costs more than the search when the scope is broad (an index lookup
    that hands back half a million row ids). So with ``shares``, a scope admitting a large share
    of the records first reads the unscoped top ``n`` (`candidate_window`) with the same clause as
    a post-filter: LanceDB evaluates it on those ``n`` rows only. When that `settled` the scope's
    top ``top_k``, those are the hits, with the prefiltered query's scores; otherwise (a scope
    whose records rank low for this query) the prefiltered query answers, as it does for narrow
    scopes. Both read the same ``WHERE``: only in-scope rows ever leave LanceDB.
    """
    parsed = parse_text_query(request.query, analyzer=tables.text_analyzer, languages=tables.known_text_languages())
    where = tables.where(request.filter)
    if parsed.fts is not None:
        fts = parsed.fts

        def query() -> Any:  # a new builder each time: LanceDB's builders change in place
            return table.query().nearest_to_text(fts).select([*RESULT_COLUMNS, '_score'])

        def prefiltered(limit: int) -> Any:
            q = query()
            return (q if where is None else q.where(where)).limit(limit).to_arrow()

        try:
            # One row more than asked: whether records tie across the cut (see `_cut_at`).
            result = await _postfiltered(query, table, where, request.top_k + 1, shares)
            if result is None:
                result = await prefiltered(request.top_k + 1)
            result = await _cut_at(result, request.top_k, prefiltered)
        except ValueError as exc:
            if 'INVERTED index' not in str(exc):
                raise
            # A writer died between creating the table and its text index (the next write
            # adds it): scan for the words instead.
            words = tuple(w for w in request.query.split() if w)
            return await _substring_search(tables, table, (request.query, *words), request.top_k, where, scan_limit)
        if result.num_rows:
            return _hits(result, '_score')
    return await _substring_search(tables, table, parsed.substrings, request.top_k, where, scan_limit)


async def _cut_at(result: Any, top_k: int, fetch: Callable[[int], Any]) -> Any:
    """The first ``top_k`` rows of ``result`` (``top_k + 1`` asked), records of equal score in id order.

    LanceDB orders equal scores by its query plan, which changes with the limit and the scope's
    plan: the same search with ``top_k`` 3 and 30 could start with different records (the reranker's
    wider candidate list, cut back, would then differ from a plain search). When the row after the
    cut ties with the last one, the whole tie is read (``fetch``: the prefiltered query with a larger
    limit) so the cut takes its records by id, the same for every ``top_k``.
    """
    if result.num_rows <= top_k:
        return _tie_ordered(result)
    scores = result.column('_score').to_pylist()
    if scores[top_k] != scores[top_k - 1]:
        return _tie_ordered(result.slice(0, top_k))
    limit = 2 * (top_k + 1)
    while True:
        result = await fetch(limit)
        scores = result.column('_score').to_pylist()
        if result.num_rows < limit or scores[-1] != scores[top_k - 1]:
            return _tie_ordered(result).slice(0, top_k)
        limit *= 2


def _tie_ordered(result: Any) -> Any:
    """``result`` by score, equal scores by id (a stable order whatever LanceDB's plan)."""
    if result.num_rows < 2:
        return result
    scores, ids = result.column('_score').to_pylist(), result.column('id').to_pylist()
    return result.take(sorted(range(result.num_rows), key=lambda i: (-scores[i], ids[i])))


async def _postfiltered(
    query: Callable[[], Any], table: Any, where: str | None, top_k: int, shares: ScopeShares | None
) -> Any:
    """The scope's top ``top_k`` from a post-filtered candidate window, or ``None``: prefilter instead."""
    if where is None or shares is None or not await shares.indexed(table):
        return None
    window = candidate_window(await shares.share(table, where), top_k)
    if window is None:
        return None
    candidates = await query().where(where).postfilter().limit(window).to_arrow()
    return candidates.slice(0, top_k) if settled(candidates, top_k) else None


async def _substring_search(
    tables: Tables, table: Any, substrings: Sequence[str], top_k: int, where: str | None, scan_limit: int
) -> list[SearchHit]:
    needles = [s.lower() for s in substrings if s and '\x00' not in s]
    if not needles:
        return []
    tests = ' OR '.join(f'strpos(lower(text), {sql_string(n)}) > 0' for n in needles)
    clause = tables.where(None, f'({tests})', where or '')
    rows = (await table.query().where(clause).select(RESULT_COLUMNS).limit(scan_limit).to_arrow()).to_pylist()
    scored: list[tuple[float, int, dict[str, Any]]] = []
    for position, row in enumerate(rows):
        text = (row['text'] or '').lower()
        # The whole query counts most, then each piece by its number of occurrences.
        score = sum(text.count(n) * (len(needles) if i == 0 else 1) for i, n in enumerate(needles))
        scored.append((float(score), position, row))
    scored.sort(key=lambda t: (-t[0], t[1]))
    return [SearchHit(record=record_from_row(row), score=score) for score, _, row in scored[:top_k]]


_REGEX_COLUMNS = ['id', 'kind', 'urtext', 'document_id', 'sequence_number']


async def regex_search(
    tables: Tables, table: Any, request: RegexRequest, compiled: Any, scan_limit: int
) -> list[SearchHit]:
    """Records whose ``urtext`` matches by RE2: LanceDB only narrows the candidates, RE2 decides.

    The model's pattern never reaches LanceDB. `prefilter_pattern` rewrites it into a pattern
    for ``regexp_like`` that selects every record RE2 would match (and maybe more). A pattern
    with no such rewrite (``\\C``), or one whose rewrite LanceDB will not run (a ``ValueError``,
    e.g. Rust's regex size limit), falls back to reading every record in scope instead.

    Either way the answer is RE2 over ALL the rows read, or `scan_limit_error` when they are
    more than ``scan_limit``: never the first ``scan_limit`` of them. Hits rank by match count
    (`regex_rank_key`), so the best ``top_k`` may be any of the candidates, and a capped read
    would answer short, or empty, whenever false positives of the wider prefilter (``\\bve``
    reads every "have") fill the cap before the real matches in table order; paging until
    ``top_k`` confirmed hits has the same flaw. So ``scan_limit + 1`` rows are read, in one
    query (a separate count first could be outgrown by a commit before the read), and one
    row too many is a refusal. No LanceDB error text becomes a retry message: it would quote
    the SQL filter, scope included. Any other failure propagates as itself.
    """
    scope = tables.where(request.filter)
    where = scope
    rows: list[dict[str, Any]] | None = None
    prefilter = prefilter_pattern(request.pattern, case_sensitive=request.case_sensitive)
    if prefilter is not None:
        clause = tables.where(request.filter, f'regexp_like(urtext, {sql_string(prefilter)})')
        try:
            rows = (await _select(table, clause, _REGEX_COLUMNS, scan_limit + 1)).to_pylist()
            where = clause
        except ValueError:  # LanceDB could not plan the rewrite: read the scope instead
            rows = None
    if rows is None:
        rows = (await _select(table, scope, _REGEX_COLUMNS, scan_limit + 1)).to_pylist()
    if len(rows) > scan_limit:
        # Raised outside the ``try`` above: the refusal is an InvalidRequestError, a ValueError.
        raise scan_limit_error(int(await table.count_rows(where)), scan_limit)
    top = _rank_regex_rows(rows, compiled)[: request.top_k]
    if not top:
        return []
    by_id = {r.id: r for r in await fetch(tables, table, [t[1] for t in top], None)}
    return [SearchHit(record=by_id[i], score=float(-key[0]), matches=s) for key, i, s in top if i in by_id]


async def _select(table: Any, where: str | None, columns: list[str], limit: int) -> pa.Table:
    q = table.query().select(columns).limit(limit)
    return await (q if where is None else q.where(where)).to_arrow()


def _rank_regex_rows(
    rows: Sequence[dict[str, Any]], compiled: Any
) -> list[tuple[tuple[int, str, int], str, tuple[str, ...]]]:
    """The rows RE2 matches, best first, as (rank key, record id, sample matches)."""
    ranked: list[tuple[tuple[int, str, int], str, tuple[str, ...]]] = []
    for row in rows:
        count, samples = count_matches(compiled, row['urtext'] or '')
        if not count:  # a candidate of a wider prefilter, or any row of a scope scan
            continue
        document_id = (row['document_id'] or '') if row['kind'] == 'chunk' else None
        key = regex_rank_key(count, row['id'], document_id, row['sequence_number'])
        ranked.append((key, row['id'], samples))
    ranked.sort()
    return ranked


async def fetch(tables: Tables, table: Any, ids: Sequence[str], f: Filter | None) -> list[Record]:
    """The records with these ids that satisfy ``f``, in table order."""
    out: list[Record] = []
    for batch in in_lists(list(dict.fromkeys(ids))):
        where = tables.where(f, f'id IN {batch}')
        rows = await table.query().where(where).select(RESULT_COLUMNS).to_arrow()
        out.extend(record_from_row(r) for r in rows.to_pylist())
    return out


async def expand(tables: Tables, table: Any, request: ExpansionRequest) -> list[Chunk]:
    """A document's chunks (in a sequence range or a section), in reading order: one query."""
    return await _chunks(table, request, lambda f, clause: tables.where(f, clause))


async def expand_around(pinned: PinnedRecords, request: ExpansionRequest) -> list[Chunk]:
    """An anchored request: the anchor and its window, both read at the pinned table version.

    The window depends on the anchor (its document, its sequence number, its sections), so
    the anchor is read first and the window second, and a commit landing in between must not
    be seen by the second read: both run on a handle checked out at one version.
    """
    assert request.around is not None
    where = pinned.where
    lookup = pinned.table.query().where(where(None, f'id = {sql_string(request.around)}')).select(RESULT_COLUMNS)
    rows = await lookup.to_arrow()
    anchor = next((r for r in map(record_from_row, rows.to_pylist()) if isinstance(r, Chunk)), None)
    probe = request.section_probe()
    if anchor is None and probe is not None:
        inside = await _chunks(pinned.table, probe, where)
        anchor = inside[0] if inside else None
    if anchor is None:
        return []
    return await _chunks(pinned.table, request.window(anchor), where)


async def _chunks(
    table: Any, request: ExpansionRequest, where: Callable[[Filter | None, str], str | None]
) -> list[Chunk]:
    """A plain request's chunks, ``where`` building the SQL clause for the table's columns."""
    parts = ["kind = 'chunk'"]
    if request.document_id is not None:
        parts.append(f'document_id = {sql_string(request.document_id)}')
    if request.first is not None:
        parts.append(f'sequence_number >= {int(request.first)}')
    if request.last is not None:
        parts.append(f'sequence_number <= {int(request.last)}')
    if request.section_id is not None:
        parts.append(f'array_has(section_ids, {sql_string(request.section_id)})')
    rows = await (
        table.query()
        .where(where(request.filter, ' AND '.join(parts)))
        .select([*RESULT_COLUMNS, 'sequence_number'])
        .order_by([ColumnOrdering(column_name='sequence_number', ascending=True)])
        .limit(request.limit)
        .to_arrow()
    )
    chunks = [r for r in (record_from_row(row) for row in rows.to_pylist()) if isinstance(r, Chunk)]
    chunks.sort(key=lambda c: c.sequence_number)
    return chunks


@dataclass(frozen=True, slots=True)
class PinnedTable:
    """A table checked out at one version, for reads that must agree with each other.

    A checked-out handle is read-only and never moves, whatever is committed meanwhile, so
    several queries on it read one version (LanceDB keeps old versions until ``optimize``
    prunes those older than ``cleanup_older_than``). Its filter clauses are built for the
    columns of that version: a typed metadata column added since reads as absent.
    """

    table: Any
    version: int
    columns: frozenset[str]

    @classmethod
    async def open(cls, tables: Tables, version: int, name: str = RECORDS_TABLE) -> PinnedTable:
        table = await tables.db.open_table(name, version=version)
        return cls(table, version, frozenset((await table.schema()).names))

    def where(self, f: Filter | None, clause: str) -> str | None:
        """``clause`` AND the SQL of ``f`` for this version's columns."""
        parts = [p for p in (clause, filter_to_where(f, self.columns) if f is not None else '') if p]
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else ' AND '.join(f'({p})' for p in parts)

    def close(self) -> None:
        self.table.close()


PinnedRecords = PinnedTable
"""The records table pinned at one version (what expansion and navigation read)."""


class Pins:
    """The newest pinned handle of one table, shared by the reads of that version.

    Reads between two writes share one handle; a newer version replaces it, and the old one is
    released once no read still holding it is running.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._latest: PinnedTable | None = None

    async def at(self, tables: Tables, version: int) -> PinnedTable:
        pinned = self._latest
        if pinned is None or pinned.version != version:
            pinned = await PinnedTable.open(tables, version, self._name)
            if self._latest is None or self._latest.version < version:
                self._latest = pinned
        return pinned

    def close(self) -> None:
        pinned, self._latest = self._latest, None
        if pinned is not None:
            pinned.close()
