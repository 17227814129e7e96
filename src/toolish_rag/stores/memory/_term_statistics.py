"""`InMemoryStore.term_statistics`: BM25's counts of one snapshot's records in a scope, from its own index.

What a federation asks instead of reading the store's whole text (`toolish_rag.protocols.TermStatisticsSource`).
See docs/federation.md#fusion.
"""

from __future__ import annotations

import numpy as np

from ...protocols import TermStatistics, TermStatisticsRequest
from ._snapshot import Snapshot

__all__ = ['term_statistics']


def term_statistics(snap: Snapshot, request: TermStatisticsRequest) -> TermStatistics:
    """The counts ``request`` asks for, over the live records of ``snap`` its filter admits (the BM25 index's)."""
    index = snap.bm25()
    mask = snap.mask(request.filter)
    lengths = index.lengths if mask is None else index.lengths[mask]
    slots = {
        rid: i for rid in request.record_ids if (i := snap.index.get(rid)) is not None and (mask is None or mask[i])
    }
    at = np.fromiter(slots.values(), dtype=np.int64, count=len(slots))
    ids = np.array(list(slots), dtype=object)
    frequencies: dict[str, int] = {}
    held: dict[str, dict[str, int]] = {rid: {} for rid in slots}
    for token in dict.fromkeys(request.tokens):
        found = index.postings(token)
        if found is None:
            frequencies[token] = 0
            continue
        positions, counts = found
        frequencies[token] = int(positions.size if mask is None else np.count_nonzero(mask[positions]))
        if at.size and positions.size:
            place = np.minimum(np.searchsorted(positions, at), positions.size - 1)
            hit = positions[place] == at
            for rid, count in zip(ids[hit].tolist(), counts[place[hit]].tolist(), strict=True):
                held[rid][token] = int(count)
    return TermStatistics(
        records=int(lengths.size),
        length=int(lengths.sum()),
        document_frequencies=frequencies,
        lengths={rid: int(index.lengths[i]) for rid, i in slots.items()},
        term_frequencies=held,
        languages=index.languages(mask),
    )
