"""One BM25 over a federation: its members' text hits re-scored with the statistics of all their records.

Members score text on their own scales (another formula, tokenizer or corpus size: LanceDB's BM25
runs about 2.4 times the memory store's on SciFact), so merging their raw scores over-ranks one
member. With ``MemberFusion(text='corpus')`` each text hit is re-scored with one BM25 (bm25s's
formula, the core analyzer) whose record count, mean length and document frequencies are those
of every member's in-scope records: a census of each member, read once through its
`SectionReader` and kept per member store until a write through a federation changes it.
See docs/federation.md#fusion.
"""

from __future__ import annotations

import asyncio
import logging
import math
import weakref
from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from ...analysis import TextAnalyzer
from ...content import Chunk
from ...filters import Filter, matches
from ...protocols import ResultExpander, SectionReader
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


_CENSUSES: weakref.WeakKeyDictionary[object, dict[str, asyncio.Future[Census]]] = weakref.WeakKeyDictionary()


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
    """``store``'s census under ``analyzer``, read once per store object (concurrent callers share the read)."""
    by_analyzer = _CENSUSES.setdefault(store, {})
    pending = by_analyzer.get(analyzer.identity)
    if pending is None:
        pending = asyncio.get_running_loop().create_future()
        by_analyzer[analyzer.identity] = pending
        try:
            pending.set_result(await _read(store, analyzer))
        except BaseException as error:
            by_analyzer.pop(analyzer.identity, None)
            pending.set_exception(error)
            pending.exception()  # retrieved: the caller gets it raised below
            raise
    return await asyncio.shield(pending)


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


async def rescored(
    members: Sequence[Member], f: Filter | None, query: str, hits: Sequence[SourcedHit], analyzer: TextAnalyzer
) -> list[SourcedHit] | None:
    """``hits`` re-scored with one BM25 over every member's in-scope records, best first (ties keep their order).

    ``None`` when a member has no census (it is no `SectionReader`, its object cannot be a weak
    dictionary key, or reading it failed): the caller keeps its own merge.
    """
    if not all(isinstance(m.store, SectionReader) and _keyable(m.store) for m in members):
        return None
    try:
        censuses = await asyncio.gather(*(census_of(m.store, analyzer) for m in members))
    except Exception as error:  # statistics are an improvement, never a reason to fail a search
        log.warning(
            'federation: text statistics unreadable (%s); text hits merged by member scores', type(error).__name__
        )
        return None
    scopes = [c.scope(m.scoped(f)) for m, c in zip(members, censuses, strict=True)]
    records = sum(scope.records for scope in scopes)
    if records == 0:
        return [SourcedHit(h.record, 0.0, h.matches, h.source) for h in hits]
    mean_length = sum(scope.length for scope in scopes) / records
    languages: set[str] = set()
    if analyzer.auto:  # a query is analysed in the languages of the records in scope, as in one store
        for c, scope in zip(censuses, scopes, strict=True):
            kept = c.languages if scope.mask is None else (c.languages[i] for i in np.flatnonzero(scope.mask))
            languages.update(kept)
    tokens = analyzer.query_tokens(query, languages)
    df = {t: sum(c.frequency(t, scope) for c, scope in zip(censuses, scopes, strict=True)) for t in set(tokens)}
    weighted = [(t, math.log(1 + (records - df[t] + 0.5) / (df[t] + 0.5))) for t in tokens if df[t] > 0]
    scores = np.zeros(len(hits))
    by_name = {m.name: c for m, c in zip(members, censuses, strict=True)}
    placed: dict[str, tuple[list[int], list[int]]] = {}
    for i, hit in enumerate(hits):
        census = by_name.get(hit.source)
        place = census.where.get(hit.id) if census is not None else None
        if place is not None:
            rows, places = placed.setdefault(hit.source, ([], []))
            rows.append(i)
            places.append(place)
            continue
        # Not in the census (an entity, or written since it was read): analysed now.
        own = Counter(analyzer.analyse([hit.record.text]).tokens[0])
        own_norm = K1 * ((1 - B) + B * sum(own.values()) / mean_length)
        scores[i] = sum(weight * own[t] / (own_norm + own[t]) for t, weight in weighted if own[t])
    for name, (rows, places) in placed.items():
        census, at = by_name[name], np.asarray(places, dtype=np.int64)
        norm = K1 * ((1 - B) + B * census.lengths[at] / mean_length)
        total = np.zeros(at.size)
        for t, weight in weighted:
            tf = census.term_frequencies(t, at)
            total += weight * tf / (norm + tf)
        scores[rows] = total
    scored = sorted(zip((-scores).tolist(), range(len(hits)), hits, strict=True), key=lambda item: item[:2])
    return [SourcedHit(h.record, -negative, h.matches, h.source) for negative, _, h in scored]
