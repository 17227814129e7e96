"""One BM25 over a federation: its members' text hits re-scored with the statistics of all their records.

Members score text on their own scales (another formula, tokenizer or corpus size: LanceDB's BM25
runs about 2.4 times the memory store's on SciFact), so merging their raw scores over-ranks one
member. With ``MemberFusion(text='corpus')`` each text hit is re-scored with one BM25 (bm25s's
formula, one analyzer) whose record count, mean length and document frequencies are those of
every member's in-scope records. A member that reports them (`TermStatisticsSource`) is asked for
each call; another one's come from a census, its chunks read once through its `SectionReader`
and kept per member store until a write through a federation changes it.
See docs/federation.md#fusion."""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import weakref
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from ..._store_attributes import text_analyzer_of
from ...analysis import TextAnalyzer, analyzer_for
from ...content import Chunk
from ...filters import Filter, matches
from ...protocols import ResultExpander, SectionReader, TermStatistics, TermStatisticsRequest, TermStatisticsSource
from ...search import ExpansionRequest
from ...sections import MAX_PAGE_LIMIT, DocumentPageRequest, SectionReadRequest
from ._core import Member
from ._events import SourcedHit

log = logging.getLogger(__name__)
K1 = 1.5
B = 0.75
_READS = 8
"""How many section reads of one member a census runs at once."""
_MASKS = 64

Guard: TypeAlias = Callable[[Member, Awaitable[Any]], Awaitable[Any]]
"""One member's call bounded as the federation bounds it (its timeout): the answer, or ``None`` when the
member failed or timed out (reported as unavailable). Every wait on a member goes through it."""


@dataclass(frozen=True, slots=True)
class _Scope:
    """Which census records a filter admits (``None``: all), how many, and their total length."""

    mask: npt.NDArray[np.bool_] | None
    records: int
    length: float


@dataclass(eq=False)
class Census:
    """A member's chunks as one analyzer reads them: each token's postings, each record's length."""

    records: list[Chunk]
    languages: list[str]
    lengths: npt.NDArray[np.int64]
    postings: dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]]
    """Each token's record positions (ascending) and its count in each."""
    where: dict[str, int]
    _scopes: OrderedDict[str, _Scope] = field(default_factory=OrderedDict)

    @classmethod
    def of(cls, records: list[Chunk], analyzer: TextAnalyzer) -> Census:
        analysis = analyzer.analyse([r.text for r in records], [r.document_id for r in records])
        found: dict[str, tuple[list[int], list[int]]] = {}
        for i, tokens in enumerate(analysis.tokens):
            for token, count in Counter(tokens).items():
                places, counts = found.setdefault(token, ([], []))
                places.append(i)
                counts.append(count)
        return cls(
            records,
            analysis.languages,
            np.fromiter((len(tokens) for tokens in analysis.tokens), dtype=np.int64, count=len(records)),
            {t: (np.asarray(p, dtype=np.int64), np.asarray(c, dtype=np.float64)) for t, (p, c) in found.items()},
            {r.id: i for i, r in enumerate(records)},
        )

    def scope(self, f: Filter | None) -> _Scope:
        """The records ``f`` admits (cached per filter, a few dozen at most)."""
        key = 'null' if f is None else f.model_dump_json()
        cached = self._scopes.get(key)
        if cached is not None:
            self._scopes.move_to_end(key)
            return cached
        if f is None:
            cached = _Scope(None, len(self.records), float(self.lengths.sum()))
        else:
            mask = np.fromiter((matches(f, r) for r in self.records), dtype=np.bool_, count=len(self.records))
            cached = _Scope(mask, int(mask.sum()), float(self.lengths[mask].sum()))
        self._scopes[key] = cached
        if len(self._scopes) > _MASKS:
            self._scopes.popitem(last=False)
        return cached

    def frequency(self, token: str, scope: _Scope) -> int:
        """In how many records of ``scope`` ``token`` occurs."""
        found = self.postings.get(token)
        if found is None:
            return 0
        return int(found[0].size) if scope.mask is None else int(scope.mask[found[0]].sum())

    def term_frequencies(self, token: str, places: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """How often ``token`` occurs in each record at ``places`` (0 where it does not)."""
        found = self.postings.get(token)
        if found is None:
            return np.zeros(places.size)
        positions, counts = found
        at = np.minimum(np.searchsorted(positions, places), positions.size - 1)
        return np.where(positions[at] == places, counts[at], 0.0)

    def ranked(self, scope: _Scope, tokens: Sequence[str], n: int) -> list[tuple[int, float]]:
        """The ``n`` records of ``scope`` with the best BM25 for ``tokens`` under the scope's own statistics, best first.

        A function of the records ``scope`` admits alone: what a federation takes as a member's text
        candidates when the member's own ranking reads index-wide statistics (`scoped_candidates`).
        """
        if scope.records == 0 or n <= 0:
            return []
        mean_length = scope.length / scope.records
        scores = np.zeros(len(self.records))
        for token, repeats in Counter(tokens).items():
            found = self.postings.get(token)
            if found is None:
                continue
            places, counts = found
            if scope.mask is not None:
                kept = scope.mask[places]
                places, counts = places[kept], counts[kept]
            if places.size == 0:
                continue
            weight = repeats * math.log(1 + (scope.records - places.size + 0.5) / (places.size + 0.5))
            norm = K1 * ((1 - B) + B * self.lengths[places] / mean_length)
            scores[places] += weight * counts / (norm + counts)
        hit = np.flatnonzero(scores > 0)
        order = np.lexsort((hit, -scores[hit]))[:n]
        return [(int(i), float(scores[i])) for i in hit[order]]


_CENSUSES: weakref.WeakKeyDictionary[object, dict[str, asyncio.Future[Census]]] = weakref.WeakKeyDictionary()


def shared_analyzer(members: Sequence[Member]) -> TextAnalyzer:
    """The analyzer the members' text search states (``text_analyzer``) when those that state one agree, else English."""
    stated = {a.identity: a for m in members if (a := text_analyzer_of(m.store)) is not None}
    return next(iter(stated.values())) if len(stated) == 1 else analyzer_for(None)


def forget(store: object) -> None:
    """Drop ``store``'s census (its records changed): the next re-scored search reads it again."""
    _CENSUSES.pop(store, None)


def _keyable(store: object) -> bool:
    """Whether a census of ``store`` can be kept (by a weak reference to a hashable store object)."""
    try:
        weakref.ref(store)
        hash(store)
    except TypeError:
        return False
    return True


async def census_of(store: object, analyzer: TextAnalyzer) -> Census:
    """``store``'s census under ``analyzer``, read once per store object (concurrent callers share the read).

    The read is a task of its own: a caller that stops waiting (the member's timeout) does not
    cancel it for the others; a read that fails is forgotten, so the next call reads again.
    """
    by_analyzer = _CENSUSES.setdefault(store, {})
    pending = by_analyzer.get(analyzer.identity)
    if pending is None:
        pending = asyncio.ensure_future(_read(store, analyzer))
        by_analyzer[analyzer.identity] = pending
        pending.add_done_callback(functools.partial(_forget_failed, store, analyzer.identity))
    return await asyncio.shield(pending)


def _forget_failed(store: object, identity: str, read: asyncio.Future[Census]) -> None:
    if read.cancelled() or read.exception() is not None:
        by_analyzer = _CENSUSES.get(store, {})
        if by_analyzer.get(identity) is read:
            del by_analyzer[identity]


async def _read(store: object, analyzer: TextAnalyzer) -> Census:
    """Every chunk of ``store``: its documents listed, each read whole (by `expand` when it has it, the cheaper read)."""
    assert isinstance(store, SectionReader)
    page = await store.document_page(DocumentPageRequest(limit=MAX_PAGE_LIMIT))
    gate = asyncio.Semaphore(_READS)

    async def chunks_of(document_id: str) -> Sequence[Chunk]:
        async with gate:
            if isinstance(store, ResultExpander):
                return await store.expand(ExpansionRequest(document_id=document_id, limit=MAX_PAGE_LIMIT))
            return (await store.read_section(SectionReadRequest(document_id=document_id, limit=MAX_PAGE_LIMIT))).chunks

    parts = await asyncio.gather(*(chunks_of(d.id) for d in page.documents))
    records = [c for part in parts for c in part]
    return await asyncio.to_thread(Census.of, records, analyzer)


@dataclass(frozen=True, slots=True)
class _Counts:
    """One member's part of one BM25 call: its scope's size, its document frequencies, and its hits' counts."""

    records: int
    length: float
    frequencies: dict[str, int]
    rows: list[int]
    """Which of the hits these are (positions in the list being re-scored)."""
    lengths: npt.NDArray[np.float64]
    counts: npt.NDArray[np.float64]
    """``counts[i, j]``: token ``j``'s count in hit ``rows[i]``."""


def _census_counts(census: Census, scope: _Scope, tokens: list[str], places: dict[int, int]) -> _Counts:
    rows, at = list(places), np.fromiter(places.values(), dtype=np.int64, count=len(places))
    counts = np.zeros((at.size, len(tokens)))
    for j, token in enumerate(tokens):
        tf = census.term_frequencies(token, at)
        counts[:, j] = tf if scope.mask is None else np.where(scope.mask[at], tf, 0.0)
    return _Counts(
        scope.records,
        scope.length,
        {t: census.frequency(t, scope) for t in tokens},
        rows,
        census.lengths[at].astype(np.float64),
        counts,
    )


def _reported_counts(answer: TermStatistics, tokens: list[str], ids: dict[int, str]) -> _Counts:
    rows = [row for row, rid in ids.items() if rid in answer.lengths]
    counts = np.zeros((len(rows), len(tokens)))
    for i, row in enumerate(rows):
        held = answer.term_frequencies.get(ids[row], {})
        for j, token in enumerate(tokens):
            counts[i, j] = held.get(token, 0)
    return _Counts(
        answer.records,
        float(answer.length),
        {t: int(answer.document_frequencies.get(t, 0)) for t in tokens},
        rows,
        np.array([answer.lengths[ids[row]] for row in rows], dtype=np.float64),
        counts,
    )


class _Source:
    """Where one member's statistics come from: its own answer (`TermStatisticsSource`), else its census."""

    def __init__(self, member: Member, census: Census | None) -> None:
        self.member, self.census = member, census

    @staticmethod
    async def of(member: Member, analyzer: TextAnalyzer) -> _Source | None:
        """``None`` when the member can give none (it answers no statistics and has no census)."""
        if isinstance(member.store, TermStatisticsSource):
            return _Source(member, None)
        return await _Source.read(member, analyzer)

    @staticmethod
    async def read(member: Member, analyzer: TextAnalyzer) -> _Source | None:
        if not (isinstance(member.store, SectionReader) and _keyable(member.store)):
            return None
        return _Source(member, await census_of(member.store, analyzer))

    async def _answer(self, analyzer: TextAnalyzer, request: TermStatisticsRequest) -> TermStatistics | None:
        """The member's own answer, or ``None`` after switching to its census (it counts under another analyzer)."""
        store = self.member.store
        assert isinstance(store, TermStatisticsSource)
        answer = await store.term_statistics(request)
        if answer is None:
            fallback = await _Source.read(self.member, analyzer)
            if fallback is None:
                raise LookupError('the member answers no statistics under this analyzer and has no census')
            self.census = fallback.census
        return answer

    async def languages(self, f: Filter | None, analyzer: TextAnalyzer) -> set[str]:
        """The languages of the member's in-scope records (``'auto'`` analyzers read the query in those)."""
        if self.census is None:
            answer = await self._answer(
                analyzer, TermStatisticsRequest(analyzer.identity, filter=self.member.scoped(f))
            )
            if answer is not None:
                return set(answer.languages)
        assert self.census is not None
        scope = self.census.scope(self.member.scoped(f))
        kept = (
            self.census.languages
            if scope.mask is None
            else (self.census.languages[i] for i in np.flatnonzero(scope.mask))
        )
        return set(kept)

    async def counts(
        self, f: Filter | None, tokens: list[str], hits: Sequence[SourcedHit], analyzer: TextAnalyzer
    ) -> _Counts:
        mine = {row: h.id for row, h in enumerate(hits) if h.source == self.member.name}
        if self.census is None:
            request = TermStatisticsRequest(
                analyzer.identity, tuple(tokens), tuple(mine.values()), self.member.scoped(f)
            )
            answer = await self._answer(analyzer, request)
            if answer is not None:
                return _reported_counts(answer, tokens, mine)
        assert self.census is not None
        scope = self.census.scope(self.member.scoped(f))
        places = {row: place for row, rid in mine.items() if (place := self.census.where.get(rid)) is not None}
        return _census_counts(self.census, scope, tokens, places)


@dataclass(frozen=True, slots=True)
class Prepared:
    """What one re-scoring needs before the members' hits arrive: where each member's counts come from, the query's tokens."""

    sources: list[_Source]
    tokens: list[str]
    analyzer: TextAnalyzer


async def prepare(
    members: Sequence[Member], f: Filter | None, query: str, analyzer: TextAnalyzer, guard: Guard
) -> Prepared | None:
    """Each member's statistics source and the query's tokens, or ``None`` when a member can give none
    (or fails or times out: ``guard``).

    Independent of the members' hits, so a search runs it while the members search: the query's
    analysis (an ``'auto'`` analyzer detects its language) then costs the search no time.
    """
    try:
        sources = await asyncio.gather(*(guard(m, _Source.of(m, analyzer)) for m in members))
        known = [source for source in sources if source is not None]
        if len(known) < len(sources):
            return None
        languages: set[str] = set()
        if analyzer.auto:  # a query is analysed in the languages of the records in scope, as in one store
            for found in await asyncio.gather(*(guard(s.member, s.languages(f, analyzer)) for s in known)):
                if found is None:
                    return None
                languages |= found
            tokens = await asyncio.to_thread(analyzer.query_tokens, query, languages)
        else:
            tokens = analyzer.query_tokens(query, languages)
    except Exception as error:  # statistics are an improvement, never a reason to fail a search
        log.warning(
            'federation: text statistics unreadable (%s); text hits merged by member scores', type(error).__name__
        )
        return None
    return Prepared(known, tokens, analyzer)


async def rescored(
    prepared: Prepared, f: Filter | None, hits: Sequence[SourcedHit], analyzer: TextAnalyzer, guard: Guard
) -> list[SourcedHit] | None:
    """``hits`` re-scored with one BM25 over every member's in-scope records, best first (ties keep their order).

    A member that reports its statistics (`TermStatisticsSource`) is asked, for this call; another
    one's come from its census (`prepare`). ``None`` when a member's counts cannot be read: the
    caller keeps its own merge (``guard`` reports the member).
    """
    tokens = prepared.tokens
    distinct = list(dict.fromkeys(tokens))
    found = await asyncio.gather(*(guard(s.member, s.counts(f, distinct, hits, analyzer)) for s in prepared.sources))
    parts: list[_Counts] = [part for part in found if part is not None]
    if len(parts) < len(found):  # statistics are an improvement, never a reason to fail a search
        log.warning('federation: text statistics unreadable; text hits merged by member scores')
        return None
    records = sum(part.records for part in parts)
    if records == 0:
        return [SourcedHit(h.record, 0.0, h.matches, h.source) for h in hits]
    mean_length = sum(part.length for part in parts) / records
    df = {t: sum(part.frequencies[t] for part in parts) for t in distinct}
    # A repeated query token counts twice, as in one store's BM25.
    weights = np.array(
        [
            sum(math.log(1 + (records - df[t] + 0.5) / (df[t] + 0.5)) for u in tokens if u == t) if df[t] else 0.0
            for t in distinct
        ]
    )
    scores = np.zeros(len(hits))
    counted = np.zeros(len(hits), dtype=np.bool_)
    for part in parts:
        if part.rows:
            norm = K1 * ((1 - B) + B * part.lengths / mean_length)
            scores[part.rows] = ((part.counts / (norm[:, None] + part.counts)) * weights).sum(axis=1)
            counted[part.rows] = True
    for i in np.flatnonzero(~counted).tolist():
        # Not counted by its member (an entity, or written since its census was read): analysed now.
        own = Counter(analyzer.analyse([hits[i].record.text]).tokens[0])
        own_norm = K1 * ((1 - B) + B * sum(own.values()) / mean_length)
        scores[i] = sum(
            float(w) * own[t] / (own_norm + own[t]) for t, w in zip(distinct, weights, strict=True) if own[t]
        )
    scored = sorted(zip((-scores).tolist(), range(len(hits)), hits, strict=True), key=lambda item: item[:2])
    return [SourcedHit(h.record, -negative, h.matches, h.source) for negative, _, h in scored]
