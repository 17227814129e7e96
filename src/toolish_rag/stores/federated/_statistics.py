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


@dataclass(eq=False)
class Census:
    """A member's chunks as one analyzer reads them: per record its token counts and length."""

    records: list[Chunk]
    counts: list[Counter[str]]
    languages: list[str]
    lengths: npt.NDArray[np.int64]
    postings: dict[str, npt.NDArray[np.int64]]
    """Each token's record positions."""
    where: dict[str, int]
    _masks: OrderedDict[str, npt.NDArray[np.bool_]] = field(default_factory=OrderedDict)

    @classmethod
    def of(cls, records: list[Chunk], analyzer: TextAnalyzer) -> Census:
        analysis = analyzer.analyse([r.text for r in records], [r.document_id for r in records])
        counts = [Counter(tokens) for tokens in analysis.tokens]
        found: dict[str, list[int]] = {}
        for i, counted in enumerate(counts):
            for token in counted:
                found.setdefault(token, []).append(i)
        return cls(
            records,
            counts,
            analysis.languages,
            np.fromiter((sum(c.values()) for c in counts), dtype=np.int64, count=len(counts)),
            {token: np.asarray(places, dtype=np.int64) for token, places in found.items()},
            {r.id: i for i, r in enumerate(records)},
        )

    def mask(self, f: Filter | None) -> npt.NDArray[np.bool_]:
        """Which records ``f`` admits (cached per filter, a few dozen at most)."""
        key = 'null' if f is None else f.model_dump_json()
        cached = self._masks.get(key)
        if cached is None:
            cached = np.fromiter((matches(f, r) for r in self.records), dtype=np.bool_, count=len(self.records))
            self._masks[key] = cached
            if len(self._masks) > _MASKS:
                self._masks.popitem(last=False)
        else:
            self._masks.move_to_end(key)
        return cached


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
    masks = [c.mask(m.scoped(f)) for m, c in zip(members, censuses, strict=True)]
    records = sum(int(mask.sum()) for mask in masks)
    if records == 0:
        return [SourcedHit(h.record, 0.0, h.matches, h.source) for h in hits]
    mean_length = sum(float(c.lengths[mask].sum()) for c, mask in zip(censuses, masks, strict=True)) / records
    languages: set[str] = set()
    if analyzer.auto:  # a query is analysed in the languages of the records in scope, as in one store
        for c, mask in zip(censuses, masks, strict=True):
            languages.update(lang for lang, kept in zip(c.languages, mask.tolist(), strict=True) if kept)
    tokens = analyzer.query_tokens(query, languages)
    df = {t: sum(int(mask[p].sum()) for c, mask in zip(censuses, masks, strict=True) if (p := c.postings.get(t)) is not None) for t in set(tokens)}  # fmt: skip
    idf = {t: math.log(1 + (records - n + 0.5) / (n + 0.5)) for t, n in df.items() if n > 0}
    weighted = [(t, idf[t]) for t in tokens if t in idf]
    by_name = {m.name: c for m, c in zip(members, censuses, strict=True)}
    scored: list[tuple[float, int, SourcedHit]] = []
    for rank, hit in enumerate(hits):
        census = by_name.get(hit.source)
        place = census.where.get(hit.id) if census is not None else None
        if census is not None and place is not None:
            counts, length = census.counts[place], float(census.lengths[place])
        else:  # not in the census (an entity, or written since it was read): analysed now
            own = analyzer.analyse([hit.record.text]).tokens[0]
            counts, length = Counter(own), float(len(own))
        norm = K1 * ((1 - B) + B * length / mean_length)
        score = 0.0
        for t, weight in weighted:
            tf = counts.get(t, 0)
            if tf:
                score += weight * tf / (norm + tf)
        scored.append((-score, rank, hit))
    scored.sort(key=lambda item: item[:2])
    return [SourcedHit(h.record, -negative, h.matches, h.source) for negative, _, h in scored]
